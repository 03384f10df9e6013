"""Part A's sweeps (compbook.cppn.runs.scoring_tasks): the twins and the EMC2 scores through compbook.runs.sweeps equal
the old in-process loops (train_twins + save_twins, compositional_score), resume with only the missing configs, and
refuse bad input."""

import copy
import hashlib
import json

import numpy as np
import pytest
import torch

from compbook.runs import sweeps
from compbook.cppn import __main__ as cli, emc2, twins as tw
from compbook.cppn.runs import scoring_tasks as st
from compbook.cppn.data import store
from compbook.cppn.judges.registry import make_judge
from compbook.cppn.judges.server import ServerJudge
from compbook.cppn.network import CPPN
from servers import FaultServer, completion

pytestmark = pytest.mark.usefixtures("one_thread")


def _run(sweep, folder):
    report = sweeps.run(sweep, store=folder, backend="local", progress=False)
    report.check()
    return report


def _tensors(model):
    return [w.detach() for w in model.weights] + [m for m in model.masks]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return st.tiny_networks(tmp_path_factory.mktemp("nets"))


def test_twin_records_equal_train_twins_and_store_as_save_twins(tmp_path):
    recipe = tw.TwinRecipe("skull", res=16, steps=30, seeds=[1, 0])
    direct = copy.deepcopy(recipe)
    models, losses, seconds = tw.train_twins(direct, progress=False)
    report = _run(st.twin_sweep(recipe), tmp_path / "store")
    records = [r for _, r in report.by_config]
    assert [r["seed"] for r in records] == [1, 0] and len(report.ran) == 2
    for j, (model, r) in enumerate(zip(models, records)):
        assert all(torch.equal(a, b) for a, b in zip(_tensors(model), _tensors(st.record_model(r))))
        assert np.array_equal(r["losses"], losses[:, j]) and r["losses"].dtype == losses.dtype
        meta = tw.twin_files(direct, model, losses, seconds, j)[1]
        assert {k: v for k, v in r["metadata"].items() if k != "train_seconds_all_seeds"} == \
               {k: v for k, v in meta.items() if k != "train_seconds_all_seeds"}
        assert r["stem"] == tw.twin_stem("skull", 16, 30, r["seed"]) and r["stopped_by"] == "steps"
    # stored from the records: byte for byte what save_twins writes for the same training output
    ours = st.write_twins(records, tmp_path / "ours")
    stack = np.stack([r["losses"] for r in records], 1)
    done = copy.deepcopy(recipe)
    done.max_steps, done.stopped_by = 30, "steps"
    ref = tw.save_twins(done, [st.record_model(r) for r in records], stack, records[0]["seconds"], tmp_path / "ref")
    for a, b in zip(ours, ref):
        assert a.relative_to(tmp_path / "ours") == b.relative_to(tmp_path / "ref")
        assert a.read_bytes() == b.read_bytes()
        assert a.with_suffix(".safetensors").read_bytes() == b.with_suffix(".safetensors").read_bytes()
    loaded = tw.load_twins("skull", tmp_path / "ours", res=16)
    assert [store.content_hash(m) for m in loaded] == [store.content_hash(st.record_model(r))
                                                      for r in sorted(records, key=lambda r: r["seed"])]


def test_a_resumed_twin_sweep_trains_only_the_missing_stacks(tmp_path):
    first = _run(st.twin_sweep("skull", res=16, steps=4, seeds=[0]), tmp_path / "s")
    again = _run(st.twin_sweep(["skull", "apple"], res=16, steps=4, seeds=[0]), tmp_path / "s")
    assert again.stored == first.ran and len(again.ran) == 1 and again.tasks == 1
    assert [r["target"] for r in again.records.values()] == ["skull", "apple"]


def test_a_stack_split_between_tasks_trains_whole(tmp_path):
    """A twin's record does not depend on how the runner splits its stack: each part trains the whole stack."""
    configs = st.twin_sweep(tw.TwinRecipe("apple", res=16, steps=8, seeds=[0, 1])).configs
    alone = st.train_twin(configs[1])
    together = st.train_twin_stack(configs)[1]
    assert torch.equal(alone["weight0"], together["weight0"]) and np.array_equal(alone["losses"], together["losses"])
    assert st.twin_group(configs[0]) == st.twin_group(configs[1])
    assert st.twin_bytes(configs[0]) > 0


