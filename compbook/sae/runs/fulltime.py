"""Part C's full-mode time per chapter (chapters 14-16 and Part C's notes), as :class:`compbook.runs.estimate.Work`
items read from :class:`compbook.sae.sizes.PartCRun`'s ``FULL``; :func:`say` is the line each chapter's first cell
prints, naming full mode's scale as what it is (:data:`SCALE`: a larger miniature, not the paper's model).

What is counted (our reading of the chapters' code; the constants are our choices): an SAE step is 6 x its
parameters (encoder and decoder, ``2 x d_model x d_sae``) x the tokens of ``batch_images`` scenes (patches and
caption tokens of the tiny VLM); chapter 15 trains every SAE of ``python -m compbook.sae full`` (the study, the
reference optimiser, the region counts, the object-VLM variants); chapter 16 and the notes read its stores (book
order), and embed the scenes once. The tiny VLMs are the stored ones, the same in both modes.
"""

from __future__ import annotations

from ... import checks
from ...runs.estimate import Work, say as say_works, sized, training
from ..sizes import PartCRun

#: the tiny VLM's width and tokens per scene (:class:`compbook.sae.vlm.TinyVLMConfig`: 64 wide, 64 patches, up to
#: 32 caption tokens; typed here so that an estimate builds no model)
D_MODEL, TOKENS = 64, 64 + 32
#: kernels of one SAE step (top-k, encode, decode, loss, backward, optimizer; our choice)
KERNELS = 40
#: full mode's scale in a reader's words: a larger miniature of the tiny VLM's setting, not the paper's model
SCALE = "with more scenes, a larger dictionary and more steps (still the tiny VLM, not the paper's Qwen2.5-VL-7B)"
#: object-VLM variants chapter 15 trains SAEs on (:data:`compbook.sae.studies.objsae.VARIANTS`: a test counts them)
OBJECT_VARIANTS = 3


def sae_runs(sizes: PartCRun, n: int, steps: int, what: str) -> Work:
    """``n`` SAEs of ``sizes.d_sae`` latents trained one after another for ``steps`` steps."""
    w = training(2 * D_MODEL * sizes.d_sae, sizes.batch_images * TOKENS, steps, KERNELS, what)
    return Work(w.flops * n, w.steps * n, w.kernels, what)


def embedding(sizes: PartCRun) -> Work:
    """The tiny VLM's forward over the train and test scenes (4 layers, 12 x width^2 weights each)."""
    return Work(2 * 4 * 12 * D_MODEL ** 2 * TOKENS * (sizes.n_train + sizes.n_test), 100, 40, "embedding")


def ch14(subset: bool = False) -> list:
    """Chapter 14: the scenes embedded, one SAE at the first setting."""
    s = sized(PartCRun, subset)
    return [embedding(s), sae_runs(s, 1, s.setting_steps, "first SAE")]


def ch15(subset: bool = False) -> list:
    """Chapter 15: the study (``ks x lams x seeds``), the reference optimiser (vanilla and S2AE per seed), the
    region counts and the object-VLM variants (vanilla, S2AE and each count per seed)."""
    s = sized(PartCRun, subset)
    per = 2 + len(s.counts)
    return [embedding(s),
            sae_runs(s, len(s.ks) * len(s.lams) * s.seeds, s.steps, "study"),
            sae_runs(s, 2 * s.seeds, s.steps, "reference optimiser"),
            sae_runs(s, len(s.counts) * s.seeds, s.steps, "regions"),
            sae_runs(s, OBJECT_VARIANTS * len(s.layouts) * per * s.seeds, s.steps, "object VLMs")]


def reading(subset: bool = False) -> list:
    """Chapter 16 and Part C's notes: chapter 15's SAEs read from their store, the scenes embedded."""
    return [embedding(sized(PartCRun, subset))]


def notes_reading(subset: bool = False) -> list:
    """Part C's reading notes: the first setting's SAEs (``setting_seeds``), the rest read from chapter 15's store."""
    s = sized(PartCRun, subset)
    return [embedding(s), sae_runs(s, s.setting_seeds, s.setting_steps, "first setting")]


CHAPTERS = {"ch14": ch14, "ch15": ch15, "ch16": reading, "notes_part_c_reading": notes_reading,
            "notes_part_c_study": reading}


def works(chapter: str, subset: bool = False) -> list:
    """``chapter``'s full-mode work (a key of :data:`CHAPTERS`), with ``PartCRun.SUBSET`` where ``subset``."""
    return CHAPTERS[checks.choice(chapter, "chapter", tuple(CHAPTERS))](subset)


def say(chapter: str) -> str:
    """The note ``chapter``'s first cell prints: its CPU run time, its full-mode time and how to run it."""
    return say_works(works(chapter), works(chapter, subset=True), page=chapter, scale=SCALE)
