"""The Ray backend on a real cluster on this machine: a head node and one worker node (two raylets, 1 CPU each:
the head on this machine's address, the worker on the loopback address 127.0.0.2, so that a driver on this
machine always joins the head node and the worker node can be killed under it), every part's tiny sweep through it, a
worker node killed mid-sweep, a driver killed mid-sweep.

Needs Ray (``pip install 'compbook[sweeps]'``, which ``make test`` installs); without it these tests skip and say
so. Everything the module starts (nodes, drivers) is stopped at its end, and the test checks that no process of
the cluster is left.
"""

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch

from compbook import config
from compbook.runs import sweeps
from compbook.runs.sweeps import toys

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'compbook[sweeps]' (make test does)")
from ray.cluster_utils import Cluster  # noqa: E402

NODE = dict(num_cpus=1, include_dashboard=False, object_store_memory=80 * 2 ** 20)
WORKER_IP = "127.0.0.2"

#: every part's tiny sweep (module, builder): the same code paths as the papers' sweeps, at seconds' sizes
PART_SWEEPS = [("compbook.runs.sweeps.toys", "toy_sweep"), ("compbook.cppn.runs.tasks", "tiny_sweep"),
               ("compbook.cppn.runs.scoring_tasks", "tiny_scoring_sweep"),
               ("compbook.binding.runs.tasks", "tiny_sweep"), ("compbook.sae.runs.tasks", "tiny_sweep")]


