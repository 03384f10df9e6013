"""The recipe's readings and its go rule (chapter 13).

* the paper's metric (released): set separation per scene over the batch's queries, min present > max absent
  (:func:`separation`, :func:`paper_metric`);
* our diagnostics: swap-only binding on two-object scenes whose objects differ in every concept
  (:func:`swap_binding`), split by how many swaps are training objects; a simulated bag-of-concepts model on the
  same readings and the chance of a random order (:func:`floors`);
* the go rule, fixed before the run (:func:`go_no_go`): seen binding >= 0.9 and unseen binding's Wilson
  95% interval above chance;
* :func:`evaluate_stored`: a stored model loaded, read again in this run and judged (what chapter 13 does for
  each model it shows).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ...results import checkpoints
from ... import checks, results
from ...stats import wilson
from .config import RecipeConfig
from .data import (
    batch_queries, binding_scenes, concept_query_tokens, object_values, query_tokens, recipe_scene_tokens,
    sample_recipe_scenes, split_objects, swap_sets
)
from .model import RecipeEncoder, load_recipe, store_dir
from ...results import door


def separation(logits, labels) -> np.ndarray:
    """Per active row (>= 1 positive): min positive logit > max negative logit (bool)."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels) > 0
    active = labels.any(1)
    lo = np.where(labels, logits, np.inf).min(1)
    hi = np.where(labels, -np.inf, logits).max(1)
    return (lo > hi)[active]


