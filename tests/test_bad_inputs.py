"""Bad and hostile inputs across Part A's public API: each must raise a ``ValueError`` quickly.

Every case is one call a careless or curious reader might make. For each we check that it raises ``ValueError``
(or a subclass such as ``GenomeError``; never a torch ``RuntimeError``, ``KeyError``, ``TypeError`` ...), within
a second, and that the files the cases share are left exactly as they were (no half-written file). The ids name
the input.
"""

import json
import math
import types
import zipfile

import numpy as np
import pytest
from refusal import assert_refused
import torch

from compbook.book import images, plots
from compbook.cppn import (backprop, depth, emc2, frames, judges, network as cppn, optim, picbreeder, prune,
                           train, volume_ratio)
from compbook.cppn.data import store as checkpoints

SECONDS = 1.0


def _good_cache(folder):
    class Bright:
        identity = "fake:bright"

        def __call__(self, imgs, concept, *, reference=None, questions=None):
            return imgs.mean(dim=(1, 2, 3)) > 0.5
    cache = judges.CachedJudge(folder, Bright(), mode="fill")
    q = [{"model": "m", "weight": [0, 0, k], "delta": 0.5, "policy": "plus", "res": 8} for k in range(2)]
    cache(torch.stack([torch.full((8, 8, 3), v) for v in (0.9, 0.1)]), "skull", questions=q)
    return cache.path


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    """What the cases use: a small model, the skull genome, a target, and files (good and broken)."""
    from skimage.metrics import structural_similarity  # noqa: F401  (imported once, outside the timed calls)
    import matplotlib.pyplot  # noqa: F401
    d = tmp_path_factory.mktemp("bad_inputs")
    ns = types.SimpleNamespace(dir=d)
    ns.model = cppn.uniform_cppn(2, 4, seed=0)
    ns.genome = picbreeder.load_genome("skull", download=False)
    ns.xml = zipfile.ZipFile(picbreeder.find_genome("skull", download=False)).read("a").decode()
    ns.target = picbreeder.render(ns.genome, 8)
    checkpoints.save_cppn(ns.model, d / "good")
    cfg = json.loads((d / "good.json").read_text())
    for name, sidecar in (("list", [cfg]), ("noact", {k: v for k, v in cfg.items() if k != "activations"})):
        (d / f"{name}.safetensors").write_bytes((d / "good.safetensors").read_bytes())
        (d / f"{name}.json").write_text(json.dumps(sidecar))
    raw = (d / "good.safetensors").read_bytes()
    (d / "cut.safetensors").write_bytes(raw[: len(raw) // 2])
    (d / "cut.json").write_text(json.dumps(cfg))
    checkpoints.save_cppn(cppn.uniform_cppn(2, 6), d / "wide")
    (d / "narrow.safetensors").write_bytes(raw)
    (d / "narrow.json").write_bytes((d / "wide.json").read_bytes())
    (d / "adir.json").mkdir()
    (d / "folder").mkdir()
    good = _good_cache(d / "cache")
    text = good.read_text()
    (d / "flipped.json").write_text(text.replace('"verdict": false', '"verdict": true'))
    lines = text.splitlines()
    k = next(i for i, l in enumerate(lines) if '"verdict": true' in l)
    lines[k:k + 1] = [lines[k] + ",", lines[k].replace('"verdict": true', '"verdict": false')]
    (d / "conflict.json").write_text("\n".join(lines))
    ns.dag = volume_ratio.LayeredDAG((np.ones((1, 2), bool), np.ones((1, 1), bool)))
    return ns


def _weights(m, shape=None):
    return [torch.zeros(*(shape or s)) for s in m.shapes]


def _lenient(images, concept, *, reference=None, questions=None):
    return torch.ones(len(images), dtype=torch.bool)


_lenient.identity = "lenient"
_nan = float("nan")
_inf = float("inf")

CASES = {
    # -- compbook.cppn ----------------------------------------------------------------------------------------
    "coordinate_grid res=0": lambda c: cppn.coordinate_grid(0),
    "coordinate_grid res=2.5": lambda c: cppn.coordinate_grid(2.5),
    "coordinate_grid res='64'": lambda c: cppn.coordinate_grid("64"),
    "coordinate_grid res=inf": lambda c: cppn.coordinate_grid(_inf),
    "uniform_cppn depth=0": lambda c: cppn.uniform_cppn(0, 4),
    "uniform_cppn width=-3": lambda c: cppn.uniform_cppn(2, -3),
    "uniform_cppn depth=None": lambda c: cppn.uniform_cppn(None, 4),
    "uniform_cppn activation='swish'": lambda c: cppn.uniform_cppn(2, 4, "swish"),
    "uniform_cppn counts summing to 3 for width 4": lambda c: cppn.uniform_cppn(2, 4, {"sin": 3}),
    "CPPN activations='tanh'": lambda c: cppn.CPPN("tanh"),
    "CPPN layer given as the string 'tanh'": lambda c: cppn.CPPN(["tanh"]),
    "CPPN empty layer": lambda c: cppn.CPPN([[]]),
    "CPPN color='rgb'": lambda c: cppn.CPPN([["tanh"]], color="rgb"),
    "CPPN 2 weight matrices for 3 layers": lambda c: cppn.CPPN([["tanh"]] * 2, weights=[torch.zeros(1, 4)] * 2),
    "CPPN NaN weights": lambda c: cppn.CPPN([["tanh"]], weights=[torch.full((1, 4), _nan), torch.zeros(3, 1)]),
    "CPPN init_scale=-1": lambda c: cppn.CPPN([["tanh"]], init_scale=-1),
    "CPPN seed=-1": lambda c: cppn.CPPN([["tanh"]], seed=-1),
    "render res=20000": lambda c: c.model.render(20000),
    "render res=100000": lambda c: c.model.render(100000),
    "render res=-1": lambda c: c.model.render(-1),
    "render budget_mb=0": lambda c: c.model.render(8, budget_mb=0),
    "render batched weights of the wrong shape": lambda c: c.model.render(8, weights=_weights(c.model, (2, 3, 3))),
    "render one weight tensor instead of a list": lambda c: c.model.render(8, weights=torch.zeros(4, 4)),
    "render with 1e30 weights (overflow)": lambda c: cppn.uniform_cppn(3, 8, "identity").clone_with(
        weights=[w.detach() * 1e30 for w in cppn.uniform_cppn(3, 8, "identity").weights]).render(8),
    "set_masks too few masks": lambda c: c.model.clone_with().set_masks(_weights(c.model)[:1]),
    "set_masks too many masks": lambda c: c.model.clone_with().set_masks(_weights(c.model) * 2),
    "feature_maps res=100000": lambda c: c.model.feature_maps(100000),
    "layout_from_counts negative": lambda c: cppn.layout_from_counts({"sin": -1}),
    "layout_from_counts count 1.5": lambda c: cppn.layout_from_counts({"sin": 1.5}),
    # -- compbook.cppn.picbreeder ----------------------------------------------------------------------------------
    "load_genome unknown name 'dragon'": lambda c: picbreeder.load_genome("dragon", download=False),
    "load_genome a directory": lambda c: picbreeder.load_genome(c.dir / "folder"),
    "load_genome source=42": lambda c: picbreeder.load_genome(42),
    "parse_genome not XML": lambda c: picbreeder.parse_genome("<not xml"),
    "parse_genome weight 1e308": lambda c: picbreeder.parse_genome(
        c.xml.replace("<weight>-0.4450539653659765</weight>", "<weight>1e308</weight>", 1)),
    "parse_genome weight nan": lambda c: picbreeder.parse_genome(
        c.xml.replace("<weight>-0.4450539653659765</weight>", "<weight>nan</weight>", 1)),
    "picbreeder.render res=20000": lambda c: picbreeder.render(c.genome, 20000),
    "picbreeder.render res=0": lambda c: picbreeder.render(c.genome, 0),
    "picbreeder.render a name, not a Genome": lambda c: picbreeder.render("skull", 8),
    "layerize a name, not a Genome": lambda c: picbreeder.layerize("skull"),
    # -- compbook.cppn.train ---------------------------------------------------------------------------------------
    "fit lr='0.01'": lambda c: train.fit(c.model, c.target, 1, lr="0.01", progress=False),
    "fit lr=inf": lambda c: train.fit(c.model, c.target, 1, lr=_inf, progress=False),
    "fit lr=0": lambda c: train.fit(c.model, c.target, 1, lr=0, progress=False),
    "fit lr=nan": lambda c: train.fit(c.model, c.target, 1, lr=_nan, progress=False),
    "fit steps=-1": lambda c: train.fit(c.model, c.target, -1, progress=False),
    "fit steps=1.5": lambda c: train.fit(c.model, c.target, 1.5, progress=False),
    "fit optimizer='sgd'": lambda c: train.fit(c.model, c.target, 1, optimizer="sgd", progress=False),
    "fit gradients='finite differences'": lambda c: train.fit(c.model, c.target, 1, gradients="fd", progress=False),
    "fit normalize_grad='no'": lambda c: train.fit(c.model, c.target, 1, normalize_grad="no", progress=False),
    "fit target (0, 0, 3)": lambda c: train.fit(c.model, np.zeros((0, 0, 3)), 1, progress=False),
    "fit target uint8": lambda c: train.fit(c.model, np.zeros((8, 8, 3), np.uint8), 1, progress=False),
    "fit target with NaN": lambda c: train.fit(c.model, np.full((8, 8, 3), _nan), 1, progress=False),
    "fit target (8, 9, 3) not square": lambda c: train.fit(c.model, np.zeros((8, 9, 3)), 1, progress=False),
    "fit target values up to 255": lambda c: train.fit(c.model, np.full((8, 8, 3), 255.0), 1, progress=False),
    "fit target (8, 8, 4) RGBA": lambda c: train.fit(c.model, np.zeros((8, 8, 4)), 1, progress=False),
    "fit a genome instead of a CPPN": lambda c: train.fit(c.genome, c.target, 1, progress=False),
    "fit_many no models": lambda c: train.fit_many([], c.target, 1, progress=False),
    "fit_many float32 with float64": lambda c: train.fit_many(
        [c.model, c.model.clone_with(weights=[w.detach().double() for w in c.model.weights],
                                     masks=[m.double() for m in c.model.masks])], c.target, 1, progress=False),
    "fit_many two architectures": lambda c: train.fit_many([c.model, cppn.uniform_cppn(2, 5)], c.target, 1,
                                                          progress=False),
    "fit_many 3 targets for 1 model": lambda c: train.fit_many([c.model], np.zeros((3, 8, 8, 3)), 1,
                                                              progress=False),
    "mse a batch of targets": lambda c: train.mse(c.model, np.zeros((2, 8, 8, 3))),
    # -- compbook.cppn.data.store ---------------------------------------------------------------------------------
    "save_cppn metadata with an object": lambda c: checkpoints.save_cppn(c.model, c.dir / "new1", {"x": object()}),
    "save_cppn metadata with NaN": lambda c: checkpoints.save_cppn(c.model, c.dir / "new2", {"loss": _nan}),
    "save_cppn metadata a list": lambda c: checkpoints.save_cppn(c.model, c.dir / "new3", [1, 2]),
    "save_cppn a genome": lambda c: checkpoints.save_cppn(c.genome, c.dir / "new4"),
    "load_cppn a directory named x.json": lambda c: checkpoints.load_cppn(c.dir / "adir"),
    "load_cppn sidecar a JSON list": lambda c: checkpoints.load_cppn(c.dir / "list"),
    "load_cppn sidecar without activations": lambda c: checkpoints.load_cppn(c.dir / "noact"),
    "load_cppn truncated safetensors": lambda c: checkpoints.load_cppn(c.dir / "cut"),
    "load_cppn sidecar of another width": lambda c: checkpoints.load_cppn(c.dir / "narrow"),
    "load_metadata sidecar a JSON list": lambda c: checkpoints.load_metadata(c.dir / "list"),
    # -- compbook.cppn.emc2 ----------------------------------------------------------------------------------------
    "compositional_score delta=0": lambda c: emc2.compositional_score(c.model, _lenient, "x", delta=0, res=8),
    "compositional_score delta=1e308": lambda c: emc2.compositional_score(c.model, _lenient, "x", delta=1e308,
                                                                         res=8, progress=False),
    "compositional_score delta=nan": lambda c: emc2.compositional_score(c.model, _lenient, "x", delta=_nan, res=8),
    "compositional_score delta='0.5'": lambda c: emc2.compositional_score(c.model, _lenient, "x", delta="0.5"),
    "compositional_score res=0": lambda c: emc2.compositional_score(c.model, _lenient, "x", res=0),
    "compositional_score res=20000": lambda c: emc2.compositional_score(c.model, _lenient, "x", res=20000),
    "compositional_score batch_size=0": lambda c: emc2.compositional_score(c.model, _lenient, "x", batch_size=0),
    "compositional_score engine='slow'": lambda c: emc2.compositional_score(c.model, _lenient, "x", engine="slow"),
    "compositional_score policy='minus'": lambda c: emc2.compositional_score(c.model, _lenient, "x",
                                                                            policy="minus"),
    "compositional_score concept=''": lambda c: emc2.compositional_score(c.model, _lenient, ""),
    "compositional_score sample=0": lambda c: emc2.compositional_score(c.model, _lenient, "x", sample=0, res=8),
    "compositional_score judge not callable": lambda c: emc2.compositional_score(c.model, "ssim", "x", res=8),
    "compositional_score judge returns floats": lambda c: emc2.compositional_score(
        c.model, lambda im, co, **k: torch.ones(len(im)), "x", res=8, progress=False),
    "perturbed weight (0.9, 1.7, 2.2)": lambda c: emc2.perturbed(c.model, (0.9, 1.7, 2.2), 0.5),
    "perturbed weight (9, 0, 0) outside": lambda c: emc2.perturbed(c.model, (9, 0, 0), 0.5),
    "perturbed weight '000'": lambda c: emc2.perturbed(c.model, "000", 0.5),
    "render_perturbations 2 deltas for 1 weight": lambda c: emc2.render_perturbations(c.model, [(0, 0, 0)],
                                                                                   [0.5, 0.5], res=8),
    "weight_sweep values with NaN": lambda c: emc2.weight_sweep(c.model, (0, 0, 0), [0.0, _nan], res=8),
    "important_weights k=0": lambda c: emc2.important_weights(c.model, k=0),
    "important_weights delta=0": lambda c: emc2.important_weights(c.model, delta=0),
    # -- compbook.cppn.judges --------------------------------------------------------------------------------------
    "SSIMJudge threshold=2": lambda c: judges.SSIMJudge(threshold=2),
    "SSIMJudge win_size=4": lambda c: judges.SSIMJudge(win_size=4),
    "SSIMJudge images above 1": lambda c: judges.SSIMJudge()(torch.full((1, 8, 8, 3), 2.0), "x",
                                                             reference=torch.zeros(8, 8, 3)),
    "SSIMJudge images a numpy array": lambda c: judges.SSIMJudge()(np.zeros((1, 8, 8, 3)), "x"),
    "SSIMJudge no reference": lambda c: judges.SSIMJudge()(torch.zeros(1, 8, 8, 3), "x"),
    "CachedJudge mode='lenient'": lambda c: judges.CachedJudge(c.dir / "cache", identity="x", mode="lenient"),
    "CachedJudge a directory named x.json": lambda c: judges.CachedJudge(c.dir / "adir.json", identity="x"),
    "CachedJudge conflicting duplicate keys": lambda c: judges.CachedJudge(c.dir / "conflict.json"),
    "CachedJudge a verdict flipped by hand": lambda c: judges.CachedJudge(c.dir / "flipped.json"),
    "CachedJudge path=None": lambda c: judges.CachedJudge(None, identity="x"),
    # -- compbook.cppn.prune ---------------------------------------------------------------------------------------
    "magnitude_prune sparsity=1.0": lambda c: prune.magnitude_prune(c.model, 1.0),
    "magnitude_prune sparsity='half'": lambda c: prune.magnitude_prune(c.model, "half"),
    "magnitude_prune scope='everywhere'": lambda c: prune.magnitude_prune(c.model, 0.5, scope="everywhere"),
    "similarity_prune threshold=-0.5 on |cos|": lambda c: prune.similarity_prune(c.model, c.target, -0.5),
    "similarity_prune rounds=2.5": lambda c: prune.similarity_prune(c.model, c.target, rounds=2.5),
    "lottery_ticket rounds=-1": lambda c: prune.lottery_ticket(c.model, c.target, 0.5, rounds=-1),
    "structured_prune n_neurons and sparsity": lambda c: prune.structured_prune(c.model, c.target, 1, 0.5),
    "wanda_prune res=0": lambda c: prune.wanda_prune(c.model, 0.5, res=0),
    "remove_neurons (5, 0) is not hidden": lambda c: prune.remove_neurons(c.model.masks, [(5, 0)]),
    # -- compbook.cppn.depth ---------------------------------------------------------------------------------------
    "predict_depth constant image, extrapolate=False": lambda c: depth.predict_depth(
        np.full((16, 16, 3), 0.5), extrapolate=False),
    "predict_depth line='default'": lambda c: depth.predict_depth(c.target, "default"),
    "png_bytes level=10": lambda c: depth.png_bytes(c.target, 10),
    "fit_depth_line one point": lambda c: depth.fit_depth_line([4.5], [12]),
    "fit_depth_line NaN ratio": lambda c: depth.fit_depth_line([4.5, _nan], [12, 16]),
    "depth_sweep depths=[0]": lambda c: depth.depth_sweep(c.target, [0]),
    "depth_sweep depths='123'": lambda c: depth.depth_sweep(c.target, "123"),
    "mixed_layout width=0": lambda c: depth.mixed_layout(0),
    # -- compbook.cppn.frames, compbook.cppn.volume_ratio ----------------------------------------------------------
    "welch_bound(inf, 2)": lambda c: frames.welch_bound(_inf, 2),
    "welch_bound(2.5, 2)": lambda c: frames.welch_bound(2.5, 2),
    "coherence one row": lambda c: frames.mutual_coherence([[1.0, 0.0]]),
    "coherence a zero row": lambda c: frames.mutual_coherence([[1.0, 0.0], [0.0, 0.0]]),
    "coherence strings": lambda c: frames.mutual_coherence([["a", "b"], ["c", "d"]]),
    "normalise_rows complex": lambda c: frames.normalise_rows([[1, 1j]]),
    "paley_etf(7)": lambda c: frames.paley_etf(7),
    "log_rho p=1.5": lambda c: volume_ratio.log_rho(c.dag, 2, 2, p=1.5),
    "log_rho p='0.5'": lambda c: volume_ratio.log_rho(c.dag, 2, 2, p="0.5"),
    "rho_monte_carlo n=0": lambda c: volume_ratio.rho_monte_carlo(c.dag, 2, 2, n=0),
    "minimise_coherence steps=0": lambda c: frames.minimise_coherence(3, 2, steps=0),
    # -- compbook.book.images and compbook.cppn.optim ------------------------------------------------------------------
    "resize res=0": lambda c: images.resize(c.target, 0),
    "to_square res=-4": lambda c: images.to_square(c.target, -4),
    "to_square an empty image": lambda c: images.to_square(np.zeros((0, 5, 3)), 4),
    "psnr shapes differ": lambda c: images.psnr(np.zeros((2, 2, 3)), np.zeros((3, 3, 3))),
    "check_image grey (8, 8)": lambda c: images.check_image(np.zeros((8, 8))),
    "load_image a directory": lambda c: images.load_image(c.dir / "folder"),
    "load_image not an image": lambda c: images.load_image(c.dir / "good.json"),
    "newton_schulz steps=-1": lambda c: optim.newton_schulz(torch.eye(2), steps=-1),
    "Muon lr=-1": lambda c: optim.Muon([torch.nn.Parameter(torch.eye(2))], lr=-1),
    "Muon momentum=1": lambda c: optim.Muon([torch.nn.Parameter(torch.eye(2))], momentum=1),
    # -- more of the same, found by probing after the list ------------------------------------------
    "depth_sweep seeds=[0.5]": lambda c: depth.depth_sweep(c.target, [1], seeds=[0.5], steps=1, progress=False),
    "depth_sweep sp={'bogus': 1}": lambda c: depth.depth_sweep(c.target, [1], steps=1, sp={"bogus": 1}),
    "depth_sweep score_kwargs={'bogus': 1}": lambda c: depth.depth_sweep(
        c.target, [1], steps=1, judge=_lenient, concept="x", score_kwargs={"bogus": 1}),
    "remove_neurons neuron (0, 0.5)": lambda c: prune.remove_neurons(c.model.masks, [(0, 0.5)]),
    "remove_neurons neuron 'ab'": lambda c: prune.remove_neurons(c.model.masks, ["ab"]),
    "masks_from_scores scores='ab'": lambda c: prune.masks_from_scores("ab", 0.5),
    "neuron_similarity eps=-1": lambda c: prune.neuron_similarity(c.model, eps=-1),
    "redundant_pairs threshold=nan": lambda c: prune.redundant_pairs(torch.eye(3), _nan),
    "similarity_prune seed=0.5": lambda c: prune.similarity_prune(c.model, c.target, seed=0.5, rounds=1),
    "nonzero_weights of a genome": lambda c: emc2.nonzero_weights(c.genome),
    "content_hash of a genome": lambda c: checkpoints.content_hash(c.genome),
    "Backprop target a string": lambda c: backprop.Backprop(c.model, "skull"),
    "gradient_error target (3, 3)": lambda c: backprop.gradient_error(c.model, np.zeros((3, 3))),
    "layerize dtype=torch.int32": lambda c: picbreeder.layerize(c.genome, dtype=torch.int32),
    "parse_genome None": lambda c: picbreeder.parse_genome(None),
    "local_coherence group index 1.5": lambda c: frames.local_coherence(np.eye(3), [(0, 1.5)]),
    "greedy_colouring (2, 3) adjacency": lambda c: frames.greedy_colouring(np.ones((2, 3))),
    "minimise_coherence lr=-1": lambda c: frames.minimise_coherence(4, 2, steps=2, lr=-1),
    "psnr of a NaN image": lambda c: images.psnr(np.full((2, 2, 3), _nan), np.zeros((2, 2, 3))),
    "show_images 2 titles for 1 image": lambda c: plots.show_images([c.target], titles=["a", "b"]),
}


@pytest.mark.parametrize("call", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_value_error_quickly(c, call):
    assert_refused(lambda: call(c), [c.dir], SECONDS)


def test_there_are_at_least_60_cases():
    assert len(CASES) >= 60


def test_accepted_odd_but_valid_inputs_give_finite_in_range_results(c):
    """The other side: odd inputs that are valid give finite results within their ranges (no NaN, no score
    outside [0, 1])."""
    with torch.no_grad():
        assert torch.isfinite(c.model.render(1)).all()                          # a one-pixel render
        img = c.model.render(3.0)                                               # 3.0 is the integer 3
    assert img.shape == (3, 3, 3) and 0 <= float(img.min()) and float(img.max()) <= 1
    score = emc2.compositional_score(c.model, _lenient, "x", delta=-1e-3, res=4, progress=False)
    assert 0 <= score.score <= 1 and not math.isnan(score.score)
    assert frames.welch_bound(2, 5) == 0.0
    assert math.isfinite(depth.predict_depth(c.target, extrapolate=True, rounded=False))
