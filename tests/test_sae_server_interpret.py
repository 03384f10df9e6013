"""compbook.sae.servers.server_interpret: the interpretation pipeline's describer and synthesiser on a server (a local
server with canned answers, and ``transformers serve`` with the tiny random Qwen3-VL: its answers mean nothing,
the tests check the requests, the parsing, the cache and the pipeline's bookkeeping)."""

import base64
import io
import json

import numpy as np
import pytest
import torch
from PIL import Image

from compbook.results.journal import journal_path
from compbook.sae.servers import hf_interpret as hf
from compbook.sae import interpret as ip
from compbook.sae.data import make_scenes
from compbook.sae.servers.server_interpret import ServerDescriber, ServerSynthesiser
from compbook.runs.serving import ServerError
from servers import FaultServer, completion, free_port


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(12, seed=3)


def regions(scenes, k=3):
    masks = np.zeros((k, 32, 32), bool)
    masks[:, 8:24, 8:24] = True
    return scenes.images[:k], masks


def sent_image(body: bytes) -> np.ndarray:
    url = json.loads(body)["messages"][0]["content"][0]["image_url"]["url"]
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))


def test_describer_sends_each_masked_region_and_reads_the_first_line(scenes):
    images, masks = regions(scenes)
    answers = [completion("A red square.\nmore"), completion("<think>hm</think>\nbackground"), completion("x")]
    with FaultServer(answers) as server:
        d = ServerDescriber(server.url, "org/vlm", concurrency=1, size=64, seed=3)
        assert d(images, masks) == ["A red square.", "background", "x"]
    for body, im, m in zip(server.bodies, images, masks):
        req = json.loads(body)
        assert (req["model"], req["temperature"], req["seed"], req["max_tokens"]) == ("org/vlm", 0, 3, 24)
        assert req["messages"][0]["content"][1] == {"type": "text", "text": hf.DESCRIBE_PROMPT}
        assert (sent_image(body) == np.asarray(hf.masked_image(im, m, 64))).all()


def test_synthesiser_sends_the_prompt_and_parses_the_answer():
    with FaultServer([completion("IMAGE: red squares\nTEXT: red\nAGREE: yes")]) as server:
        s = ServerSynthesiser(server.url, "org/llm", template_kwargs={"enable_thinking": False})
        r = s(["a red square", "a red circle"], ["red", "red"])
    assert (r.image, r.text, r.agree) == ("red square", "red", True)
    req = json.loads(server.bodies[0])
    assert req["messages"][0]["content"] == [{"type": "text", "text": hf.synthesis_prompt(
        ["a red square", "a red circle"], ["red", "red"])}]
    assert req["chat_template_kwargs"] == {"enable_thinking": False}


def test_bad_input_is_refused_before_any_request(scenes):
    images, masks = regions(scenes)
    with FaultServer() as server:
        d, s = ServerDescriber(server.url, "m"), ServerSynthesiser(server.url, "m")
        with pytest.raises(ValueError, match="masks"):
            d(images, masks[:, :16])
        with pytest.raises(ValueError, match=r"images must lie in \[0, 1\]"):
            d(images * 2, masks)
        with pytest.raises(ValueError, match="descriptions"):
            s("a red square", ["red"])
        for url in ("localhost:8000", "http://h:80/v1#x"):
            with pytest.raises(ValueError, match="base_url"):
                ServerDescriber(url, "m")
        with pytest.raises(ValueError, match="prompt"):
            ServerDescriber(server.url, "m", prompt="")
        assert server.requests == 0


def test_identity_excludes_the_url_and_names_what_changes_answers(tmp_path):
    a = ServerDescriber("http://localhost:1/v1", "org/vlm")
    assert a.identity == ServerDescriber("http://other:2/v1", "org/vlm", concurrency=32).identity
    others = [ServerDescriber("http://localhost:1/v1", "org/vlm", **kw).identity for kw in
              ({"revision": "abc"}, {"prompt": "name it"}, {"size": 448}, {"dim": 0.5}, {"seed": 1},
               {"max_tokens": 8}, {"template_kwargs": {"enable_thinking": False}})]
    assert len({a.identity, *others}) == len(others) + 1 and "localhost" not in a.identity
    assert a.identity.startswith("server-describer:org/vlm@unpinned|")