@torch.no_grad()
def swap_binding(model: RecipeEncoder, cfg: RecipeConfig, scenes: np.ndarray) -> np.ndarray:
    """Per scene: both present objects score above every swap of them (bool)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    model.eval()
    dev = model.tau.device
    zs = F.normalize(model.scene(recipe_scene_tokens(cfg, scenes).to(dev)), dim=1, eps=1e-6)
    cand = np.concatenate([scenes, swap_sets(cfg, scenes)], 1)
    uniq, inv = np.unique(cand, return_inverse=True)
    zq = F.normalize(model.query(query_tokens(cfg, uniq).to(dev)), dim=1, eps=1e-6)
    logits = (zs @ zq.T).cpu().numpy()[np.arange(len(scenes))[:, None], inv.reshape(cand.shape)]
    return logits[:, :2].min(1) > logits[:, 2:].max(1)


def bag_of_concepts(cfg: RecipeConfig, scenes: np.ndarray, queries: np.ndarray, concept: bool = False,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """A simulated bag-of-concepts model's cosine logits: scene = sum of its objects' concept one-hots,
    object query = its concept one-hots, concept query = one one-hot; ties broken by a 1e-9 jitter when
    ``rng`` is given (our choice: the floor such a model reaches by luck)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    d = cfg.n_concepts * cfg.n_values
    vals = object_values(cfg, np.where(scenes >= 0, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    s = np.zeros((len(scenes), d))
    for j in range(scenes.shape[1]):
        for k in range(cfg.n_concepts):
            np.add.at(s, (np.arange(len(scenes))[scenes[:, j] >= 0], vals[scenes[:, j] >= 0, j, k]), 1.0)
    queries = np.asarray(queries, dtype=np.int64)
    q = np.zeros((len(queries), d))
    if concept:
        q[np.arange(len(queries)), queries] = 1.0
    else:
        qv = object_values(cfg, queries) + np.arange(cfg.n_concepts) * cfg.n_values
        for k in range(cfg.n_concepts):
            q[np.arange(len(queries)), qv[:, k]] = 1.0
    s /= np.linalg.norm(s, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    logits = s @ q.T
    if rng is not None:
        logits = logits + 1e-9 * rng.random(logits.shape)
    return logits


def binding_by_swap_split(model, cfg: RecipeConfig, scenes: np.ndarray):
    """Swap-only binding split by how many of a scene's swaps are training objects (0, 1, 2 for C = 2):
    a model that binds does not care; one that scores objects by their training history does."""
    import pandas as pd
    ok = swap_binding(model, cfg, scenes)
    n_train = np.isin(swap_sets(cfg, scenes), split_objects(cfg)[0]).sum(1)
    rows = [{"swaps that are train objects": k, "scenes": int((n_train == k).sum()),
             "binding": float(ok[n_train == k].mean()) if (n_train == k).any() else float("nan")}
            for k in range(2 ** cfg.n_concepts - 1)]
    return pd.DataFrame(rows).set_index("swaps that are train objects")


def eval_sets(cfg: RecipeConfig, seed: int = 12345) -> dict:
    """Fixed evaluation data (our choice of seed): swap-only scenes of seen (train) and unseen (test)
    objects, and ``eval_batches`` released-style batches per split with their query sets."""
    train, test = split_objects(cfg)
    rng = np.random.default_rng(seed)
    out = {"seen_binding": binding_scenes(cfg, train, cfg.eval_scenes, rng),
           "unseen_binding": binding_scenes(cfg, test, cfg.eval_scenes, rng)}
    allq = np.arange(cfg.n_objects)
    for name, pool in (("seen", train), ("unseen", test)):
        batches = []
        for _ in range(cfg.eval_batches):
            s = sample_recipe_scenes(cfg, pool, cfg.batch, rng)
            batches.append((s, batch_queries(cfg, s, rng, allq)))
        out[name + "_batches"] = batches
    return out


@torch.no_grad()
def paper_metric(model, cfg: RecipeConfig, batches, task: str = "objects", jitter: bool = True) -> np.ndarray:
    """Released metric: per-scene set separation over each batch's query set (active scenes only).
    ``model`` None scores the simulated bag-of-concepts model (ties broken at random when ``jitter``,
    else a tie fails, as the strict released comparison would)."""
    out = []
    rng = np.random.default_rng(0)
    for scenes, q in batches:
        if task == "objects":
            queries, labels = q["object_queries"], q["object_labels"]
        else:
            queries, labels = q["concept_tokens"], q["concept_labels"]
        if model is None:
            logits = bag_of_concepts(cfg, scenes, queries, concept=task != "objects",
                                     rng=rng if jitter else None)
        else:
            model.eval()
            tok = query_tokens(cfg, queries) if task == "objects" else concept_query_tokens(cfg, queries)
            dev = model.tau.device
            logits = model.logits(recipe_scene_tokens(cfg, scenes).to(dev), tok.to(dev)).cpu().numpy()
        out.append(separation(logits, labels))
    return np.concatenate(out)


def evaluate_recipe(model, cfg: RecipeConfig, sets: dict) -> dict:
    """The go/no-go diagnostics on fixed eval sets."""
    return {"seen_binding": float(swap_binding(model, cfg, sets["seen_binding"]).mean()),
            "unseen_binding": float(swap_binding(model, cfg, sets["unseen_binding"]).mean()),
            "seen_paper": float(paper_metric(model, cfg, sets["seen_batches"]).mean()),
            "unseen_paper": float(paper_metric(model, cfg, sets["unseen_batches"]).mean()),
            "unseen_concepts": float(paper_metric(model, cfg, sets["unseen_batches"], "concepts").mean())}


def floors(cfg: RecipeConfig, sets: dict, n_sim: int = 20000, seed: int = 0) -> dict:
    """Chance of swap-only binding for random logits (simulated) and the bag-of-concepts scores (swap-only:
    its positives and swaps tie exactly, so it scores 0 strictly and chance with ties broken at random)."""
    rng = np.random.default_rng(seed)
    k = 2 ** cfg.n_concepts - 2
    r = rng.standard_normal((n_sim, 2 + k))
    chance = float((r[:, :2].min(1) > r[:, 2:].max(1)).mean())
    boc = {}
    for name in ("seen_binding", "unseen_binding"):
        sc = sets[name][:500]
        cand = np.concatenate([sc, swap_sets(cfg, sc)], 1)
        lg = np.stack([bag_of_concepts(cfg, sc[i:i + 1], cand[i])[0] for i in range(len(sc))])
        boc[name] = float((lg[:, :2].min(1) > lg[:, 2:].max(1)).mean())
    return {"swap_chance_sim": chance, "swap_chance_exact": 2 / ((2 + k) * (1 + k)),
            "boc_seen_binding": boc["seen_binding"], "boc_unseen_binding": boc["unseen_binding"],
            "boc_unseen_paper": float(paper_metric(None, cfg, sets["unseen_batches"]).mean()),
            "boc_unseen_paper_strict": float(paper_metric(None, cfg, sets["unseen_batches"],
                                                          jitter=False).mean()),
            "boc_seen_paper": float(paper_metric(None, cfg, sets["seen_batches"]).mean()),
            "boc_unseen_concepts": float(paper_metric(None, cfg, sets["unseen_batches"], "concepts").mean())}


def load_records(directory=None, n_values: int = 50, seed: int = 0) -> list[dict]:
    """Every stored recipe model's JSON record for ``n_values`` and ``seed`` (C = 2) in ``directory`` (default
    :func:`~compbook.binding.recipe.model.store_dir`), sorted by coverage."""
    n_values, seed = checks.integer(n_values, "n_values", 2), checks.seed(seed)
    directory = store_dir() if directory is None else Path(directory)
    recs = [results.json_file(p, "recipe record") for p in directory.glob(f"recipe_C2V{n_values}_cov*_s{seed}.json")]
    return sorted(recs, key=lambda r: r["config"]["coverage"])


def coverage_table(records: list[dict]):
    """One row per model: final swap-only binding (seen, unseen) with Wilson 95% intervals over the eval
    scenes (``compbook.stats.wilson``), the paper's metric, chance and the bag-of-concepts floor."""
    import pandas as pd

    rows = []
    for r in records:
        n = r["config"]["eval_scenes"]
        f = r["final"]
        row = {"coverage": r["config"]["coverage"], "steps": r["steps"], "seconds": r["seconds"]}
        for k in ("seen_binding", "unseen_binding"):
            lo, hi = wilson(round(f[k] * n), n)
            row.update({k: f[k], k + "_lo": lo, k + "_hi": hi})
        row.update({"seen_paper": f["seen_paper"], "unseen_paper": f["unseen_paper"],
                    "boc_unseen_paper": r["floors"]["boc_unseen_paper"],
                    "chance": r["floors"]["swap_chance_sim"]})
        rows.append(row)
    return pd.DataFrame(rows).set_index("coverage")


#: the go rule's bar for binding of seen objects, fixed before the run (our choice)
SEEN_MIN = 0.9


def go_no_go(record: dict, seen_min: float = SEEN_MIN) -> tuple[bool, str]:
    """Go if final seen binding >= ``seen_min`` and unseen binding's Wilson interval lies above chance."""
    f, n = record["final"], record["config"]["eval_scenes"]
    lo, _ = wilson(round(f["unseen_binding"] * n), n)
    chance = record["floors"]["swap_chance_sim"]
    go = f["seen_binding"] >= seen_min and lo > chance
    why = (f"seen binding {f['seen_binding']:.2f} ({'>=' if f['seen_binding'] >= seen_min else '<'} "
           f"{seen_min}), unseen {f['unseen_binding']:.2f} (95% low {lo:.2f} vs chance {chance:.2f})")
    return go, why


@dataclass
class StoredEvaluation:
    """A stored recipe model read again: ``model``, its ``record`` (the stored JSON), ``cfg``, the eval ``sets``
    (:func:`eval_sets`), ``final`` (:func:`evaluate_recipe` computed in this run), ``floors`` (the stored ones,
    or computed in this run), and the go rule's ``go`` and ``why`` on them."""

    model: RecipeEncoder
    record: dict
    cfg: RecipeConfig
    sets: dict
    final: dict
    floors: dict
    go: bool
    why: str

    def verdict_line(self) -> str:
        """``GO: ...`` or ``NO-GO: ...`` with the rule's reason."""
        return ("GO: " if self.go else "NO-GO: ") + self.why

    def log_table(self, columns):
        """The stored training log, one column per logged step, a row per measure in ``columns``."""
        import pandas as pd
        return pd.DataFrame(self.record["log"]).set_index("step")[list(columns)].round(3).T


def is_stored(stem) -> bool:
    """Whether a recipe model is stored at ``stem`` (its JSON record is there, or, outside a checkout, the
    repository's registry lists it: :func:`compbook.results.door.is_stored`)."""
    return door.is_stored(checkpoints.stem(stem))


def evaluate_stored(stem, cfg: RecipeConfig | None = None, floors_here: bool = False) -> StoredEvaluation:
    """Load the model stored at ``stem``, evaluate it in this run on :func:`eval_sets` of its config and judge it
    by :func:`go_no_go`. ``cfg``: the config it must have been trained with (a model stored with another one is
    refused with a ``ValueError``; default: its stored config). ``floors_here``: simulate the floors in this
    run (:func:`floors`) instead of reading the stored ones."""
    model, record = load_recipe(stem)
    stored = RecipeConfig(**record["config"])
    if cfg is not None and asdict(checks.instance(cfg, "cfg", RecipeConfig)) != record["config"]:
        diff = {k: (v, record["config"].get(k)) for k, v in asdict(cfg).items() if record["config"].get(k) != v}
        raise ValueError(f"{stem}: stored with another config (field: (asked, stored)) {diff}")
    sets = eval_sets(stored)
    final = evaluate_recipe(model, stored, sets)
    floor = floors(stored, sets) if floors_here else record["floors"]
    go, why = go_no_go({**record, "final": final, "floors": floor})
    return StoredEvaluation(model, record, stored, sets, final, floor, go, why)


#: the readings of the go / no-go table: row name -> (the model's reading, the bag-of-concepts floor's)
FLOOR_ROWS = {"swap-only binding, seen": ("seen_binding", "boc_seen_binding"),
              "swap-only binding, unseen": ("unseen_binding", "boc_unseen_binding"),
              "paper's metric, seen": ("seen_paper", "boc_seen_paper"),
              "paper's metric, unseen": ("unseen_paper", "boc_unseen_paper"),
              "concepts, unseen": ("unseen_concepts", "boc_unseen_concepts")}


def floors_table(ev: StoredEvaluation):
    """A stored model against its floors (Part B's notes, the go / no-go): one row per reading of
    :data:`FLOOR_ROWS`, columns ``model`` (computed in this run), ``bag of concepts`` and ``random order``
    (the chance of a random order, for the swap-only rows)."""
    import pandas as pd

    chance = ev.floors["swap_chance_sim"]
    return pd.DataFrame({name: {"model": ev.final[a], "bag of concepts": ev.floors[b],
                                "random order": chance if a.endswith("binding") else np.nan}
                         for name, (a, b) in FLOOR_ROWS.items()}).T


def swap_split_table(ev: StoredEvaluation):
    """:func:`binding_by_swap_split` of a stored model on its seen and its unseen evaluation scenes, side by
    side (Part B's notes: does the score follow which objects the swaps are?)."""
    import pandas as pd

    return pd.concat({"seen scenes": binding_by_swap_split(ev.model, ev.cfg, ev.sets["seen_binding"]),
                      "unseen scenes": binding_by_swap_split(ev.model, ev.cfg, ev.sets["unseen_binding"])},
                     axis=1)
