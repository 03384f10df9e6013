"""Every memory guard's estimate is an upper bound of what its call really allocates.

A guard is a call site that estimates the bytes a call will need and asks a budget
(:func:`compbook.checks.check_budget`, or :func:`compbook.checks.allocation` which asks it; and the render
budget's :func:`compbook.checks.check_render_size`) before allocating. Since the memory budget is the machine's
free memory, a low estimate no longer protects: the call passes the guard and fails in the allocator, or the
kernel kills the process. Here each guard's call runs at a small size (a few MiB) while the test records the
bytes its guards asked for; :mod:`memory_probe` measures what the call allocated (torch's CPU allocator through
the profiler, Python and NumPy through ``tracemalloc``; see its docstring), and the largest estimate asked must
be at least that peak. The inputs are built before the measured call, so only the call's own buffers count.
PIL's image memory is seen by neither tool: the guards of calls that build PIL images count it from PIL's
layout (4 bytes a pixel for RGB), unmeasured here.
"""

import numpy as np
import pytest
import torch
from memory_probe import measure

from compbook import checks, scenes as sc, stats
from compbook.book import images
from compbook.binding import controlled, data as bdata, decomposition, probes, splits, symbolic, train as btrain
from compbook.binding.recipe import (
    train as recipe, checks as recipe_checks, data as recipe_data, model as recipe_model
)
from compbook.binding.runs import tasks as btasks
from compbook.binding.encoders import DualEncoder, EncoderConfig
from compbook.binding.runs.scoring import SweepConfig
from compbook.binding.recipe.config import RecipeConfig
from compbook.cppn.audit import claims, labelling, tables
from compbook.cppn import depth, emc2, fer, frames, network, optim, panel, picbreeder, volume_ratio
from compbook.cppn.judges import semantic
from compbook.sae import data as sdata, interpret, metrics, regions, s2ae, topk, vlm
from compbook.sae.servers import hf_interpret
from compbook.sae.studies import objregions
from compbook.sae.runs import stack

pytestmark = pytest.mark.usefixtures("one_thread")
MB = 2 ** 20


def _rng(seed=0):
    return np.random.default_rng(seed)


def _fer_network(arch):
    depth_, counts = fer.parse_arch(arch)
    return network.uniform_cppn(depth_, sum(counts.values()), counts)


def _controlled_cfg(**kw):
    return controlled.ControlledConfig(**kw)