def test_fer_twin_records_equal_train_fer_twin(tmp_path):
    recipe = tw.FerTwinRecipe("skull", 0, res=24, batch_pixels=64, minibatch_steps=12, full_steps=4)
    model, info = tw.train_fer_twin(recipe)
    report = _run(st.fer_twin_sweep(recipe), tmp_path / "store")
    (r,) = report.records.values()
    assert all(torch.equal(a, b) for a, b in zip(_tensors(model), _tensors(st.record_model(r))))
    assert r["info"]["losses"] == info["losses"] and r["stem"] == tw.fer_twin_stem(recipe)
    path, = st.write_fer_twins([r], tmp_path / "out")
    assert [store.content_hash(m) for m in tw.load_fer_twins("skull", tmp_path / "out")] == \
           [store.content_hash(model)]
    assert store.load_metadata(path)["loss_curve"] == [round(x, 7) for x in info["losses"]]


def test_scores_equal_compositional_score(tiny, tmp_path):
    sweep = st.scoring_sweep(tiny + ["skull"], concept=None, judge="ssim", delta=1.0, res=16, policy="both",
                             batch_size=8, sample=12)
    report = _run(sweep, tmp_path / "store")
    assert len(report.records) == 5
    for config, r in report.by_config:
        model = st.load_network(config["network"])
        want = emc2.compositional_score(model, make_judge("ssim"), config["concept"], 1.0, 16, "both", 0, 8,
                                        progress=False, sample=12)
        got = st.score_result(r)
        assert got.score == want.score and torch.equal(got.verdicts, want.verdicts)
        assert got.weights == want.weights and torch.equal(got.deltas, want.deltas)
        assert got.model_hash == want.model_hash == config["network"]["digest"]
        assert torch.equal(got.reference, want.reference)
    assert [c["concept"] for c in sweep.configs] == ["tiny"] * 4 + ["skull"]
    assert 0 < len({r["score"] for r in report.records.values()})


def test_resumed_sweep_runs_only_the_missing_configs(tiny, tmp_path):
    first = _run(st.scoring_sweep(tiny[:2], "pattern", res=16, batch_size=8), tmp_path / "s")
    again = _run(st.scoring_sweep(tiny, "pattern", res=16, batch_size=8), tmp_path / "s")
    assert set(again.stored) == set(first.ran) and len(first.ran) == 2
    assert len(again.ran) == 2 and not set(again.ran) & set(first.ran)
    assert [again.records[k]["score"] for k in first.ran] == [first.records[k]["score"] for k in first.ran]


def test_a_changed_checkpoint_gets_another_key(tmp_path):
    path = store.save_cppn(CPPN([["tanh", "sin"]], "gray", seed=0), tmp_path / "net", {"target": "x"})
    before = st.scoring_sweep([path], res=16).configs[0]
    store.save_cppn(CPPN([["tanh", "sin"]], "gray", seed=1), tmp_path / "net", {"target": "x"})
    after = st.scoring_sweep([path], res=16).configs[0]
    assert before["network"]["checkpoint"] == after["network"]["checkpoint"]
    assert sweeps.config_key(before, st.SCORING_SWEEP) != sweeps.config_key(after, st.SCORING_SWEEP)
    with pytest.raises(ValueError, match="content hash"):
        st.score_network(before)       # the old question is not answered by the new weights
    other = st.scoring_sweep([path], res=16, judge="ssim", judge_options={"threshold": 0.7}).configs[0]
    assert sweeps.config_key(other, st.SCORING_SWEEP) != sweeps.config_key(after, st.SCORING_SWEEP)


@pytest.mark.parametrize("bad", [
    lambda t: st.twin_sweep("cat"),
    lambda t: st.twin_sweep("skull", res=0),
    lambda t: st.twin_sweep(["skull", "skull"], res=16),
    lambda t: st.train_twin({"target": "skull"}),
    lambda t: st.fer_twin_sweep("skull", seeds=[-1]),
    lambda t: st.scoring_sweep(["no-such-network"]),
    lambda t: st.scoring_sweep(t, judge="oracle"),
    lambda t: st.scoring_sweep(t, delta=0.0),
    lambda t: st.scoring_sweep(t, policy="minus"),
    lambda t: st.scoring_sweep(t + t),
    lambda t: st.scoring_sweep(t, judge="ssim", server="http://localhost:8000/v1"),
    lambda t: st.judge_spec("server", server="http://localhost:8000/v1", api_key="secret"),
    lambda t: st.judge_spec("ssim", threshold=float("nan")),
    lambda t: st.score_network({"network": "skull"}),
    lambda t: st.load_network({"genome": "skull"}),
    lambda t: st.scoring_sweep([]),
    lambda t: st.fer_twin_sweep("skull", max_minutes=-1),
    lambda t: st.write_twins([{"kind": "score"}]),
    lambda t: st.score_result({"kind": "twin"}),
])
def test_bad_input_is_a_value_error(tiny, bad):
    with pytest.raises(ValueError):
        bad(tiny[:1])


