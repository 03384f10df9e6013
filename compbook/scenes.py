"""Synthetic multi-object scenes with exact masks, captions and token ids (Parts B and C).

Chapters 10-11 (Part B, binding) and Part C (S2AE) read their data from here.

* Object spaces and their words (:class:`ObjectSpace`, :class:`Vocabulary`) live in :mod:`compbook.objects`;
  this module draws them (and reads them here too).
* :func:`clevr2d` is the paper's CLEVR-2D: 8 CLEVR colours x 3 flat shapes = 24 objects, 576 ordered two-object
  scenes on a light-grey (245, 245, 245) canvas, squares and circles 64 px wide at 224 px with a ~2 px black
  outline (the released renders' span 65 px), the triangle as released (:data:`TRIANGLES`, measured on the
  released renders), left centred at (70, 112), right at (154, 112), caption "a {colour} {shape} and a
  {colour} {shape}". Other resolutions scale all of it.
* :func:`rich_space` is our choice of a larger space for coverage sweeps: colour x shape x size x pattern colour
  x pattern (12 x 7 x 3 x 12 x 4 = 12,096 objects by default), legible at 64 px.
* :func:`render_scene` draws a scene (a tuple of object ids, one per slot) at any resolution: anti-aliased by
  drawing ``SUPERSAMPLE`` times larger and averaging blocks, deterministic. It returns a :class:`Scene` with the
  image (H, W, 3) float32 in [0, 1], exact masks (n_obj, H, W) bool, the objects' values, the caption and its
  token ids, and :meth:`Scene.patches` (the patch-grid view for Part C). :func:`render_images` draws many.
* **Layouts** (our choice apart from ``"pair"``): ``"pair"`` (Paper B's CLEVR-2D, 2 slots), ``"grid2"`` (2x2, up to 4
  objects), ``"grid3"`` (3x3, up to 9). Each slot's object lies inside its own cell, so objects never overlap and
  the masks are disjoint by construction. ``"pair"`` draws the released triangle, the grid layouts our own
  (:data:`LAYOUT_TRIANGLE`). A pixel belongs to object i's mask when at least half of its area (in
  the supersampled drawing) is covered by the object's footprint (fill and outline).
* :func:`sample_scenes` draws scenes of objects (with replacement) from an object list.

Part B's symbolic track and coverage splits are in :mod:`compbook.binding.symbolic` and
:mod:`compbook.binding.splits`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage
from skimage.draw import polygon2mask

from . import checks
from .objects import (SPECIALS, ObjectSpace, Vocabulary, object_phrase,  # noqa: F401 (read here too)
                      pad_sequences, vocabulary)

# ---------------------------------------------------------------- names and palettes

#: CLEVR's 8 colours (RGB 0-255), Paper B's CLEVR-2D palette, in the paper's order.
CLEVR_COLOURS = {
    "gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215), "green": (29, 105, 20),
    "brown": (129, 74, 25), "purple": (129, 38, 192), "cyan": (41, 208, 208), "yellow": (255, 238, 51),
}
#: Our choice: 4 more colours for larger spaces, far from the CLEVR 8 and from the canvas.
EXTRA_COLOURS = {"orange": (255, 140, 0), "pink": (255, 120, 190), "lime": (150, 230, 60),
                 "navy": (20, 25, 100)}
COLOURS = {**CLEVR_COLOURS, **EXTRA_COLOURS}
#: Flat shapes; the first 3 are CLEVR-2D's.
SHAPES = ("square", "triangle", "circle", "diamond", "cross", "hexagon", "star")
#: Size names and their scale inside the slot box (our choice).
SIZES = {"small": 0.64, "medium": 0.82, "large": 1.0}
#: Patterns painted in the pattern colour inside the shape, each edged by a thin black line so that a pattern in
#: the fill's own colour is still visible (our choice).
PATTERNS = ("core", "band", "stripe", "half")
CANVAS = (245, 245, 245)
OUTLINE = (0, 0, 0)
SUPERSAMPLE = 4
#: Slot centres (x, y) and box width, as fractions of the canvas. "pair" is Paper B's CLEVR-2D layout.
LAYOUTS = {
    "pair": (((70 / 224, 112 / 224), (154 / 224, 112 / 224)), 64 / 224),
    "grid2": (tuple((x, y) for y in (0.25, 0.75) for x in (0.25, 0.75)), 0.40),
    "grid3": (tuple((x, y) for y in (1 / 6, 0.5, 5 / 6) for x in (1 / 6, 0.5, 5 / 6)), 0.28),
}
#: Triangles, vertices (x, y) in units of the box half-width r, y down. "released": CLEVR-2D's (fact), measured
#: on the released 224x224 sample renders, fill plus its black outline, identical in every render: apex up,
#: isosceles, rows from 33 px above the object's centre to 33 px below it, the base row 74 px wide (x from the
#: centre -37 .. +36), 2,548 px in all. 67 rows widening linearly to 74 px hold 2,548 px when the apex row is
#: 2 px wide; the vertices are those of the triangle whose sides pass through those rows' outer pixel edges
#: (36 px of half-width over 66 rows; the apex row's pixel centres 32.5 px above the centre, the base row's lower
#: edge 34 px below it), at r = 32 px (box 64 of 224). "ours": the book's triangle for its own layouts (our
#: choice).
TRIANGLES = {
    "released": ((0.0, -(32.5 + 66 / 36) / 32), ((1 + 36 / 66 * 66.5) / 32, 34 / 32),
                 (-(1 + 36 / 66 * 66.5) / 32, 34 / 32)),
    "ours": ((0, -1), (1, 0.8), (-1, 0.8)),
}
#: The triangle each layout draws: "pair" is the released CLEVR-2D scene; the grid layouts are ours (Part C's
#: scenes, whose stored models were trained on them, and chapter 10's larger space).
LAYOUT_TRIANGLE = {"pair": "released", "grid2": "ours", "grid3": "ours"}
MIN_OBJECT_PX = 8.0     # the smallest object box (output pixels) we agree to draw
CONCEPT_ORDER = ("size", "colour", "shape", "pattern colour", "pattern")


# ---------------------------------------------------------------- object spaces

def _check_names(argument: str, names, known) -> tuple:
    names = tuple(checks.sequence(names, argument))
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"{argument}: unknown name(s) {bad}; known: {tuple(known)}")
    return names


def make_space(colours=tuple(CLEVR_COLOURS), shapes=SHAPES[:3], sizes=None, pattern_colours=None,
               patterns=None) -> ObjectSpace:
    """A drawable object space from value names (unknown names raise ValueError naming the argument).

    Concepts appear only when given: colour and shape always; size, pattern colour and pattern optional
    (pattern colour and pattern go together).
    """
    concepts = {"colour": _check_names("colours", colours, COLOURS), "shape": _check_names("shapes", shapes, SHAPES)}
    if sizes is not None:
        concepts["size"] = _check_names("sizes", sizes, SIZES)
    if (pattern_colours is None) != (patterns is None):
        raise ValueError("pattern_colours, patterns: give both or neither")
    if patterns is not None:
        concepts["pattern colour"] = _check_names("pattern_colours", pattern_colours, COLOURS)
        concepts["pattern"] = _check_names("patterns", patterns, PATTERNS)
    return ObjectSpace(tuple(concepts), tuple(concepts.values()))


def clevr2d() -> ObjectSpace:
    """The paper's CLEVR-2D: 8 CLEVR colours x (square, triangle, circle) = 24 objects."""
    return make_space(tuple(CLEVR_COLOURS), SHAPES[:3])


