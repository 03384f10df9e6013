"""Run a sweep: only the configs not yet stored, each record stored the moment its task ends.

:func:`run` reads which keys the store holds, packs the missing configs into tasks (stacks of same-shape models
where the sweep can train them together), keeps the backend's slots busy, stores every record as it arrives,
retries a failed task (an error, or a worker or node that died) ``retries`` times, a failed stack then config by
config, and reports what still fails by key with its error, without stopping the others. A progress bar counts
configs: done, running, failed, and the time left.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from ... import checks, config as mode
from ...results import paths
from . import backends, store as rstore
from .spec import Sweep, Task, per_task_from_memory, tasks_of
from ...results import door


@dataclass
class Report:
    """What :func:`run` did: ``records`` {key: record} in config order (every stored config), ``ran`` (keys run
    by this call), ``stored`` (keys found stored), ``failed`` {key: error text}, ``tasks`` run (``retried`` of
    them again, after a failure), ``seconds``."""
    sweep: Sweep
    records: dict = field(default_factory=dict)
    ran: list = field(default_factory=list)
    stored: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    tasks: int = 0
    retried: int = 0
    seconds: float = 0.0

    @property
    def by_config(self) -> list:
        """``(config, record or None)`` for every config, in order."""
        return [(c, self.records.get(k)) for k, c in zip(self.sweep.keys, self.sweep.configs)]

    def check(self) -> "Report":
        """This report, or ``RuntimeError`` naming every failed config (key, config, error)."""
        if self.failed:
            by_key = dict(zip(self.sweep.keys, self.sweep.configs))
            lines = [f"  {k} {by_key[k]!r:.120}: {e}" for k, e in self.failed.items()]
            raise RuntimeError(f"sweep {self.sweep.name!r}: {len(self.failed)} of {len(self.sweep.keys)} configs "
                               "failed (the others are stored; run it again to retry them):\n" + "\n".join(lines))
        return self


#: set to a folder, it holds every sweep's records (``<it>/<name>``), whatever the mode
STORE_VARIABLE = "COMPBOOK_SWEEPS"


def sources_digest(root) -> str:
    """12 hex digits of the SHA-256 of the Python sources under folder ``root`` (each file's path under it and its
    bytes, in path order)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"root must be a folder, got {str(root)!r}")
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """:func:`sources_digest` of the compbook package: a code change that could change a record changes it."""
    return sources_digest(Path(__file__).resolve().parents[2])


def store_for(name: str, data_folder: str) -> Path:
    """Where sweep ``name`` keeps its records unless told: ``$COMPBOOK_SWEEPS/<name>``; else in full mode the part's
    full-mode store ``data/<data_folder>/full/sweeps/<name>`` (registered: the records are full mode's results);
    in CPU mode ``<tmp>/compbook-sweeps/code-<code_version()>/<name>`` (a cache a killed run resumes from, kept
    per version of the code, so an edited trainer never meets a record of the old one; the part's command writes
    the artifacts the chapters read). ``/`` in ``name`` becomes ``-``."""
    leaf = paths.safe_name(checks.non_empty_str(name, "name").replace("/", "-"), "name")
    if os.environ.get(STORE_VARIABLE):
        return Path(os.environ[STORE_VARIABLE]) / leaf
    if mode.is_full():
        return door.made_path(f"{paths.safe_name(data_folder, 'data_folder')}/full/sweeps/{leaf}")
    return Path(tempfile.gettempdir()) / "compbook-sweeps" / f"code-{code_version()}" / leaf


def load_records(store, sweep: Sweep | None = None) -> dict:
    """``{key: record}`` of what ``store`` holds: of ``sweep``'s configs only (in config order) when given."""
    have = rstore.stored_keys(store)
    if sweep is None:
        return {k: rstore.read_record(store, k) for k in sorted(have)}
    return {k: rstore.read_record(store, k, sweep.name, c) for k, c in zip(sweep.keys, sweep.configs) if k in have}


