"""Wrong dtypes across the public functions of the three parts: a systematic set.

Each target is a public function with one array argument that must hold numbers of a kind (float32 where a
model's float32 weights read it, floating point where values are averaged, bools where they are masks, integer
ids where they index). Every target is called with that argument replaced by the same values in each wrong
dtype that applies to it, generated from one good value (``VARIANTS``):

- ``int``: int64 numbers where floats are expected;
- ``float64``: where a float32 model reads the values (a silent upcast or a dtype error deep inside);
- ``bool``: True/False where numbers are expected;
- ``object``: a NumPy object array of the same numbers (e.g. from a ragged list);
- ``strings``: strings where numbers are expected;
- ``complex``: complex numbers;
- ``float`` / ``fraction``: fractional floats where bools or integer ids are expected.

Each call must raise ``ValueError`` quickly, naming the argument (``tests/refusal.py``). The ids read
``<target> <variant>``.
"""

import types

import numpy as np
import pytest
import torch
from refusal import assert_refused

from compbook import scenes as S
from compbook.binding import decomposition, probes, recognition
from compbook.binding.encoders import clip_loss
from compbook.binding.data import PairData
from compbook.binding.encoders import EncoderConfig
from compbook.binding.train import DualTrainConfig, train_stack
from compbook.cppn.audit import agreement, labelling
from compbook.cppn.runs import experiments
from compbook.cppn import fer, twins
from compbook.cppn.judges import semantic
from compbook.sae import crossmodal, describe, interpret, metrics, regions, s2ae, topk, vlm

SECONDS = 1.0


def _as(value, kind):
    """``value`` (a float tensor or array) in the dtype ``kind`` names, the container kept."""
    t = torch.as_tensor(np.asarray(value, dtype=np.float32))
    out = {"int": lambda: (t * 3).round().long(), "float64": lambda: t.double(), "bool": lambda: t > 0.5,
           "complex": lambda: t.to(torch.cfloat), "float": lambda: t + 0.25, "fraction": lambda: t + 0.5,
           "object": lambda: np.array(t.tolist(), dtype=object),
           "strings": lambda: np.full(tuple(t.shape), "a")}[kind]()
    if kind in ("object", "strings") or isinstance(value, torch.Tensor):
        return out
    return out.numpy()


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_dtypes")
    (d / "keep.txt").write_text("unchanged")
    g = torch.Generator().manual_seed(0)
    ns = types.SimpleNamespace(dir=d, sae=topk.TopKSAE(8, 16, 2), x=torch.rand(6, 8, generator=g))
    ns.vcfg = vlm.TinyVLMConfig(vocab_size=17, patch_dim=48, grid=(8, 8), max_text=17, d_model=8, n_layers=1,
                                n_heads=2, d_mlp=16)
    ns.vlm = vlm.TinyVLM(ns.vcfg)
    ns.enc = EncoderConfig(res=16, channels=(4, 4, 4), d_out=8, vocab_size=8, max_len=16, width=8, layers=1,
                           heads=2)
    ns.space = S.clevr2d()
    scene = S.render_scene(ns.space, (0, 1), res=32)
    ns.image, ns.masks = scene.image, scene.masks
    return ns


def _pairs(images=None, captions=None):
    n = 4
    return PairData(torch.rand(n, 16, 16, 3) if images is None else images, np.zeros((n, 2), int),
                    torch.randint(1, 8, (n, 2, 16)) if captions is None else captions,
                    torch.zeros(n, 16, dtype=torch.long), torch.zeros(n, dtype=torch.bool))


FLOATS = ("int", "bool", "object", "strings", "complex")          # where any real floating values are expected
FLOAT32 = FLOATS + ("float64",)                                  # where a float32 model reads the values
NUMBERS = ("object", "strings", "complex")                       # where any real numbers are expected
MASKS = ("float", "object", "strings")                           # where bools are expected
IDS = ("fraction", "bool", "object", "strings", "complex")       # where integer ids are expected

