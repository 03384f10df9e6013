"""Tests for compbook.cppn.judges.server (ServerJudge) and the resumable fill: against local servers that fail on
purpose, and end to end against ``transformers serve`` with the tiny random Qwen3-VL (tests/tiny_vlm.py)."""

import base64
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from compbook.cppn import emc2
from compbook.cppn.__main__ import main as cli
from compbook.cppn.judges import CachedJudge, ServerJudge, read_cache, server_identity, vlm_identity
from compbook.cppn.judges.cache import cache_file_name
from compbook.cppn.judges.server import UnreadableAnswers
from compbook.cppn.judges.vlm import VLMJudge, read_answer, to_pil
from compbook.cppn.network import CPPN
from compbook.results.journal import journal_path
from compbook.runs.serving import ServerError
from servers import CountingProxy, FaultServer, completion, free_port

ROOT = Path(__file__).resolve().parents[1]


def levels(*values, res=8):
    return torch.tensor(values, dtype=torch.float32)[:, None, None, None].expand(-1, res, res, 3).contiguous()


def questions(n, start=0):
    return [{"model": "abc", "weight": [1, 0, k], "delta": 0.5, "policy": "plus", "res": 8}
            for k in range(start, start + n)]


# -- input, identity, request ---------------------------------------------------------------------------------------
def test_bad_input_gets_a_value_error_before_any_request():
    with FaultServer() as server:
        judge = ServerJudge(server.url, "m", image_size=8)
        bad = [(levels(1.5), "skull", None, r"\[0, 1\]"), (levels(-0.1), "skull", None, r"\[0, 1\]"),
               (levels(0.5), "", None, "concept"), (levels(0.5), "  ", None, "concept"),
               (levels(0.5, 0.6), "skull", questions(1), "questions"), (torch.zeros(8, 8, 3), "skull", None, "shape")]
        for images, concept, qs, what in bad:
            with pytest.raises(ValueError, match=what):
                judge.stream(images, concept, questions=qs)
            with pytest.raises(ValueError, match=what):
                judge(images, concept, questions=qs)
        for url in ("localhost:8000", "http://", "http://h:80/v1?q", "ftp://h/v1"):
            with pytest.raises(ValueError, match="base_url"):
                ServerJudge(url, "m")
        for kwargs, what in [({"prompt": "no placeholder"}, "prompt"), ({"revision": ""}, "revision"),
                             ({"concurrency": 0}, "concurrency"), ({"max_tokens": 0}, "max_tokens"),
                             ({"timeout": -1}, "timeout")]:
            with pytest.raises(ValueError, match=what):
                ServerJudge(server.url, "m", **kwargs)
        assert server.requests == 0


def test_identity_names_model_revision_and_prompt_not_the_url():
    a = ServerJudge("http://localhost:8000/v1", "Qwen/Qwen3-VL-4B-Thinking")
    b = ServerJudge("https://gpu.example.org:443/v1", "Qwen/Qwen3-VL-4B-Thinking", concurrency=64, timeout=5)
    assert a.identity == b.identity == server_identity() and "localhost" not in a.identity
    variants = [server_identity(model="Qwen/Qwen3-VL-8B-Thinking"), server_identity(revision="0123abc"),
                server_identity(prompt="Is this a {concept}?"), server_identity(max_tokens=64),
                server_identity(image_size=448), server_identity(seed=1), server_identity(parser="other")]
    assert len({a.identity, *variants}) == len(variants) + 1
    assert "Qwen/Qwen3-VL-4B-Thinking@unpinned" in a.identity and a.identity != vlm_identity()
    assert cache_file_name(a.identity).startswith("server-qwen-qwen3-vl-4b-thinking-unpinned-")


def test_each_image_goes_as_the_resized_png_at_temperature_zero():
    img = torch.rand(1, 20, 20, 3, generator=torch.Generator().manual_seed(0))
    with FaultServer() as server:
        judge = ServerJudge(server.url, "org/vlm", image_size=16, seed=7, max_tokens=33)
        judge(img, "butterfly")
    body = json.loads(server.bodies[0])
    assert {k: body[k] for k in ("model", "temperature", "seed", "max_tokens")} == \
        {"model": "org/vlm", "temperature": 0, "seed": 7, "max_tokens": 33}
    (message,) = body["messages"]
    image, text = message["content"]
    assert text == {"type": "text", "text": "Look at this image. Does it still clearly show a butterfly? "
                                            "Answer with one word: yes or no."}
    png = base64.b64decode(image["image_url"]["url"].removeprefix("data:image/png;base64,"))
    assert (np.asarray(Image.open(io.BytesIO(png))) == np.asarray(to_pil(img[0], 16))).all()


