"""Part A's judges by name: one registry, used wherever Part A builds a judge (chapters 5-9 and their notes).

SAELens' architecture registry is the model: :data:`JUDGES` maps a name to a constructor and
:func:`make_judge` builds one by name. The panel of chapters 6-9 (:func:`compbook.cppn.panel.default_panel`), the
counting run, the re-read, ``python -m compbook.cppn judges fill --judge NAME`` and the chapters all build their
judges here, so a name means one judge everywhere. Each judge keeps its class's ``identity``, the key of its stored
verdicts in ``data/judge_cache/``.

* ``"default"``: the book's default CPU judge for "is this still a <concept>?", the candidate chosen on the first model
  labeller's held-out blind verdicts (``data/semantic/choice.json``,
  :func:`~compbook.cppn.judges.semantic.default_judge`);
* ``"reference"``, ``"classifier"``: the two semantic candidates, at ``threshold`` (default: the one
  ``choice.json`` holds for that kind);
* ``"image-reference"``: the reference judge's comparison against an image ``target`` (chapter 9's unknown
  targets), at the default judge's threshold unless ``threshold`` is given;
* ``"ssim"``: SSIM to the network's own unperturbed render, at :data:`~compbook.cppn.judges.base.SSIM_THRESHOLD`
  unless ``threshold`` is given ("is this the same picture?");
* ``"vlm"``: the paper's kind of judge, a transformers vision-language model (:class:`~.vlm.VLMJudge`; loads its
  weights, so a GPU); keyword arguments go to :class:`~.vlm.VLMJudge`;
* ``"server"``: the same question to any OpenAI-compatible server (:class:`~.server.ServerJudge`: vLLM, SGLang,
  ``transformers serve``); needs ``base_url`` and ``model``.

:data:`JUDGE_LABELS` holds the one name every page gives the ``"default"`` and ``"ssim"`` judges.
"""

from __future__ import annotations

import inspect
import os
from typing import Callable, Sequence

from ... import checks, config
from . import base, semantic


def _stored_threshold(kind: str) -> float:
    return semantic.read_choice()["thresholds"][kind]


def _reference(threshold: float | None = None, scales=(64, 32, 16), shift: int = 2):
    t = _stored_threshold("reference") if threshold is None else threshold
    return semantic.ReferenceJudge(t, scales, shift)


def _classifier(threshold: float | None = None, path=None):
    return semantic.ClassifierJudge(_stored_threshold("classifier") if threshold is None else threshold, path)


def _vlm(**options):
    from .vlm import VLMJudge             # transformers loads only when the model does
    _bind("vlm", VLMJudge, options)
    return VLMJudge(**options)


def _server(**options):
    from .server import ServerJudge
    _bind("server", ServerJudge, options)
    return ServerJudge(**options)


def _bind(name: str, constructor, options: dict) -> None:
    try:
        inspect.signature(constructor).bind(**options)
    except TypeError as e:
        raise ValueError(f"make_judge({name!r}, ...): {e}") from None


#: name -> constructor (keyword arguments only)
JUDGES: dict[str, Callable] = {
    "default": semantic.default_judge,
    "reference": _reference,
    "classifier": _classifier,
    "image-reference": semantic.ImageReferenceJudge,
    "ssim": base.SSIMJudge,
    "vlm": _vlm,
    "server": _server,
}


#: How pages name the two CPU judges they set side by side (chapters 5-9 and their notes): judge name -> label.
#: Both compare by SSIM, so a label says with what. Prose uses the label's first words ("default judge",
#: "same-picture judge"), tables and legends the whole label.
JUDGE_LABELS = {"default": "default judge (vs. reference picture)",
                "ssim": "same-picture judge (vs. own unperturbed render)"}


def make_judge(name: str, **options):
    """The judge :data:`JUDGES` names, built with ``options`` (e.g. ``make_judge("ssim", threshold=0.6)``,
    ``make_judge("image-reference", target=img)``); ``ValueError`` for an unknown name or option."""
    checks.choice(name, "name (a judge)", tuple(JUDGES))
    _bind(name, JUDGES[name], options)
    return JUDGES[name](**options)


def make_judges(names: Sequence[str]) -> dict:
    """``{name: make_judge(name)}`` for each of ``names`` (a list or tuple of :data:`JUDGES` keys)."""
    return {n: make_judge(n) for n in checks.sequence(names, "names")}


#: ``URL`` or ``URL|model`` of an OpenAI-compatible server that serves the paper's VLM (full mode, chapter 5)
JUDGE_SERVER_VARIABLE = "COMPBOOK_JUDGE_SERVER"


def chapter_judge(fallback, revision: str | None = None):
    """Chapter 5's judge of every perturbed render, and one line saying where its verdicts come from.

    Full mode on a GPU asks the paper's judge, a VLM, each verdict stored as it arrives (a
    :class:`~.cache.CachedJudge` in ``"fill"`` mode, so a rerun asks only what is missing): behind the server
    ``$COMPBOOK_JUDGE_SERVER`` names (``URL`` or ``URL|model``; vLLM or SGLang batch the requests: the way the
    paper's tens of thousands of questions fit a session), else in process (:class:`~.vlm.VLMJudge`, one
    ``generate`` call per image: hours). Elsewhere: the VLM's stored verdicts where this project has them, else
    ``fallback`` (the CPU judge). Returns ``(judge, line)``."""
    from .cache import CachedJudge, cache_path, stored_judge
    from .vlm import DEFAULT_MODEL, vlm_identity
    server = os.environ.get(JUDGE_SERVER_VARIABLE, "").strip()
    if config.is_full() and server:
        url, _, model = server.partition("|")
        judge = make_judge("server", base_url=url, model=model or DEFAULT_MODEL, revision=revision)
        return (CachedJudge(cache_path(judge.identity), judge, mode="fill"),
                f"full mode: the VLM behind {url}, verdicts stored as they arrive")
    if config.is_full() and config.device().type == "cuda":
        judge = make_judge("vlm", revision=revision) if revision else make_judge("vlm")
        return (CachedJudge(cache_path(judge.identity), judge, mode="fill"),
                f"full mode: the VLM in process, one generate call per image (hours); set "
                f"{JUDGE_SERVER_VARIABLE}=http://HOST:8000/v1 to ask a batching server (README)")
    stored = stored_judge(vlm_identity())
    if stored is not None:
        return stored, "the VLM's stored verdicts"
    return fallback, "the CPU judge (no GPU, no stored VLM verdicts)"
