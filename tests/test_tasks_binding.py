"""Part B's sweeps on the runner (compbook.binding.runs.tasks): the coverage sweep's records against the old in-process
stack (train every coverage x seed of a size at once, score the stack), resumption, stacking, bad input, the
command lines; the recipe models' records against run_one."""

import dataclasses
import json

import numpy as np
import pytest
import torch

from compbook.results import checkpoints
from compbook.runs import sweeps
from compbook.binding.runs import tasks
from compbook.binding.controlled import train_controlled
from compbook.binding.recipe.config import RecipeConfig
from compbook.binding.runs import sweep as W
from compbook.binding.runs.sweep import load_sweep, probe_fits, run_size, sweep_splits

pytestmark = pytest.mark.usefixtures("one_thread")

CFG, SWEEP = tasks.TINY_MODEL, tasks.TINY_SWEEP
#: the keys of the record run_size stored before it ran on the runner (chapters 12-13 read them)
OLD_KEYS = {"format", "config", "sweep", "n_objects", "coverages", "seeds", "test_recognition",
            "test_recognition_all", "test_binding", "test_scenes_rule", "probe_r2", "val_history", "best_step",
            "final_loss", "lr_first_last", "train_seconds", "params"}


def old_run_size(sweep, cfg):
    """The naive reference: run_size's body before the runner (one stack of every model, scored as a stack)."""
    splits, seeds, covs = sweep_splits(sweep, cfg.n_values, cfg.n_concepts)
    res = train_controlled(cfg, splits, seeds, progress=False)
    fits = probe_fits(res.params, cfg, splits, sweep)
    return {"coverages": covs, "seeds": seeds} | W.test_scores(res.params, cfg, splits, sweep) | {
        "probe_r2": {k: v.tolist() for k, v in fits.items()}, "val_history": res.val.tolist(),
        "best_step": res.best_step.tolist(), "final_loss": res.losses[-1].tolist(),
        "lr_first_last": [float(res.lrs[0]), float(res.lrs[-1]), float(res.lrs.max())], "params": res.params}


def assert_same_models(a: dict, b: dict):
    """Two runner records of one model are equal (weights bit for bit, floats exactly; a record holds no wall
    time, nor which models shared its stack)."""
    assert {k: v for k, v in a.items() if k != "params"} == {k: v for k, v in b.items() if k != "params"}
    assert a["params"].keys() == b["params"].keys()
    for k in a["params"]:
        assert torch.equal(a["params"][k], b["params"][k]), k


def test_runner_records_equal_the_old_stack(tmp_path):
    """run_size on the runner (stacks of 2 here) gives the old one-stack numbers exactly: each model draws its
    batches from its own seed, and is scored alone (on a CPU at one thread; see compbook.binding.runs.tasks)."""
    sweep = dataclasses.replace(SWEEP, n_values=(9,))           # the stored record keeps the sweep as given
    old = old_run_size(SWEEP, CFG)
    new = run_size(sweep, CFG, tmp_path, progress=False, store=tmp_path / "runs", per_task=2)
    assert set(new) == OLD_KEYS
    for k in old:
        if k != "params":
            assert new[k] == old[k], k
    for k in old["params"]:
        assert torch.equal(new["params"][k], old["params"][k]), k
    assert new["config"] == dataclasses.asdict(CFG) and new["sweep"]["n_values"] == (9,)
    assert len(new["val_history"]) == 2 and len(new["val_history"][0]) == 4, "(evaluations, models)"
    stored = load_sweep(3, tmp_path)                                # the file chapters 12-13 read
    assert stored["test_recognition"] == old["test_recognition"] and stored["probe_r2"] == old["probe_r2"]
    assert all(torch.equal(stored["params"][k], old["params"][k]) for k in old["params"])
    records = sweeps.load_records(tmp_path / "runs", tasks.tiny_sweep())
    assert len(records) == 4 and new["train_seconds"] > 0


