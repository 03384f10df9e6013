"""The figures Part A quotes from its papers, each written once (chapters 1-9 and their notes).

Paper A (Do, Shah, Le, Liu 2026, arXiv 2606.19941) publishes no tables here
(``../shared/spec/paper-a-narrow-regime.md``): its figures are what its text states. FER (Kumar, Clune, Lehman,
Stanley 2025) is the paper's source of the Picbreeder networks and of the SGD side; its figures come from its public
code, networks and ``../shared/picbreeder/README.md``. Code, claims and chapters read each figure from :data:`FIGURES`
(``paper.figure("fer_lr")["apple"]``), never type it again.
"""

from __future__ import annotations

from ..papers import Figure, lookup

FIGURES = {
    "judge_model": Figure("Qwen/Qwen3-VL-4B-Thinking", "paper A",
                          "EMC2-Bench's judge, a vision-language model (its Hugging Face id)"),
    "baseline_score": Figure(0.0, "paper A", "EMC2 score of the pruning baselines (Lottery Ticket, Wanda, "
                                             "LLM-Pruner); only SP scores above it"),
    "fer_steps": Figure(100_000, "FER", "SGD steps of FER's networks"),
    "fer_res": Figure(256, "FER", "training resolution of FER's networks, px"),
    "fer_lr": Figure({"skull": 3e-3, "butterfly": 3e-3, "apple": 3e-4}, "FER",
                     "Adam's learning rate on the unit-normalised gradient, per target"),
    "fer_psnr_256": Figure({"skull": 31.0, "butterfly": 31.5, "apple": 40.7}, "FER",
                           "PSNR of FER's SGD networks against the Picbreeder reference renders at 256 px, dB"),
    "layerized_depths": Figure({"skull": 12, "butterfly": 16, "apple": 33}, "FER",
                               "hidden layers of the layerized Picbreeder networks, per target"),
}


def figure(name: str):
    """The value of :data:`FIGURES` ``[name]``; ``ValueError`` naming the known figures otherwise."""
    return lookup(FIGURES, name)
