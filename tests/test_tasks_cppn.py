"""compbook.cppn.runs.tasks: Part A's chapter 6-9 trainings as sweeps of compbook.runs.sweeps, on toy sizes.

The reference is the chapters' own in-process code (``depth.depth_sweep``, ``experiments.pruning_methods``,
``optimizer_comparison``, ``dense_and_sp``, ``fer_optimizers`` and the stored run's ``run_chapter*``): records
read back from the store must give the same networks and numbers, bit for bit, for the same seeds (each stack
of the runner is then the old loop's stack: every seed of a group in one task).
"""

import dataclasses
import json

import numpy as np
import pytest
import torch

from compbook.runs import sweeps
from compbook.runs.sweeps import runner
from compbook.cppn import depth, panel, prune
from compbook.cppn.runs import experiments, tasks

pytestmark = pytest.mark.usefixtures("one_thread")

SP = dict(threshold=0.5, rounds=2, retrain_steps=4)


class _Bright:
    """A cheap judge: a render is accepted when its mean brightness is over one half."""
    identity = "bright"

    def __call__(self, images, concept, *, reference=None, questions=None):
        return images.mean(dim=(1, 2, 3)) > 0.5


class _Dark(_Bright):
    identity = "dark"

    def __call__(self, images, concept, **kw):
        return ~super().__call__(images, concept, **kw)


@pytest.fixture
def cheap_panel(monkeypatch):
    """The two default judges replaced by cheap ones, in the in-process and in the runner's path alike."""
    monkeypatch.setattr(panel, "default_panel", lambda *a, **k: {panel.DEFAULT: _Bright(), panel.SSIM: _Dark()})


def _same_net(a, b) -> bool:
    return a.activations == b.activations and all(torch.equal(x, y) for x, y in zip(a.weights, b.weights)) \
        and all(torch.equal(x, y) for x, y in zip(a.masks, b.masks))


def _numbers(record: dict) -> dict:
    return {k: v for k, v in record.items() if not isinstance(v, dict)}


def _depth_cfg(**kw):
    return experiments.DepthConfig(res=16, width=4, steps=12, sp=SP, **kw)


# -- chapters 7 and 9: the stacked dense + SP sweep ------------------------------------------------------------------
def test_depth_records_equal_the_in_process_depth_sweep(tmp_path):
    cfg = _depth_cfg()
    sweep = tasks.depth_sweep(cfg, [0, 1, 2], depths=[1, 2], targets=["rings"], source="pattern")
    assert len(sweep.configs) == 6 and {c["sp_seed"] for c in sweep.configs} == {0, 1, 2}
    report = sweeps.run(sweep, tmp_path, progress=False).check()
    assert report.tasks == 2, "each depth's three seeds train as one stack"
    target = tasks.target_image("pattern", "rings", 16)
    old = depth.depth_sweep(target, [1, 2], 4, [0, 1, 2], steps=12, lr=cfg.lr, sp=SP, progress=False)
    stored = sweeps.load_records(tmp_path, sweep)                   # read back from the files
    models = {(c["depth"], c["seed"]): tasks.dense_sp_models(c, stored[k])[1]
              for k, c in zip(sweep.keys, sweep.configs)}
    assert list(models) == list(old.models)
    assert all(_same_net(models[k], old.models[k]) for k in models)
    assert any(prune.sparsity(m.masks) > 0 for m in models.values()), "SP pruned nothing: a weak test"
    rows, _ = depth.score_models(models, target)
    assert json.dumps(rows) == json.dumps(old.rows)          # NaN scores compare equal as text
    for k, c in zip(sweep.keys, sweep.configs):
        assert stored[k]["mse"] == old.rows[sweep.configs.index(c)]["loss"]


def test_unknown_records_equal_dense_and_sp(tmp_path):
    cfg = experiments.UnknownConfig(res=16, width=4, steps=10, sp=SP)
    sweep = tasks.unknown_sweep(cfg, [3, 4], at_depth=2, targets=["coffee"])
    report = sweeps.run(sweep, tmp_path, progress=False).check()
    dense, pruned = experiments.dense_and_sp(tasks.target_image("unknown", "coffee", 16), 2, [3, 4], cfg)
    got = [tasks.dense_sp_models(c, r) for c, r in report.by_config]
    assert all(_same_net(g[0], d) and _same_net(g[1], p) for g, d, p in zip(got, dense, pruned))
    assert [r["sp_seed"] for r in sweep.configs] == [3, 4]
    assert tasks.SOURCES["unknown"] == tuple(experiments.unknown_targets()[0]), "chapter 9's six images"