def test_stacks_of_one_and_of_four_agree(tmp_path):
    """per_task=1 (four tasks of one model) and per_task=4 (one stack): the same records, bit for bit."""
    one = sweeps.run(tasks.tiny_sweep(), tmp_path / "one", per_task=1, progress=False).check()
    four = sweeps.run(tasks.tiny_sweep(), tmp_path / "four", per_task=4, progress=False).check()
    assert one.tasks == 4 and four.tasks == 1
    assert list(one.records) == list(four.records)
    for k in one.records:
        assert_same_models(one.records[k], four.records[k])
    first = next(iter(four.records.values()))
    assert not torch.equal(first["params"]["scene.embed"], list(four.records.values())[1]["params"]["scene.embed"])


def test_a_process_pool_gives_the_in_process_records(tmp_path):
    """``--backend local --workers 2`` (spawned processes import the run functions by name, one thread each):
    the records of the in-process run, one stack of two per worker."""
    here = sweeps.run(tasks.tiny_sweep(), tmp_path / "here", progress=False).check()
    pool = sweeps.run(tasks.tiny_sweep(), tmp_path / "pool", workers=2, per_task=2, progress=False).check()
    assert pool.tasks == 2 and list(pool.records) == list(here.records)
    for k in here.records:
        assert_same_models(here.records[k], pool.records[k])


def test_a_resumed_sweep_trains_only_the_missing_models(tmp_path):
    """A sweep stopped after seed 0 (its store holds those models) resumes with seed 1 only, and ends with the
    records of a sweep run whole."""
    store = tmp_path / "runs"
    half = sweeps.run(tasks.coverage_sweep(dataclasses.replace(SWEEP, seeds=(0,)), CFG), store, progress=False)
    whole = tasks.tiny_sweep()
    again = sweeps.run(whole, store, progress=False).check()
    assert sorted(again.stored) == sorted(half.ran) and len(again.ran) == 2
    assert {c["seed"] for c, _ in again.by_config if sweeps.config_key(c, whole.name) in again.ran} == {1}
    fresh = sweeps.run(whole, tmp_path / "fresh", progress=False).check()
    for k in fresh.records:
        assert_same_models(fresh.records[k], again.records[k])
    # run_size over the same store trains nothing more
    before = sorted(p.name for p in store.iterdir())
    rec = run_size(SWEEP, CFG, progress=False, store=store)
    assert sorted(p.name for p in store.iterdir()) == before
    assert rec["test_recognition"] == [r["test_recognition"] for _, r in fresh.by_config]


def test_configs_hold_what_changes_a_result():
    """One config per (size, coverage, seed), in the stored order; everything but coverage and seed groups a
    stack; a changed step count or mode is another key."""
    sweep = dataclasses.replace(SWEEP, n_values=(3, 4))
    configs = tasks.coverage_configs(sweep, CFG)
    assert [(c["model"]["n_values"], c["coverage"], c["seed"]) for c in configs] == \
           [(v, c, s) for v in (3, 4) for c in (0.4, 0.7) for s in (0, 1)]
    assert len({tasks.size_group(c) for c in configs}) == 2
    assert tasks.model_bytes(configs[0]) < tasks.model_bytes(configs[-1])
    keys = set(tasks.coverage_sweep(sweep, CFG).keys)
    assert not keys & set(tasks.coverage_sweep(sweep, dataclasses.replace(CFG, steps=7)).keys)
    other_mode = [dict(c, mode="full") for c in configs]
    assert not keys & {sweeps.config_key(c, tasks.COVERAGE) for c in other_mode}


BAD = {
    "config without its fields": (lambda: tasks.parse_config({"model": {}}), "missing fields"),
    "config with an unknown field": (lambda: tasks.parse_config(_config() | {"lr": 1}), "unknown fields"),
    "config of an unknown mode": (lambda: tasks.parse_config(_config() | {"mode": "tpu"}), "mode"),
    "config coverage 1.5": (lambda: tasks.parse_config(_config() | {"coverage": 1.5}), "coverages"),
    "config seed -1": (lambda: tasks.parse_config(_config() | {"seed": -1}), "seed"),
    "a stack of two sizes": (lambda: tasks.train_stack(
        tasks.coverage_configs(dataclasses.replace(SWEEP, n_values=(3, 4)), CFG)), "one size"),
    "an empty stack": (lambda: tasks.train_stack([]), "configs"),
    "12,000 models": (lambda: tasks.coverage_configs(dataclasses.replace(SWEEP, seeds=tuple(range(6000))), CFG),
                      "MAX_MODELS"),
    "cfg a dict": (lambda: tasks.coverage_configs(SWEEP, {"d_model": 8}), "cfg"),
    "records out of order": (lambda: tasks.assemble_size(SWEEP, CFG, [{"coverage": 0.4, "seed": 1},
                                                                      {"coverage": 0.4, "seed": 0}], 1.0), "records"),
    "recipe variant a dict": (lambda: tasks.recipe_sweep([{"n_values": 6}]), "variants"),
    "no recipe variant": (lambda: tasks.recipe_sweep([]), "variants"),
    "recipe prefix a path": (lambda: tasks.recipe_sweep([RecipeConfig(n_values=6)], prefix="../x"), "prefix"),
    "recipe config with an unknown field": (lambda: tasks.train_recipe_task(
        {"recipe": {}, "mode": "cpu", "prefix": "recipe", "lr": 1}), "fields"),
}