def rich_space(n_colours=12, n_shapes=7, n_sizes=3, n_pattern_colours=12, n_patterns=4) -> ObjectSpace:
    """Our larger space: the first n values of each list; default 12*7*3*12*4 = 12,096 objects (>= 10^4)."""
    for name, n, top in (("n_colours", n_colours, len(COLOURS)), ("n_shapes", n_shapes, len(SHAPES)),
                         ("n_sizes", n_sizes, len(SIZES)), ("n_pattern_colours", n_pattern_colours, len(COLOURS)),
                         ("n_patterns", n_patterns, len(PATTERNS))):
        checks.integer(n, name, 1, top)
    names = list(COLOURS)
    return make_space(names[:n_colours], SHAPES[:n_shapes], list(SIZES)[:n_sizes], names[:n_pattern_colours],
                      PATTERNS[:n_patterns])


# ---------------------------------------------------------------- drawing one object

def _shape_mask(shape: str, x: np.ndarray, y: np.ndarray, r: float, triangle: str = "ours") -> np.ndarray:
    """Inside test of a shape of half-width r centred at 0 on coordinate grids x, y (y down); a triangle is
    ``TRIANGLES[triangle]``."""
    if shape == "square":
        return np.maximum(abs(x), abs(y)) <= r
    if shape == "circle":
        return x * x + y * y <= r * r
    if shape == "diamond":
        return abs(x) + abs(y) <= r
    if shape == "cross":
        t = r / 3
        return ((abs(x) <= t) & (abs(y) <= r)) | ((abs(y) <= t) & (abs(x) <= r))
    if shape == "triangle":
        verts = [(vx * r, vy * r) for vx, vy in TRIANGLES[triangle]]
    elif shape == "hexagon":
        verts = [(r * math.cos(a), r * math.sin(a)) for a in np.arange(6) * math.pi / 3]
    elif shape == "star":
        verts = [((r if i % 2 == 0 else 0.45 * r) * math.sin(i * math.pi / 5),
                  -(r if i % 2 == 0 else 0.45 * r) * math.cos(i * math.pi / 5)) for i in range(10)]
    else:
        raise ValueError(f"shape={shape!r}: not one of {SHAPES}")
    # polygon in grid index units: x, y are regular grids, map vertices to (row, col)
    x0, dx = x[0, 0], x[0, 1] - x[0, 0]
    y0, dy = y[0, 0], y[1, 0] - y[0, 0]
    rc = [((vy - y0) / dy, (vx - x0) / dx) for vx, vy in verts]
    return polygon2mask(x.shape, rc)