def test_a_resumed_sweep_runs_only_the_missing_configs(tmp_path):
    sweep = tasks.tiny_sweep()
    first = sweeps.run(sweep, tmp_path, progress=False).check()
    assert sorted(first.ran) == sorted(sweep.keys)
    depth2 = [k for k, c in zip(sweep.keys, sweep.configs) if c["depth"] == 2]
    for k in depth2:                                          # lose one depth's two records
        for f in tmp_path.glob(f"{k}.*"):
            f.unlink()
    again = sweeps.run(sweep, tmp_path, progress=False).check()
    assert sorted(again.ran) == sorted(depth2) and sorted(again.stored) == sorted(set(sweep.keys) - set(depth2))
    for k in sweep.keys:                                      # the same stack again: the same record
        assert all(torch.equal(again.records[k]["pruned"][n], first.records[k]["pruned"][n])
                   for n in first.records[k]["pruned"])
        assert _numbers(again.records[k]) == _numbers(first.records[k])
    assert sweeps.run(sweep, tmp_path, progress=False).ran == []


def test_stacked_training_equals_one_config_at_a_time():
    """One stack gives the same bits every time; another stack (fewer mates, or one config alone: ``run``) may
    take another matmul blocking: the same networks to 1e-5 after 12 steps (our tolerance: float32 rounding)."""
    sweep = tasks.depth_sweep(dataclasses.replace(_depth_cfg(), sp=None), [0, 1, 2], depths=[2],
                              targets=["rings"], source="pattern")
    three = tasks.train_dense_sp_many(sweep.configs)
    again, two = tasks.train_dense_sp_many(sweep.configs), tasks.train_dense_sp_many(sweep.configs[1:])
    for a, b in zip(three, again):
        assert all(torch.equal(a["dense"][n], b["dense"][n]) for n in a["dense"])
    for a, b in zip(three[1:], two):
        for n in a["dense"]:
            torch.testing.assert_close(b["dense"][n], a["dense"][n], rtol=0, atol=1e-5)
    for a, c in zip(three, sweep.configs):
        one = tasks.train_dense_sp(c)
        for n in a["dense"]:
            torch.testing.assert_close(one["dense"][n], a["dense"][n], rtol=0, atol=1e-5)
        assert one["mse"] == pytest.approx(a["mse"], rel=1e-5)
    grid = tasks.fer_optimizer_sweep(experiments.FerOptimizerConfig(arch="2;cache:2,sin:1", res=8, steps=5,
                                                                    grid={"adam": [1e-2]}), [0, 1])
    stacked = tasks.train_grid_many(grid.configs)
    for r, c in zip(stacked, grid.configs):
        alone = tasks.train_grid(c)
        np.testing.assert_allclose(alone["losses"], r["losses"], rtol=1e-5)
        assert alone["final_loss"] == pytest.approx(r["final_loss"], rel=1e-5)


def test_tiny_sweep_is_small_and_stacked():
    sweep = tasks.tiny_sweep()
    assert len(sweep.configs) == 4 and sweep.run_many is tasks.train_dense_sp_many
    groups = {json.dumps(sweep.group(c), sort_keys=True) for c in sweep.configs}
    assert len(groups) == 2 and all(c["res"] == 16 and c["steps"] == 20 for c in sweep.configs)
    assert sweep.bytes_of(sweep.configs[0]) == tasks.train_bytes([4], 16)


# -- chapter 6 ---------------------------------------------------------------------------------------------------
def _pruning_cfg():
    return experiments.PruningConfig(res=8, depth=2, width=4, layout={"tanh": 2, "sin": 2}, dense_steps=6,
                                     sp=dict(threshold=0.5, rounds=2, retrain_steps=2), lt_rounds=1)


