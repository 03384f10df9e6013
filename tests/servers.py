"""Local servers for the tests of compbook.runs.serving and its users (only 127.0.0.1; every loop bounded):

* :class:`TransformersServe`: ``transformers serve`` on a free port with a saved model folder (started, killed,
  restarted on the same port);
* :class:`CountingProxy`: forwards chat requests to a backend and records each one; can kill the backend after
  a given number of answers (a server dying mid-run);
* :class:`FaultServer`: an OpenAI-style server that answers from a script (429, 500, a dropped connection, a
  hang, a canned answer), counting requests and the most in flight at once.
"""

import collections
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"
# seconds a live ``transformers serve`` may take to answer: 10-40 s on a quiet core, past 150 s on a 2-core machine
# with two test workers and other jobs beside it (a server that exits fails at once)
START_WAIT = 600.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class TransformersServe:
    """``transformers serve <folder> [extra options]`` on ``127.0.0.1:<port>`` (CPU, offline, one thread), its log
    in ``log``."""

    def __init__(self, folder, port=None, log=None, extra=()):
        self.folder, self.port, self.extra = str(folder), port or free_port(), list(extra)
        self.log = Path(log or Path(folder) / "serve.log")
        self.url, self.model, self.proc = f"http://{HOST}:{self.port}/v1", self.folder, None

    def launch(self) -> "TransformersServe":
        """Start the process and return at once (:meth:`wait_ready` waits for it)."""
        exe = Path(sys.executable).with_name("transformers")
        cmd = [str(exe) if exe.exists() else "transformers", "serve", self.folder, "--trust-remote-code",
               "--host", HOST, "--port", str(self.port), "--device", "cpu", "--log-level", "warning", *self.extra]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
               "HF_MODULES_CACHE": str(Path(self.folder).parent / "hf_modules")}
        # stdin not the test process's: a pytest-xdist worker's stdin is its channel to the controller
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log.open("ab"),
                                     stderr=subprocess.STDOUT, env=env)
        return self

    def wait_ready(self, wait: float = START_WAIT) -> "TransformersServe":
        """Wait until ``/health`` answers; ``RuntimeError`` with the log when the process dies (at once) or is too
        slow."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited ({self.proc.returncode}): "
                                   f"{self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.kill()
        raise RuntimeError(f"transformers serve did not start within {wait} s: {self.log.read_text()[-2000:]}")

    def start(self, wait: float = START_WAIT) -> "TransformersServe":
        return self.launch().wait_ready(wait)

    def take_over(self, spare: "TransformersServe") -> None:
        """Become ``spare`` (another server of the same folder, launched beforehand): its process and port. A
        restarted server without the wait for a second start (``transformers serve`` takes 10-40 s to start)."""
        self.kill()
        spare.wait_ready()
        self.proc, self.port, self.log = spare.proc, spare.port, spare.log
        self.url = f"http://{HOST}:{self.port}/v1"

    def kill(self) -> None:
        """SIGKILL: the server dies at once, requests in flight are dropped."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128      # many connections at once (socketserver's default backlog is 5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status: int, body: bytes, headers=()) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))


class _Running:
    """A threaded HTTP server in a daemon thread; ``with`` stops it."""

    def start(self, handler):
        self.server = _Server((HOST, 0), handler)
        self.server.owner = self
        self.port = self.server.server_address[1]
        self.url = f"http://{HOST}:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def digest(body: bytes) -> str:
    """What a request asked: sha256 of its JSON body without the model name."""
    data = json.loads(body)
    data.pop("model", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class CountingProxy(_Running):
    """Forwards ``POST /v1/chat/completions`` to ``backend`` (a :class:`TransformersServe`) and records
    ``(digest, status)`` of each request (status None: the backend was unreachable, the connection was dropped).
    With ``kill_after=n`` the backend is killed once ``n`` answers have been forwarded."""

    def __init__(self, backend, kill_after=None):
        self.backend, self.kill_after = backend, kill_after
        self.records, self.lock = [], threading.Lock()
        self.start(_ProxyHandler)

    def answered(self) -> list:
        with self.lock:
            return [d for d, status in self.records if status == 200]


class _ProxyHandler(_Handler):
    def do_POST(self):
        owner, body = self.server.owner, self.body()
        try:
            conn = http.client.HTTPConnection(HOST, owner.backend.port, timeout=60)
            conn.request("POST", self.path, body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            status, answer = r.status, r.read()
            conn.close()
        except OSError:
            with owner.lock:
                owner.records.append((digest(body), None))
            self.close_connection = True          # dropped: no answer at all
            return
        with owner.lock:
            owner.records.append((digest(body), status))
            kill = owner.kill_after is not None and sum(s == 200 for _, s in owner.records) >= owner.kill_after
        self.reply(status, answer)
        if kill and owner.backend.running():
            owner.backend.kill()


def completion(content="yes", reasoning=None, finish="stop") -> bytes:
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return json.dumps({"object": "chat.completion", "choices": [{"index": 0, "message": message,
                                                                 "finish_reason": finish}]}).encode()


class FaultServer(_Running):
    """Answers each request with the next action of ``script`` (then ``default``):

    ``"429"`` (with ``Retry-After: 0``), ``"500"``, ``"503"``, ``"404"``, ``"drop"`` (closes the connection
    without an answer), ``"hang"`` (answers nothing for ``hang`` seconds), ``"badjson"``, a bytes body
    answered with 200 (:func:`completion`), or a callable ``body -> bytes`` (an answer that depends on the request).
    ``delay`` seconds pass before every answer. ``bodies`` holds every request body received, ``in_flight_max`` the most
    requests handled at once. ``hold_until=n``: no request is answered before ``n`` are in flight at once (then none is
    held): a test of concurrency that no clock decides (a client that never reaches ``n`` fails after 60 s, answered,
    with ``in_flight_max`` below ``n``)."""

    def __init__(self, script=(), default=None, delay=0.0, hang=5.0, hold_until=None):
        self.script = collections.deque(script)
        self.default = completion() if default is None else default
        self.delay, self.hang = delay, hang
        self.bodies, self.lock = [], threading.Lock()
        self.in_flight = self.in_flight_max = 0
        self.hold_until, self.reached = hold_until, threading.Condition(self.lock)
        self.start(_FaultHandler)

    @property
    def requests(self) -> int:
        return len(self.bodies)


class _FaultHandler(_Handler):
    def do_POST(self):
        owner, body = self.server.owner, self.body()
        with owner.lock:
            owner.bodies.append(body)
            action = owner.script.popleft() if owner.script else owner.default
            owner.in_flight += 1
            owner.in_flight_max = max(owner.in_flight_max, owner.in_flight)
            owner.reached.notify_all()
            if owner.hold_until:
                owner.reached.wait_for(lambda: owner.in_flight_max >= owner.hold_until, timeout=60)
        finished = []

        def finish():        # no longer in flight: counted down BEFORE the answer leaves, so that a client that
            if not finished:  # sends its next request on reading it can never be counted beside this one
                finished.append(True)
                with owner.lock:
                    owner.in_flight -= 1

        try:
            time.sleep(owner.delay)
            if action == "drop":
                finish()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif action == "hang":
                time.sleep(owner.hang)
                finish()
                self.close_connection = True
            elif action == "badjson":
                finish()
                self.reply(200, b"<html>not json</html>")
            elif isinstance(action, str):
                headers = [("Retry-After", "0")] if action == "429" else []
                finish()
                self.reply(int(action), json.dumps({"error": f"scripted {action}"}).encode(), headers)
            else:
                answer = action(body) if callable(action) else action
                finish()
                self.reply(200, answer)
        finally:
            finish()