def test_answers_are_cached_and_a_rerun_asks_nothing(scenes, tmp_path):
    images, masks = regions(scenes)
    with FaultServer([completion("a"), completion("b"), "404"], default=completion("c")) as server:
        d = ServerDescriber(server.url, "m", concurrency=1, retries=0, cache=tmp_path / "d.json")
        with pytest.raises(ServerError, match="404"):
            d(images, masks)                              # two answers arrive, then the server fails
        assert len(ServerDescriber(server.url, "m", cache=tmp_path / "d.json").cache) == 2
        assert not journal_path(tmp_path / "d.json").exists()
        again = ServerDescriber(server.url, "m", concurrency=1, cache=tmp_path / "d.json")
        assert again(images, masks) == ["a", "b", "c"] and server.requests == 4
        assert again(images, masks) == ["a", "b", "c"] and server.requests == 4
        other = ServerDescriber(server.url, "m", size=64, cache=tmp_path / "d64.json")
        other(images, masks)                              # another question: asked again
        assert server.requests == 7


def test_pipeline_with_server_askers_equals_the_same_answers_given_locally(scenes):
    """interpret() with a server describer and synthesiser gives the table a local describer and synthesiser with
    the same answers give; every region and latent asked once, all at once."""
    z = torch.zeros(len(scenes), scenes.labels.shape[1], 3)
    z[:, :8, 1] = torch.arange(1, len(scenes) + 1)[:, None].float()
    z[:, 8:, 2] = 1.0
    z_txt = torch.zeros(len(scenes), scenes.tokens.shape[1], 3)
    z_txt[:, 0, 1] = z_txt[:, 1, 2] = 1.0          # different top words: two different questions
    regions_ = torch.zeros(len(scenes), z.shape[1], dtype=torch.long)
    local = ip.interpret(z, z_txt, scenes, regions_, [1, 2], lambda im, m: ["a red square"] * len(im),
                         lambda d, w: hf.parse_synthesis("IMAGE: red square\nTEXT: red\nAGREE: yes"), top_k=3)
    with FaultServer(default=completion("a red square"), delay=0.2) as vlm, \
            FaultServer(default=completion("IMAGE: red square\nTEXT: red\nAGREE: yes")) as llm:
        served = ip.interpret(z, z_txt, scenes, regions_, [1, 2], ServerDescriber(vlm.url, "v", concurrency=6),
                              ServerSynthesiser(llm.url, "l"), top_k=3)
    assert served.to_dict() == local.to_dict()
    assert served["top words"][0] != served["top words"][1]
    assert vlm.requests == 6 and llm.requests == 2 and vlm.in_flight_max > 1


def test_describer_and_synthesiser_on_transformers_serve(tiny_server, scenes, tmp_path):
    images, masks = regions(scenes)
    d = ServerDescriber(tiny_server.url, tiny_server.model, max_tokens=4, size=64, concurrency=3,
                        cache=tmp_path / "d.json")
    s = ServerSynthesiser(tiny_server.url, tiny_server.model, max_tokens=4, cache=tmp_path / "s.json")
    out = d(images, masks)
    syn = s(out, ["red", "square"])
    assert len(out) == 3 and all(isinstance(t, str) for t in out)      # a random model: the words mean nothing
    assert isinstance(syn, ip.Synthesis) and syn.image in ip.concept_vocabulary(scenes.vocab.space) + ["unclear"]
    asked = d.client.requests + s.client.requests
    assert asked == 4
    again = ServerDescriber(tiny_server.url, tiny_server.model, max_tokens=4, size=64, cache=tmp_path / "d.json")
    assert again(images, masks) == out and again.client.requests == 0
    down = ServerDescriber(f"http://127.0.0.1:{free_port()}/v1", tiny_server.model, timeout=1, retries=2)
    with pytest.raises(ServerError, match="cannot reach the server"):
        down(images, masks)
