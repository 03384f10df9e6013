"""The sweep runner on this machine (compbook.runs.sweeps, backend local): keys, records, resume, retries, stacks.

The Ray backend on a real two-node cluster is tests/test_sweeps_cluster.py.
"""

import json

import numpy as np
import pytest
import torch

from compbook.runs import sweeps
from compbook.runs.sweeps import backends, spec, store as rstore, toys


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)


def _lines(path) -> list:
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def test_key_is_stable_and_names_the_question():
    c = {"seed": 0, "d": 8}
    assert sweeps.config_key(c, "a") == sweeps.config_key({"d": 8, "seed": 0}, "a")   # key order is not content
    assert sweeps.config_key(c, "a") != sweeps.config_key(c | {"seed": 1}, "a")
    assert sweeps.config_key(c, "a") != sweeps.config_key(c, "b"), "two sweeps must not share a record"
    assert len(sweeps.config_key(c, "a")) == 16


def test_records_come_back_exactly(tmp_path):
    record = {"loss": 0.1 + 0.2, "nan": float("nan"), "inf": float("-inf"), "np": np.float32(1.5), "list": (1, 2),
              "w": torch.randn(3, 2, dtype=torch.float64), "a": np.arange(6, dtype=np.int16).reshape(2, 3),
              "params": {"W_enc": torch.randn(4, 5), "inner": {"b": torch.zeros(2, dtype=torch.bool)}}}
    rstore.write_record(tmp_path, "s", "k1", {"seed": 0}, record)
    back = rstore.read_record(tmp_path, "k1", "s", {"seed": 0})
    assert back["loss"] == 0.1 + 0.2 and np.isnan(back["nan"]) and back["inf"] == float("-inf")
    assert back["np"] == 1.5 and back["list"] == [1, 2]
    assert torch.equal(back["w"], record["w"]) and back["w"].dtype == torch.float64
    assert isinstance(back["a"], np.ndarray) and back["a"].dtype == np.int16 and (back["a"] == record["a"]).all()
    assert torch.equal(back["params"]["W_enc"], record["params"]["W_enc"])
    assert torch.equal(back["params"]["inner"]["b"], record["params"]["inner"]["b"])


def test_a_record_is_never_served_to_another_question(tmp_path):
    rstore.write_record(tmp_path, "s", "k1", {"seed": 0}, {"x": 1})
    with pytest.raises(ValueError, match="another config"):
        rstore.read_record(tmp_path, "k1", "s", {"seed": 1})
    with pytest.raises(ValueError, match="belongs to sweep 's'"):
        rstore.read_record(tmp_path, "k1", "other", {"seed": 0})


def test_stacked_equals_one_by_one(tmp_path):
    stacked = sweeps.run(toys.toy_sweep(6), tmp_path / "a", per_task=4, progress=False)
    single = sweeps.run(toys.toy_sweep(6, stacked=False), tmp_path / "b", progress=False)
    assert stacked.tasks == 2 and single.tasks == 6, "4 + 2 configs per stacked task; one per task without"
    for (_, a), (_, b) in zip(stacked.by_config, single.by_config):
        assert torch.allclose(a["w"], b["w"], rtol=0, atol=1e-12)


def test_matches_a_naive_loop(tmp_path):
    report = sweeps.run(toys.toy_sweep(4), tmp_path, per_task=1, progress=False)
    for config, record in report.by_config:
        x, y, _ = toys._data(config)
        w = torch.linalg.lstsq(x, y.unsqueeze(1)).solution.squeeze(1)      # the minimiser GD approaches
        assert torch.allclose(record["w"], w, atol=1e-3), "200 GD steps on a well-posed problem reach lstsq"


def test_resume_runs_only_the_missing(tmp_path):
    log = tmp_path / "log"
    sweep = toys.toy_sweep(6, log=str(log))
    first = sweeps.run(sweep, tmp_path / "s", per_task=1, progress=False)
    assert len(first.ran) == 6 and len(_lines(log)) == 6
    for key in sweep.keys[:2]:                      # two records lost (as if their runs had been killed)
        (tmp_path / "s" / f"{key}.json").unlink()
    again = sweeps.run(sweep, tmp_path / "s", per_task=1, progress=False)
    assert again.ran == sweep.keys[:2] and len(again.stored) == 4
    assert sorted(_lines(log)[6:]) == ["0", "1"], "only the two missing configs run again"
    assert sweeps.run(sweep, tmp_path / "s", progress=False).ran == []


def test_a_half_written_record_is_missing_not_wrong(tmp_path):
    sweep = toys.toy_sweep(2)
    sweeps.run(sweep, tmp_path, per_task=1, progress=False)
    (tmp_path / f"{sweep.keys[0]}.json").unlink()                 # the tensors were written, the header not
    assert sweeps.run(sweep, tmp_path, progress=False).ran == [sweep.keys[0]]


def test_a_failing_config_is_reported_by_key_and_the_others_are_stored(tmp_path):
    configs = toys.toy_sweep(4).configs
    configs[2] = configs[2] | {"fail": "always"}
    sweep = sweeps.Sweep("toys/lines", configs, run=toys.fit_line, run_many=toys.fit_lines, group=toys.shape)
    report = sweeps.run(sweep, tmp_path, per_task=4, retries=1, progress=False)
    assert list(report.failed) == [sweep.keys[2]] and "fails by design" in report.failed[sweep.keys[2]]
    assert len(report.records) == 3, "a failed stack is split: its other configs still land"
    with pytest.raises(RuntimeError, match=sweep.keys[2]):
        report.check()


