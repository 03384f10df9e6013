"""CPU stand-ins for the interpretation pipeline's VLM and LLM: a pixel describer and a majority synthesiser
(chapter 16).

:class:`PixelDescriber` uses no pretrained weights and no ground truth: it reads pixels. Foreground is every pixel
that differs from the canvas colour; its connected components are the candidate objects. For each region (a mask)
it names the components the mask covers: the palette colour nearest the median colour of the masked interior
pixels, and the shape from a small classifier (:func:`shape_classifier`, scikit-learn logistic regression on
12x12 silhouettes) trained in about a second on single objects drawn by :mod:`compbook.scenes` at other
resolutions than the chapter's (so its accuracy on the chapter's scenes is a check, not a memory).

:class:`MajoritySynthesiser` is a stated rule (**our choice**): the image concept is the concept mentioned by at
least ``threshold`` of the descriptions: background first; an object type ("red square") when it is mentioned as
often as its colour and its shape; otherwise the better supported of the colour and the shape that pass (the colour
on a tie); "unclear" when nothing passes. The text concept is the
word that makes up at least ``threshold`` of the latent's top words; they agree when one contains the other.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from scipy import ndimage
from skimage.transform import resize

from .. import checks, scenes as sc
from .interpret import UNCLEAR, Synthesis

SILHOUETTE = 12
MIN_PART = 0.3
MIN_FOREGROUND = 0.5
WHOLE = 0.9
THRESHOLD = 0.6
#: Resolutions and layouts the shape classifier trains on (the chapter's scenes are 32 px, "grid2": held out).
TRAIN_COLOURS = ("gray", "red", "cyan", "yellow")     # dark, mid and light fills (our choice)
TRAIN_DRAWINGS = ((40, "pair"), (24, "grid2"), (40, "grid2"), (48, "grid2"), (64, "grid2"), (48, "grid3"),
                  (64, "grid3"))


def foreground(image: np.ndarray, tol: float = 0.08) -> np.ndarray:
    """Bool (H, W): pixels whose colour differs from the canvas by more than ``tol`` in some channel."""
    checks.unit_image(checks.tensor(image, "image", (None, None, 3), floating=False), "image")
    checks.real(tol, "tol", 0)
    return np.abs(image - np.asarray(sc.CANVAS) / 255).max(-1) > tol


def components(image: np.ndarray) -> tuple[np.ndarray, int]:
    """Connected foreground components (H, W) int labels 1..n (0: canvas), 8-connectivity; and n."""
    return ndimage.label(foreground(image), structure=np.ones((3, 3)))


def silhouette(component: np.ndarray, size: int = SILHOUETTE) -> np.ndarray:
    """A component's bounding-box crop resized to ``size x size`` (flattened, float in [0, 1])."""
    size = checks.integer(size, "size")
    if not np.any(component):
        raise ValueError("component: empty (no True pixel), nothing to crop")
    rows, cols = np.nonzero(component)
    crop = component[rows.min():rows.max() + 1, cols.min():cols.max() + 1].astype(float)
    return resize(crop, (size, size), order=1, anti_aliasing=True).reshape(-1)


@functools.lru_cache(maxsize=4)
def shape_classifier(shapes: tuple = sc.SHAPES[:3], drawings: tuple = TRAIN_DRAWINGS, colours: tuple = TRAIN_COLOURS,
                     seed: int = 0):
    """A logistic regression from :func:`silhouette` to shape name, trained on single objects (``colours`` x
    ``shapes``) in every slot of ``drawings`` ((resolution, layout) pairs); a few seconds on one core."""
    from sklearn.linear_model import LogisticRegression

    space = sc.make_space(colours, shapes)
    x, y = [], []
    for res, layout in drawings:
        for slot in range(len(sc.LAYOUTS[layout][0])):
            for obj in range(space.n_objects):
                image = sc.render_scene(space, (obj,), res=res, layout=layout, slots=(slot,)).image
                lab, _ = components(image)
                x.append(silhouette(lab == 1 + np.argmax(np.bincount(lab.ravel())[1:])))
                y.append(space.named(obj)["shape"])
    return LogisticRegression(max_iter=2000, random_state=seed).fit(np.array(x), np.array(y))