#: target -> (the good value, the call with the value x in place, the variants that apply)
TARGETS = {
    # -- Part C
    "TopKSAE.encode x": (lambda c: c.x, lambda c, x: c.sae.encode(x), FLOATS),
    "TopKSAE.forward x": (lambda c: c.x, lambda c, x: c.sae(x), FLOATS),
    "fvu x": (lambda c: c.x, lambda c, x: topk.fvu(x, c.x), NUMBERS + ("bool",)),
    "SAEData acts": (lambda c: torch.rand(2, 5, 8), lambda c, x: s2ae.SAEData(
        x, torch.ones(2, 5, dtype=torch.bool), torch.arange(4), (2, 2)), FLOAT32),
    "SAEData valid": (lambda c: torch.ones(2, 5), lambda c, x: s2ae.SAEData(
        torch.rand(2, 5, 8), x, torch.arange(4), (2, 2)), MASKS),
    "image_attention attentions": (lambda c: torch.rand(1, 1, 1, 6, 6), lambda c, x: regions.image_attention(
        x, torch.arange(4)), FLOATS),
    "image_attention patch_idx": (lambda c: torch.arange(4.0), lambda c, x: regions.image_attention(
        torch.rand(1, 1, 1, 6, 6), x), IDS),
    "average_linkage dist": (lambda c: torch.rand(4, 4), lambda c, x: regions.average_linkage(x, 2),
                             ("bool",) + NUMBERS),
    "latent_iou z_img": (lambda c: torch.rand(2, 4, 3), lambda c, x: metrics.latent_iou(
        x, torch.ones(2, 1, 4, dtype=torch.bool)), NUMBERS),
    "top_shares codes": (lambda c: torch.rand(6, 4), lambda c, x: crossmodal.top_shares(
        x, torch.ones(6, 2, dtype=torch.bool), 2), ("bool",) + NUMBERS),
    "reference_scores z_img": (lambda c: torch.rand(2, 4, 3), lambda c, x: interpret.reference_scores(
        x, torch.zeros(2, 4, dtype=torch.long), [0]), ("bool",) + NUMBERS),
    "reference_scores regions": (lambda c: torch.zeros(2, 4), lambda c, x: interpret.reference_scores(
        torch.rand(2, 4, 3), x, [0]), IDS),
    "foreground image": (lambda c: np.random.default_rng(0).random((8, 8, 3)), lambda c, x: describe.foreground(x),
                         NUMBERS + ("bool",)),
    "extract patches": (lambda c: torch.rand(2, 64, 48), lambda c, x: vlm.extract(
        c.vlm, (x, torch.ones(2, 8, dtype=torch.long)), 1), FLOAT32),
    "extract tokens": (lambda c: torch.ones(2, 8), lambda c, x: vlm.extract(c.vlm, (torch.rand(2, 64, 48), x), 1),
                       IDS),
    "caption_loss tokens": (lambda c: torch.ones(2, 8), lambda c, x: vlm.caption_loss(
        c.vlm, torch.rand(2, 64, 48), x, 0), IDS),
    # -- Part B
    "clip_loss zi": (lambda c: torch.rand(4, 8), lambda c, x: clip_loss(x, torch.rand(4, 8), 1.0), FLOATS),
    "recognition scene_emb": (lambda c: np.random.default_rng(0).random((3, 4)), lambda c, x: recognition.recognise(
        x, np.eye(4), np.eye(3, 4, dtype=bool)), NUMBERS),
    "level2 U": (lambda c: np.random.default_rng(0).random((4, 3)), lambda c, x: decomposition.level2(
        x, np.zeros((4, 2), int)), ("bool",) + NUMBERS),
    "level2 values": (lambda c: np.zeros((4, 2)), lambda c, x: decomposition.level2(np.ones((4, 3)), x), IDS),
    "r2 Z": (lambda c: np.random.default_rng(0).random((4, 3)), lambda c, x: decomposition.r2(x, np.ones((4, 3))),
             NUMBERS),
    "retrieval Zhat": (lambda c: np.eye(3), lambda c, x: decomposition.retrieval(x, np.eye(3)), NUMBERS),
    "fit_probe embeddings": (lambda c: np.random.default_rng(0).random((8, 4)), lambda c, x: probes.fit_probe(
        "additive", np.zeros((8, 2, 3), int), x, n_values=(3, 3, 3)), NUMBERS),
    "train_stack data.images": (lambda c: torch.rand(4, 16, 16, 3), lambda c, x: train_stack(
        c.enc, DualTrainConfig(steps=1, batch=2, swap_negatives=False), _pairs(images=x)), FLOAT32),
    "train_stack data.captions": (lambda c: torch.randint(1, 8, (4, 2, 16)).float(), lambda c, x: train_stack(
        c.enc, DualTrainConfig(steps=1, batch=2, swap_negatives=False), _pairs(captions=x)), IDS),
    "patchify image": (lambda c: c.image, lambda c, x: S.patchify(x, c.masks, 8), NUMBERS),
    "patchify masks": (lambda c: c.masks.astype(float), lambda c, x: S.patchify(c.image, x, 8), MASKS),
    "render_images scenes": (lambda c: np.array([[0.0, 1.0]]), lambda c, x: S.render_images(c.space, x, res=32), IDS),
    "pad_sequences seqs": (lambda c: np.array([[1.0, 2.0]]), lambda c, x: S.pad_sequences(x, 0), IDS),
    # -- Part A
    "agreement.metrics labels": (lambda c: np.array([1.0, 0.0, 1.0]), lambda c, x: agreement.metrics(
        x, [True, False, True]), MASKS),
    "best_threshold scores": (lambda c: np.array([0.2, 0.7]), lambda c, x: agreement.best_threshold(
        x, [False, True], [0.5]), ("bool",) + NUMBERS),
    "plateaued losses": (lambda c: np.ones((10, 2)), lambda c, x: twins.plateaued(x, window=3), ("bool",) + NUMBERS),
    "finite_mean x": (lambda c: np.array([1.0, 2.0]), lambda c, x: experiments.finite_mean(x),
                      ("bool", "strings", "complex")),
    "params_to_weights params": (lambda c: np.full(_n_fer_params(), 0.5), lambda c, x: fer.params_to_weights(
        x, "2;tanh:3"), ("bool",) + NUMBERS),
    "semantic.prepare images": (lambda c: torch.rand(1, 16, 16, 3), lambda c, x: semantic.prepare(x), FLOATS),
    "contact_sheet images": (lambda c: torch.rand(1, 16, 16, 3), lambda c, x: labelling.contact_sheet(
        x, [1], "skull", rows=1, cols=1), FLOATS),
}


