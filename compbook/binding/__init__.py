"""Part B: how embedding models bind concepts (Uselis, Koishigarina, Oh, ICML 2026), chapters 10-11.

Modules: ``encoders`` (small dual encoders, CLIP loss), ``data`` (training pairs and queries from
``compbook.scenes``), ``train`` (many models at once, checkpoints), ``recognition`` (concept and object
recognition by set separation), ``decomposition`` (scenes as sums: Level I / II, ablations, edits, MDS),
``pretrained`` (transformers CLIP / DINOv2 embeddings through the same functions). Importing does no work.
"""

from .recognition import recognition, concept_recognition, cosine_logits

__all__ = ["recognition", "concept_recognition", "cosine_logits"]