def nearest_colour(rgb: np.ndarray, palette: dict = sc.CLEVR_COLOURS) -> str:
    """Name of the palette colour (RGB 0-255) nearest ``rgb`` (3,) in [0, 1]."""
    rgb = checks.unit_image(checks.tensor(rgb, "rgb", (3,)), "rgb").double().numpy()
    names = list(checks.mapping(palette, "palette", 1))
    ref = np.array([palette[n] for n in names]) / 255
    return names[int(np.argmin(((ref - rgb) ** 2).sum(1)))]


class PixelDescriber:
    """``describer(images (K, H, W, 3), masks (K, H, W)) -> K descriptions`` ("a red square", "a red square and
    a blue circle" or "background"). A mask that is less than ``min_foreground`` foreground and covers no
    component whole (``WHOLE``) is "background"; otherwise the components it covers at least ``min_part`` of are
    named, or, when there is none, the one it covers most."""

    def __init__(self, palette: dict = sc.CLEVR_COLOURS, shapes: tuple = sc.SHAPES[:3], min_part: float = MIN_PART,
                 min_foreground: float = MIN_FOREGROUND):
        self.palette, self.shapes = checks.mapping(palette, "palette", 1), tuple(shapes)
        self.min_part = checks.real(min_part, "min_part", 0, 1)
        self.min_foreground = checks.real(min_foreground, "min_foreground", 0, 1)
        self._memo: dict = {}

    def _parts(self, image: np.ndarray) -> tuple:
        """Components, their sizes and shapes of one image, memoised by content (references repeat images)."""
        key = image.tobytes()
        if key not in self._memo:
            lab, n = components(image)
            clf = shape_classifier(self.shapes)
            shapes = clf.predict(np.stack([silhouette(lab == c) for c in range(1, n + 1)])) if n else []
            self._memo[key] = (lab, n, np.bincount(lab.ravel(), minlength=n + 1), list(shapes))
        return self._memo[key]

    def describe_one(self, image: np.ndarray, mask: np.ndarray) -> str:
        """The description of one region: ``image`` (H, W, 3) in [0, 1], ``mask`` (H, W) bool."""
        lab, n, size, shapes = self._parts(image)
        covered = np.bincount(lab[mask], minlength=n + 1)
        part = covered[1:] / np.maximum(size[1:], 1)
        if not mask.any() or ((lab[mask] > 0).mean() < self.min_foreground and not (part >= WHOLE).any()):
            return "background"
        chosen = np.flatnonzero(part >= self.min_part) + 1
        if not len(chosen):
            chosen = [int(np.argmax(covered[1:])) + 1]
        phrases = []
        for c in chosen:
            comp = lab == c
            inner = ndimage.binary_erosion(comp)
            pix = image[inner & mask] if (inner & mask).any() else image[inner if inner.any() else comp]
            phrases.append(f"a {nearest_colour(np.median(pix, 0), self.palette)} {shapes[c - 1]}")
        return " and ".join(phrases)

    def __call__(self, images: np.ndarray, masks: np.ndarray) -> list:
        images = checks.unit_image(checks.tensor(images, "images", (None, None, None, 3), floating=False),
                                   "images").numpy()
        masks = checks.tensor(masks, "masks", tuple(images.shape[:3]), floating=False, finite=False)
        if masks.dtype != torch.bool:
            raise ValueError(f"masks must be bool (K, H, W), got dtype {masks.dtype}")
        return [self.describe_one(im, m) for im, m in zip(images, masks.numpy())]


