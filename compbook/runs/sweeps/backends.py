"""Where a sweep's tasks run: in this process, in a pool of processes on this machine, or on a Ray cluster.

Each backend does three things: ``submit(task)``, ``wait()`` (at least one finished task, with its records or the
exception it raised, or that its worker's death raised) and ``close()``; ``slots`` is how many tasks run at once.
Retries, storing and progress are the runner's (:mod:`compbook.runs.sweeps.runner`), the same for every backend.

* :class:`Sequential`: one task at a time in this process (the default; what a notebook uses).
* :class:`Pool`: ``workers`` processes of this machine (``spawn``: each imports the run function by name); a
  worker that dies breaks the pool, which is rebuilt, and its tasks count as failed attempts.
* :class:`RayCluster`: each task a Ray task on the cluster at ``address`` (``ray start --head`` ...), or on a
  local one of ``workers`` CPUs; CPUs per task, and on a cluster with GPUs a fractional GPU sized from the task's
  memory (several small stacks share a GPU). ``COMPBOOK_*`` variables of this process reach the workers.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing
import os

from ... import checks
from .spec import Sweep, Task, execute

#: the GPU memory assumed for fractional GPUs when the driver has no GPU to ask (our choice: a T4's 16 GB)
DEFAULT_GPU_MEMORY_MB = 16 * 1024
#: the smallest GPU share a task asks for (our choice: at most 8 stacks per GPU)
MIN_GPU_SHARE = 1 / 8


class Sequential:
    """Tasks one after the other in this process."""
    slots = 1

    def __init__(self, sweep: Sweep, threads: int | None = None):
        self.sweep, self.threads, self.queue = sweep, threads, []

    def submit(self, task: Task) -> None:
        self.queue.append(task)

    def wait(self) -> list:
        task = self.queue.pop(0)
        try:
            return [(task, execute(self.sweep.run, self.sweep.run_many, task.configs, self.threads))]
        except Exception as e:          # noqa: BLE001 - reported by key, the others go on
            return [(task, e)]

    def close(self) -> None:
        self.queue.clear()


class Pool:
    """Tasks in ``workers`` spawned processes of this machine."""

    def __init__(self, sweep: Sweep, workers: int, threads: int | None = 1):
        self.sweep, self.slots, self.threads = sweep, workers, threads
        self.pool = self._new()
        self.running: dict = {}

    def _new(self):
        return cf.ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, task: Task) -> None:
        fut = self.pool.submit(execute, self.sweep.run, self.sweep.run_many, task.configs, self.threads)
        self.running[fut] = task

    def wait(self) -> list:
        done, _ = cf.wait(self.running, return_when=cf.FIRST_COMPLETED)
        out, broken = [], False
        for fut in done:
            task = self.running.pop(fut)
            try:
                out.append((task, fut.result()))
            except cf.process.BrokenProcessPool as e:
                broken = True
                out.append((task, RuntimeError(f"its worker process died ({e})")))
            except Exception as e:      # noqa: BLE001
                out.append((task, e))
        if broken:                      # every task of a broken pool is lost: report them, start a new pool
            for fut, task in self.running.items():
                out.append((task, RuntimeError("its worker pool broke (another worker died)")))
            self.running.clear()
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new()
        return out

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("backend 'ray' needs Ray: pip install 'compbook[sweeps]' (or pip install ray)") from None
    return ray


def forwarded_environment() -> dict:
    """This process's ``COMPBOOK_*`` settings (mode, smoke, data folder ...), which Ray workers need too."""
    return {k: v for k, v in os.environ.items() if k.startswith("COMPBOOK_")}


def gpu_share(task_bytes: int, gpu_memory_mb: float) -> float:
    """The GPU share a task of ``task_bytes`` asks: its part of ``gpu_memory_mb``, rounded up to eighths, between
    :data:`MIN_GPU_SHARE` and 1."""
    share = task_bytes / (gpu_memory_mb * 2 ** 20)
    return min(1.0, max(MIN_GPU_SHARE, math.ceil(share * 8) / 8))


class RayCluster:
    """Tasks on a Ray cluster (``address``) or a local one of ``workers`` CPUs."""

    def __init__(self, sweep: Sweep, address: str | None, workers: int | None, cpus_per_task: int = 1,
                 gpu_memory_mb: float | None = None):
        ray = self.ray = _import_ray()
        self.sweep = sweep
        self.cpus = checks.integer(cpus_per_task, "cpus_per_task", minimum=1)
        env = {"env_vars": forwarded_environment()}
        self.owns = not ray.is_initialized()
        if self.owns:
            kwargs = dict(address=address or "local", runtime_env=env, log_to_driver=False, include_dashboard=False)
            if address is None:
                kwargs["num_cpus"] = workers or os.cpu_count()
            ray.init(**kwargs)
        res = ray.cluster_resources()
        self.gpus = res.get("GPU", 0)
        self.gpu_memory_mb = gpu_memory_mb or _driver_gpu_memory_mb() or DEFAULT_GPU_MEMORY_MB
        cpu_slots = int(res.get("CPU", 1) // self.cpus)
        self.slots = max(1, cpu_slots)
        self.remote = ray.remote(execute)
        self.running: dict = {}

    def options(self, task: Task) -> dict:
        """Ray options of ``task``: CPUs, a GPU share from its models' bytes on a cluster with GPUs, tasks spread
        over the nodes (a sweep's tasks are independent: no node idles while the driver's is busy); no Ray
        retries (the runner retries, one rule for both backends)."""
        opts = {"num_cpus": self.cpus, "max_retries": 0, "scheduling_strategy": "SPREAD"}
        if self.gpus:
            opts["num_gpus"] = gpu_share(sum(self.sweep.bytes_of(c) for c in task.configs), self.gpu_memory_mb)
        return opts

    def submit(self, task: Task) -> None:
        ref = self.remote.options(**self.options(task)).remote(
            self.sweep.run, self.sweep.run_many, task.configs, self.cpus)
        self.running[ref] = task

    def wait(self) -> list:
        ready, _ = self.ray.wait(list(self.running), num_returns=1)
        out = []
        for ref in ready:
            task = self.running.pop(ref)
            try:
                out.append((task, self.ray.get(ref)))
            except Exception as e:      # noqa: BLE001 - a task error, a dead worker or node: retried by the runner
                out.append((task, e))
        return out

    def close(self) -> None:
        for ref in self.running:
            self.ray.cancel(ref, force=True)
        self.running.clear()
        if self.owns:
            self.ray.shutdown()


def _driver_gpu_memory_mb() -> float | None:
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(0).total_memory / 2 ** 20
    except Exception:                   # noqa: BLE001 - no GPU to ask
        pass
    return None


BACKENDS = ("local", "ray")



def make(sweep: Sweep, backend: str, address: str | None, workers: int | None, **kwargs):
    """The backend object for ``backend`` (``local`` with ``workers`` > 1: a process pool)."""
    checks.choice(backend, "backend", BACKENDS)
    if address is not None and backend != "ray":
        raise ValueError(f"address {address!r} is a Ray cluster's; give backend='ray' with it")
    if backend == "ray":
        return RayCluster(sweep, address, workers, **kwargs)
    workers = checks.integer(workers or 1, "workers", minimum=1)
    return Sequential(sweep) if workers == 1 else Pool(sweep, workers)