def test_answers_are_read_as_vlm_judge_reads_them():
    replies = [completion("Yes."), completion("no", reasoning="a skull? no, yes"),
               completion("", reasoning="still thinking", finish="length"), completion("maybe"),
               completion("<think>hmm</think> No")]
    with FaultServer(replies) as server:
        judge = ServerJudge(server.url, "m", concurrency=1, image_size=8, progress=True)
        with pytest.warns(UnreadableAnswers, match="2 of 5 answers unreadable"):
            verdicts = judge(levels(0.1, 0.2, 0.3, 0.4, 0.5), "skull", questions=questions(5))
    assert judge._bar.unit == " images" and "m answers" in judge._bar.desc     # the rate reads "images/s"
    judge.close()
    assert judge._bar is None
    texts = ["Yes.", "<think>a skull? no, yes</think>no", "<think>still thinking", "maybe", "<think>hmm</think> No"]
    assert verdicts.tolist() == [True, False, False, False, False]
    assert judge.last_details == [read_answer(t)[1] for t in texts]
    assert judge.last_details[2] == {"answer": "<unfinished reasoning>", "unparsed": True}
    assert [(u["index"], u["question"]["weight"][2]) for u in judge.unparsed] == [(2, 2), (3, 3)]


def test_a_server_whose_answers_are_all_unreadable_is_refused_not_read_as_no(tmp_path):
    """A server that answers "Maybe, hard to say." to every image: the likely bug reads it as all "no" (a score
    of 0) with no word; the batch is refused, naming how many answers were unreadable, and nothing is cached."""
    with FaultServer(default=completion("Maybe, hard to say.")) as server:
        judge = ServerJudge(server.url, "m", concurrency=1, image_size=8)
        with pytest.raises(ValueError, match=r"3 of 5 answers unreadable, more than max_unreadable=0.5") as e:
            judge(levels(0.1, 0.2, 0.3, 0.4, 0.5), "skull", questions=questions(5))
        assert "Maybe, hard to say." in str(e.value) and len(judge.unparsed) == 3
        assert server.requests <= 5
        cached = CachedJudge(tmp_path, judge, mode="fill")
        with pytest.raises(ValueError, match="answers unreadable"):
            cached(levels(0.1, 0.2, 0.3, 0.4), "skull", questions=questions(4))
        assert len(CachedJudge(cached.path)) == 0, "unreadable answers of a refused batch were stored as 'no'"


def test_a_few_unreadable_answers_are_reported_and_the_share_is_a_parameter():
    replies = [completion("yes"), completion("Maybe."), completion("no"), completion("yes")]
    with FaultServer(replies) as server:
        judge = ServerJudge(server.url, "m", concurrency=1, image_size=8)
        with pytest.warns(UnreadableAnswers, match="1 of 4 answers unreadable"):
            verdicts = judge(levels(0.1, 0.2, 0.3, 0.4), "skull")
    assert verdicts.tolist() == [True, False, False, True] and judge.last_unreadable == 1
    with FaultServer([completion("yes"), completion("Maybe.")]) as server:
        strict = ServerJudge(server.url, "m", concurrency=1, image_size=8, max_unreadable=0)
        with pytest.raises(ValueError, match="1 of 2 answers unreadable, more than max_unreadable=0 "):
            strict(levels(0.1, 0.2), "skull")
    with FaultServer(default=completion("Maybe.")) as server:
        lenient = ServerJudge(server.url, "m", concurrency=1, image_size=8, max_unreadable=1)
        with pytest.warns(UnreadableAnswers, match="2 of 2"):
            assert lenient(levels(0.1, 0.2), "skull").tolist() == [False, False]
    for bad in (-0.1, 1.5, "half", float("nan")):
        with pytest.raises(ValueError, match="max_unreadable"):
            ServerJudge("http://localhost:8000/v1", "m", max_unreadable=bad)