def _triangle_reach(triangle: str) -> float:
    """How far a triangle's vertices reach from the centre, in units of the half-width (>= 1)."""
    return max(1.0, *(abs(v) for vertex in TRIANGLES[triangle] for v in vertex))


def _pattern_mask(pattern: str, shape: str, x, y, r, triangle: str = "ours") -> np.ndarray:
    if pattern == "core":
        return _shape_mask(shape, x, y, 0.5 * r, triangle)
    if pattern == "band":
        return abs(y) <= 0.22 * r
    if pattern == "stripe":
        return abs(x) <= 0.22 * r
    if pattern == "half":
        return x < 0
    raise ValueError(f"pattern={pattern!r}: not one of {PATTERNS}")


def _outline_px(res: int) -> float:
    """Outline width in output pixels: 2 px at 224 (Paper B's CLEVR-2D), at least 1 px to stay visible (our choice)."""
    return max(2.0 * res / 224, 1.0)


@functools.lru_cache(maxsize=8192)
def _stamp(space: ObjectSpace, object_id: int, layout: str, slot: int, res: int):
    """One object drawn alone, on its crop only: (crop (row slice, col slice), coverage (h, w) float64,
    colour sum (h, w, 3) float64); cached (crops keep the cache small).

    coverage = fraction of each output pixel under the object's footprint; colour sum = the block mean of the
    object's colour over its footprint (zero elsewhere), so image = canvas * (1 - sum cov) + sum colour sums.
    """
    centres, box = LAYOUTS[layout]
    s = SUPERSAMPLE
    named = space.named(object_id)
    half = 0.5 * box * res * SIZES.get(named.get("size", "large"), 1.0)   # output pixels
    cx, cy = centres[slot][0] * res, centres[slot][1] * res
    triangle = LAYOUT_TRIANGLE[layout]
    # crop of whole output pixels around the object (a triangle may reach beyond the box)
    reach = half * (_triangle_reach(triangle) if named["shape"] == "triangle" else 1.0)
    c0, c1 = max(int(math.floor(cx - reach)) - 1, 0), min(int(math.ceil(cx + reach)) + 1, res)
    r0, r1 = max(int(math.floor(cy - reach)) - 1, 0), min(int(math.ceil(cy + reach)) + 1, res)
    # sub-pixel centres in output-pixel units, relative to the object centre
    xs = c0 + (np.arange((c1 - c0) * s) + 0.5) / s - cx
    ys = r0 + (np.arange((r1 - r0) * s) + 0.5) / s - cy
    x, y = np.meshgrid(xs, ys)
    foot = _shape_mask(named["shape"], x, y, half, triangle)
    w = _outline_px(res) * s
    inner = ndimage.distance_transform_edt(foot) > w
    rgb = np.zeros(foot.shape + (3,))
    rgb[inner] = COLOURS[named["colour"]]
    if "pattern" in named:
        pat = _pattern_mask(named["pattern"], named["shape"], x, y, half, triangle) & inner
        rgb[pat] = COLOURS[named["pattern colour"]]
        # a thin black edge where the pattern meets the fill (half the outline width)
        edge = pat & (ndimage.distance_transform_edt(~(inner & ~pat)) <= 0.5 * w)
        rgb[edge] = OUTLINE
    rgb[foot & ~inner] = OUTLINE
    rgb = rgb / 255.0
    shape = (r1 - r0, s, c1 - c0, s)
    cov = foot.reshape(shape).mean(axis=(1, 3))
    col = rgb.reshape(shape + (3,)).mean(axis=(1, 3))
    cov.flags.writeable = False
    col.flags.writeable = False
    return (slice(r0, r1), slice(c0, c1)), cov, col


