"""The S2AE paper's figures (Liao et al. 2026; Qwen2.5-VL-7B, LLaVA-NeXT data): the paper's, not ours, typed once.

Part C reads every figure from here: the claims table (:data:`CLAIMS`, :mod:`compbook.sae.studies.claims`), the study's
readings (:mod:`compbook.sae.studies.study`), chapters 15 and 16 (the tables :data:`IMAGE` and :data:`CROSSMODAL`).
How a relative figure is read here (of vanilla's value here; the L0 drop as the same share of this k) is our
choice, said in :mod:`compbook.sae.studies.claims`.
"""

from __future__ import annotations

#: EV stays above this (abstract).
EV_MIN = 0.99
#: L0 lower by this many of k (average over layers), at the paper's k.
L0_DROP, L0_K = 60.81, 256
#: The L0 drop as a share of k (how the book reads it at another k).
L0_SHARE = L0_DROP / L0_K
#: mIoU gain (average over layers, relative) and layer 15's vanilla -> S2AE values.
MIOU_GAIN, MIOU_LAYER15 = 0.0606, (0.516, 0.594)
#: Cross-modal coherence gain at layer 5 (relative).
COHERENCE_GAIN = 0.043
#: Cross-modal semantic consistency gain (average over layers, relative).
CONSISTENCY_GAIN = 0.0308
#: Monosemanticity gain, both modalities (average, relative), and layer 5's language values.
MONO_GAIN, LANGUAGE_MONO_LAYER5 = 0.0237, (0.872, 0.896)
#: Identification rate, hierarchical and direct interpretation.
IDENTIFIED = {"hierarchical": 0.988, "direct": 0.664}
#: Regions per image: ``min(REGIONS, P)`` for P patches.
REGIONS = 20


def _arrow(pair) -> str:
    return f"{pair[0]} -> {pair[1]}"


_L0 = f"-{L0_DROP} of k = {L0_K}"
_IDENTIFIED = f"{IDENTIFIED['hierarchical']:.1%} vs {IDENTIFIED['direct']:.1%}"

#: claim -> (the paper's figure, its sign, its size: ("relative", r) of vanilla's value, ("share of k", s) or
#: ("absolute", a)); the claims the chapters re-read, in the order of the claims table.
CLAIMS = {
    "EV above 99%": (f"EV > {EV_MIN}", +1, ("absolute", EV_MIN)),
    "L0 lower": (_L0, -1, ("share of k", L0_SHARE)),
    "mIoU higher": (f"{MIOU_GAIN:+.2%} (layer 15: {_arrow(MIOU_LAYER15)})", +1, ("relative", MIOU_GAIN)),
    "cross-modal coherence higher": (f"{COHERENCE_GAIN:+.1%} (layer 5)", +1, ("relative", COHERENCE_GAIN)),
    "cross-modal consistency higher": (f"{CONSISTENCY_GAIN:+.2%}", +1, ("relative", CONSISTENCY_GAIN)),
    "image monosemanticity higher": (f"{MONO_GAIN:+.2%}", +1, ("relative", MONO_GAIN)),
    "language monosemanticity higher": (f"{MONO_GAIN:+.2%} (layer 5: {_arrow(LANGUAGE_MONO_LAYER5)})", +1,
                                        ("relative", MONO_GAIN)),
    "hierarchical identifies more than direct": (_IDENTIFIED, +1, ("absolute", IDENTIFIED["hierarchical"]
                                                                   - IDENTIFIED["direct"])),
}

#: The image-side figures chapter 15 shows.
IMAGE = {
    "mIoU, layer 15 (vanilla -> S2AE)": _arrow(MIOU_LAYER15),
    "mIoU gain, average over layers": f"{MIOU_GAIN:+.2%}",
    "L0 change, average": f"-{L0_DROP} (about {round(L0_K - L0_DROP)} of k = {L0_K} active)",
    "EV": f"above {EV_MIN:.0%}",
    "language monosemanticity, layer 5": _arrow(LANGUAGE_MONO_LAYER5),
}

#: The cross-modal figures chapter 16 shows.
CROSSMODAL = {
    "cross-modal coherence, layer 5 (S2AE - vanilla)": f"{COHERENCE_GAIN:+.1%}",
    "language monosemanticity, layer 5 (vanilla -> S2AE)": _arrow(LANGUAGE_MONO_LAYER5),
    "cross-modal consistency, average over layers": f"{CONSISTENCY_GAIN:+.2%}",
    "monosemanticity, both modalities, average": f"{MONO_GAIN:+.2%}",
    "identification rate, hierarchical vs direct": _IDENTIFIED,
}