# -- the cache, filled as the answers arrive -------------------------------------------------------------------------
def test_fill_stores_what_arrived_when_the_server_fails_and_resumes_with_the_rest(tmp_path):
    script = [completion("yes"), completion("no"), completion("yes"), "404"]
    with FaultServer(script) as server:
        judge = ServerJudge(server.url, "m", concurrency=1, retries=0, image_size=8)
        cached = CachedJudge(tmp_path, judge, mode="fill")
        with pytest.raises(ServerError, match="HTTP 404"):
            cached(levels(*np.linspace(0, 1, 6)), "skull", questions=questions(6))
        assert len(CachedJudge(cached.path)) == 3 and not journal_path(cached.path).exists()
        again = CachedJudge(tmp_path, judge, mode="fill")
        verdicts = again(levels(*np.linspace(0, 1, 6)), "skull", questions=questions(6))
    assert verdicts.tolist()[:3] == [True, False, True] and server.requests == 4 + 3
    assert again.hits == 3 and again.misses == 3 and len(again) == 6


def test_a_killed_fill_loses_nothing(tmp_path):
    """A fill process killed (SIGKILL) halfway: every verdict it had received is in the journal, the next fill
    merges it and asks only what is missing. The server answers six questions and holds the next two (the fill's
    two workers) unanswered, so the kill comes at the same point on any machine, however busy."""
    code = ("import sys, torch\nfrom compbook.cppn.judges import CachedJudge, ServerJudge\n"
            "judge = ServerJudge(sys.argv[1], 'm', concurrency=2, image_size=8)\n"
            "imgs = torch.linspace(0, 1, 12)[:, None, None, None].expand(12, 8, 8, 3).contiguous()\n"
            "qs = [{'weight': [1, 0, k]} for k in range(12)]\n"
            "CachedJudge(sys.argv[2], judge, mode='fill')(imgs, 'skull', questions=qs)\n")
    with FaultServer([completion()] * 6 + ["hang"] * 2, hang=600) as server:
        judge = ServerJudge(server.url, "m", concurrency=2, image_size=8)
        path = tmp_path / cache_file_name(judge.identity)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, "-c", code, server.url, str(tmp_path)], env=env)
        deadline = time.monotonic() + 300                  # only turns a hang of the test into a failure
        while time.monotonic() < deadline and proc.poll() is None:
            journaled = len(journal_path(path).read_text().splitlines()) if journal_path(path).exists() else 0
            if journaled >= 1 + 6 and server.requests == 8:
                break
            time.sleep(0.02)
        assert server.requests == 8, f"the fill was not held at its 7th and 8th questions ({server.requests} asked)"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL and not path.exists()     # killed before sealing anything
        asked = server.requests
        resumed = CachedJudge(tmp_path, judge, mode="fill")
        assert resumed.recovered == len(resumed) == 6 and not journal_path(path).exists()
        imgs = torch.linspace(0, 1, 12)[:, None, None, None].expand(12, 8, 8, 3).contiguous()
        resumed(imgs, "skull", questions=[{"weight": [1, 0, k]} for k in range(12)])
        assert server.requests - asked == 12 - resumed.recovered and len(read_cache(path)[1]) == 12


def test_a_bad_journal_is_refused(tmp_path):
    judge = ServerJudge(f"http://127.0.0.1:{free_port()}/v1", "m")     # nothing is asked
    path = tmp_path / cache_file_name(judge.identity)
    header = json.dumps({"format": "compbook-judge-cache/1", "journal_of": judge.identity})
    entry = {"concept": "skull", "question": {"q": 1}, "verdict": True}
    journal_path(path).write_text(header + "\n" + json.dumps({"key": "0" * 64, "entry": entry}) + "\n")
    with pytest.raises(ValueError, match="does not match its key"):
        CachedJudge(tmp_path, judge, mode="fill")
    journal_path(path).write_text(json.dumps({"format": "compbook-judge-cache/1", "journal_of": "x"}) + "\n")
    with pytest.raises(ValueError, match="belongs to another"):
        CachedJudge(tmp_path, judge, mode="fill")


