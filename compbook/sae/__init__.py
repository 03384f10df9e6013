"""Part C: sparse autoencoders on a vision-language model's residual stream, vanilla vs S2AE (chapters 14-16).

* :mod:`compbook.sae.sizes`: Part C's sizes, one table (:class:`~compbook.sae.sizes.PartCRun`, CPU and full mode).
* :mod:`compbook.sae.paper`: the S2AE paper's figures, typed once.
* :mod:`compbook.sae.topk`: :class:`TopKSAE` (SAELens names), :func:`fvu`, L0, dead latents, checkpoints.
* :mod:`compbook.sae.regions`: patch regions from attention, batched average-linkage clustering.
* :mod:`compbook.sae.s2ae`: straight-through binarisation, :func:`group_sparsity`, :func:`exclusive_sparsity`,
  the trainer :func:`~compbook.sae.s2ae.train_sae`.
* :mod:`compbook.sae.vlm`: the tiny VLM trained on :mod:`compbook.scenes`, and :func:`~compbook.sae.vlm.extract` (tiny
  VLM or a transformers Qwen2.5-VL).
* :mod:`compbook.sae.metrics`: mIoU against exact masks, EV, L0, dead latents.
* :mod:`compbook.sae.experiment`: vanilla vs S2AE over seeds (stored SAEs in ``data/sae/runs/``), intervals.
* :mod:`compbook.sae.studies.study`: the k / lambda study, the choice of k, the re-reading rule (chapter 15).
* :mod:`compbook.sae.studies.refopt`: the reference trainer's optimisation as an option (chapter 15).
* :mod:`compbook.sae.studies.objregions`: tiny-VLM variants (prefix tokens, bidirectional patches) for regions that can
  follow objects, on the quadrant and a layout-neutral layout (chapter 15).
* :mod:`compbook.sae.studies.objsae`: vanilla and S2AE on those variants' activations (chapter 15).
* :mod:`compbook.sae.studies.claims`: Part C's claims table (chapters 15-16), on :func:`compbook.stats.verdict`.
* :mod:`compbook.sae.runs.stack`: a stack of same-shape SAEs trained at once (bit-identical to one by one on the CPU).
* :mod:`compbook.sae.sources`: how a set of training activations is made (what a sweep's worker makes again).
* :mod:`compbook.sae.runs.tasks`: the study's SAEs as sweeps of :mod:`compbook.runs.sweeps` (one config per SAE,
  records).
* :mod:`compbook.sae.runs.full`: every SAE of chapters 15-16 at the mode's size, one command (``python -m compbook.sae
  full``).
* :mod:`compbook.sae.crossmodal`: cross-modal coherence and monosemanticity per modality (chapter 16).
* :mod:`compbook.sae.coherence`: coherence under word / phrase / next-token labels, over live or bimodal latents.
* :mod:`compbook.sae.interpret`: the hierarchical interpretation pipeline and the identification rate, with the
  CPU describer / synthesiser of :mod:`compbook.sae.describe` or Qwen3-VL / Qwen3
  (:mod:`compbook.sae.servers.hf_interpret`), in process, or behind any OpenAI-compatible server
  (:mod:`compbook.sae.servers.server_interpret`).
"""

from .s2ae import binarize_ste, exclusive_sparsity, group_sparsity
from .topk import TopKSAE, fvu

__all__ = ["TopKSAE", "fvu", "group_sparsity", "exclusive_sparsity", "binarize_ste"]
