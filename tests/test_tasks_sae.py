"""compbook.sae.runs.tasks: Part C's SAE sweeps on the runner give the old loop's SAEs, resume, stack exactly.

The naive reference is the loop before the runner: :func:`compbook.sae.s2ae.train_sae` (and the reference
optimiser's :func:`compbook.sae.studies.refopt.train_sae_reference`) one SAE at a time, as
:func:`compbook.sae.experiment.stored_runs` trains them. On the CPU the stacked training is bit-identical to it,
so every comparison here is exact (``torch.equal``), not within a tolerance.
"""

import dataclasses
import json

import pytest
import torch

from compbook.runs import sweeps
from compbook.sae import __main__ as cli, experiment as ex, sources
from compbook.sae.runs import stack, tasks
from compbook.sae.studies import study as st
from compbook.sae.studies.refopt import ReferenceTrainConfig, train_sae_reference
from compbook.sae.s2ae import SAETrainConfig, fit_sae, train_sae
from compbook.sae.topk import TopKSAE

pytestmark = pytest.mark.usefixtures("one_thread")

WEIGHTS = ("W_enc", "W_dec", "b_enc", "b_dec")
BASE = SAETrainConfig(d_sae=24, k=2, steps=12, batch_images=4, n_regions=4, lr=3e-3)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    return tmp_path


def same(sae, weights) -> bool:
    """Every weight of ``sae`` equal, bit for bit, to ``weights`` (a record or another SAE)."""
    get = (lambda n: weights[n]) if isinstance(weights, dict) else (lambda n: getattr(weights, n).detach())
    return all(torch.equal(getattr(sae, n).detach(), get(n)) for n in WEIGHTS)


def counting(monkeypatch) -> list:
    """Patch :func:`compbook.sae.runs.stack.fit_stack` to record the (k, lambda, seed) of every SAE it trains."""
    trained, real = [], stack.fit_stack

    def fit(saes, data, cfgs, *a, **k):
        trained.extend((c.k, c.lam, c.seed) for c in cfgs)
        return real(saes, data, cfgs, *a, **k)
    monkeypatch.setattr(stack, "fit_stack", fit)
    return trained


def test_tiny_sweep_records_are_the_old_loops_saes(data_dir):
    sweep = tasks.tiny_sweep()
    assert len(sweep.configs) == 8 and {c["device"] for c in sweep.configs} == {"cpu"}
    report = sweeps.run(sweep, data_dir / "tiny", progress=False).check()
    assert sorted(report.ran) == sorted(sweep.keys) and report.tasks == 2        # one stack per k
    data = tasks.synthetic_data(**{k: v for k, v in tasks.TINY_SOURCE.items() if k != "source"})
    for config, record in report.by_config:
        cfg = tasks.train_config(config)
        assert record["W_enc"].shape == (16, cfg.d_sae) and record["W_dec"].shape == (cfg.d_sae, 16)
        assert same(train_sae(data, cfg, progress=False).sae, record), config
        assert record["train s"] > 0 and record["final loss"] > 0


def test_study_tables_from_the_runner_equal_the_old_loops(data_dir):
    train, test = tasks.synthetic_data(), tasks.synthetic_data(seed=1)
    masks = torch.rand(24, 3, 16, generator=torch.Generator().manual_seed(0)) > 0.5
    runs = st.study_runs(train, BASE, ks=(2, 3), lams=(0.0, 0.01), seeds=(0, 1))
    old = []
    for k in (2, 3):                                     # the loop before the runner, in its own store
        got = ex.stored_runs(train, dataclasses.replace(BASE, k=k), (0, 1), (0.0, 0.01), f"old/k{k}")
        old += [r | {"k": k, "lam": st._lam_of(r["method"])} for r in got]
    assert all(same(a["sae"], b["sae"]) for a, b in zip(runs, old))
    new_df, old_df = (st.study_table(r, test, masks).drop(columns="train s") for r in (runs, old))
    pd_equal = new_df.equals(old_df)
    assert pd_equal, (new_df, old_df)
    assert list(new_df.k) == [2, 2, 2, 2, 3, 3, 3, 3] and list(new_df.seed) == [0, 0, 1, 1] * 2
    # the reference optimiser (a schedule and clipping) and the region counts: the old loop's SAEs too
    ref = st.reference_runs(train, 2, seeds=(0,), lams=(0.0, 0.01), base=BASE)
    for r in ref:
        cfg = ReferenceTrainConfig(**{**dataclasses.asdict(BASE), "lam": r["lam"], "seed": r["seed"]})
        assert same(r["sae"], train_sae_reference(train, cfg, progress=False).sae)
    reg = st.region_runs(train, counts=(2,), k=2, lam=0.01, seeds=(1,), base=BASE)
    assert [(r["method"], r["regions"]) for r in reg] == [("vanilla", 0), ("S2AE, 16 regions", 16),
                                                         ("S2AE, 2 regions", 2)]
    two = dataclasses.replace(BASE, n_regions=2, lam=0.01, seed=1)
    assert same(reg[2]["sae"], train_sae(train, two, progress=False).sae)


