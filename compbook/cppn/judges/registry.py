"""Part A's judges by name: one registry, used wherever Part A builds a judge (chapters 5-9 and their notes).

SAELens' architecture registry is the model: :data:`JUDGES` maps a name to a constructor and
:func:`make_judge` builds one by name. The panel of chapters 6-9 (:func:`compbook.cppn.panel.default_panel`), the
counting run, the re-read, ``python -m compbook.cppn judges fill --judge NAME`` and the chapters all build their
judges here, so a name means one judge everywhere. Each judge keeps its class's ``identity``, the key of its stored
verdicts in ``data/judge_cache/``.

* ``"default"``: the book's default CPU judge for "is this still a <concept>?", the candidate chosen on the first model
  labeller's held-out blind verdicts (``data/semantic/choice.json``, :func:`~compbook.cppn.judges.semantic.default_judge`);
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
"""

from __future__ import annotations

import inspect
from typing import Callable, Sequence

from ... import checks
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


def make_judge(name: str, **options):
    """The judge :data:`JUDGES` names, built with ``options`` (e.g. ``make_judge("ssim", threshold=0.6)``,
    ``make_judge("image-reference", target=img)``); ``ValueError`` for an unknown name or option."""
    checks.choice(name, "name (a judge)", tuple(JUDGES))
    _bind(name, JUDGES[name], options)
    return JUDGES[name](**options)


def make_judges(names: Sequence[str]) -> dict:
    """``{name: make_judge(name)}`` for each of ``names`` (a list or tuple of :data:`JUDGES` keys)."""
    return {n: make_judge(n) for n in checks.sequence(names, "names")}
