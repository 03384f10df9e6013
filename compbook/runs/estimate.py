"""How long full mode takes on one GPU: a chapter's work counted in FLOPs and sequential steps, turned into time.

Each part's ``fulltime`` module (:mod:`compbook.cppn.runs.fulltime`, :mod:`compbook.binding.runs.fulltime`,
:mod:`compbook.sae.runs.fulltime`) turns its chapters' ``FULL`` configs into :class:`Work` items; this module turns them
into seconds on a :class:`GPU` (:func:`seconds`), into the note every chapter's first cell prints (:func:`say`) and
into the README's table (:func:`table`).

The method (the same for every chapter): time = FLOPs / (peak fp32 throughput x :data:`ACHIEVED`) + sequential
steps x kernels per step x the GPU's launch overhead. Training counts 6 FLOPs per parameter touched per sample
(forward 2, backward 4); a render or an inference 2. The two constants below are our choices, not measurements:
tiny networks reach a small share of a GPU's peak, and a step of a small model is bound by kernel launches.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .. import checks, config

#: the share of peak fp32 throughput a full-mode run reaches (our choice: small matrices, mixed kernels)
ACHIEVED = 0.3
#: seconds one kernel costs beyond its FLOPs: launch and PyTorch's dispatch (our choice)
LAUNCH_S = 10e-6
#: above this many hours on a T4 the printed note names Colab's session limit
COLAB_WARN_H = 3.0
#: Colab's free session, as the printed note says it (it varies: at most about 12 h, often less)
COLAB_LIMIT = "often a few hours, at most 12 h"
#: the setting that shrinks full mode to a chapter's named subset (:func:`compbook.config.full_subset`)
SUBSET_HINT = f"{config.SUBSET_VARIABLE}=1"
#: how the note's one line with the settings begins (the only line that names them)
REPRODUCE = "To run it at that scale, set the environment variable"


@dataclass(frozen=True)
class GPU:
    """One GPU: ``name``, peak fp32 throughput ``peak_flops`` (FLOP/s, the vendor's sheet, no tensor cores) and
    the per-kernel overhead ``launch_s`` (seconds)."""
    name: str
    peak_flops: float
    launch_s: float = LAUNCH_S


A100 = GPU("A100", 19.5e12)     # NVIDIA A100: 19.5 TFLOP/s fp32
T4 = GPU("T4", 8.1e12)          # NVIDIA T4 (Colab's GPU): 8.1 TFLOP/s fp32


@dataclass(frozen=True)
class Work:
    """One piece of a chapter's full-mode work: ``flops`` in all, ``steps`` run one after another (training
    steps, render batches, generated tokens), each launching ``kernels`` kernels; ``what`` names it."""
    flops: float
    steps: float = 0
    kernels: int = 1
    what: str = ""

    def __post_init__(self):
        for name in ("flops", "steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"Work.{name} must be a finite number >= 0, got {value!r}")
        checks.integer(self.kernels, "Work.kernels", 1)


def training(params: float, samples: float, steps: float, kernels: int, what: str = "") -> Work:
    """Training: 6 FLOPs per parameter per sample (``samples`` per step: pixels of a CPPN, tokens of a
    transformer) for ``steps`` steps of ``kernels`` kernels."""
    return Work(6.0 * params * samples * steps, steps, kernels, what)


def seconds(works, gpu: GPU, achieved: float = ACHIEVED) -> float:
    """Estimated seconds of ``works`` (a list of :class:`Work`) on ``gpu`` at ``achieved`` of its peak."""
    checks.instance(gpu, "gpu", GPU)
    checks.real(achieved, "achieved", 0, 1, low_open=True)
    total = 0.0
    for w in checks.sequence(works, "works"):
        checks.instance(w, "works", Work)
        total += w.flops / (gpu.peak_flops * achieved) + w.steps * w.kernels * gpu.launch_s
    return total


def duration(s: float) -> str:
    """``s`` seconds in words: ``under a minute``, ``12 min``, ``2.5 h``, ``30 h``."""
    checks.real(s, "s", 0)
    if s < 60:
        return "under a minute"
    if s < 90 * 60:
        return f"{round(s / 60)} min"
    h = s / 3600
    return f"{h:.1f} h" if h < 10 else f"{round(h)} h"


#: how :func:`say` names full mode's scale where a part does not say (its papers' settings)
PAPERS_SCALE = "at the paper's scale"


def parts(works, subset=None, page: str | None = None, scale: str = PAPERS_SCALE) -> dict:
    """:func:`say`'s note as data, for a page that words it itself (chapter 5). Keys: ``cpu`` (the CPU that
    recorded ``page``'s run, ``"a 2-core CPU"``; None where ``page`` is None), ``cpu_time`` (``"9 s"``; None
    likewise), ``scale`` (as given), ``full_time`` (``"about 5.9 h on one A100 GPU (12 h on a T4)"`` or ``"under
    a minute on one GPU"``) and ``command`` (the sentence that begins with :data:`REPRODUCE`, ending in a full
    stop). Arguments as :func:`say`'s."""
    return _parts(works, subset, page, scale, kept=lambda words: words)