# -- streaming EMC2's batches: no barrier between them ---------------------------------------------------------------
def by_content(body):
    """"yes" or "no" by the image sent (a verdict that depends on the image), after a wait that depends on it too
    (answers arrive out of order)."""
    url = json.loads(body)["messages"][0]["content"][0]["image_url"]["url"]
    h = hashlib.sha256(url.encode()).digest()
    time.sleep(h[1] / 255 * 0.03)
    return completion("yes" if h[0] % 2 else "no")


def small_cppn():
    return CPPN([["tanh", "sin", "gaussian", "tanh", "sigmoid"]] * 2, seed=0, init_scale=1.5)   # 60 weights


def comparable(result, cache_path=None):
    """A ScoreResult's fields without its timing (and its cache's path)."""
    fields = {k: v for k, v in vars(result).items() if k != "seconds"}
    fields["source"] = fields["source"].replace(str(cache_path), "<cache>")
    return {k: v.tolist() if isinstance(v, torch.Tensor) else v for k, v in fields.items()}


def test_stream_batches_checks_each_batch_when_it_is_read():
    imgs = levels(*np.linspace(0, 1, 6))
    with FaultServer(default=by_content) as server:
        judge = ServerJudge(server.url, "m", concurrency=2, image_size=8)
        whole = judge(imgs, "skull").tolist()
        got = {i: v for i, v, _ in judge.stream_batches(iter([(0, imgs[:2]), (2, imgs[2:5]), (5, imgs[5:])]),
                                                        "skull", questions=questions(6))}
        assert [got[i] for i in range(6)] == whole
        for concept, qs, what in (("", None, "concept"), ("skull", {"a": 1}, "questions"),
                                  ("skull", questions(6)[0], "questions")):
            with pytest.raises(ValueError, match=what):
                judge.stream_batches(iter([]), concept, questions=qs)       # before anything is read
        bad = [([(0, imgs[:2]), (3, imgs[2:])], None, "consecutive"), ([(0, imgs[:2]), (2, imgs[2:] * 2)], None,
               r"\[0, 1\]"), ([(0, imgs[:2]), (2, imgs[2:])], questions(4), "questions has 2 entries for 4"),
               ([(0, imgs[:2]), imgs[2:]], None, r"\(start, images\)")]
        for batches, qs, what in bad:
            asked, got = server.requests, []
            with pytest.raises(ValueError, match=what):
                for i, v, _ in judge.stream_batches(iter(batches), "skull", questions=qs):
                    got.append(i)
            assert sorted(got) == [0, 1] and server.requests - asked == 2     # the first batch only, answered


def test_cached_stream_batches_answers_each_batch_as_a_call_would(tmp_path):
    """Stored verdicts answered at once, a question repeated in a later batch (while its first ask is in flight)
    asked once, everything else streamed: the verdicts, hits, misses and cache equal batch-by-batch calls'."""
    imgs, qs = levels(*np.linspace(0, 1, 10)), questions(10)
    qs[7] = dict(qs[2])
    batches = [(0, imgs[:4]), (4, imgs[4:7]), (7, imgs[7:])]
    with FaultServer(default=by_content, delay=0.2) as server:
        judge = ServerJudge(server.url, "m", concurrency=4, image_size=8)
        streamed, called = (CachedJudge(tmp_path / name, judge, mode="fill") for name in "sc")
        for cache in (streamed, called):
            cache(imgs[[1, 5]], "skull", questions=[qs[1], qs[5]])
        per_batch = torch.cat([called(im, "skull", questions=qs[s:s + len(im)]) for s, im in batches]).tolist()
        asked = server.requests
        got = {i: v for i, v, _ in streamed.stream_batches(iter(batches), "skull", questions=qs)}
        assert server.requests - asked == 7 and server.in_flight_max > 3     # batches overlapped
    assert [got[i] for i in range(10)] == per_batch and got[7] == got[2]
    assert (streamed.hits, streamed.misses) == (called.hits, called.misses) == (3, 9)
    assert read_cache(streamed.path)[1] == read_cache(called.path)[1] and not journal_path(streamed.path).exists()


