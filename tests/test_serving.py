"""Tests for compbook.runs.serving (the OpenAI-compatible client) and compbook.results.journal (atomic files, journals,
the answer cache), against local servers that fail on purpose (tests/servers.py)."""

import base64
import io
import json
import threading
import time

import numpy as np
import pytest
from PIL import Image

from compbook.results import journal as jr
from compbook.runs.serving import ChatClient, Reply, ServerError, check_base_url, parse_reply, user_message
from servers import FaultServer, completion, free_port


def ask(client, text="hi"):
    return client.request({"messages": [user_message(text)], "temperature": 0, "seed": 0, "max_tokens": 4})


# -- URLs ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("url, expected", [
    ("http://localhost:8000/v1", "http://localhost:8000/v1"),
    ("http://localhost:8000/v1/", "http://localhost:8000/v1"),
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1"),
    ("https://api.example.org/openai/v1", "https://api.example.org/openai/v1"),
    ("http://[::1]:9000/v1", "http://[::1]:9000/v1"),
])
def test_base_urls_are_normalised(url, expected):
    assert check_base_url(url) == expected


@pytest.mark.parametrize("url, what", [
    ("localhost:8000", "scheme"), ("ftp://host/v1", "scheme"), ("http:///v1", "host"),
    ("http://host:99999/v1", "not a valid URL"), ("http://host:80/v1?x=1", "query"),
    ("http://user:pw@host/v1", "credentials"), ("", "URL"), (None, "URL"), ("http://ho st/v1", "spaces"),
])
def test_malformed_urls_are_refused(url, what):
    with pytest.raises(ValueError, match=what):
        ChatClient(url, "m")


@pytest.mark.parametrize("kwargs, what", [({"concurrency": 0}, "concurrency"), ({"timeout": 0}, "timeout"),
                                          ({"retries": -1}, "retries"), ({"api_key": ""}, "api_key")])
def test_client_parameters_are_checked(kwargs, what):
    with pytest.raises(ValueError, match=what):
        ChatClient("http://localhost:1/v1", "m", **kwargs)
    with pytest.raises(ValueError, match="model"):
        ChatClient("http://localhost:1/v1", "")


# -- one request: answers, retries, errors -------------------------------------------------------------------------
def test_request_body_and_headers():
    with FaultServer() as server:
        client = ChatClient(server.url, "org/model", api_key="sekrit")
        reply = ask(client, "is it?")
        assert reply == Reply("yes", None, "stop") and reply.text == "yes"
        body = json.loads(server.bodies[0])
        assert body["model"] == "org/model" and body["temperature"] == 0 and body["seed"] == 0
        assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "is it?"}]}]


def test_429_500_and_dropped_connections_are_retried_with_backoff():
    with FaultServer(["429", "500", "drop", "503"]) as server:
        client = ChatClient(server.url, "m", retries=4, backoff=0.05)
        t0 = time.monotonic()
        assert ask(client).content == "yes"
        waited = time.monotonic() - t0
    assert server.requests == 5 and client.requests == 5 and client.retried == 4
    assert waited >= 0.05 + 0.1 + 0.2 + 0.4 - 0.02        # backoff 0.05 * 2**k before retry k


def test_retries_run_out_with_an_error_naming_the_url():
    with FaultServer(["500"] * 10) as server:
        client = ChatClient(server.url, "m", retries=2, backoff=0.01)
        with pytest.raises(ServerError, match=rf"{server.url}/chat/completions: HTTP 500.*3 attempts"):
            ask(client)
    assert server.requests == 3


def test_other_4xx_and_bad_answers_are_not_retried():
    with FaultServer(["404", "badjson"]) as server:
        client = ChatClient(server.url, "m", retries=3, backoff=0.01)
        with pytest.raises(ServerError, match="refused the request.*HTTP 404"):
            ask(client)
        with pytest.raises(ServerError, match=f"{server.url}.*no chat completion"):
            ask(client)
    assert server.requests == 2


def test_a_server_that_never_answers_fails_within_the_timeout():
    with FaultServer(["hang"], hang=60) as server:
        client = ChatClient(server.url, "m", timeout=0.5, retries=3)
        t0 = time.monotonic()
        with pytest.raises(ServerError, match=f"{server.url}.*no answer within timeout=0.5 s"):
            ask(client)
        assert time.monotonic() - t0 < 30                   # not the server's 60 s: a loose bound
    assert server.requests == 1