def _cluster_processes(session: str) -> list[int]:
    """PIDs whose command line names the cluster's session folder (its raylets, GCS, workers)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if session.encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


#: tries at starting the test cluster: Ray waits a fixed 30 s for a node's raylet to register, which a machine
#: busy with other work can pass; a failed start is shut down and tried again
STARTS = 3


def _start_cluster() -> Cluster:
    for attempt in range(STARTS):
        c = Cluster(initialize_head=False)
        try:
            c.add_node(**NODE)
            c.worker = c.add_node(**NODE, node_ip_address=WORKER_IP)
            c.wait_for_nodes()
            return c
        except Exception as e:               # noqa: BLE001 - "timed out during startup": the next try
            c.shutdown()
            if attempt == STARTS - 1 or "timed out during startup" not in str(e):
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def cluster():
    c = _start_cluster()
    session = c.head_node.get_session_dir_path()
    try:
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
        deadline = time.time() + 20
        while _cluster_processes(session) and time.time() < deadline:
            time.sleep(0.5)
        left = _cluster_processes(session)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"processes of the test cluster outlived it: {left}"


#: wall times a record may carry (the tables print them): the one field two runs never share
TIMINGS = {"train s", "seconds", "train_seconds"}


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a if k not in TIMINGS)
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return a == b


@pytest.mark.parametrize("module, builder", PART_SWEEPS)
def test_every_part_runs_on_the_cluster_as_it_runs_here(cluster, tmp_path, module, builder):
    sweep = getattr(importlib.import_module(module), builder)()
    config.set_threads(1)                           # the cluster's tasks run with 1 thread (1 CPU each)
    here = sweeps.run(sweep, tmp_path / "local", progress=False).check()
    there = sweeps.run(sweep, tmp_path / "ray", backend="ray", address=cluster.address, progress=False).check()
    assert len(there.ran) == len(sweep.configs), "every config ran on the cluster"
    for key in sweep.keys:
        assert _same(here.records[key], there.records[key]), f"{module}: record {key} differs between backends"


def _driver(cluster, store: Path, log: Path, gate: Path, n: int, tag: str) -> subprocess.Popen:
    env = os.environ | {toys.TAG_VARIABLE: tag}
    return subprocess.Popen([sys.executable, "-m", "compbook.runs.sweeps", "toys", "--store", str(store), "--n", str(n),
                             "--gate", str(gate), "--log", str(log), "--unstacked", "--backend", "ray",
                             "--address", cluster.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _records(store: Path) -> int:
    return len(list(store.glob("*.json"))) if store.is_dir() else 0


def _node_processes(node) -> list:
    """Every process of a Ray node (its raylet and the rest it started, with their children: the workers)."""
    out = []
    for infos in node.all_processes.values():
        for info in infos:
            try:
                proc = psutil.Process(info.process.pid)
                out += [proc] + proc.children(recursive=True)
            except psutil.NoSuchProcess:
                pass
    return out


def _started(log: Path) -> int:
    """Executions started so far (each writes its line before it reaches the gate)."""
    return len(log.read_text().splitlines()) if log.exists() else 0


def _gate(folder: Path, tokens: int) -> Path:
    """A closed gate letting ``tokens`` executions through (the toys' ``gate``: no clock decides who runs)."""
    folder.mkdir()
    for i in range(tokens):
        (folder / f"token{i}").touch()
    return folder


def _wait_for(cond, timeout: float, what: str, driver: subprocess.Popen | None = None):
    """Poll ``cond`` until true; ``timeout`` only turns a hang into a failure (no result depends on it); a
    ``driver`` that exits first fails it at once, with its error."""
    deadline = time.time() + timeout
    while not cond():
        if driver is not None and driver.poll() is not None:
            raise AssertionError(f"the driver exited ({driver.returncode}) before {what}: "
                                 f"{driver.stderr.read()[-2000:]}")
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_killed_driver_resumes_with_only_the_missing(cluster, tmp_path):
    """Three executions pass the gate, the others are held (two of them in flight on the nodes) when the driver
    is killed: exactly three records are stored, the rerun runs the other nine, each once."""
    n, store, log = 12, tmp_path / "store", tmp_path / "log"
    gate = _gate(tmp_path / "gate", 3)
    first = _driver(cluster, store, log, gate, n, "first")
    _wait_for(lambda: _records(store) >= 3 and _started(log) >= 5, 900,
              "3 records of the first driver and 2 executions held at the gate", first)
    first.kill()                                     # SIGKILL: no cleanup, tasks in flight are lost
    first.wait(30)
    done = _records(store)
    assert done == 3, f"the driver was killed mid-sweep with 3 records stored, found {done}"
    shutil.rmtree(gate)                              # open: the rerun's executions go through
    rerun = _driver(cluster, store, log, gate, n, "rerun")
    out, err = rerun.communicate(timeout=900)
    assert rerun.returncode == 0, err[-2000:]
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["stored"] == done and summary["ran"] == n - done, summary
    reran = [line.split()[0] for line in log.read_text().splitlines() if line.endswith(" rerun")]
    assert len(reran) == n - done and len(set(reran)) == len(reran), \
        "the rerun runs each missing config once, and no stored one"
    assert _records(store) == n


def test_a_killed_worker_node_is_retried_and_the_records_are_complete(cluster, tmp_path):
    """Every execution is held at a closed gate: with 1 CPU per node, two started means one runs on each node.
    The worker node is killed then, the gate opened: the task it ran is lost and runs again."""
    log, store = tmp_path / "log", tmp_path / "store"   # a line as each execution starts
    gate = _gate(tmp_path / "gate", 0)
    sweep = toys.toy_sweep(8, log=str(log), gate=str(gate))
    killed, started = threading.Event(), []

    def kill_worker_while_it_runs_a_task():
        try:
            _wait_for(lambda: _started(log) >= 2, 900, "a task held on each node")
            started.append(_started(log))
            doomed = _node_processes(cluster.worker)
            cluster.remove_node(cluster.worker, allow_graceful=False)
            # a dead node takes every process on it: a worker process that outlived its raylet could still reply
            # to the driver directly, and then nothing was lost; the gate stays closed until all of them are gone
            _, alive = psutil.wait_procs(doomed, timeout=10)
            for proc in alive:
                proc.kill()
            psutil.wait_procs(alive, timeout=30)
            killed.set()
        finally:
            shutil.rmtree(gate, ignore_errors=True)

    killer = threading.Thread(target=kill_worker_while_it_runs_a_task, daemon=True)
    killer.start()
    report = sweeps.run(sweep, store, backend="ray", address=cluster.address, per_task=1, retries=2,
                        progress=False)
    killer.join(60)
    assert killed.is_set(), "the worker node was killed during the sweep"
    assert started == [2], f"{started} executions had started when the node was killed (2 CPUs, all held)"
    assert report.failed == {} and len(report.records) == 8
    # the task held on the killed node never finished there, so its config started again: by the runner's retry
    # (report.retried) or by Ray's own retry of a task whose node died; both show as a second start in the log
    keys = [line.split()[0] for line in log.read_text().splitlines()]
    assert len(keys) > len(set(keys)) or report.retried >= 1, \
        f"the task running on the killed node ran again: {len(keys)} starts of {len(set(keys))} configs"
    here = sweeps.run(toys.toy_sweep(8), tmp_path / "local", per_task=1, progress=False)
    assert all(_same(a, b) for (_, a), (_, b) in zip(here.by_config, report.by_config)), \
        "the records equal a clean local run's (the log and the gate change no number)"