def _error_text(e: BaseException) -> str:
    last = traceback.format_exception_only(type(e), e)[-1].strip()
    return last.splitlines()[-1] if last else type(e).__name__


def _choose_per_task(sweep: Sweep, missing: list, per_task: int | None, backend) -> int:
    if per_task is not None:
        return checks.integer(per_task, "per_task", minimum=1)
    wanted = set(missing)
    configs = [c for k, c in zip(sweep.keys, sweep.configs) if k in wanted]
    gpus = getattr(backend, "gpus", 0)
    if gpus:
        memory = backend.gpu_memory_mb
    else:
        device = mode.device()
        memory = mode.available_memory_mb(device) / (1 if device.type == "cuda" else max(1, backend.slots))
    return per_task_from_memory(sweep, configs, memory)


def run(sweep: Sweep, store, backend: str = "local", address: str | None = None, workers: int | None = None,
        retries: int = 2, per_task: int | None = None, progress: bool = True, **backend_options) -> Report:
    """Run the configs of ``sweep`` that ``store`` (a folder) lacks; returns a :class:`Report`.

    ``backend``: ``local`` (``workers`` processes of this machine; 1, the default, runs in this process) or
    ``ray`` (``address`` of a running cluster, else a local one of ``workers`` CPUs). ``retries``: how many
    more times a failed task runs. ``per_task``: configs per stacked task (default: from the device's memory
    and ``sweep.model_bytes``). ``backend_options``: ``cpus_per_task``, ``gpu_memory_mb`` (Ray)."""
    checks.instance(sweep, "sweep", Sweep)
    if not isinstance(store, (str, Path)) or str(store) == "" or Path(store).exists() and not Path(store).is_dir():
        raise ValueError(f"store must be a folder path, got {store!r}")
    retries = checks.integer(retries, "retries", minimum=0)
    t0 = time.perf_counter()
    report = Report(sweep)
    have = rstore.stored_keys(store)
    report.stored = [k for k in sweep.keys if k in have]
    missing = [k for k in sweep.keys if k not in have]
    if missing:
        _run_missing(sweep, Path(store), missing, report, backend, address, workers, retries, per_task, progress,
                     backend_options)
    report.records = load_records(store, sweep)
    report.seconds = time.perf_counter() - t0
    return report


def _run_missing(sweep, store, missing, report, backend, address, workers, retries, per_task, progress, options):
    engine = backends.make(sweep, backend, address, workers, **options)
    try:
        queue = tasks_of(sweep, missing, _choose_per_task(sweep, missing, per_task, engine))
        bar = tqdm(total=len(sweep.keys), initial=len(report.stored), desc=sweep.name, unit="config",
                   disable=not progress)
        running = 0

        def show():
            bar.set_postfix(running=running, failed=len(report.failed), refresh=False)

        while queue or running:
            while queue and running < engine.slots:
                engine.submit(queue.pop(0))
                running += 1
            show()
            for task, answer in engine.wait():
                running -= 1
                report.tasks += 1
                if isinstance(answer, BaseException):
                    queue.extend(_after_failure(task, answer, retries, report))
                    continue
                for key, config, record in zip(task.keys, task.configs, answer):
                    rstore.write_record(store, sweep.name, key, config, record, sweep.command)
                    report.ran.append(key)
                    bar.update(1)
            show()
        bar.close()
    finally:
        engine.close()


def _after_failure(task: Task, error: BaseException, retries: int, report: Report) -> list[Task]:
    """What runs next after ``task`` failed: itself again, its configs one by one, or nothing (reported)."""
    if task.attempt < retries:
        report.retried += 1
        return [task.retry()]
    if len(task.keys) > 1:
        report.retried += len(task.keys)
        return task.singles()
    report.failed[task.keys[0]] = f"{_error_text(error)} (after {task.attempt + 1} attempts)"
    return []
