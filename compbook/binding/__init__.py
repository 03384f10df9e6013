"""Part B: how embedding models bind concepts (Uselis, Koishigarina, Oh, ICML 2026), chapters 10-13.

Modules: ``symbolic`` (the symbolic track's tokens), ``splits`` (coverage splits of an object space),
``encoders`` (small dual encoders, CLIP loss), ``data`` (training pairs and queries from ``compbook.scenes``),
``train`` (many models at once, checkpoints), ``recognition`` (concept and object recognition by set separation),
``decomposition`` (scenes as sums: Level I / II, ablations, edits, MDS), ``clevr`` (the CLEVR-2D experiment),
``controlled`` and ``sweep`` (controlled models over coverage), ``probes`` and ``complexity`` (the binding
function's probes), ``recipe_config``, ``recipe_data``, ``recipe_model``, ``recipe_eval``, ``recipe`` and
``recipe_checks`` (the released controlled-model recipe, scaled down, and its checks), ``pretrained``
(transformers CLIP / DINOv2 embeddings through the same functions). Importing does no work.
"""

from .recognition import recognise, concept_recognition, cosine_logits

__all__ = ["recognise", "concept_recognition", "cosine_logits"]
from .probes import PROBE_KINDS, fit_probe  # noqa: E402 (chapter 13: multiplicative probes)
__all__ += ["fit_probe", "PROBE_KINDS"]