def test_a_dead_worker_is_retried(tmp_path):
    sweep = toys.toy_sweep(4, crash_once=str(tmp_path / "crashed"))
    report = sweeps.run(sweep, tmp_path / "s", workers=2, per_task=1, retries=2, progress=False)
    assert (tmp_path / "crashed").exists(), "the first task killed its worker"
    assert report.failed == {} and len(report.records) == 4 and report.retried >= 1
    plain = sweeps.run(toys.toy_sweep(4), tmp_path / "p", per_task=1, progress=False)
    for (_, a), (_, b) in zip(report.by_config, plain.by_config):
        assert _equal(a, b), "a retried task gives the record a clean run gives"


def test_pool_equals_in_process(tmp_path):
    a = sweeps.run(toys.toy_sweep(5), tmp_path / "a", workers=2, per_task=2, progress=False)
    b = sweeps.run(toys.toy_sweep(5), tmp_path / "b", per_task=2, progress=False)
    assert all(_equal(x, y) for (_, x), (_, y) in zip(a.by_config, b.by_config))


def test_per_task_from_memory():
    sweep = toys.toy_sweep(3)
    one = toys.bytes_of(sweep.configs[0])
    mb = 10 * one / 2 ** 20 / 0.8
    assert spec.per_task_from_memory(sweep, sweep.configs, mb) == 10
    assert spec.per_task_from_memory(sweep, sweep.configs, 1e9) == spec.MAX_PER_TASK
    assert spec.per_task_from_memory(sweep, sweep.configs, 1e-9) == 1
    assert spec.per_task_from_memory(toys.toy_sweep(3, stacked=False), sweep.configs, 1e9) == 1


def test_groups_never_mix_shapes(tmp_path):
    configs = toys.toy_sweep(3, d=4).configs + toys.toy_sweep(3, d=6).configs
    sweep = sweeps.Sweep("toys/mixed", configs, run=toys.fit_line, run_many=toys.fit_lines, group=toys.shape)
    tasks = spec.tasks_of(sweep, sweep.keys, per_task=8)
    assert sorted(len(t.keys) for t in tasks) == [3, 3]
    assert all(len({c["d"] for c in t.configs}) == 1 for t in tasks)


def test_gpu_share():
    assert backends.gpu_share(1, 16384) == backends.MIN_GPU_SHARE
    assert backends.gpu_share(5 * 2 ** 30, 16384) == 3 / 8                # 5 GiB of 16: rounded up to eighths
    assert backends.gpu_share(40 * 2 ** 30, 16384) == 1.0


def test_records_land_in_the_registry_as_one_folder(tmp_path, monkeypatch):
    from compbook import results
    data = tmp_path / "data"
    results.init(data)
    monkeypatch.setenv("COMPBOOK_DATA", str(data))
    sweep = toys.toy_sweep(3)
    sweeps.run(sweep, data / "toys" / "lines", per_task=1, progress=False)
    reg = json.loads((data / "registry.json").read_text())["artifacts"]
    assert list(reg) == ["toys/lines"] and reg["toys/lines"]["path"] == "toys/lines/"
    assert len(reg["toys/lines"]["files"]) == 6, "each record's header and tensors, registered"
    assert results.load("toys/lines").data == data / "toys" / "lines"


@pytest.mark.parametrize("bad, match", [
    (dict(configs=[{"a": 1}, {"a": 1}]), "repeats configs"),
    (dict(configs=[{"a": 1}], run=None), "give run"),
    (dict(configs=[{"a": 1}], run=lambda c: c), "module-level"),
    (dict(configs=[{"a": {1, 2}}]), "not JSON-able"),
    (dict(configs=["seed 0"]), "configs"),
])
def test_bad_sweeps_are_refused_by_name(bad, match):
    kwargs = dict(name="toys/bad", configs=[{"a": 1}], run=toys.fit_line) | bad
    with pytest.raises(ValueError, match=match):
        sweeps.Sweep(**kwargs)


def test_bad_run_options_are_refused(tmp_path):
    sweep = toys.toy_sweep(1)
    with pytest.raises(ValueError, match="backend"):
        sweeps.run(sweep, tmp_path, backend="slurm")
    with pytest.raises(ValueError, match="address"):
        sweeps.run(sweep, tmp_path, address="127.0.0.1:6379")
    with pytest.raises(ValueError, match="store"):
        (tmp_path / "file").write_text("")
        sweeps.run(sweep, tmp_path / "file")
    with pytest.raises(ValueError, match="retries"):
        sweeps.run(sweep, tmp_path, retries=-1)


def test_command_line_options():
    import argparse
    p = sweeps.add_arguments(argparse.ArgumentParser())
    assert sweeps.options(p.parse_args([])) == dict(backend="local", address=None, workers=None, retries=2,
                                                    per_task=None)
    assert sweeps.options(p.parse_args(["--backend", "ray", "--address", "h:6379"]))["address"] == "h:6379"
    with pytest.raises(SystemExit):
        sweeps.options(p.parse_args(["--address", "h:6379"]))
