"""Part C's sizes, one table for chapters 14-16, :mod:`compbook.sae.studies.study` and :mod:`compbook.sae.runs.full`.

:class:`PartCRun` is a :class:`compbook.config.ModeConfig`: its CPU defaults are the stored CPU runs' (600 / 200
scenes, d_sae 384; chapters 14 and 16 first train at k = 8 for 300 steps, the study for 900), ``PartCRun.full()``
(``COMPBOOK_MODE=full``) the paper-scale miniature (4000 / 1000 scenes, d_sae 1536, 3000 steps, five seeds
everywhere), and :data:`TINY` a seconds-long check. A chapter writes ``SIZES = PartCRun.for_mode()``.
"""

from __future__ import annotations

import dataclasses

from .. import checks
from ..config import ModeConfig
from .s2ae import SAETrainConfig

#: Where the CPU store's tables are (written by ``python -m compbook.sae study`` and ``objsae``).
CPU_TABLES = {"study": "sae/study/table.json", "optimiser": "sae/study/optimiser_table.json",
              "regions": "sae/study/regions/table.json", "objsae": "sae/objsae/table.json"}


@dataclasses.dataclass
class PartCRun(ModeConfig):
    """Sizes of Part C (CPU defaults: the stored CPU runs'; ``full()``: the paper-scale miniature).

    ``n_train`` / ``n_test`` scenes, the tiny VLM's ``layer``, the SAE's ``d_sae``, ``batch_images`` and ``lr``;
    chapters 14 and 16's first setting: ``k``, ``setting_steps``, ``setting_seeds``; chapter 15's study:
    ``steps``, ``ks``, ``lams``, ``seeds``, region ``counts``, object-VLM ``layouts``; chapter 16's
    interpretation: ``top_n`` activations, ``top_k`` reference images; the SAEs' folders under ``data/``."""
    n_train: int = 600
    n_test: int = 200
    layer: int = 2
    d_sae: int = 384
    batch_images: int = 16
    lr: float = 3e-3
    k: int = 8
    setting_steps: int = 300
    setting_seeds: int = 3
    steps: int = 900
    ks: tuple = (8, 32, 64)
    lams: tuple = (0.0, 0.003, 0.01)
    seeds: int = 5
    counts: tuple = (4, 8)
    layouts: tuple = ("grid2",)
    top_n: int = 20
    top_k: int = 5
    store: str = "sae/study"
    objsae_store: str = "sae/objsae"

    FULL = {"n_train": 4000, "n_test": 1000, "d_sae": 1536, "setting_steps": 3000, "setting_seeds": 5,
            "steps": 3000, "store": "sae/full", "objsae_store": "sae/full/objsae"}
    SMOKE = {"n_train": 96, "n_test": 48, "setting_steps": 20, "setting_seeds": 2, "steps": 20, "seeds": 2}

    def __post_init__(self):
        for name in ("n_train", "n_test", "d_sae", "k", "setting_steps", "setting_seeds", "steps", "batch_images",
                     "seeds", "top_n", "top_k"):
            checks.integer(getattr(self, name), name)
        checks.integer(self.layer, "layer", 0)
        checks.safe_path("data", self.store, "store")
        checks.safe_path("data", self.objsae_store, "objsae_store")
        if 0.0 not in self.lams or 0.01 not in self.lams:
            raise ValueError(f"lams={self.lams!r}: need 0 (vanilla) and 0.01 (the paper's S2AE)")

    def setting(self) -> SAETrainConfig:
        """Chapters 14 and 16's first SAE: ``k`` for ``setting_steps`` steps."""
        return SAETrainConfig(d_sae=self.d_sae, k=self.k, steps=self.setting_steps, batch_images=self.batch_images,
                           lr=self.lr)

    def base(self) -> SAETrainConfig:
        """The study's SAE training config (k and lambda set per run; k here: the smallest of ``ks``)."""
        return SAETrainConfig(d_sae=self.d_sae, k=min(self.ks), steps=self.steps, batch_images=self.batch_images,
                           lr=self.lr)

    def table(self, name: str) -> str:
        """Where the stored table ``name`` is under ``data/`` ("study", "optimiser", "regions", "objsae"): the
        study's and objsae's files for the CPU store, else ``<store>/tables/<name>.json`` (:func:`full.run`'s)."""
        checks.choice(name, "name", tuple(CPU_TABLES))
        return CPU_TABLES[name] if self.store == PartCRun.store else f"{self.store}/tables/{name}.json"


#: A toy size that runs the whole pipeline in seconds on a CPU (the test's; nothing it stores is used elsewhere).
TINY = PartCRun(n_train=24, n_test=16, d_sae=48, steps=3, batch_images=4, ks=(4, 8), lams=(0.0, 0.01), seeds=2,
                counts=(4,), top_n=3, top_k=2, store="sae/tiny", objsae_store="sae/tiny/objsae")