def test_a_server_that_is_down_fails_within_the_timeout_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    client = ChatClient(url, "m", timeout=1.0, retries=10, backoff=0.1)
    t0 = time.monotonic()
    with pytest.raises(ServerError, match=f"{url}/chat/completions: cannot reach the server.*running at {url}"):
        ask(client)
    assert time.monotonic() - t0 < 30 and client.requests >= 3     # not 10 retries' 102 s of backoff


def test_retry_after_is_honoured_within_max_backoff():
    client = ChatClient("http://localhost:1/v1", "m", backoff=0.1, max_backoff=2)
    assert client._wait(0, None) == 0.1 and client._wait(3, None) == 0.8 and client._wait(10, None) == 2
    assert client._wait(0, "1.5") == 1.5 and client._wait(0, "60") == 2 and client._wait(2, "0") == 0.4
    assert client._wait(0, "Wed, 21 Oct 2015 07:28:00 GMT") == 0.1


# -- replies ------------------------------------------------------------------------------------------------------
def test_reply_text_puts_the_reasoning_back():
    assert Reply("Yes.", "a skull? hmm", "stop").text == "<think>a skull? hmm</think>Yes."
    assert Reply("", "still thinking", "length").text == "<think>still thinking"
    assert Reply("", None, "length").text == ""
    r = parse_reply(completion("no", reasoning="r"), "u")
    assert r == Reply("no", "r", "stop")
    vllm = json.dumps({"choices": [{"message": {"content": None, "reasoning": "r"}, "finish_reason": "length"}]})
    assert parse_reply(vllm.encode(), "u").text == "<think>r"
    with pytest.raises(ServerError, match="u answered with no chat completion"):
        parse_reply(b'{"choices": []}', "u")


def test_images_go_as_png_data_urls():
    img = Image.new("RGB", (5, 3), (250, 7, 128))
    part = user_message("q", [img])["content"][0]
    assert part["type"] == "image_url"
    head, data = part["image_url"]["url"].split(",", 1)
    assert head == "data:image/png;base64"
    back = Image.open(io.BytesIO(base64.b64decode(data)))
    assert back.format == "PNG" and (np.asarray(back) == np.asarray(img)).all()


# -- many requests ------------------------------------------------------------------------------------------------
def test_map_bounds_concurrency_and_gives_every_answer_once():
    with FaultServer(delay=0.1, hold_until=3) as server:       # answers once 3 are in flight: no clock race
        client = ChatClient(server.url, "m", concurrency=3)
        got = list(client.map([{"messages": [user_message(str(i))]} for i in range(10)]))
    assert sorted(i for i, _ in got) == list(range(10)) and server.in_flight_max == 3
    asked = sorted(json.loads(b)["messages"][0]["content"][0]["text"] for b in server.bodies)
    assert asked == sorted(str(i) for i in range(10))


def test_map_keeps_the_answers_in_flight_when_one_request_fails():
    script = [completion(), "404"] + [completion()] * 20
    with FaultServer(script, delay=0.2) as server:
        client = ChatClient(server.url, "m", concurrency=4, retries=0)
        got = []
        with pytest.raises(ServerError, match="HTTP 404"):
            for i, reply in client.map([{"messages": [user_message(str(i))]} for i in range(20)]):
                got.append(i)
        started = server.requests
    assert len(got) == started - 1          # every answer the server gave reached the caller
    assert started <= 8                     # nothing new started after the failure (4 were in flight)


def test_map_reads_lazily_within_a_window_and_builds_payloads_in_its_workers():
    """A huge lazy input is read only as requests finish (at most 2 x concurrency submitted and unfinished); a
    callable item is built in a worker thread; stopping early starts nothing more."""
    pulled, builders = [], []

    def build(i):
        builders.append((i, threading.current_thread().name))
        return {"messages": [user_message(str(i))]}

    def payloads():
        for i in range(10 ** 6):
            assert len(pulled) < 200, "map read the payloads ahead of the answers"
            pulled.append(i)
            yield (lambda i=i: build(i)) if i % 2 else build(i)     # callables and plain payloads mixed

    with FaultServer(delay=0.05, hold_until=3) as server:      # answers once 3 are in flight: no clock race
        client = ChatClient(server.url, "m", concurrency=3)
        got = []
        for i, reply in client.map(payloads()):
            assert len(pulled) - len(got) <= 2 * 3 and reply.content == "yes"
            got.append(i)
            if len(got) == 12:
                break
        read = len(pulled)
        time.sleep(0.3)                       # time for a request started after the stop to arrive
        asked = server.requests               # requests already on their way at the stop count, later ones cannot:
        assert len(pulled) == read and asked <= read <= 12 + 2 * 3 and server.in_flight_max == 3   # none unread
    assert len(got) == len(set(got)) == 12 and len(builders) >= asked
    assert all(name.startswith("compbook-chat") == bool(i % 2) for i, name in builders)   # callables: workers