def _config() -> dict:
    return tasks.coverage_configs(SWEEP, CFG)[0]


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_refused(name):
    call, match = BAD[name]
    with pytest.raises(ValueError, match=match):
        call()


def test_sweep_command_takes_the_runners_options(tmp_path, monkeypatch):
    """``python -m compbook.binding sweep --backend local`` (the mode's sweep and model made tiny): the size stored
    where chapter 13 reads it, equal to run_size's, its models in --store, stacked by --per-task."""
    from compbook.binding.__main__ import main
    from compbook.binding.controlled import ControlledConfig
    monkeypatch.setattr(W, "default_sweep", lambda: SWEEP)
    monkeypatch.setattr(ControlledConfig, "for_mode", classmethod(lambda cls: CFG))
    assert main(["sweep", "--out", str(tmp_path), "--store", str(tmp_path / "runs"),
                 "--backend", "local", "--workers", "1", "--per-task", "3"]) == 0
    rec = load_sweep(3, tmp_path)
    assert rec["coverages"] == [0.4, 0.4, 0.7, 0.7] and rec["params"]["log_scale"].shape == (4,)
    assert rec["test_recognition"] == run_size(SWEEP, CFG, progress=False)["test_recognition"]
    stored = sweeps.load_records(tmp_path / "runs")
    assert len(stored) == 4
    header = json.loads(next((tmp_path / "runs").glob("*.json")).read_text())
    assert "sweep --out" in header["made_by"] and "--backend local" in header["made_by"]
    with pytest.raises(SystemExit):
        main(["sweep", "--backend", "nowhere"])


def test_recipe_records_equal_run_one(tmp_path, monkeypatch):
    """The recipe command on the runner stores what run_one stores (weights bit for bit, the same readings),
    and keeps the resumable state where run_one would (recipe.default_checkpoint) unless --checkpoint-dir."""
    import tempfile
    from compbook.binding.__main__ import main
    from compbook.binding.recipe.train import default_checkpoint, run_one
    from compbook.binding.recipe.model import load_recipe, stem_for
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.delenv("COMPBOOK_MODE", raising=False)
    argv = ["recipe", "--coverages", "0.5", "0.8", "--values", "6", "--steps", "2", "--batch", "16",
            "--eval-scenes", "20", "--out", str(tmp_path / "runner"), "--backend", "local"]
    assert main(argv) == 0
    cfg = dataclasses.replace(RecipeConfig.for_mode(), n_values=6, steps=2, batch=16, eval_scenes=20, coverage=0.8)
    state = default_checkpoint(cfg, stem_for(cfg).name)
    assert str(state).startswith(str(tmp_path / "tmp")) and checkpoints.files(state)[0].exists()
    ref = run_one(cfg, tmp_path / "ref", tmp_path / "ref_state")
    model, rec = load_recipe(stem_for(cfg, tmp_path / "runner"))
    ref_model, ref_rec = load_recipe(stem_for(cfg, tmp_path / "ref"))
    for k, v in ref_model.state_dict().items():
        assert torch.equal(model.state_dict()[k], v), k
    assert rec["final"] == ref["final"] == ref_rec["final"] and rec["floors"] == ref["floors"]
    assert [{k: v for k, v in e.items() if k != "seconds"} for e in rec["log"]] == \
           [{k: v for k, v in e.items() if k != "seconds"} for e in ref["log"]]
    assert rec["mode"] == "cpu" and "--backend local" in rec["made_by"]