def test_cached_stream_checks_its_questions_once_and_each_batch_shape(tmp_path):
    """The cache's stream checks its questions at the door (before any batch is read) and each lazy batch's
    shape as it arrives; the pixels are read only by the judge that answers a miss, which refuses bad ones. A
    bug here: questions checked batch by batch (a bad question found only when its batch arrives), or a batch
    out of order answered with another batch's verdicts."""
    from compbook.cppn.judges import SSIMJudge
    imgs, qs = levels(*np.linspace(0, 1, 6)), questions(6)
    cache = CachedJudge(tmp_path / "c", SSIMJudge(), mode="fill")
    whole = cache(imgs, "skull", reference=imgs[0], questions=qs).tolist()
    read = []

    def batches(parts):
        for start, images in parts:
            read.append(start)
            yield start, images

    got = {i: v for i, v, _ in cache.stream_batches(batches([(0, imgs[:4]), (4, imgs[4:])]), "skull",
                                                     reference=imgs[0], questions=qs)}
    assert [got[i] for i in range(6)] == whole and cache.misses == 6 and cache.hits == 6
    bad_qs = qs[:5] + ["not a dict"]
    with pytest.raises(ValueError, match=r"questions\[5\]"):
        cache.stream_batches(batches([(0, imgs)]), "skull", reference=imgs[0], questions=bad_qs)
    assert read == [0, 4], "the questions must be refused before any batch is read"
    for parts, what in (([(0, imgs[:2]), (3, imgs[3:])], "expected one at 2"),
                        ([(0, imgs[:2]), (2, imgs[2:, 0])], r"\(B, H, W, 3\)"),
                        ([(0, imgs), (6, imgs[:1])], "within the 6 questions")):
        with pytest.raises(ValueError, match=what):
            list(cache.stream_batches(batches(parts), "skull", reference=imgs[0], questions=qs))
    nan = imgs.clone()
    nan[5] = float("nan")
    with pytest.raises(ValueError, match="finite"):      # a miss: the judge reads (and refuses) the pixels
        list(cache.stream_batches(iter([(0, nan)]), "skull", reference=imgs[0], questions=questions(6, 100)))


def test_streamed_scoring_equals_the_per_batch_path(tmp_path, monkeypatch):
    """compositional_score through ServerJudge.stream_batches (and a filling CachedJudge over it, half of its
    questions stored beforehand) gives the ScoreResult and the cache the per-batch calls give."""
    model, kwargs = small_cppn(), dict(res=16, sample=30, batch_size=7, progress=False)

    def score_all(folder):
        plain = emc2.compositional_score(model, judge, "skull", **kwargs)
        cached = CachedJudge(folder, judge, mode="fill")
        emc2.compositional_score(model, cached, "skull", **{**kwargs, "sample": 12, "seed": 1})
        return plain, emc2.compositional_score(model, cached, "skull", **kwargs), cached

    with FaultServer(default=by_content) as server:
        judge = ServerJudge(server.url, "m", concurrency=4, image_size=16)
        plain, cached, cache = score_all(tmp_path / "streamed")
        with monkeypatch.context() as m:           # what compositional_score did before: one call per batch
            m.delattr(ServerJudge, "stream_batches")
            m.delattr(CachedJudge, "stream_batches")
            plain_b, cached_b, cache_b = score_all(tmp_path / "per_batch")
    assert 0 < plain.score < 1 and comparable(plain) == comparable(plain_b)
    assert "5 cache hits, 25 misses" in cached.source
    assert comparable(cached, cache.path) == comparable(cached_b, cache_b.path)
    assert cached.verdicts.tolist() == plain.verdicts.tolist()
    assert read_cache(cache.path)[1] == read_cache(cache_b.path)[1] and len(cache) == 12 + 25


def test_scoring_overlaps_batches_and_encodes_in_the_request_workers(monkeypatch):
    """Every answer takes 0.2 s, concurrency 8, batches of 2: the per-batch path waits at each batch's end
    (16 batches x 0.2 s, at most 2 requests in flight); streamed, 32 images take about 32 / 8 x 0.2 s = 0.8 s. Each
    PNG is built by a request worker thread, not by the scoring thread."""
    model, kwargs = small_cppn(), dict(res=16, sample=32, batch_size=2, progress=False)
    with FaultServer(default=completion("yes"), delay=0.2) as server:
        judge = ServerJudge(server.url, "m", concurrency=8, image_size=16)
        with monkeypatch.context() as m:
            m.delattr(ServerJudge, "stream_batches")
            t0 = time.perf_counter()
            emc2.compositional_score(model, judge, "skull", **kwargs)
            barrier = time.perf_counter() - t0
        assert server.in_flight_max <= 2
        builders, payload = [], judge.payload
        monkeypatch.setattr(judge, "payload", lambda *a: builders.append(threading.current_thread().name)
                            or payload(*a))
        server.in_flight_max = 0
        t0 = time.perf_counter()
        result = emc2.compositional_score(model, judge, "skull", **kwargs)
        streamed = time.perf_counter() - t0
        assert server.in_flight_max > 2 and result.score == 1
    assert barrier >= 16 * 0.2 and streamed < 0.6 * barrier, (streamed, barrier)     # 0.25 x with no overhead
    assert len(builders) == 32 and all(name.startswith("compbook-chat") for name in builders)