def test_map_stops_when_a_payload_cannot_be_built_or_read():
    """An error building a payload (in a worker) stops map as a failed request does: nothing new is sent, the
    answers in flight are yielded, then that error is raised; an error reading the input stops the reading, the
    payloads read before it are all answered, then it is raised."""
    def broken(i):
        if i == 5:
            raise ValueError("image 5 cannot be encoded")
        return {"messages": [user_message(str(i))]}

    def cut_short():
        for i in range(6):
            yield {"messages": [user_message(str(i))]}
        raise RuntimeError("the renderer failed")

    with FaultServer(delay=0.1) as server:
        client = ChatClient(server.url, "m", concurrency=2)
        got = []
        with pytest.raises(ValueError, match="image 5"):
            for i, _ in client.map(lambda i=i: broken(i) for i in range(40)):
                got.append(i)
        assert sorted(got) == list(range(server.requests)) and 5 not in got and server.requests <= 5 + 3
        before, got = server.requests, []
        with pytest.raises(RuntimeError, match="renderer failed"):
            for i, _ in client.map(cut_short()):
                got.append(i)
        assert sorted(got) == list(range(6)) and server.requests - before == 6


# -- journal and answer cache ---------------------------------------------------------------------------------------
def test_atomic_write_replaces_whole_files(tmp_path):
    path = jr.atomic_write_text(tmp_path / "sub" / "a.json", "one")
    jr.atomic_write_text(path, "two")
    assert path.read_text() == "two" and [p.name for p in path.parent.iterdir()] == ["a.json"]


def test_journal_survives_an_unfinished_last_line_and_refuses_damage(tmp_path):
    path, header = tmp_path / "c.json", {"format": "x", "of": "j"}
    with jr.Journal(path, header) as j:
        for k in range(3):
            j.append({"k": k})
    jpath = jr.journal_path(path)
    assert jpath.name == "c.journal.jsonl" and jr.read_journal(path, header) == [{"k": 0}, {"k": 1}, {"k": 2}]
    with jpath.open("a") as f:
        f.write('{"k": 3, "half')              # a run killed while writing
    assert jr.read_journal(path, header) == [{"k": 0}, {"k": 1}, {"k": 2}]
    with jr.Journal(path, header) as j:         # resumed: the unfinished line is cut, new records follow
        j.append({"k": 4})
    assert jr.read_journal(path, header)[-1] == {"k": 4} and len(jr.read_journal(path, header)) == 4
    with pytest.raises(ValueError, match="belongs to another"):
        jr.read_journal(path, {"format": "x", "of": "other"})
    jpath.write_text(jpath.read_text().replace('{"k":1}', '{"k":'))
    with pytest.raises(ValueError, match="line 3 is not JSON"):
        jr.read_journal(path, header)


def test_answer_cache_journals_seals_and_recovers(tmp_path):
    path = tmp_path / "answers.json"
    cache = jr.AnswerCache(path, "asker:a")
    key = jr.answer_key("asker:a", {"q": 1})
    cache.put(key, "a red square")
    assert not path.exists() and jr.journal_path(path).exists()      # journaled, not yet sealed
    again = jr.AnswerCache(path, "asker:a")                          # what a killed run left is recovered
    assert again.get(key) == "a red square" and path.exists() and not jr.journal_path(path).exists()
    again.put(jr.answer_key("asker:a", {"q": 2}), "background")
    again.seal()
    assert len(jr.AnswerCache(path, "asker:a")) == 2
    assert jr.answer_key("asker:b", {"q": 1}) != key != jr.answer_key("asker:a", {"q": 2})
    with pytest.raises(ValueError, match="holds answers of 'asker:a'"):
        jr.AnswerCache(path, "asker:b")
    path.write_text(path.read_text().replace("background", "a blue circle"))
    with pytest.raises(ValueError, match="digest"):
        jr.AnswerCache(path, "asker:a")
    with pytest.raises(ValueError, match="json"):
        jr.AnswerCache(tmp_path / "answers.txt", "asker:a")