def test_pruning_records_give_back_the_pruning_run(tmp_path):
    cfg = _pruning_cfg()
    sweep = tasks.pruning_sweep(cfg, [0, 1])
    assert sweep.configs[0]["layout"] == [["tanh", 2], ["sin", 2]], "the neurons' order survives the key"
    report = sweeps.run(sweep, tmp_path, progress=False).check()
    target = tasks.target_image("picbreeder", "skull", 8)
    for c, r in report.by_config:
        got, old = tasks.pruning_run(c, r), experiments.pruning_methods(target, c["seed"], cfg)
        assert list(got.final) == list(old.final) and list(got.masks) == list(old.masks)
        assert _same_net(got.init, old.init) and _same_net(got.dense.model, old.dense.model)
        assert all(_same_net(got.final[n], old.final[n]) for n in old.final)
        assert all(all(torch.equal(a, b) for a, b in zip(got.masks[n], old.masks[n])) for n in old.masks)
        assert all(np.array_equal(got.curves[n], old.curves[n]) for n in old.curves)
        np.testing.assert_array_equal(got.dense.losses, old.dense.losses)
        assert got.dense.config == old.dense.config
        for a, b in ((got.sp, old.sp), (got.lottery, old.lottery)):
            assert (a.sparsity, a.losses, a.removed, a.config) == (b.sparsity, b.losses, b.removed, b.config)
            assert _same_net(a.model, b.model) and np.array_equal(a.curve, b.curve)


# -- chapter 8 ---------------------------------------------------------------------------------------------------
def test_optimizer_records_give_back_the_optimizer_run(tmp_path):
    cfg = experiments.OptimizerConfig(res=8, depth=2, width=4, steps=5, grid={"adam": [1e-3, 1e-2], "muon": [1e-2]},
                                      sp=dict(threshold=0.5, rounds=1, seed=0, retrain_steps=2))
    target = tasks.target_image("picbreeder", "skull", 8)
    old = experiments.optimizer_comparison(target, [0, 1], cfg)
    (rec,) = sweeps.run(tasks.optimizer_masks_sweep(cfg), tmp_path, progress=False).check().records.values()
    masks = [rec["masks"][f"m{l}"] for l in range(len(old.masks))]
    assert all(torch.equal(a, b) for a, b in zip(masks, old.masks)) and prune.sparsity(masks) > 0
    report = sweeps.run(tasks.optimizer_sweep(cfg, [0, 1], masks), tmp_path, progress=False).check()
    assert report.tasks == 3, "one stack per (optimizer, rate)"
    got = tasks.optimizer_run(report.by_config, cfg.grid, masks)
    assert got.best == old.best and list(got.runs) == list(old.runs)
    for key, run in old.runs.items():
        np.testing.assert_array_equal(got.runs[key].losses, run.losses)
        np.testing.assert_array_equal(got.runs[key].final_loss, run.final_loss)
        assert all(_same_net(a, b) for a, b in zip(got.runs[key].models, run.models))


# -- the stored run's chapters through the runner equal the in-process ones ----------------------------------------
def test_routed_chapters_equal_the_in_process_ones(tmp_path, cheap_panel):
    fer = experiments.FerOptimizerConfig(arch="2;cache:2,sin:1", res=8, steps=4, grid={"adam": [1e-3, 1e-2]})
    routed, old = tasks.run_chapter8_fer([0, 1], 4, fer, tmp_path), experiments.run_chapter8_fer([0, 1], 4, cfg=fer)
    assert routed.pop("train_seconds").keys() == old.pop("train_seconds").keys() and routed == old
    cfg9 = experiments.UnknownConfig(res=8, width=4, steps=4, sp=dict(threshold=0.5, rounds=1, retrain_steps=2))
    routed, old = tasks.run_chapter9([0, 1], 4, cfg9, tmp_path), experiments.run_chapter9([0, 1], 4, cfg=cfg9)
    assert routed == old and len(routed["targets"]) == 6
    cfg7 = experiments.DepthConfig(res=8, width=4, steps=4, depths=(1, 2), sp=dict(threshold=0.5, rounds=1,
                                                                                      retrain_steps=2))
    routed, old = tasks.run_chapter7([0, 1], 4, cfg7, tmp_path), experiments.run_chapter7([0, 1], 4, cfg=cfg7)
    assert json.dumps(routed, default=str) == json.dumps(old, default=str)


def test_routed_chapter6_equals_the_in_process_one(tmp_path, cheap_panel):
    cfg = _pruning_cfg()
    routed = tasks.run_chapter6([0, 1], 4, cfg, tmp_path, backend="local", workers=1)
    assert routed == experiments.run_chapter6([0, 1], 4, cfg=cfg)
    assert len(list((tmp_path / "pruning").glob("*.json"))) == 2, "one record per seed, in the store"