def test_server_judge_is_built_in_the_task_from_its_config(tiny):
    spec = st.judge_spec("server", server="http://localhost:8000/v1", model="m", api_key_env="NO_SUCH_KEY")
    config = st.scoring_sweep(tiny[:1], "pattern", judge=spec, server="http://localhost:8000/v1").configs[0]
    identity = config["judge"]["identity"]
    assert identity.startswith("server:m@unpinned") and "localhost" not in identity
    judge = st._make_judge(config["judge"], config["server"])
    assert hasattr(judge, "stream_batches") and judge.identity == config["judge"]["identity"]
    json.dumps(config)


def _answer(body: bytes) -> bytes:
    """A served judge whose answer depends on the request (the image in it) only."""
    return completion("yes" if hashlib.sha256(body).digest()[0] % 2 else "no")


def test_server_judge_scores_equal_direct_streaming(tiny, tmp_path):
    """A config naming a server: the task builds a ServerJudge (streamed batches) whose score equals the direct one."""
    with FaultServer(default=_answer) as server:
        url = f"http://127.0.0.1:{server.port}/v1"
        spec = st.judge_spec("server", server=url, model="m", concurrency=2, api_key_env="NO_SUCH_KEY")
        sweep = st.scoring_sweep(tiny[:2], "pattern", judge=spec, server=url, res=16, batch_size=4, sample=6)
        report = _run(sweep, tmp_path / "s")
        asked = server.requests
        for config, r in report.by_config:
            want = emc2.compositional_score(st.load_network(config["network"]), ServerJudge(url, "m", concurrency=2),
                                            "pattern", res=16, batch_size=4, sample=6, progress=False)
            assert r["score"] == want.score and torch.equal(r["verdicts"], want.verdicts)
        assert asked == server.requests // 2 == sum(len(r["weights"]) for r in report.records.values())
        assert 0 < sum(r["score"] for r in report.records.values()) < 2


def test_the_commands_accept_backend_local(tiny, tmp_path, capsys):
    assert cli.main(["judges", "score", "--checkpoint", str(tiny[0]), "--genome", "apple", "--judge", "ssim",
                     "--res", "16", "--sample", "6", "--backend", "local", "--store", str(tmp_path / "s")]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["concept"] for x in lines] == ["apple", "tiny"] and all(0 <= x["score"] <= 1 for x in lines)
    assert cli.main(["twins", "--target", "skull", "--res", "16", "--steps", "4", "--seeds", "0", "--out",
                     str(tmp_path / "out"), "--store", str(tmp_path / "t"), "--backend", "local"]) == 0
    assert "skull: 4 steps (steps)" in capsys.readouterr().out
    assert [p.name for p in tw.stored_twins("skull", tmp_path / "out")] == ["twin_skull_16px_4steps_seed0.json"]
    assert cli.main(["twins", "--arch", "fer", "--target", "skull", "--seeds", "0", "--minibatch-steps", "3",
                     "--full-steps", "1", "--out", str(tmp_path / "out"), "--store", str(tmp_path / "f")]) == 0
    assert "fertwin_skull_seed0.json: PSNR" in capsys.readouterr().out
    assert (tmp_path / "out" / "emc2" / "fertwin_skull_seed0_ckpt.pt").is_file()
    assert len(tw.load_fer_twins("skull", tmp_path / "out")) == 1
    with pytest.raises(SystemExit):
        cli.main(["judges", "score", "--genome", "apple", "--backend", "carrier-pigeon"])


def test_tiny_scoring_sweep_is_small(tmp_path):
    sweep = st.tiny_scoring_sweep(tmp_path / "nets")
    assert len(sweep.configs) == 4 and {c["judge"]["name"] for c in sweep.configs} == {"ssim"}
    report = _run(sweep, tmp_path / "s")
    assert all(len(r["verdicts"]) == 2 * r["n_nonzero"] for r in report.records.values())