def test_a_resumed_sweep_runs_only_the_missing_configs(data_dir, monkeypatch):
    sweep = tasks.tiny_sweep()
    first = tasks.sweep_of(sweep.configs[:3])
    sweeps.run(first, data_dir / "s", progress=False).check()
    trained = counting(monkeypatch)
    (data_dir / "s" / f"{sweep.keys[1]}.json").unlink()           # as if killed before this record's header
    report = sweeps.run(sweep, data_dir / "s", progress=False).check()
    assert sorted(report.stored) == sorted([sweep.keys[0], sweep.keys[2]])
    assert sorted(report.ran) == sorted(k for i, k in enumerate(sweep.keys) if i not in (0, 2))
    assert len(trained) == 6 and len(report.records) == 8
    again = sweeps.run(sweep, data_dir / "s", progress=False).check()
    assert again.ran == [] and len(trained) == 6
    # study_runs: a second call trains nothing; the SAEs stored before the runner are served, not retrained
    train = tasks.synthetic_data()
    st.study_runs(train, BASE, ks=(2,), lams=(0.0,), seeds=(0, 1))
    assert len(trained) == 8
    st.study_runs(train, BASE, ks=(2,), lams=(0.0,), seeds=(0, 1))
    assert len(trained) == 8
    old = ex.stored_runs(train, dataclasses.replace(BASE, k=3), (0,), (0.0,), st.store_of(3))
    served = st.study_runs(train, BASE, ks=(3,), lams=(0.0,), seeds=(0,))
    assert len(trained) == 8 and same(served[0]["sae"], old[0]["sae"])
    st.study_runs(train, BASE, ks=(3,), lams=(0.0,), seeds=(0,), retrain=True)
    assert len(trained) == 9


def test_stacked_and_one_by_one_agree_exactly(data_dir):
    sweep = tasks.tiny_sweep()
    stacked = sweeps.run(sweep, data_dir / "a", progress=False).check()
    single = sweeps.run(sweep, data_dir / "b", per_task=1, progress=False).check()
    assert stacked.tasks == 2 and single.tasks == 8
    for key in sweep.keys:
        assert all(torch.equal(stacked.records[key][n], single.records[key][n]) for n in WEIGHTS)
    # fit_stack against fit_sae: different lambdas, region counts, seeds and regions made in every step
    data = tasks.synthetic_data()
    cfgs = [dataclasses.replace(BASE, k=3, lam=lam, n_regions=n, seed=s, regions_every_step=True)
            for lam, n, s in ((0.0, None, 0), (0.01, 2, 0), (0.01, 5, 3))]

    def start(c):
        sae = TopKSAE(16, c.d_sae, c.k, seed=c.seed)
        with torch.no_grad():
            sae.b_dec.copy_(data.tokens.mean(0))
        return sae
    together = stack.fit_stack([start(c) for c in cfgs], data, cfgs, device="cpu")
    for c, r in zip(cfgs, together):
        alone = fit_sae(start(c), data, c, progress=False)
        assert same(r.sae, alone.sae) and r.losses == alone.losses


def test_workers_make_the_data_again_from_its_spec(data_dir):
    sweep = tasks.tiny_sweep()
    here = sweeps.run(sweep, data_dir / "here", progress=False).check()
    tasks._CACHE.clear()                                  # a fresh worker: nothing kept, made from the spec
    again = tasks.fit_many(sweep.configs[:4])
    pool = sweeps.run(sweep, data_dir / "pool", workers=2, progress=False).check()
    for i, key in enumerate(sweep.keys):
        assert all(torch.equal(here.records[key][n], pool.records[key][n]) for n in WEIGHTS)
        if i < 4:
            assert all(torch.equal(here.records[key][n], again[i][n]) for n in WEIGHTS)
    # a noted source is found again by identity; a copy of the same numbers is "given" (this process only)
    train = sources.note_source(tasks.synthetic_data(), tasks.TINY_SOURCE)
    assert tasks.data_spec(train)["source"] == "synthetic"
    copy = dataclasses.replace(train)
    spec = tasks.data_spec(copy)
    assert spec["source"] == "given" and spec["digest"] == ex.data_digest(train)
    with pytest.raises(ValueError, match="train: activations without a source"):
        st.study_runs(copy, BASE, ks=(2,), lams=(0.0,), seeds=(5,), workers=2)