def _parts(works, subset, page, scale, kept) -> dict:
    """:func:`parts`, with each time passed through ``kept`` (:func:`_kept` keeps it on one line in :func:`say`)."""
    checks.non_empty_str(scale, "scale")
    a, t = seconds(works, A100), seconds(works, T4)
    full = (f"about {kept(duration(a))} on one A100 GPU ({kept(duration(t))} on a T4)"
            if a >= 60 else "under a minute on one GPU")
    cpu = cpu_time = None
    if page is not None:
        from ..results import runtimes
        cpu, s = runtimes.page_seconds(page)
        cpu_time = kept(_cpu_time(s))
    steps = [f"{config.MODE_VARIABLE}=full and run on a GPU"]
    if t > COLAB_WARN_H * 3600:
        steps.append(f"a free Colab session ({COLAB_LIMIT}) may end before it does")
    if subset is not None and seconds(subset, T4) < t:
        steps.append(f"adding {SUBSET_HINT} runs a subset in about {kept(duration(seconds(subset, T4)))} on a T4")
    return {"cpu": cpu, "cpu_time": cpu_time, "scale": scale, "full_time": full,
            "command": f"{REPRODUCE} " + "; ".join(steps) + "."}


def say(works, subset=None, page: str | None = None, scale: str = PAPERS_SCALE) -> str:
    """The note a chapter prints under its first cell, in a reader's words (lines within 80 columns): how long the
    page runs on the CPU that recorded it (``page``: the chapter's key, ``"ch07"``, or its file's stem, read from
    the run-time record, :func:`compbook.results.runtimes.seconds`; no CPU clause where ``page`` is None), and how
    long it takes at full mode's scale (``scale``: the words that name it, :data:`PAPERS_SCALE` by default) on one
    A100 and on a T4; then one line with the settings (it begins with :data:`REPRODUCE`): full mode, Colab's
    session limit where the T4's time exceeds :data:`COLAB_WARN_H`, and ``subset``'s T4 time (the works of
    ``COMPBOOK_FULL_SUBSET=1``) where it is shorter. :func:`parts` gives the same pieces as data."""
    p = _parts(works, subset, page, scale, kept=_kept)
    takes = f"{p['scale']} it takes {p['full_time']}."
    if page is None:
        first = takes[0].upper() + takes[1:]
    else:
        first = f"On {p['cpu']} this page runs in about {p['cpu_time']}; {takes}"
    import textwrap
    lines = textwrap.wrap(first, 80) + textwrap.wrap(p["command"], 80)
    return "\n".join(lines).replace(_NBSP, " ")


_NBSP = "\u00a0"


def _kept(words: str) -> str:
    """``words`` (a time, ``30 min``) kept on one line when wrapped."""
    return words.replace(" ", _NBSP)


def _cpu_time(s: int) -> str:
    """A recorded CPU time in words: ``27 s``, ``3 min``."""
    return f"{s} s" if s < 90 else f"{round(s / 60)} min"


def sized(cls, subset: bool = False):
    """``cls`` (a :class:`compbook.config.ModeConfig`) at full mode's sizes, with its ``SUBSET`` where ``subset``,
    whatever the environment says (an estimate of full mode is the same in CPU mode)."""
    if not (isinstance(cls, type) and issubclass(cls, config.ModeConfig)):
        raise ValueError(f"cls must be a ModeConfig class, got {cls!r:.80}")
    return dataclasses.replace(cls(), **(cls.FULL | (cls.SUBSET if subset else {})))


#: README's table sits between these two lines (:func:`table` writes what is between them)
TABLE_BEGIN, TABLE_END = "<!-- full-mode times: begin -->", "<!-- full-mode times: end -->"


def table(rows: dict) -> str:
    """README's table of full-mode times: ``rows`` maps a chapter's name to ``(works, subset works or None)``;
    one Markdown row per chapter (A100, T4, and the subset's T4 time where it is shorter)."""
    checks.instance(rows, "rows", dict)
    out = ["| chapter | one A100 | one T4 | subset (T4) |", "|---|---|---|---|"]
    for name, (works, subset) in rows.items():
        t = seconds(works, T4)
        sub = duration(seconds(subset, T4)) if subset is not None and seconds(subset, T4) < t else "none"
        out.append(f"| {name} | {duration(seconds(works, A100))} | {duration(t)} | {sub} |")
    return "\n".join(out)


def table_in(text: str, begin: str = TABLE_BEGIN, end: str = TABLE_END) -> str:
    """The table between ``begin`` and ``end`` (default: the full-mode times') in ``text`` (README's), stripped."""
    checks.instance(text, "text", str)
    if begin not in text or end not in text:
        raise ValueError(f"text has no {begin!r} ... {end!r} block")
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


#: README's table of the papers' sweeps in GPU-hours sits between these two lines (:func:`sweep_table`)
SWEEPS_BEGIN, SWEEPS_END = "<!-- sweep GPU-hours: begin -->", "<!-- sweep GPU-hours: end -->"


def gpu_hours(works, gpu: GPU) -> str:
    """``works``' estimated GPU-hours on ``gpu``, in words (``0.2``, ``35``, ``960``)."""
    h = seconds(works, gpu) / 3600
    return f"{h:.1f}" if h < 10 else f"{round(h):,}"


def sweep_table(rows: dict) -> str:
    """README's table of sweeps: ``rows`` maps a sweep's description to its works; GPU-hours on an A100 and a T4
    (on a cluster of ``n`` GPUs the wall time is about the GPU-hours over ``n``: the runner packs the tasks)."""
    checks.instance(rows, "rows", dict)
    out = ["| sweep | A100 GPU-hours | T4 GPU-hours |", "|---|---|---|"]
    out += [f"| {name} | {gpu_hours(works, A100)} | {gpu_hours(works, T4)} |" for name, works in rows.items()]
    return "\n".join(out)
