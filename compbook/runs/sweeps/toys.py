"""A toy sweep for the runner's tests and benchmarks: many tiny least-squares models fitted by gradient descent.

Config: ``seed``, ``d`` (features), ``n`` (samples), ``steps``, ``lr``; optional ``sleep`` (seconds per task
config, a stand-in for a longer training), ``log`` (a file each execution appends its seed to: tests count
runs; each line the seed and ``$COMPBOOK_TOY_TAG``), ``gate`` (a folder: while it exists, each execution, once
logged, waits to take a token file from it; tests decide how many executions go on and when, with no clock),
``fail`` (``"always"``: raises, a config that cannot succeed), ``crash_once`` (a marker file: the first
execution kills its own worker process, the retry succeeds). :func:`fit_lines` fits a stack of same-shape models
with one batched matmul per step (the stacked path), :func:`fit_line` one model (the same numbers).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch

from .spec import Sweep

#: the longest an execution waits at its gate before it fails (a test that never opens it fails, not hangs)
GATE_SECONDS = 300.0

#: an execution's tag in the log (tests tell a rerun's executions from the first run's); workers get it from the
#: driver (the runner forwards ``COMPBOOK_*`` variables)
TAG_VARIABLE = "COMPBOOK_TOY_TAG"


def _data(config: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(X (n, d), y (n,), w_true (d,))`` of ``config``'s seed, float64."""
    g = torch.Generator().manual_seed(int(config["seed"]))
    x = torch.randn(config["n"], config["d"], generator=g, dtype=torch.float64)
    w = torch.randn(config["d"], generator=g, dtype=torch.float64)
    y = x @ w + 0.1 * torch.randn(config["n"], generator=g, dtype=torch.float64)
    return x, y, w


def _side_effects(config: dict) -> None:
    if config.get("log"):                       # one line per execution: the seed, and the run's tag
        with open(config["log"], "a") as f:
            f.write(f"{config['seed']} {os.environ.get(TAG_VARIABLE, '-')}\n")
    if config.get("gate"):
        _pass_gate(Path(config["gate"]))
    if config.get("sleep"):
        time.sleep(config["sleep"])
    if config.get("fail") == "always":
        raise ValueError(f"toy config with seed {config['seed']} fails by design")
    marker = config.get("crash_once")
    if marker and not Path(marker).exists():
        Path(marker).touch()
        os._exit(3)                     # the worker dies mid-task, as a killed node's would


def _pass_gate(gate: Path) -> None:
    """Go on once a token file of ``gate`` is taken (unlinked: one execution per token), or the folder is gone."""
    deadline = time.monotonic() + GATE_SECONDS
    while time.monotonic() < deadline:
        try:
            tokens = sorted(gate.iterdir())
        except FileNotFoundError:
            return                      # the gate was removed: every execution goes on
        for token in tokens:
            try:
                token.unlink()
                return
            except FileNotFoundError:
                continue                # another execution took it first
        time.sleep(0.02)
    raise TimeoutError(f"toy execution waited {GATE_SECONDS:g} s at the closed gate {gate}")


def fit_lines(configs: list) -> list:
    """Fit every config's model at once (stacked: ``W (M, d)``); one record per config."""
    for c in configs:
        _side_effects(c)
    data = [_data(c) for c in configs]
    x = torch.stack([d[0] for d in data])           # (M, n, d)
    y = torch.stack([d[1] for d in data])           # (M, n)
    w = torch.zeros(x.shape[0], x.shape[2], dtype=torch.float64)
    steps, lr = configs[0]["steps"], configs[0]["lr"]
    for _ in range(steps):
        r = torch.bmm(x, w.unsqueeze(-1)).squeeze(-1) - y
        w = w - lr * torch.bmm(x.transpose(1, 2), r.unsqueeze(-1)).squeeze(-1) / x.shape[1]
    loss = ((torch.bmm(x, w.unsqueeze(-1)).squeeze(-1) - y) ** 2).mean(1)
    return [{"w": w[i].clone(), "loss": float(loss[i]), "error": float((w[i] - data[i][2]).norm())}
            for i in range(len(configs))]


def fit_line(config: dict) -> dict:
    """One config's model (the stack of one)."""
    return fit_lines([config])[0]


def shape(config: dict) -> list:
    """Configs of one shape (and schedule) may share a stacked task."""
    return [config["d"], config["n"], config["steps"], config["lr"]]


def bytes_of(config: dict) -> int:
    """Memory of one toy model while it fits: its data and weights, float64."""
    return 8 * (config["n"] * (config["d"] + 2) + 2 * config["d"])


def toy_sweep(n_models: int = 16, d: int = 8, n: int = 64, steps: int = 200, lr: float = 0.1, stacked: bool = True,
              name: str = "toys/lines", **extra) -> Sweep:
    """``n_models`` toy configs (seeds 0...), stacked with :func:`fit_lines` unless ``stacked`` is False;
    ``extra`` goes into every config (``sleep``, ``log`` ...)."""
    configs = [{"seed": s, "d": d, "n": n, "steps": steps, "lr": lr} | extra for s in range(n_models)]
    return Sweep(name, configs, run=fit_line, run_many=fit_lines if stacked else None, group=shape,
                 model_bytes=bytes_of)
