"""Absolute, semantic CPU judges: "is this a skull?" from the image and the concept alone (chapter 5).

SSIM against the network's own unperturbed render (:class:`compbook.cppn.judges.base.SSIMJudge`) answers "is this the
same picture?". The judges here answer the paper's question, "is this still a <concept>?", from the image and the
concept's name only (no ``reference`` argument); they are stand-ins for the paper's VLM judge, and
``data/semantic/choice.json`` records how each agrees with the model labellers' blind verdicts
(:mod:`compbook.cppn.audit.labelling`).

- :class:`ReferenceJudge`: multi-scale structural comparison with the concept's Picbreeder reference render (the
  float64 genome render at 64 px): RGB SSIM at 64, 32 and 16 px, each the best over small shifts, averaged;
  "yes" when the score is at least a threshold. No weights.
- :class:`ClassifierJudge`: a small CNN with one logit per concept, trained (:func:`train_classifier`, script:
  ``python -m compbook.cppn semantic train``) on declared transformations of the three reference renders only
  (:mod:`compbook.cppn.judges.augment`); weights in ``data/semantic/``. "Yes" when the concept's probability is at least
  a threshold.

Every judge takes images ``(N, H, W, 3)`` floats in [0, 1] (other sizes than 64x64 are resized) and a concept
in :data:`CONCEPTS`; anything else raises ``ValueError`` naming the argument. Thresholds are chosen on the
calibration half of the first labeller's verdicts and the default judge on the other half
(``python -m compbook.cppn semantic choose``), never by the Picbreeder-vs-SGD scores they give.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ...results import checkpoints
from ... import checks, config
from ... import results
from . import base
from ...results import door

CONCEPTS = ("skull", "butterfly", "apple")
RES = 64
FOLDER = "semantic"


# -- input checks and resizing ---------------------------------------------------------------------------------
def check_known_concept(concept) -> str:
    """``concept`` if it is one of :data:`CONCEPTS`, else ``ValueError`` naming it."""
    if concept not in CONCEPTS:
        raise ValueError(f"concept must be one of {CONCEPTS}, got {concept!r}")
    return concept


def prepare(images) -> torch.Tensor:
    """``images`` ``(N, H, W, 3)`` in [0, 1] (checked by :func:`compbook.cppn.judges.base.check_images`) as float32
    ``(N, 3, 64, 64)``; other sizes are resized (area when shrinking, bilinear when growing)."""
    if isinstance(images, torch.Tensor) and images.ndim == 4:
        # the checked and float32 copies (8 bytes a value at most, each), and the resized images and their clamp
        checks.check_budget(16.0 * images.numel() + 4.0 * 2 * len(images) * 3 * RES * RES,
                            f"prepare: {len(images)} images of {images.shape[1]} x {images.shape[2]} px")
    images = base.check_images(images)
    if not len(images):
        raise ValueError("images must hold at least one image, got (0, H, W, 3)")
    x = images.detach().float().cpu().permute(0, 3, 1, 2)
    if x.shape[-2:] != (RES, RES):
        mode = "area" if min(x.shape[-2:]) >= RES else "bilinear"
        x = F.interpolate(x, size=(RES, RES), mode=mode, **({} if mode == "area" else {"align_corners": False}))
    return x.clamp(0, 1)


@lru_cache(maxsize=None)
def reference(concept: str) -> torch.Tensor:
    """The concept's Picbreeder reference render ``(3, 64, 64)`` float32 (the genome's float64 render)."""
    from .. import picbreeder
    img = picbreeder.render(picbreeder.load_genome(check_known_concept(concept)), RES)
    return torch.from_numpy(img).float().permute(2, 0, 1).contiguous()


# -- multi-scale structural comparison ------------------------------------------------------------------------------
def ssim_batched(x: torch.Tensor, y: torch.Tensor, win: int = 7) -> torch.Tensor:
    """Mean SSIM ``(N,)`` of ``x`` and ``y`` ``(N, C, H, W)`` in [0, 1], uniform ``win`` window, channels
    averaged (skimage's ``structural_similarity`` with ``data_range=1``, computed in torch, in a batch)."""
    x = checks.tensor(x, "x", (None, None, None, None), low=0, high=1)
    y = checks.tensor(y, "y", tuple(x.shape), low=0, high=1)
    win = checks.integer(win, "win", 2, min(x.shape[-2:]))
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    pool = lambda t: F.avg_pool2d(t, win, stride=1)   # noqa: E731
    mx, my = pool(x), pool(y)
    n = win * win
    cov = n / (n - 1)                                 # skimage's sample covariance
    vx, vy = cov * (pool(x * x) - mx * mx), cov * (pool(y * y) - my * my)
    vxy = cov * (pool(x * y) - mx * my)
    s = ((2 * mx * my + c1) * (2 * vxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.mean(dim=(1, 2, 3))


def _shifted(ref: torch.Tensor, shift: int) -> torch.Tensor:
    """``ref`` ``(C, H, W)`` moved by every ``(dy, dx)`` in ``[-shift, shift]^2``: ``(S, C, H, W)`` (edge pad)."""
    c, h, w = ref.shape
    pad = F.pad(ref[None], (shift,) * 4, mode="replicate")[0]
    return torch.stack([pad[:, shift + dy:shift + dy + h, shift + dx:shift + dx + w]
                        for dy in range(-shift, shift + 1) for dx in range(-shift, shift + 1)])


def reference_scores(images, concept: str, scales=(64, 32, 16), shift: int = 2) -> torch.Tensor:
    """Multi-scale score ``(N,)``: for each scale, the images and the reference shrunk (area) to it, the best
    RGB SSIM over shifts of the reference up to ``shift`` pixels, then the mean over scales."""
    check_known_concept(concept)
    _check_scales(scales, shift)
    return image_reference_scores(images, reference(concept), scales, shift)


def _check_scales(scales, shift) -> tuple[tuple[int, ...], int]:
    """``scales`` as a non-empty tuple of sizes in ``[5, 64]`` (the SSIM window must fit), ``shift`` an int in
    ``[0, 8]`` (our bound: a shift beyond 8 px no longer compares the same drawing)."""
    out = tuple(checks.integer(v, f"scales[{i}]", 5, RES) for i, v in enumerate(checks.sequence(scales, "scales")))
    return out, checks.integer(shift, "shift", 0, 8)


def image_reference_scores(images, ref: torch.Tensor, scales=(64, 32, 16), shift: int = 2,
                           chunk: int = 256) -> torch.Tensor:
    """:func:`reference_scores` against any reference image ``ref`` ``(3, 64, 64)`` in [0, 1] (chapter 9 uses
    an unknown target itself). Equal to the naive form (``ssim_batched`` per shift, a test checks it) but
    computes each image's and each shifted reference's local statistics once, with box filters as banded
    matmuls: about 10x faster. ``chunk`` images at a time bound the memory."""
    if not isinstance(ref, torch.Tensor) or tuple(ref.shape) != (3, RES, RES):
        shape = tuple(ref.shape) if isinstance(ref, torch.Tensor) else type(ref).__name__
        raise ValueError(f"ref must be a tensor (3, {RES}, {RES}), got {shape}")
    checks.tensor(ref, "ref", (3, RES, RES), low=0, high=1)
    scales, shift = _check_scales(scales, shift)
    chunk = checks.integer(chunk, "chunk")
    x = prepare(images)
    ref = ref.detach().float().cpu()
    return torch.cat([_ms_scores(x[s:s + chunk], ref, tuple(scales), int(shift))
                      for s in range(0, len(x), chunk)]) if len(x) else torch.zeros(0)


@lru_cache(maxsize=None)
def _band(n: int, win: int) -> torch.Tensor:
    """``(n - win + 1, n)`` float32 matrix whose row ``i`` averages entries ``i .. i + win - 1``."""
    m = n - win + 1
    idx = torch.arange(m)[:, None] + torch.arange(win)[None]
    return torch.zeros(m, n).scatter_(1, idx, 1.0 / win)


def _box(t: torch.Tensor, win: int) -> torch.Tensor:
    """Uniform ``win`` x ``win`` mean over the last two dims, valid part (= ``avg_pool2d(t, win, 1)`` up to
    float rounding), as two banded matmuls: ~10x faster than ``avg_pool2d`` on CPU."""
    b = _band(t.shape[-1], win)
    return b @ t @ b.T


def _ms_scores(x: torch.Tensor, ref: torch.Tensor, scales, shift: int) -> torch.Tensor:
    """The multi-scale shifted SSIM of ``x`` ``(N, 3, 64, 64)`` against ``ref`` ``(3, 64, 64)``: ``(N,)``."""
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    total = torch.zeros(len(x))
    for s in scales:
        xs = F.interpolate(x, size=(s, s), mode="area") if s != RES else x
        rs = F.interpolate(ref[None], size=(s, s), mode="area")[0] if s != RES else ref
        refs = _shifted(rs, shift)                                       # (S, 3, s, s)
        win = 7 if s >= 32 else 5
        cov = win * win / (win * win - 1)                                # skimage's sample covariance
        mx = _box(xs, win)
        vx_c2 = cov * (_box(xs * xs, win) - mx * mx) + c2              # vx + c2
        mx2 = mx * mx
        my = _box(refs, win)
        vy = cov * (_box(refs * refs, win) - my * my)
        best = None
        for k in range(len(refs)):   # SSIM map: (2 mx my + c1)(2 vxy + c2) / ((mx2 + my2 + c1)(vx + vy + c2))
            vxy2 = torch.addcmul(2 * cov * _box(xs * refs[k], win) + c2, mx, my[k], value=-2 * cov)
            num = vxy2.mul_(torch.addcmul(torch.full_like(mx[:1], c1), mx, my[k], value=2))
            den = (mx2 + (my[k] * my[k] + c1)).mul_(vx_c2 + vy[k])
            v = num.div_(den).mean(dim=(1, 2, 3))
            best = v if best is None else torch.maximum(best, v)
        total += best
    return total / len(scales)


class _ThresholdJudge:
    """A judge that says yes when ``self.scores(images, concept)`` is at least ``self.threshold``; the score is
    kept in ``last_details`` under ``detail``. ``reference`` is ignored: these judges never need it."""

    detail = "score"

    def __call__(self, images, concept, *, reference=None, questions=None) -> torch.Tensor:
        s = self.scores(images, concept)
        if questions is not None:
            base.check_questions(questions, len(s))
        self.last_details = [{self.detail: round(float(v), 4)} for v in s]
        return s >= self.threshold

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity})"


class ReferenceJudge(_ThresholdJudge):
    """"Is this a <concept>?": multi-scale SSIM with the concept's reference render >= ``threshold``."""

    kind = "reference"

    def __init__(self, threshold: float = 0.5, scales=(64, 32, 16), shift: int = 2):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not -1 <= threshold <= 1:
            raise ValueError(f"threshold must be a number in [-1, 1], got {threshold!r}")
        scales, shift = _check_scales(scales, shift)
        self.threshold, self.scales, self.shift = float(threshold), tuple(scales), int(shift)
        self.identity = (f"semantic-reference:ms-ssim-rgb|scales={list(self.scales)}|shift={self.shift}|"
                         f"threshold={self.threshold!r}")
        self.last_details: list[dict] = []

    def scores(self, images, concept: str) -> torch.Tensor:
        return reference_scores(images, concept, self.scales, self.shift)



class ImageReferenceJudge(_ThresholdJudge):
    """"Is this still the target?": :class:`ReferenceJudge`'s multi-scale comparison against a given image
    ``target`` ``(H, W, 3)`` in [0, 1] (resized to 64 px) instead of a concept's Picbreeder render. Chapter 9's
    choice for targets that are none of :data:`CONCEPTS` (a photograph, a two-object scene); its agreement with
    the labellers' verdicts is *not* measured (they cover the three concepts only). ``concept`` is only a label;
    ``threshold`` defaults to the default judge's (:func:`default_judge`)."""

    kind = "image-reference"

    def __init__(self, target, threshold: float | None = None, scales=(64, 32, 16), shift: int = 2):
        if threshold is None:                            # the default judge's (choice.json)
            threshold = default_judge().threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not -1 <= threshold <= 1:
            raise ValueError(f"threshold must be a number in [-1, 1], got {threshold!r}")
        scales, shift = _check_scales(scales, shift)
        t = checks.tensor(target, "target", finite=False)
        if t.ndim != 3:
            raise ValueError(f"target must be one image (H, W, 3), got shape {tuple(t.shape)}")
        self.ref = prepare(t[None])[0]                                   # (3, 64, 64)
        self.threshold, self.scales, self.shift = float(threshold), tuple(scales), int(shift)
        digest = hashlib.sha256(self.ref.numpy().tobytes()).hexdigest()[:12]
        self.identity = (f"semantic-image-reference:ms-ssim-rgb@{digest}|scales={list(self.scales)}|"
                         f"shift={self.shift}|threshold={self.threshold!r}")
        self.last_details: list[dict] = []

    def scores(self, images, concept: str) -> torch.Tensor:
        base.check_concept(concept)
        return image_reference_scores(images, self.ref, self.scales, self.shift)


# -- the classifier ------------------------------------------------------------------------------------------------
class ConceptNet(nn.Module):
    """A small CNN: ``(N, 3, 64, 64)`` -> logits ``(N, 3)``, one per concept of :data:`CONCEPTS` (input shrunk
    to 32x32, three conv-ReLU-maxpool blocks, 16/32/64 channels, a linear head)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(64 * 4 * 4, 64), nn.ReLU(),
                                  nn.Linear(64, len(CONCEPTS)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(F.avg_pool2d(x, 2)))


#: the checkpoint format of the concept CNN (:mod:`compbook.results.checkpoints`)
WEIGHTS_FORMAT = "compbook-concept-cnn/1"


def weights_path(folder=None) -> Path:
    """``data/semantic/concept_cnn.safetensors`` (or under ``folder``)."""
    _check_folder(folder)
    if folder is None:
        return door.local_path(f"{FOLDER}/concept_cnn.safetensors")
    return Path(folder) / "concept_cnn.safetensors"


def load_classifier(path=None) -> tuple[ConceptNet, str]:
    """The trained :class:`ConceptNet` (eval mode) and the first 12 hex digits of its weights file's sha256."""
    path = Path(path) if path is not None else weights_path()
    if path.is_dir():
        raise ValueError(f"path {path} is a directory, not the classifier's weights file")
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist (train it: python -m compbook.cppn semantic train)")
    if not path.with_suffix(".json").is_file():
        raise ValueError(f"{path}: its sidecar {path.with_suffix('.json').name} is missing (not a compbook "
                         f"checkpoint, or half copied)")
    net = ConceptNet()
    net.load_state_dict(checkpoints.load(path, format=WEIGHTS_FORMAT, names=net.state_dict())[0])
    return net.eval(), hashlib.sha256(path.read_bytes()).hexdigest()[:12]


class ClassifierJudge(_ThresholdJudge):
    """"Is this a <concept>?": the trained CNN's probability for the concept >= ``threshold``."""

    kind = "classifier"
    detail = "p"

    def __init__(self, threshold: float = 0.5, path=None):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
        self.net, digest = load_classifier(path)
        self.threshold = float(threshold)
        self.identity = f"semantic-classifier:concept_cnn@{digest}|threshold={self.threshold!r}"
        self.last_details: list[dict] = []

    def scores(self, images, concept: str) -> torch.Tensor:
        return classifier_scores(images, concept, self.net)


@torch.no_grad()
def classifier_scores(images, concept: str, net: ConceptNet | None = None) -> torch.Tensor:
    """The CNN's probability ``(N,)`` that each of ``images`` shows ``concept`` (``net``: default the stored
    one, :func:`load_classifier`)."""
    j = CONCEPTS.index(check_known_concept(concept))
    x = prepare(images)
    net = load_classifier()[0] if net is None else checks.instance(net, "net", ConceptNet)
    return torch.cat([torch.sigmoid(net(x[s:s + 256])[:, j]) for s in range(0, len(x), 256)]) \
        if len(x) else torch.zeros(0)



def train_classifier(steps: int = 3000, batch: int = 96, lr: float = 2e-3, seed: int = 0,
                     progress: bool = True) -> tuple[ConceptNet, list[float]]:
    """Train :class:`ConceptNet` on :func:`compbook.cppn.judges.augment.batch` (positives: transformations of each
    reference render; negatives: the declared list there). Returns the net (on the CPU; it trains on
    :func:`compbook.config.device`, a GPU in full mode) and the loss every 100 steps."""
    steps = checks.integer(steps, "steps")
    batch = checks.integer(batch, "batch")
    lr = checks.real(lr, "lr", 0, low_open=True)
    seed = checks.seed(seed)
    checks.boolean(progress, "progress")
    # one batch of 64 px RGB images with the CNN's activations (about 30 values per input value, float32)
    checks.check_budget(4.0 * 31 * batch * 3 * RES * RES, f"train_classifier: batches of {batch}")
    from tqdm.auto import tqdm
    from . import augment
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    refs = torch.stack([reference(c) for c in CONCEPTS])
    pool = augment.random_cppn_pool(seed=seed)
    dev = config.device()
    net = ConceptNet().to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    curve, running = [], 0.0
    for step in tqdm(range(steps), disable=not progress, desc="concept cnn"):
        x, y = augment.batch(refs, pool, batch, g)
        loss = F.binary_cross_entropy_with_logits(net(x.to(dev)), y.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        running += float(loss.detach())
        if (step + 1) % 100 == 0:
            curve.append(round(running / 100, 5))
            running = 0.0
    return net.cpu().eval(), curve


# -- the default ---------------------------------------------------------------------------------------------------
def _check_folder(folder):
    if folder is not None and not isinstance(folder, (str, os.PathLike)):
        raise ValueError(f"folder must be a path (str or os.PathLike), got {type(folder).__name__}")


def choice_path(folder=None) -> Path:
    """``data/semantic/choice.json`` (or under ``folder``): the stored one, fetched outside a checkout, else where
    ``python -m compbook.cppn semantic choose`` writes it."""
    _check_folder(folder)
    return door.local_path(f"{FOLDER}/choice.json") if folder is None else Path(folder) / "choice.json"


#: the candidate kinds ``choice.json`` may name
CANDIDATE_KINDS = ("reference", "classifier")
#: each kind's threshold grid (the calibration half picks one value of it, :func:`compbook.cppn.audit.agreement.choose`)
THRESHOLD_GRID = {"reference": [round(0.05 + 0.025 * i, 3) for i in range(37)],
                  "classifier": [round(0.05 + 0.05 * i, 3) for i in range(19)]}


def read_choice(path=None) -> dict:
    """``choice.json`` (default :func:`choice_path`), checked: a JSON object whose ``thresholds`` name known kinds
    with values from :data:`THRESHOLD_GRID`, whose ``chosen`` is one of them, and whose
    ``chosen`` is what the stored held-out rows give by the rule (best balanced accuracy, kappa on ties). A file
    truncated, edited by hand (a threshold or the choice changed) or of another config is refused."""
    path = choice_path() if path is None else path
    if not Path(path).exists():
        raise FileNotFoundError(f"{path} does not exist (make it: python -m compbook.cppn semantic choose)")
    data = results.json_file(path, "semantic choice file")
    th, chosen, tables = data.get("thresholds"), data.get("chosen"), data.get("tables")
    if not isinstance(th, dict) or not th or not isinstance(tables, dict):
        raise ValueError(f"{path}: needs 'thresholds' and 'tables' objects (is it data/semantic/choice.json?)")
    for k, t in th.items():
        if k not in CANDIDATE_KINDS:
            raise ValueError(f"{path}: unknown kind {k!r} in thresholds (known: {CANDIDATE_KINDS}); another config?")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or \
                not any(abs(t - g) < 1e-9 for g in THRESHOLD_GRID[k]):
            raise ValueError(f"{path}: threshold of {k!r} is {t!r}, not a value of its grid (edited by hand?)")
    if chosen not in th:
        raise ValueError(f"{path}: chosen={chosen!r} is not one of its thresholds {list(th)}")
    try:
        held = {k: tables[k][0] for k in th}
        best = max(th, key=lambda k: (held[k]["balanced_accuracy"], held[k]["kappa"]))
    except (KeyError, IndexError, TypeError) as e:
        raise ValueError(f"{path}: tables lack the held-out rows of {list(th)} ({e!r})") from None
    if any(held[k].get("split") != "held-out" for k in th) or best != chosen:
        raise ValueError(f"{path}: chosen={chosen!r} is not what its held-out rows give ({best!r}); edited by hand?")
    return data


def default_judge(path=None):
    """The judge ``choice.json`` names (chosen by agreement with the first labeller's held-out verdicts), with its
    threshold (``path``: another choice file; checked by :func:`read_choice`)."""
    choice = read_choice(path)
    kind = {"reference": ReferenceJudge, "classifier": ClassifierJudge}[choice["chosen"]]
    return kind(choice["thresholds"][choice["chosen"]])