# -- end to end: transformers serve ---------------------------------------------------------------------------------
def test_server_answers_equal_in_process_generation(tiny_server):
    """The served tiny model answers what VLMJudge's in-process generate gives on the same weights and image."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(tiny_server.folder).eval()
    processor = AutoProcessor.from_pretrained(tiny_server.folder, trust_remote_code=True)
    local = VLMJudge.from_model(model, processor, model_id="tiny", batch_size=1, max_new_tokens=8, image_size=64)
    served = ServerJudge(tiny_server.url, tiny_server.model, max_tokens=8, image_size=64, concurrency=2,
                         max_unreadable=1.0)     # a random model: its answers are read alike, not readable
    images = torch.stack([torch.zeros(64, 64, 3), torch.ones(64, 64, 3),
                          torch.rand(64, 64, 3, generator=torch.Generator().manual_seed(3))])
    texts = [local.generate([to_pil(im, 64)], "skull")[0] for im in images]
    replies = dict(served.client.map([served.payload(im, "skull") for im in images]))
    assert [replies[i].reasoning for i in range(3)] == texts and len(set(texts)) > 1
    assert served(images, "skull").tolist() == local(images, "skull").tolist()


def test_fill_through_transformers_serve_killed_mid_run_and_resumed(tiny_server, tmp_path, capsys):
    """``judges fill --server``: the server is killed after 5 answers; the rerun (server restarted) asks only the
    missing questions; the cache holds every verdict exactly once and no question was answered twice."""
    proxy = CountingProxy(tiny_server, kill_after=5)
    argv = ["judges", "fill", "--genome", "skull", "--server", proxy.url, "--model", tiny_server.model,
            "--res", "32", "--sample", "12", "--engine-batch-size", "4", "--concurrency", "2", "--retries", "1",
            "--timeout", "30", "--max-new-tokens", "3", "--image-size", "32", "--cache", str(tmp_path),
            "--max-unreadable", "1"]        # a random model: its answers are unreadable, stored all the same
    with proxy:
        assert cli(argv) == 1
        err = capsys.readouterr().err
        first = proxy.answered()
        (path,) = tmp_path.glob("*.json")
        assert f"{proxy.url}/chat/completions" in err and "rerun the same command" in err
        assert 5 <= len(first) < 12 and len(read_cache(path)[1]) == len(first)
        assert not journal_path(path).exists() and not tiny_server.running()
        tiny_server.take_over(tiny_server.spare)          # the server restarted (the proxy's backend)
        proxy.kill_after, proxy.records = None, []
        assert cli(argv) == 0
        out = capsys.readouterr().out
        second = proxy.answered()
    assert f"{len(first)} stored, {12 - len(first)} new verdicts" in out
    assert len(second) == 12 - len(first) and len(proxy.records) == len(second)   # no retry, nothing twice
    assert len(set(first + second)) == 12 and not set(first) & set(second)
    identity, entries = read_cache(path)
    assert len(entries) == 12 and identity.startswith(f"server:{tiny_server.model}@unpinned|")
    assert all("answer" in e["detail"] for e in entries.values())
    strict = CachedJudge(path)
    assert cli(["judges", "fill", "--genome", "skull", "--judge", "ssim", "--res", "32", "--sample", "12",
                "--cache", str(tmp_path / "ssim")]) == 0      # the same 12 questions, another judge
    (ssim,) = (tmp_path / "ssim").glob("*.json")
    assert sorted(e["question"]["weight"] for e in read_cache(ssim)[1].values()) == \
        sorted(e["question"]["weight"] for e in strict.records())