def _sae_data(n=48, grid=(6, 6), text=4, d_in=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    p = grid[0] * grid[1]
    attn = torch.softmax(torch.randn(n, p, p, generator=g), -1)
    return s2ae.SAEData(torch.randn(n, p + text, d_in, generator=g), torch.ones(n, p + text, dtype=torch.bool),
                        torch.arange(p), grid, attn)


def _sae_cfg(**kw):
    return s2ae.SAETrainConfig(**{"d_sae": 512, "k": 8, "lam": 0.01, "steps": 2, "batch_images": 16, **kw})


def _fit_sae(cfg):
    data = _sae_data()
    return lambda: s2ae.fit_sae(topk.TopKSAE(32, cfg.d_sae, cfg.k, seed=0), data, cfg, progress=False)


def _fit_stack(cfgs):
    data = _sae_data()
    return lambda: stack.fit_stack([topk.TopKSAE(32, c.d_sae, c.k, seed=0) for c in cfgs], data, cfgs,
                                   device="cpu")


def _no_grad(fn, *args):
    with torch.no_grad():
        return fn(*args)


def _controlled(**kw):
    cfg = controlled.ControlledConfig(**{"steps": 2, "batch": 32, "eval_every": 2, "eval_scenes": 16, **kw})
    split = splits.coverage_split(cfg.tokens.space.n_objects, 0.5, max_scenes=200)
    return lambda: controlled.train_controlled(cfg, [split, split], [0, 1], progress=False, device="cpu")


def _recipe(**kw):
    cfg = RecipeConfig(**{"steps": 2, "batch": 32, "eval_every": 2, "eval_scenes": 16, "eval_batches": 1,
                          "n_values": 10, **kw})
    return lambda: recipe.train_recipe(cfg, progress=False, device="cpu")


def _dual(n_models=2):
    enc = EncoderConfig(res=32, channels=(8, 16, 16), width=32, d_out=32)
    space = sc.clevr2d()
    data = bdata.build_pairs(space, sc.all_pairs(np.arange(8)), res=32)
    cfg = btrain.DualTrainConfig(steps=2, batch=16, eval_every=2, warmup=1)
    return lambda: btrain.train_stack(enc, cfg, data, n_models)


def _depth_sweep():
    target = np.random.default_rng(0).random((16, 16, 3))
    return lambda: depth.depth_sweep(target, [1, 2], width=16, seeds=(0, 1), steps=2)


def _sweep():
    sweep = SweepConfig(coverages=(0.5,), seeds=(0,), n_values=(5,), max_scenes=20_000)
    cfg = controlled.ControlledConfig()
    return lambda: (btasks.coverage_configs(sweep, cfg), splits.coverage_split(125, 0.5, max_scenes=20_000))


def _vr_target():
    return tables.tiny_targets()["fan-in"]


_SCENES = {}


def _scenes():
    if not _SCENES:
        _SCENES["s"] = sdata.make_scenes(24, seed=0)
    return _SCENES["s"]


def _vlm_cfg(**kw):
    s = _scenes()
    return vlm.TinyVLMConfig(**{"vocab_size": len(s.vocab), "patch_dim": s.patches.shape[-1], "grid": s.grid,
                                "max_text": s.tokens.shape[1], "d_model": 64, "n_layers": 2, "n_heads": 4,
                                "d_mlp": 128, "pad_id": s.vocab.pad_id, **kw})


# name -> setup() returning the call to measure (inputs built by setup, outside the measurement), or
# (setup, words): the guard judged is the one whose message holds ``words`` (a check made before a build: the call
# builds what it guards)
CASES = {
    # -- shared
    "stats.pooled_draws": lambda: (lambda p=_rng().random(200), n=_rng().integers(1, 50, 200):
                                   lambda: stats.pooled_draws(p, n, 2000, _rng()))(),
    "stats.mean_ci": lambda: (lambda v=_rng().random(300): lambda: stats.mean_ci(v, 2000))(),
    "scenes.pad_sequences": lambda: (lambda s=[np.arange(i % 50 + 1) for i in range(20_000)]:
                                     lambda: sc.pad_sequences(s, 0))(),
    "scenes.all_pairs": lambda: lambda: sc.all_pairs(np.arange(500)),
    "scenes.sample_scenes": lambda: lambda: sc.sample_scenes(np.arange(50), 20_000, (1, 4)),
    "scenes.render_images": lambda: (lambda s=np.array([[0, 1]] * 64): lambda: sc.render_images(
        sc.clevr2d(), s, res=32))(),
    # -- binding
    "binding.controlled.object_tokens": lambda: (lambda cfg=_controlled_cfg(), o=_rng().integers(0, 125, 50_000):
                                                 lambda: controlled.object_tokens(cfg, o))(),
    "binding.decomposition.object_vectors": lambda: (
        lambda z=_rng().standard_normal((4000, 64)), s=_rng().integers(0, 200, (4000, 2)):
        lambda: decomposition.object_vectors(z, s, 200))(),
    "binding.decomposition.design": lambda: (
        lambda s=_rng().integers(0, 100, (5000, 2)), v=_rng().integers(0, 5, (5000, 6)):
        lambda: decomposition.design(s, v, "objects", 100))(),
    "binding.recipe_data.sample_recipe_scenes": lambda: (lambda cfg=RecipeConfig():
                                                         lambda: recipe_data.sample_recipe_scenes(
                                                             cfg, np.arange(100), 100_000, _rng()))(),
    "binding.symbolic.encode": lambda: (lambda t=symbolic.SymbolicTokens(3, 5), o=_rng().integers(0, 125, 50_000):
                                        lambda: t.encode(o))(),
    "binding.symbolic.encode_batch": lambda: (
        lambda t=symbolic.SymbolicTokens(3, 5), s=[list(_rng(i).integers(0, 125, 2)) for i in range(5000)]:
        lambda: t.encode_batch(s))(),
    "binding.data.build_pairs": lambda: (lambda sp=sc.clevr2d(): lambda: bdata.build_pairs(
        sp, [[0, 1]] * 32, [2, 3], res=32))(),
    "binding.splits.coverage_split": lambda: lambda: splits.coverage_split(500, 0.5, max_scenes=20_000),
    "binding.controlled.train_controlled": _controlled,
    "binding.recipe.train_recipe": _recipe,
    "binding.recipe_checks.TokenOracle": lambda: (lambda cfg=RecipeConfig(n_values=20):
                                                  lambda: recipe_checks.TokenOracle(cfg))(),
    "binding.recipe_model.TokenEncoder": lambda: (lambda cfg=RecipeConfig(d_model=128, d_ff=512):
                                                  lambda: recipe_model.TokenEncoder(cfg))(),
    "binding.probes.fit_probe (additive)": lambda: (
        lambda v=_rng().integers(0, 5, (2000, 2, 3)), y=_rng().standard_normal((2000, 32)):
        lambda: probes.fit_probe("additive", v, y, sweeps=2))(),
    "binding.train.train_stack": _dual,
    # a check before a build: one dual encoder's weights
    "binding.train.n_parameters": (lambda: (lambda enc=EncoderConfig(res=32, channels=(16, 32, 32), width=64):
                                            lambda: (btrain.n_parameters(enc), DualEncoder(enc)))(),
                                   "one dual encoder"),
    "binding.probes.fit_probe (object_product)": lambda: (
        lambda v=_rng().integers(0, 5, (2000, 2, 3)), y=_rng().standard_normal((2000, 32)):
        lambda: probes.fit_probe("object_product", v, y, sweeps=2, restarts=2))(),
    "binding.train.DualStack": lambda: (lambda enc=EncoderConfig(res=32, channels=(8, 16, 16), width=64):
                                        lambda: btrain.DualStack(enc, 3, device="cpu"))(),
    # a check before the sweep's splits are drawn
    "binding.tasks.coverage_configs": (_sweep, "max_scenes"),
    "images.as_target": lambda: (lambda t=np.random.default_rng(0).random((4, 128, 128, 3)):
                                 lambda: images.as_target(t))(),
    "binding.recipe_model.sinusoid": lambda: lambda: recipe_model.sinusoid(2000, 256),
    # -- cppn
    # a check before a build: the network of FER's arch (uniform_cppn of its depth and counts)
    "cppn.fer.parse_arch": (lambda: lambda: _fer_network("3;tanh:300,gaussian:100"),
                            "arch"),
    "cppn.frames.orthonormal_frame": lambda: lambda: frames.orthonormal_frame(100, 400, seed=0),
    "cppn.frames.simplex_etf": lambda: lambda: frames.simplex_etf(300),
    "cppn.frames.cooccurrence": lambda: lambda: frames.cooccurrence([[0, 1, 2], [3, 4]], 2000),
    "cppn.claims.difference": lambda: (lambda a={"k_n": [[3, 10]] * 50, "score": 0.3},
                                       b={"k_n": [[5, 10]] * 50, "score": 0.5}:
                                       lambda: claims.difference(a, b, 4000))(),
    "cppn.panel.groups_from_counts": lambda: lambda: panel.groups_from_counts([[300, 1000]] * 1000),
    # a check before a build: one width x width layer of these activations
    "cppn.depth.mixed_layout": (lambda: lambda: network.uniform_cppn(2, 400, depth.mixed_layout(400)),
                                "mixed_layout"),
    "cppn.network.layout_from_counts": lambda: lambda: network.layout_from_counts({"sin": 100_000, "tanh": 50_000}),
    "cppn.depth.depth_sweep": _depth_sweep,
    "cppn.depth.peak_frequencies": lambda: (lambda sw=depth.DepthSweep(
        [{"depth": d, "seed": s, "loss": 1.0, "score": float(_rng(s).random()), "n_weights": 1}
         for d in range(1, 9) for s in range(12)], {}): lambda: sw.peak_frequencies(2000))(),
    "cppn.judges.semantic.prepare": lambda: (lambda im=torch.rand(16, 96, 96, 3): lambda: semantic.prepare(im))(),
    "cppn.judges.semantic.train_classifier": lambda: lambda: semantic.train_classifier(1, 32, progress=False),
    "cppn.labelling.contact_sheet": lambda: (lambda im=np.random.default_rng(0).random((24, 64, 64, 3)):
                                             lambda: labelling.contact_sheet(im, list(range(24)), "apple"))(),
    "cppn.optim.against_torch_muon": lambda: lambda: optim.against_torch_muon(5, (256, 128)),
    "cppn.emc2.render_perturbations": lambda: (lambda m=network.uniform_cppn(3, 8, seed=0):
                                               lambda: emc2.render_perturbations(
                                                   m, [(1, 0, 0)] * 16, torch.linspace(-1, 1, 16), res=64))(),
    "cppn.emc2.weight_sweep": lambda: (lambda m=network.uniform_cppn(3, 8, seed=0): lambda: emc2.weight_sweep(
        m, (1, 0, 0), torch.linspace(-1, 1, 16), res=64))(),
    "cppn.tables.rho_checks": lambda: (lambda t={"chain": tables.tiny_targets()["chain"]}:
                                       lambda: tables.rho_checks(t, n_mc=20_000, max_edges=8, sizes=range(1, 3)))(),
    "cppn.volume_ratio.network_shapes": lambda: (lambda t=_vr_target(): lambda: volume_ratio.network_shapes(
        t, 3, 20_000))(),
    "cppn.volume_ratio.embed": lambda: (lambda t=_vr_target(): lambda: volume_ratio.embed(t, 300, 4))(),
    "cppn.volume_ratio.rho_monte_carlo": lambda: (lambda t=_vr_target(): lambda: volume_ratio.rho_monte_carlo(
        t, 4, 4, n=20_000))(),
    # -- the render budget's guards
    "render: cppn.network.CPPN.render": lambda: (lambda m=network.uniform_cppn(4, 16, seed=0): lambda: m.render(128))(),
    "render: cppn.network.CPPN.render (no grad)": lambda: (lambda m=network.uniform_cppn(4, 16, seed=0):
                                                           lambda: _no_grad(m.render, 128))(),
    "render: cppn.network.CPPN.feature_maps": lambda: (lambda m=network.uniform_cppn(4, 16, seed=0):
                                                       lambda: m.feature_maps(128))(),
    "render: cppn.network.coordinate_grid": lambda: lambda: network.coordinate_grid(256),
    "render: cppn.picbreeder.render": lambda: (lambda g=picbreeder.load_genome("apple", download=False):
                                               lambda: picbreeder.render(g, 128))(),
    "render: scenes.render_scene": lambda: (lambda sp=sc.clevr2d(): lambda: sc.render_scene(sp, (5, 13), res=128))(),
    "render: images.resize": lambda: (lambda im=np.random.default_rng(0).random((64, 64, 3)):
                                      lambda: images.resize(im, 256))(),
    "render: images.to_square": lambda: (lambda im=np.random.default_rng(0).random((96, 128, 3)):
                                         lambda: images.to_square(im, 200))(),
    "cppn.network.check_size": (lambda: lambda: network.uniform_cppn(3, 300), "hidden layers"),
    "cppn.network.uniform_cppn": lambda: lambda: network.uniform_cppn(4, 300),
    # -- sae
    "sae.topk.TopKSAEConfig": lambda: lambda: topk.TopKSAE(64, 2048, 8),
    "sae.regions.grid_distance": lambda: lambda: regions.grid_distance(16, 16),
    "sae.regions.region_distance": lambda: (lambda a=torch.rand(8, 64, 64): lambda: regions.region_distance(
        a, (8, 8)))(),
    "sae.regions.average_linkage": lambda: (lambda d=torch.rand(4, 64, 64): lambda: regions.average_linkage(d, 8))(),
    "sae.metrics.region_purity": lambda: (lambda r=torch.randint(0, 20, (64, 256)), l=torch.randint(-1, 4, (64, 256)):
                                          lambda: metrics.region_purity(r, l))(),
    "sae.s2ae.batch_penalties": lambda: (lambda z=torch.rand(16, 64, 512), r=torch.randint(0, 20, (16, 64)):
                                         lambda: s2ae.batch_penalties(z, r))(),
    "sae.s2ae.fit_sae (S2AE)": lambda: _fit_sae(_sae_cfg()),
    "sae.s2ae.fit_sae (regions every step)": lambda: _fit_sae(_sae_cfg(regions_every_step=True)),
    "sae.s2ae.fit_sae (TopK)": lambda: _fit_sae(_sae_cfg(lam=0.0)),
    "sae.stack.fit_stack": lambda: _fit_stack([_sae_cfg(), _sae_cfg(lam=0.0, seed=1)]),
    "sae.vlm.train_vlm": lambda: (lambda cfg=_vlm_cfg(), s=_scenes(): lambda: vlm.train_vlm(
        cfg, s, vlm.VLMTrainConfig(steps=2, batch=16), progress=False))(),
    "sae.vlm.train_vlm (wide)": lambda: (
        lambda cfg=_vlm_cfg(d_model=256, d_mlp=1024), s=_scenes():
        lambda: vlm.train_vlm(cfg, s, vlm.VLMTrainConfig(steps=2, batch=4), progress=False))(),
    "sae.vlm.extract": lambda: (lambda m=vlm.TinyVLM(_vlm_cfg()), s=_scenes(): lambda: vlm.extract(
        m, (s.patches, s.tokens), 1))(),
    "sae.vlm.caption_accuracy": lambda: (lambda m=vlm.TinyVLM(_vlm_cfg()), s=_scenes(): lambda: vlm.caption_accuracy(
        m, s, 16))(),
    "sae.vlm.TinyVLMConfig": lambda: (lambda cfg=_vlm_cfg(d_model=128, d_mlp=512):
                                      lambda: vlm.TinyVLMConfig(**cfg.__dict__) and vlm.TinyVLM(cfg))(),
    "sae.objregions.ObjectVLM": lambda: (lambda cfg=_vlm_cfg(d_model=128, d_mlp=512):
                                         lambda: objregions.ObjectVLM(cfg, 2000))(),
    "sae.data.make_scenes": lambda: lambda: sdata.make_scenes(16, seed=0),
    "sae.interpret.region_masks": lambda: (lambda z=torch.rand(16, 16, 64) * (torch.rand(16, 16, 64) > 0.5),
                                           refs=torch.randint(0, 16, (32, 4)):
                                           lambda: interpret.region_masks(z, refs, list(range(32)), (4, 4), 96))(),
    "sae.hf_interpret.masked_image": lambda: (lambda im=np.random.default_rng(0).random((128, 128, 3)),
                                              m=np.random.default_rng(1).random((128, 128)) > 0.5:
                                              lambda: hf_interpret.masked_image(im, m, 1024))(),
    "sae.s2ae.sparse_penalties": lambda: (
        lambda v=torch.rand(16, 64, 8), i=torch.randint(0, 2048, (16, 64, 8)), r=torch.randint(0, 20, (16, 64)):
        lambda: s2ae.sparse_penalties(v, i, r, 2048))(),
}


@pytest.fixture
def asked(monkeypatch):
    """The bytes every guard asked for, in order: the memory budget (check_budget, which allocation() asks too)
    and the render budget (check_render_size: res^2 x values a pixel x bytes a value x batch)."""
    seen = []
    real = checks.check_budget

    def recording(n_bytes, what, budget_mb=None, device=None):
        seen.append((float(n_bytes) + checks.CALL_BYTES, what))
        return real(n_bytes, what, budget_mb, device)

    monkeypatch.setattr(checks, "check_budget", recording)
    real_render = checks.check_render_size

    def render(res, values_per_pixel, bytes_per_value, what, budget_mb=None, batch=1):   # the render budget's ask
        out = real_render(res, values_per_pixel, bytes_per_value, what, budget_mb, batch)
        seen.append((float(out) ** 2 * values_per_pixel * bytes_per_value * max(int(batch), 1), what))
        return out

    monkeypatch.setattr(checks, "check_render_size", render)
    return seen


def test_the_probe_sees_known_allocations():
    """The probe sees a torch tensor, a NumPy array and Python objects of known size, freed or kept."""
    assert measure(lambda: torch.empty(2 * MB, dtype=torch.uint8))["torch"] == 2 * MB
    assert 2 * MB <= measure(lambda: np.empty(2 * MB, np.uint8))["python"] < 2 * MB + 4096
    assert measure(lambda: [object() for _ in range(10_000)])["python"] >= 16 * 10_000

    def transient():
        a = torch.empty(3 * MB, dtype=torch.uint8)
        del a
        return torch.empty(MB, dtype=torch.uint8)
    m = measure(transient)
    assert m["torch"] == 3 * MB, "the peak, not what is left at the end"


@pytest.mark.parametrize("name", sorted(CASES))
def test_estimate_bounds_what_the_call_allocates(name, asked):
    setup, words = CASES[name] if isinstance(CASES[name], tuple) else (CASES[name], "")
    call = setup()
    result = measure(call, record=asked)
    judged = [n for n, what in asked if words in what]
    assert judged, f"{name}: no guard asked the budget ({asked})"
    estimate = max(judged)
    print(f"{name}: estimate {estimate / MB:.2f} MiB, allocated {result['peak'] / MB:.2f} MiB "
          f"(torch {result['torch'] / MB:.2f}, python {result['python'] / MB:.2f})")
    assert result["peak"] >= 0.25 * MB, f"{name}: too small a case to judge ({result['peak']:,} bytes)"
    assert estimate >= result["peak"], (f"{name}: the guard estimated {estimate / MB:.2f} MiB, the call allocated "
                                        f"{result['peak'] / MB:.2f} MiB")


# -- region labels: any values of the same partition cost the same, under the machine's budget -------------------
def _spread(labels, seed=0):
    """``labels`` mapped one to one onto large values (up to 10^9): the same partition of every row."""
    values = torch.as_tensor(np.random.default_rng(seed).choice(10 ** 9, size=int(labels.max()) + 1, replace=False))
    return values[labels]


def test_penalties_and_purity_read_only_the_partition():
    g = torch.Generator().manual_seed(0)
    z, r = torch.rand(4, 16, 8, generator=g), torch.randint(0, 5, (4, 16), generator=g)
    big = _spread(r)
    assert int(big.max()) > 10 ** 6
    for a, b in zip(s2ae.batch_penalties(z, r), s2ae.batch_penalties(z, big)):
        torch.testing.assert_close(a, b)
    v, i = torch.rand(4, 16, 3, generator=g), torch.randint(0, 32, (4, 16, 3), generator=g)
    for a, b in zip(s2ae.sparse_penalties(v, i, r, 32), s2ae.sparse_penalties(v, i, big, 32)):
        torch.testing.assert_close(a, b)
    labels = torch.randint(-1, 3, (4, 16), generator=g)
    assert metrics.region_purity(r, labels) == metrics.region_purity(big, _spread(labels + 1, 1) - 1)
    # the renumbering keeps each row's partition and order, and the labels below P
    d = regions.dense_labels(big)
    assert int(d.max()) < 16
    for row, new in zip(big, d):
        assert torch.equal(row[:, None] == row[None, :], new[:, None] == new[None, :])
        assert torch.equal(row[:, None] < row[None, :], new[:, None] < new[None, :])


def test_labels_up_to_1e9_are_cheap_under_the_machine_budget(monkeypatch):
    """The case that passed a low estimate under the machine's budget (15,259 MiB asked, 32,000 MB allocated
    by one_hot): with the budget unpinned, it now allocates a few KiB, and the guards' estimates bound that."""
    monkeypatch.delenv(checks.MEMORY_BUDGET_VARIABLE, raising=False)
    assert checks.memory_budget_mb() >= checks.MEMORY_BUDGET_MB      # the machine's share, as a reader gets it
    z, labels = torch.rand(2, 2, 8), torch.full((2, 2), 10 ** 9)
    calls = {"batch_penalties": lambda: s2ae.batch_penalties(z, labels),
             "sparse_penalties": lambda: s2ae.sparse_penalties(z[..., :2], torch.zeros(2, 2, 2).long(), labels, 16),
             "region_purity": lambda: metrics.region_purity(labels, labels)}
    seen, real = [], checks.check_budget
    monkeypatch.setattr(checks, "check_budget", lambda n, what, budget_mb=None, device=None:
                        seen.append(n) or real(n, what, budget_mb, device))
    for name, call in calls.items():
        m = measure(call, record=seen)
        assert m["peak"] < 2 ** 16, f"{name}: {m['peak']:,} bytes for 4 patches"
        assert seen and max(seen) + checks.CALL_BYTES >= m["peak"], name
        assert max(seen) < 2 ** 16, f"{name}: asked for {max(seen):,.0f} bytes"
    torch.testing.assert_close(s2ae.batch_penalties(z, labels)[0], s2ae.batch_penalties(z, labels * 0)[0])


def test_the_budget_override_still_refuses(monkeypatch):
    """``$COMPBOOK_MEMORY_BUDGET_MB`` still decides: a call that fits the machine is refused under a smaller set
    budget, with a ValueError naming the variable, before anything is allocated; unset, a call whose buffers
    exceed the machine's memory is refused too."""
    v, i, r = torch.rand(8, 64, 4), torch.randint(0, 4096, (8, 64, 4)), torch.randint(0, 20, (8, 64))
    monkeypatch.setenv(checks.MEMORY_BUDGET_VARIABLE, "1")
    with pytest.raises(ValueError, match="over the memory budget of 1 MiB.*COMPBOOK_MEMORY_BUDGET_MB"):
        s2ae.sparse_penalties(v, i, r, 4096)
    monkeypatch.delenv(checks.MEMORY_BUDGET_VARIABLE)
    assert len(s2ae.sparse_penalties(v, i, r, 4096)) == 2
    with pytest.raises(ValueError, match="sparse_penalties.*over the memory budget"):
        s2ae.sparse_penalties(v, i, r, 10 ** 12)