# -- bad input and the command line --------------------------------------------------------------------------------
@pytest.mark.parametrize("build, match", [
    (lambda: tasks.depth_sweep(_depth_cfg(), []), "seeds"),
    (lambda: tasks.depth_sweep(_depth_cfg(), [0, 0]), "seeds"),
    (lambda: tasks.depth_sweep(_depth_cfg(), [-1]), r"seeds\[0\]"),
    (lambda: tasks.depth_sweep(_depth_cfg(), [0], depths=[0]), "depth"),
    (lambda: tasks.depth_sweep(_depth_cfg(), [0], targets=["cat"]), "target"),
    (lambda: tasks.depth_sweep(_depth_cfg(), [0], source="photos"), "source"),
    (lambda: tasks.depth_sweep(experiments.UnknownConfig(), [0]), "cfg"),
    (lambda: tasks.unknown_sweep(experiments.UnknownConfig(), [0], targets=["skull"]), "target"),
    (lambda: tasks.pruning_sweep(_pruning_cfg(), [0], target="dog"), "target"),
    (lambda: tasks.optimizer_sweep(experiments.OptimizerConfig(depth=2, width=4), [0], [torch.ones(4, 4)]),
     "masks"),
    (lambda: tasks.fer_optimizer_sweep(experiments.FerOptimizerConfig(grid={"sgd": [0.1]}), [0]), "optimizer"),
    (lambda: tasks.fer_optimizer_sweep(experiments.FerOptimizerConfig(grid={"adam": [-1.0]}), [0]), "lr"),
    (lambda: tasks.train_dense_sp_many([tasks.tiny_sweep().configs[0], tasks.tiny_sweep().configs[2]]), "stack"),
    (lambda: tasks.target_image("pattern", "rings", 0), "res"),
    (lambda: tasks.store_for(""), "name"),
])
def test_bad_input_is_a_value_error_naming_it(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_the_command_takes_the_runners_options(tmp_path, monkeypatch):
    from compbook.cppn.__main__ import main
    seen = {}
    monkeypatch.setitem(tasks.RUNNERS, "6", lambda seeds, sample, store=None, **options:
                        seen.update(options, store=store) or {"x": 1})
    monkeypatch.setattr(experiments, "stored_path", lambda: tmp_path / "partA.json")
    assert main(["experiments", "--chapters", "6", "--backend", "local", "--store", str(tmp_path)]) == 0
    assert seen["backend"] == "local" and seen["store"] == tmp_path and seen["address"] is None
    assert not (tmp_path / "partA.json").exists(), "without --write nothing is written"
    with pytest.raises(SystemExit):
        main(["experiments", "--chapters", "6", "--backend", "nowhere"])


def test_stores_follow_the_mode(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    assert tasks.store_for("cppn/depth") == tmp_path / "emc2" / "full" / "sweeps" / "cppn-depth"
    monkeypatch.setenv("COMPBOOK_MODE", "cpu")
    cpu = tasks.store_for("cppn/depth")
    assert cpu.parts[-3] == "compbook-sweeps" and cpu.parts[-1] == "cppn-depth"
    assert cpu.parts[-2] == f"code-{runner.code_version()}", "the CPU cache is kept per version of the code"
    monkeypatch.setenv("COMPBOOK_SWEEPS", str(tmp_path / "mine"))
    assert tasks.store_for("cppn/depth") == tmp_path / "mine" / "cppn-depth", "one override for every sweep"
    assert tasks.store_for("cppn/depth", tmp_path) == tmp_path / "depth"


def test_the_cpu_cache_follows_the_code(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 2\n")
    before = runner.sources_digest(tmp_path / "pkg")
    (tmp_path / "pkg" / "notes.txt").write_text("not code")
    assert runner.sources_digest(tmp_path / "pkg") == before, "only Python sources make the code's version"
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 3\n")
    assert runner.sources_digest(tmp_path / "pkg") != before, \
        "an edited source must change the version, else an old trainer's records are served to the new one"
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "pkg" / "sub" / "b.py").rename(tmp_path / "pkg" / "b2.py")
    assert runner.sources_digest(tmp_path / "pkg") != before, "a moved file is a different package"
    with pytest.raises(ValueError, match="root"):
        runner.sources_digest(tmp_path / "nowhere")