# ---------------------------------------------------------------- captions

#: The most objects a scene holds (the largest layout's slots): a caption of more is refused.
MAX_OBJECTS = max(len(c) for c, _ in LAYOUTS.values())


def _scene_objects(space, objects) -> list:
    checks.instance(space, "space", ObjectSpace)
    objects = checks.sequence(objects, "objects", 1, MAX_OBJECTS)
    return [int(checks.index(o, f"objects[{i}]", space.n_objects, "the object space")) for i, o in enumerate(objects)]


def caption(space: ObjectSpace, objects) -> str:
    """Caption of a scene, objects in slot order joined by "and": "a red square and a blue circle"."""
    objects = _scene_objects(space, objects)
    return " and ".join(" ".join(w for w, _ in object_phrase(space, o)) for o in objects)


def caption_tokens(space: ObjectSpace, objects):
    """(ids (L,), token_object (L,), token_concept (L,)) with <bos>/<eos>; -1 where a token names no object
    (object index) or no concept (concept index)."""
    objects = _scene_objects(space, objects)
    vocab = vocabulary(space)
    ids, tob, tcon = [vocab.bos_id], [-1], [-1]
    for i, o in enumerate(objects):
        if i:
            ids.append(vocab.index["and"]); tob.append(-1); tcon.append(-1)
        for w, c in object_phrase(space, o):
            ids.append(vocab.index[w]); tob.append(i if c else -1)
            tcon.append(space.concept_index(c) if c else -1)
    ids.append(vocab.eos_id); tob.append(-1); tcon.append(-1)
    return np.array(ids), np.array(tob), np.array(tcon)


# ---------------------------------------------------------------- scenes

@dataclass(frozen=True)
class PatchGrid:
    """Patch view of a scene: ``patches`` (P, p*p*3) row-major over the grid, ``labels`` (P,) object index or -1
    (background: the largest share of the patch, background counted as one more "object"), ``fractions``
    (P, n_obj) the fraction of each patch's pixels in each object's mask, ``grid`` (rows, cols), ``size`` p."""

    patches: np.ndarray
    labels: np.ndarray
    fractions: np.ndarray
    grid: tuple
    size: int


@dataclass(frozen=True)
class Scene:
    """One rendered scene. Shapes: image (H, W, 3) float32 in [0, 1]; masks (n_obj, H, W) bool (disjoint);
    values (n_obj, C) value indices; objects (n_obj,) ids; slots (n_obj,) slot indices; token_ids (L,) with
    <bos>/<eos>; token_object / token_concept (L,) which object / concept each token names (-1: none)."""

    image: np.ndarray
    masks: np.ndarray
    objects: tuple
    slots: tuple
    values: np.ndarray
    caption: str
    token_ids: np.ndarray
    token_object: np.ndarray
    token_concept: np.ndarray
    space: ObjectSpace = field(repr=False)

    def patches(self, p: int) -> PatchGrid:
        """Cut the image into p x p patches (the resolution must be a multiple of p)."""
        return patchify(self.image, self.masks, p)