def test_bad_input_is_refused(data_dir):
    good = tasks.tiny_sweep().configs[0]
    spec = good["data"]
    cases = {
        "ks": lambda: tasks.study_sweep(spec, (), (0.0,), (0,), BASE),
        "lams": lambda: tasks.study_sweep(spec, (2,), (-0.1,), (0,), BASE),
        "seeds": lambda: tasks.study_sweep(spec, (2,), (0.0,), (0.5,), BASE),
        "base": lambda: tasks.study_sweep(spec, (2,), (0.0,), (0,), {"k": 2}),
        "optimiser": lambda: tasks.config_of(spec, BASE, "sgd"),
        "device": lambda: tasks.config_of(spec, BASE, device="tpu"),
        "source": lambda: sources.check_source({"source": "imagenet"}),
        "source'": lambda: sources.check_source({"source": "synthetic", "n": 3}),
        "tokens": lambda: tasks.synthetic_data(tokens=10),
        "data": lambda: tasks.load_data({**spec, "digest": "0" * 64}),
        "data'": lambda: tasks.config_of({**spec, "digest": "abc"}, BASE),
        "shape": lambda: tasks.study_sweep({**spec, "shape": [24, 20]}, (2,), (0.0,), (0,), BASE),
        "config": lambda: tasks.train_config({**good, "extra": 1}),
        "configs": lambda: tasks.fit_many([good, {**good, "optimiser": "reference"}]),
        "record": lambda: tasks.record_sae({"W_enc": torch.zeros(3, 3)}, good),
        "train": lambda: st.study_runs(tasks.synthetic_data().acts, BASE, ks=(2,)),
    }
    if not torch.cuda.is_available():
        cases["device='cuda'"] = lambda: tasks.fit_one({**good, "device": "cuda"})
    for name, call in cases.items():
        with pytest.raises(ValueError, match=name.rstrip("'")):
            call()
    with pytest.raises(ValueError, match="cfgs"):
        stack.fit_stack([TopKSAE(16, 24, 2), TopKSAE(16, 24, 2)], tasks.synthetic_data(),
                        [BASE, dataclasses.replace(BASE, steps=5)])


def test_the_commands_take_the_runners_options(monkeypatch):
    got = {}
    monkeypatch.setattr(st, "run", lambda *a, **k: got.setdefault("study", k))
    monkeypatch.setattr(st, "run_regions", lambda *a, **k: got.setdefault("regions", k))
    from compbook.sae.runs import full
    monkeypatch.setattr(full, "run", lambda cfg, **k: got.setdefault("full", (cfg, k)) and {})
    monkeypatch.setattr(full, "show", lambda out: None)
    assert cli.main(["study", "--backend", "local"]) == 0
    assert got["study"] == {"backend": "local", "address": None, "workers": None, "retries": 2, "per_task": None}
    assert cli.main(["study", "--regions", "4", "--backend", "local", "--workers", "2"]) == 0
    assert got["regions"]["workers"] == 2 and got["regions"]["retrain"] is False
    assert cli.main(["full", "--tiny", "--backend", "local", "--retries", "0"]) == 0
    cfg, options = got["full"]
    assert cfg.store == "sae/tiny" and options["retries"] == 0 and options["backend"] == "local"
    from compbook.sae.studies import objsae
    monkeypatch.setattr(objsae, "run", lambda *a, **k: got.setdefault("objsae", k))
    assert cli.main(["objsae", "--backend", "local", "--per-task", "4"]) == 0
    assert got["objsae"]["per_task"] == 4 and got["objsae"]["backend"] == "local"
    with pytest.raises(SystemExit):
        cli.main(["study", "--backend", "slurm"])
    with pytest.raises(SystemExit):
        cli.main(["full", "--address", "10.0.0.1:6379"])        # an address without --backend ray


def test_records_carry_no_activations_and_configs_name_the_data():
    sweep = tasks.tiny_sweep()
    text = json.dumps(sweep.configs)
    assert len(text) < 8000, "a config names its data; it does not carry it"
    for c in sweep.configs:
        assert set(c["data"]) == {"source", "n", "tokens", "d", "grid", "seed", "digest", "shape"}
        assert tasks.bytes_of(c) > 4 * 2 * 16 * c["train"]["d_sae"]
    assert len({json.dumps(tasks.group_of(c)) for c in sweep.configs}) == 2      # one stack per k
