"""Asking a judge about EMC2-Bench's renders (chapter 5): one batch at a time, or every batch streamed to a judge
that can take them so (a server judge: no barrier between batches), and the device the renders are made on.

:func:`compbook.cppn.emc2.compositional_score` is the caller; it renders on :func:`on_scoring_device` and judges on
the CPU.
"""

from __future__ import annotations

import copy

import torch

from .. import config
from ..runs.serving import ServerError
from .network import CPPN


def on_scoring_device(model: CPPN) -> CPPN:
    """``model`` on :func:`compbook.config.device` (a GPU in full mode, where the perturbations are rendered in
    batches): the model itself when it is there already, else a copy (the caller's model stays where it is)."""
    device = config.device()
    if model.mask0.device == device:
        return model
    return copy.deepcopy(model).to(device)


def ask_judge(judge, images, concept, reference, questions, which: str) -> torch.Tensor:
    """The judge's verdicts (B,) bool on one batch of renders (``which`` names them). What the judge returns other
    than a bool tensor (B,) (strings such as "yes", numbers), or an error it raises, becomes a ``ValueError``
    naming the judge and the renders (the judge's own error chained); the judges' own refusals keep their type
    (a ``ValueError``, a cache's :class:`~compbook.cppn.judges.cache.CacheMiss`, a
    :class:`~compbook.runs.serving.ServerError`: callers fall back or resume on them), with a note naming both."""
    name = f"judge {type(judge).__name__} ({getattr(judge, 'identity', 'no identity')})"
    try:
        out = judge(images, concept, reference=reference.clone(), questions=copy.deepcopy(questions))
    except (ValueError, LookupError, ServerError) as e:
        e.add_note(f"(raised by {name} on {which})")
        raise
    except Exception as e:
        raise ValueError(f"{name} raised {type(e).__name__} on {which}: {e}") from e
    try:
        v = torch.as_tensor(out)
    except (TypeError, ValueError, RuntimeError):
        v = None
    if v is None or v.dtype != torch.bool or tuple(v.shape) != (len(images),):
        got = f"{v.dtype} {tuple(v.shape)}" if v is not None else f"{type(out).__name__} {out!r:.60}"
        raise ValueError(f"{name} returned {got} on {which}, expected a bool tensor ({len(images)},): True where "
                         f"the render is still {concept!r}")
    return v.cpu()


def streamed_verdicts(judge, renders, concept: str, reference, questions: list[dict]) -> torch.Tensor:
    """Verdicts ``(M,)`` from ``judge.stream_batches(renders, ...)``, placed by index as the answers arrive in any
    order; ``ValueError`` for an index out of range or given twice, a verdict not a bool, or an image unanswered."""
    verdicts, given = torch.zeros(len(questions), dtype=torch.bool), torch.zeros(len(questions), dtype=torch.bool)
    for i, v, *_ in judge.stream_batches(renders, concept, reference=reference, questions=questions):
        if not (isinstance(i, int) and 0 <= i < len(questions)) or given[i] or not isinstance(v, bool):
            raise ValueError(f"judge: streamed ({i!r}, {v!r}), expected each index in [0, {len(questions)}) once "
                             f"with a bool verdict")
        verdicts[i], given[i] = v, True
    if not given.all():
        raise ValueError(f"judge: streamed no verdict for image {int((~given).nonzero()[0, 0])}")
    return verdicts