def _n_fer_params() -> int:
    return sum(a * b for a, b in fer.kernel_shapes("2;tanh:3"))


#: the cells of the grid the code already refused before this change (commit 99e09ea): kept as a regression guard
#: (``test_wrong_dtype_still_refused``), apart from the cases that failed on that code
REFUSED_BEFORE = {
    "SAEData acts complex",
    "TopKSAE.encode x complex",
    "TopKSAE.forward x complex",
    "agreement.metrics labels float",
    "agreement.metrics labels object",
    "agreement.metrics labels strings",
    "best_threshold scores strings",
    "contact_sheet images bool",
    "contact_sheet images complex",
    "contact_sheet images int",
    "contact_sheet images object",
    "contact_sheet images strings",
    "finite_mean x strings",
    "fit_probe embeddings strings",
    "foreground image bool",
    "foreground image complex",
    "foreground image object",
    "foreground image strings",
    "image_attention patch_idx bool",
    "image_attention patch_idx complex",
    "image_attention patch_idx fraction",
    "image_attention patch_idx object",
    "image_attention patch_idx strings",
    "level2 values bool",
    "level2 values complex",
    "level2 values fraction",
    "level2 values object",
    "level2 values strings",
    "pad_sequences seqs bool",
    "pad_sequences seqs complex",
    "pad_sequences seqs fraction",
    "pad_sequences seqs object",
    "pad_sequences seqs strings",
    "params_to_weights params bool",
    "params_to_weights params complex",
    "params_to_weights params object",
    "params_to_weights params strings",
    "patchify image complex",
    "patchify image object",
    "patchify image strings",
    "patchify masks float",
    "patchify masks strings",
    "plateaued losses bool",
    "plateaued losses complex",
    "plateaued losses object",
    "plateaued losses strings",
    "reference_scores z_img object",
    "reference_scores z_img strings",
    "render_images scenes bool",
    "render_images scenes complex",
    "render_images scenes fraction",
    "render_images scenes object",
    "render_images scenes strings",
    "retrieval Zhat strings",
    "semantic.prepare images bool",
    "semantic.prepare images complex",
    "semantic.prepare images int",
    "semantic.prepare images object",
    "semantic.prepare images strings",
    "train_stack data.captions object",
    "train_stack data.captions strings",
    "train_stack data.images object",
    "train_stack data.images strings",
}
GRID = {f"{name} {kind}": (name, kind) for name, (_, _, kinds) in TARGETS.items() for kind in kinds}
CASES = {k: v for k, v in GRID.items() if k not in REFUSED_BEFORE}
assert REFUSED_BEFORE <= set(GRID), sorted(REFUSED_BEFORE - set(GRID))


def _check(c, name, kind):
    good, call, _ = TARGETS[name]
    bad = _as(good(c), kind)
    assert_refused(lambda: call(c, bad), [c.dir], SECONDS)


@pytest.mark.parametrize("case", list(CASES))
def test_wrong_dtype_raises_value_error_quickly(c, case):
    """The cells that failed on the code before this change (silently coerced, or a TypeError, RuntimeError,
    AttributeError deep inside)."""
    _check(c, *CASES[case])


@pytest.mark.parametrize("case", sorted(REFUSED_BEFORE))
def test_wrong_dtype_still_refused(c, case):
    _check(c, *GRID[case])


@pytest.mark.parametrize("name", list(TARGETS))
def test_the_good_value_is_accepted(c, name):
    """The other side: each target's good value passes the argument checks (so the cases test the dtype)."""
    good, call, kinds = TARGETS[name]
    value = good(c)
    if kinds in (IDS, MASKS):     # the good value of an id or mask argument is the same values as ints / bools
        t = torch.as_tensor(np.asarray(value))
        t = t.long() if kinds is IDS else t != 0
        value = t if isinstance(value, torch.Tensor) else t.numpy()
    try:
        call(c, value)
    except ValueError as e:
        pytest.fail(f"{name}: the good value was refused: {e}")