def patchify(image: np.ndarray, masks: np.ndarray, p: int) -> PatchGrid:
    """image (H, W, 3), masks (n, H, W) -> :class:`PatchGrid` of p x p patches."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[-1] != 3 or image.dtype.kind != "f":
        raise ValueError(f"image must be a float array (H, W, 3), got {image.dtype} {image.shape}")
    if image.size and not (np.isfinite(image).all() and image.min() >= 0 and image.max() <= 1):
        raise ValueError("image must hold finite values in [0, 1]")
    masks = np.asarray(masks)
    if masks.ndim != 3 or masks.shape[1:] != image.shape[:2]:
        raise ValueError(f"masks must have shape (n, {image.shape[0]}, {image.shape[1]}), got {masks.shape}")
    if masks.dtype != bool and (masks.dtype.kind not in "iuf" or not np.isin(masks, (0, 1)).all()):
        raise ValueError(f"masks must be bool (or 0/1), got {masks.dtype} with other values")
    p = checks.integer(p, "p")
    h, w, _ = image.shape
    if p < 1 or h % p or w % p:
        raise ValueError(f"p={p}: the image is {h}x{w}, need a patch size dividing both")
    gh, gw = h // p, w // p
    patches = image.reshape(gh, p, gw, p, 3).transpose(0, 2, 1, 3, 4).reshape(gh * gw, p * p * 3)
    frac = masks.reshape(len(masks), gh, p, gw, p).mean(axis=(2, 4)).reshape(len(masks), -1).T
    full = np.concatenate([frac, 1 - frac.sum(1, keepdims=True)], axis=1)
    lab = full.argmax(1)
    lab[lab == len(masks)] = -1
    return PatchGrid(patches, lab, frac, (gh, gw), p)


def check_resolution(res: int, layout: str, space: ObjectSpace | None = None) -> int:
    """``res`` as an int (:func:`compbook.checks.integer`: ``64.0`` is 64), after ValueError unless it draws this
    layout's smallest object at least MIN_OBJECT_PX wide, within the render budget."""
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r}: not one of {tuple(LAYOUTS)}")
    res = checks.integer(res, "resolution")
    if space is not None:
        checks.instance(space, "space", ObjectSpace)
    smallest = 1.0
    if space is not None and "size" in space.concepts:
        smallest = min(SIZES[v] for v in space.values[space.concept_index("size")])
    px = LAYOUTS[layout][1] * res * smallest
    if px < MIN_OBJECT_PX:
        raise ValueError(f"resolution={res!r}: too small to draw the shapes of layout {layout!r} "
                         f"(objects would be {px:.1f} px wide, need >= {MIN_OBJECT_PX:g})")
    checks.check_render_size(res, scene_bytes(1, layout) / 8, 8, f"a {layout!r} scene at {res} px")
    return res


def scene_bytes(res: int, layout: str = "pair") -> float:   # float64 coverage per slot, colour, image, a crop
    return 8.0 * (len(LAYOUTS[layout][0]) + 5 + 12 * (LAYOUTS[layout][1] * SUPERSAMPLE) ** 2) * float(res) ** 2


def _check_scene(space, objects, slots, layout, res):
    checks.instance(space, "space", ObjectSpace)
    res = check_resolution(res, layout, space)
    n_slots = len(LAYOUTS[layout][0])
    objects = tuple(int(o) for o in checks.integers(objects, "objects", ndim=1))
    if not 1 <= len(objects) <= n_slots:
        raise ValueError(f"objects: {len(objects)} objects, layout {layout!r} has {n_slots} slots")
    slots = tuple(range(len(objects))) if slots is None else \
        tuple(int(s) for s in checks.integers(slots, "slots", ndim=1))
    if len(slots) != len(objects) or len(set(slots)) != len(slots) or not all(0 <= s < n_slots for s in slots):
        raise ValueError(f"slots={slots!r}: need {len(objects)} distinct slots in 0..{n_slots - 1}")
    for o in objects:
        if not 0 <= o < space.n_objects:
            raise ValueError(f"objects: id {o} outside 0..{space.n_objects - 1}")
    return objects, slots, res


