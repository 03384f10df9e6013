"""What a sweep is: configs, the function that runs one (or a stack of same-shape ones), and each config's key.

A :class:`Sweep` names its configs (JSON-able dicts holding everything that changes a result: sizes, steps,
seed, mode) and the module-level function that turns a config into a record. Every config has a stable
**key** (:func:`config_key`: the SHA-256 of the canonical JSON of the sweep's name and the config), so the
same question always has the same key and a changed question never meets an old answer.

:func:`tasks_of` packs the configs still missing into tasks: one config each, or, where the sweep can train a
stack of same-shape models at once (``run_many``), up to ``per_task`` configs of one ``group`` each.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ... import checks, config as mode
from ...results.journal import canonical

#: configs per stacked task when neither ``per_task`` nor ``model_bytes`` decides (our choice)
DEFAULT_PER_TASK = 8
#: the most configs one stacked task holds (our choice: a stack's steps stay a few seconds on a GPU)
MAX_PER_TASK = 16


def config_key(config: dict, name: str) -> str:
    """The stable key of ``config`` in sweep ``name``: 16 hex digits of the SHA-256 of their canonical JSON."""
    checks.non_empty_str(name, "name")
    text = canonical({"sweep": name, "config": config}, where=f"sweep {name!r}'s config")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _module_level(fn, what: str):
    """``fn`` when it is a module-level function (picklable by reference, as process pools and Ray need)."""
    if fn is None:
        return None
    if not callable(fn):
        raise ValueError(f"{what} must be a function, got {type(fn).__name__}")
    qual = getattr(fn, "__qualname__", "")
    if "<" in qual or not getattr(fn, "__module__", None):
        raise ValueError(f"{what} must be a module-level function (a worker imports it by name), got {qual!r}")
    return fn


@dataclass
class Sweep:
    """A sweep: ``configs`` (JSON-able dicts) and the module-level ``run`` (config -> record dict) or
    ``run_many`` (list of configs -> list of records, same order: one task trains a stack of same-shape models);
    ``group`` (config -> hashable) says which configs may share a ``run_many`` task; ``model_bytes`` (config ->
    int) the memory one config's model needs while it trains (GPU shares and stack sizes come from it);
    ``command`` is the ``made_by`` of the stored records."""
    name: str
    configs: Sequence[dict]
    run: Callable[[dict], dict] | None = None
    run_many: Callable[[list], list] | None = None
    group: Callable[[dict], Any] | None = None
    model_bytes: Callable[[dict], int] | None = None
    command: str | None = None
    keys: list = field(init=False, repr=False)

    def __post_init__(self):
        checks.non_empty_str(self.name, "name")
        configs = checks.sequence(self.configs, "configs", min_len=0)
        for i, c in enumerate(configs):
            checks.instance(c, f"configs[{i}]", dict)
        self.configs = configs
        self.run = _module_level(self.run, "run")
        self.run_many = _module_level(self.run_many, "run_many")
        self.group = _module_level(self.group, "group")
        self.model_bytes = _module_level(self.model_bytes, "model_bytes")
        if self.run is None and self.run_many is None:
            raise ValueError(f"sweep {self.name!r}: give run (config -> record) or run_many (configs -> records)")
        self.keys = [config_key(c, self.name) for c in configs]
        seen: dict = {}
        for i, k in enumerate(self.keys):
            if k in seen:
                raise ValueError(f"sweep {self.name!r}: configs[{i}] repeats configs[{seen[k]}] (key {k}); "
                                 "a sweep runs each question once")
            seen[k] = i

    def bytes_of(self, config: dict) -> int:
        """``model_bytes(config)`` checked (0 when the sweep gives no estimate)."""
        if self.model_bytes is None:
            return 0
        return checks.integer(self.model_bytes(config), f"model_bytes({config!r:.80})", minimum=0)


class Task:
    """Configs that run together in one worker call (their keys, the attempt number)."""

    def __init__(self, keys: list, configs: list, attempt: int = 0):
        self.keys, self.configs, self.attempt = keys, configs, attempt

    def retry(self) -> "Task":
        return Task(self.keys, self.configs, self.attempt + 1)

    def singles(self) -> list["Task"]:
        """One fresh task per config (a failed stack is split so one bad config does not fail its mates)."""
        return [Task([k], [c]) for k, c in zip(self.keys, self.configs)]


def per_task_from_memory(sweep: Sweep, configs: Sequence[dict], memory_mb: float) -> int:
    """How many configs a stacked task holds: ``memory_mb`` x :data:`compbook.config.MEMORY_SHARE` over the
    largest model's bytes, between 1 and :data:`MAX_PER_TASK`; :data:`DEFAULT_PER_TASK` without estimates."""
    if sweep.run_many is None:
        return 1
    largest = max((sweep.bytes_of(c) for c in configs), default=0)
    if largest == 0:
        return DEFAULT_PER_TASK
    fits = math.floor(memory_mb * mode.MEMORY_SHARE * 2 ** 20 / largest)
    return max(1, min(MAX_PER_TASK, fits))


def tasks_of(sweep: Sweep, keys: Sequence[str], per_task: int) -> list[Task]:
    """The tasks that run ``keys`` (configs of ``sweep``): single configs with ``run``, else chunks of at most
    ``per_task`` configs of one group, in config order."""
    per_task = checks.integer(per_task, "per_task", minimum=1)
    by_key = dict(zip(sweep.keys, sweep.configs))
    if sweep.run_many is None or per_task == 1:
        return [Task([k], [by_key[k]]) for k in keys]
    groups: dict = {}
    for k in keys:
        g = sweep.group(by_key[k]) if sweep.group is not None else None
        groups.setdefault(canonical(g, where="group(config)"), []).append(k)
    tasks = []
    for members in groups.values():
        for i in range(0, len(members), per_task):
            chunk = members[i:i + per_task]
            tasks.append(Task(chunk, [by_key[k] for k in chunk]))
    return tasks


def execute(sweep_run, sweep_run_many, configs: list, threads: int | None = None) -> list:
    """Run one task in a worker: ``run_many(configs)`` or ``[run(c) for c in configs]``; checks the answer's
    shape (a list of dicts, one per config). ``threads``: torch's intra-op threads in this worker."""
    if threads:
        from ... import config
        config.set_threads(threads)
    if sweep_run_many is not None and (len(configs) > 1 or sweep_run is None):
        records = sweep_run_many(list(configs))
    else:
        records = [sweep_run(c) for c in configs]
    if not isinstance(records, list) or len(records) != len(configs):
        raise ValueError(f"a task of {len(configs)} configs returned {type(records).__name__} "
                         f"of length {len(records) if hasattr(records, '__len__') else '?'}, not a list of records")
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise ValueError(f"record {i} of a task is a {type(r).__name__}, not a dict")
    return records