def parse_description(text: str, colours, shapes) -> list:
    """Objects named in a description: [(colour or None, shape or None)], or ["background"]."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a description string, got {type(text).__name__} {text!r:.60}")
    words = text.lower().replace(",", " ").replace(".", " ").split()
    if "background" in words and not any(w in colours or w in shapes for w in words):
        return ["background"]
    objects = []
    for phrase in " ".join(words).split(" and "):
        ws = phrase.split()
        col = next((w for w in ws if w in colours), None)
        shp = next((w for w in ws if w in shapes), None)
        if col or shp:
            objects.append((col, shp))
    return objects


def supports(descriptions, colours, shapes) -> dict:
    """Fraction of the descriptions that mention each concept (colour, shape, "colour shape", "background")."""
    if isinstance(descriptions, (str, bytes)):
        raise ValueError(f"descriptions must be a list of strings, got the string {descriptions!r:.60}")
    count: dict = {}
    for text in descriptions:
        found = set()
        for obj in parse_description(text, colours, shapes):
            if obj == "background":
                found.add("background")
                continue
            col, shp = obj
            found.update(v for v in (col, shp, f"{col} {shp}" if col and shp else None) if v)
        for c in found:
            count[c] = count.get(c, 0) + 1
    return {c: k / max(len(descriptions), 1) for c, k in count.items()}


def agree(image: str, text: str) -> bool:
    """Our rule: two concepts agree when neither is unclear and one contains the other ("red" in "red square")."""
    for name, v in (("image", image), ("text", text)):
        if not isinstance(v, str):
            raise ValueError(f"{name} must be a concept string, got {type(v).__name__} {v!r:.60}")
    if UNCLEAR in (image, text):
        return False
    a, b = set(image.split()), set(text.split())
    return a <= b or b <= a


class MajoritySynthesiser:
    """``synthesiser(descriptions, top_words) -> Synthesis`` by the stated majority rule (module docstring)."""

    def __init__(self, colours=tuple(sc.CLEVR_COLOURS), shapes=sc.SHAPES[:3], threshold: float = THRESHOLD):
        threshold = checks.real(threshold, "threshold", 0, 1, low_open=True)
        self.colours, self.shapes, self.threshold = tuple(colours), tuple(shapes), threshold

    def image_concept(self, descriptions) -> str:
        s = supports(descriptions, self.colours, self.shapes)
        ok = {c: v for c, v in s.items() if v >= self.threshold}
        if "background" in ok:
            return "background"
        # ties go to the first value in palette / shape order (never to set or hash order: deterministic)
        col = max((c for c in self.colours if c in ok), key=ok.get, default=None)
        shp = max((c for c in self.shapes if c in ok), key=ok.get, default=None)
        both = f"{col} {shp}"
        if col and shp and ok.get(both, 0) >= max(ok[col], ok[shp]):
            return both
        if col and shp:
            return col if ok[col] >= ok[shp] else shp
        return col or shp or UNCLEAR

    def text_concept(self, words) -> str:
        if not words:
            return UNCLEAR
        vals, counts = np.unique(np.asarray(words), return_counts=True)
        best = int(np.argmax(counts))
        if counts[best] / len(words) < self.threshold:
            return UNCLEAR
        w = str(vals[best])
        return w if w in self.colours or w in self.shapes else f"'{w}'"

    def __call__(self, descriptions, words) -> Synthesis:
        image, text = self.image_concept(descriptions), self.text_concept(words)
        return Synthesis(image, text, agree(image, text))


def describer_accuracy(describer, scenes) -> dict:
    """The describer on regions whose answer is known: every object's exact patch mask (expected "a {colour}
    {shape}") and every image's background patches (expected "background"). Fractions correct: colour, shape,
    both, background; and the counts."""
    space = scenes.vocab.space
    cell = np.ones((scenes.patch, scenes.patch), bool)
    col = shp = both = bg = n_obj = 0
    for i, objs in enumerate(scenes.objects):
        lab = scenes.labels[i].numpy().reshape(scenes.grid)
        masks = [np.kron(lab == o, cell) for o in range(len(objs))] + [np.kron(lab < 0, cell)]
        got = describer(np.repeat(scenes.images[i][None], len(masks), 0), np.stack(masks))
        for o, obj in enumerate(objs):
            n = space.named(obj)
            col += n["colour"] in got[o].split()
            shp += n["shape"] in got[o].split()
            both += got[o] == f"a {n['colour']} {n['shape']}"
        n_obj += len(objs)
        bg += got[-1] == "background"
    return {"colour": col / n_obj, "shape": shp / n_obj, "object (both)": both / n_obj,
            "background": bg / len(scenes), "objects": n_obj, "images": len(scenes)}