def _compose(space, objects, slots, layout, res):
    cov = np.zeros((len(objects), res, res))
    col = np.zeros((res, res, 3))
    for i, (o, s) in enumerate(zip(objects, slots)):
        crop, c, rgb = _stamp(space, o, layout, s, res)
        cov[i][crop] = c
        col[crop] += rgb
    img = np.asarray(CANVAS, float) / 255 * (1 - cov.sum(0))[..., None] + col
    return np.clip(img, 0, 1).astype(np.float32), cov


def render_scene(space: ObjectSpace, objects, res: int = 64, layout: str = "pair", slots=None) -> Scene:
    """Draw one scene: ``objects`` ids in ``slots`` (default: slots 0..n-1) of ``layout`` at res x res.

    ``render_scene(clevr2d(), (5, 13), res=224)`` is the paper's two-object CLEVR-2D scene.
    """
    objects, slots, res = _check_scene(space, objects, slots, layout, res)
    image, cov = _compose(space, objects, slots, layout, res)
    ids, tob, tcon = caption_tokens(space, objects)
    return Scene(image, cov >= 0.5, objects, slots, space.object_values(np.array(objects)),
                 caption(space, objects), ids, tob, tcon, space)


def render_images(space: ObjectSpace, scenes, res: int = 64, layout: str = "pair", slots=None) -> np.ndarray:
    """Images only, for training: ``scenes`` (N, k) object ids -> (N, res, res, 3) float32."""
    checks.instance(space, "space", ObjectSpace)
    res = check_resolution(res, layout, space)
    per_image, one = 12.0 * res * res, scene_bytes(res, layout)     # float32 images, one scene's render buffers
    if isinstance(scenes, np.ndarray) and scenes.ndim == 2:         # the budget before any copy of a large array
        checks.check_budget(per_image * len(scenes) + one, f"render_images: {len(scenes)} images at {res} px")
    scenes = checks.integers(scenes, "scenes")
    if scenes.ndim != 2 or not scenes.size:
        raise ValueError(f"scenes: need an (N, k) array of object ids, N, k >= 1, got shape {scenes.shape}")
    checks.check_budget(per_image * len(scenes) + one + 2 * scenes.nbytes, f"render_images: {len(scenes)} images")
    checks.index(scenes, "scenes", space.n_objects, "the object space")
    out = np.empty((len(scenes), res, res, 3), np.float32)
    for i, objs in enumerate(scenes):
        objs, sl, _ = _check_scene(space, objs, slots, layout, res)
        out[i] = _compose(space, objs, sl, layout, res)[0]
    return out


def all_pairs(object_ids) -> np.ndarray:
    """Every ordered pair (repeats allowed) of the given objects -> (n^2, 2); CLEVR-2D: 576 scenes."""
    ids = checks.integers(object_ids, "object_ids", 0, ndim=1, min_size=1)
    checks.check_budget(48.0 * len(ids) ** 2, f"all_pairs of {len(ids)} objects")
    return np.stack(np.meshgrid(ids, ids, indexing="ij"), -1).reshape(-1, 2)


# ---------------------------------------------------------------- sampling scenes

def sample_scenes(object_ids, n_scenes: int, n_objects, seed: int = 0, most: int | None = None) -> list:
    """``n_scenes`` scenes of objects drawn (with replacement) from ``object_ids``; ``n_objects`` an int or a
    (low, high) range of objects per scene (inclusive), high at most ``most`` (e.g. a layout's slots) when given.
    Deterministic in ``seed``."""
    n_scenes = checks.integer(n_scenes, "n_scenes")
    seed = checks.seed(seed)
    pair = [n_objects] * 2 if np.isscalar(n_objects) else checks.sequence(n_objects, "n_objects", 2, 2)
    lo, hi = (checks.integer(v, "n_objects", 1) for v in pair)
    if lo < 1 or hi < lo or most is not None and hi > most:
        raise ValueError(f"n_objects={n_objects!r}: need 1 <= low <= high" + (f" <= {most}" if most else ""))
    ids = checks.integers(object_ids, "object_ids", 0, ndim=1, min_size=1)
    checks.check_budget((72.0 + 40 * hi) * n_scenes, f"sample_scenes: {n_scenes} scenes of up to {hi} objects")
    rng = np.random.default_rng(seed)
    return [tuple(int(o) for o in rng.choice(ids, size=rng.integers(lo, hi + 1))) for _ in range(n_scenes)]
