"""Binding-function complexity: can a small MLP on concept tables reproduce an encoder's scenes? (chapter 12,
"The binding function").

The paper's probe (fact): an MLP with one learnable embedding table per (slot, concept) and one hidden layer is
fitted by MSE to a trained encoder's scene embeddings, on scenes of *train* objects only. Its predictions for
scenes of *held-out* objects are then read by *frozen* probes fitted to the encoder's real embeddings: concept
probes (one linear classifier per (slot, concept)) and object probes (one per slot, over all |O| objects). If a
narrow MLP's predictions still decode to the right objects, the binding function is simple enough to generalise.

Our choices: tables of ``table_dim`` per value, concatenated; ReLU; Adam on minibatches; the frozen probes are
scikit-learn logistic regressions fitted on real embeddings of train- and held-out-object scenes. Models of one
width train batched: the M encoders' MLPs are stacked (M, ...) and fitted in one set of ``einsum`` s.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from .. import checks, config
from .. import results
from ..config import ModeConfig
from . import paper
from .probes import check_values
from ..results import door


@dataclass(frozen=True)
class ComplexityConfig(ModeConfig):
    """The complexity probe (CPU mode; full mode widths up to 4096)."""

    FULL = dict(widths=paper.figure("complexity_widths"), steps=5000, fit_scenes=20000, eval_scenes=4000)
    SMOKE = dict(steps=10, fit_scenes=500, eval_scenes=200)

    widths: tuple = (64, 128, 256, 512, 1024)
    table_dim: int = 16
    steps: int = 400
    batch: int = 256
    lr: float = 3e-3
    fit_scenes: int = 1000        # train-object scenes the MLP is fitted on
    eval_scenes: int = 400        # held-out-object scenes it is evaluated on
    seed: int = 0

    def __post_init__(self):
        check_widths(self.widths)
        for name in ("table_dim", "steps", "batch", "fit_scenes", "eval_scenes"):
            checks.integer(getattr(self, name), name)
        checks.seed(self.seed)
        checks.real(self.lr, "lr", 0, low_open=True)


def default_complexity() -> ComplexityConfig:
    return ComplexityConfig.for_mode()


#: the widest hidden layer a complexity probe may ask for (the full mode's widest is 4096)
MAX_WIDTH = 65536


def check_widths(widths) -> tuple:
    """Hidden widths as a non-empty tuple of whole numbers in ``1..MAX_WIDTH`` (2.7 and "64" refused)."""
    w = checks.sequence(widths, "widths")
    return tuple(checks.integer(x, f"widths[{i}]", 1, MAX_WIDTH) for i, x in enumerate(w))


def _init(M: int, n_in_tables: int, n_values, table_dim: int, width: int, d_out: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    d_in = n_in_tables * table_dim
    p = {f"table{j}": 0.5 * torch.randn(M, n_values[j % len(n_values)], table_dim, generator=g)
         for j in range(n_in_tables)}
    p["W1"] = torch.randn(M, d_in, width, generator=g) / d_in ** 0.5
    p["b1"] = torch.zeros(M, 1, width)
    p["W2"] = torch.randn(M, width, d_out, generator=g) / width ** 0.5
    p["b2"] = torch.zeros(M, 1, d_out)
    return {k: v.requires_grad_(True) for k, v in p.items()}


def mlp_predict(params: dict, values: torch.Tensor) -> torch.Tensor:
    """Stacked MLPs on scene values (M, S, K, C) -> predicted embeddings (M, S, D)."""
    M, S, K, C = values.shape
    values = values.to(params["W1"].device)
    m = torch.arange(M, device=values.device)[:, None]
    parts = [params[f"table{k * C + c}"][m, values[:, :, k, c]] for k in range(K) for c in range(C)]
    h = torch.relu(torch.einsum("msi,miw->msw", torch.cat(parts, -1), params["W1"]) + params["b1"])
    return torch.einsum("msw,mwd->msd", h, params["W2"]) + params["b2"]


def fit_binding_mlp(values, embeddings, n_values, width: int, cfg: ComplexityConfig) -> dict:
    """Fit M stacked MLPs of hidden ``width`` by MSE: values (M, S, K, C) int, embeddings (M, S, D). The value
    indices are checked as :func:`~compbook.binding.probes.fit_probe` checks them (a negative index, -1, is refused,
    never read as the last row of a table), against ``n_values`` (V_1..V_C) when given. They train on
    :func:`compbook.config.device` (a GPU in full mode); the parameters come back on the CPU."""
    (width,) = check_widths([width])
    v = checks.integers(values, "values")
    if v.ndim != 4:
        raise ValueError(f"values must be (M, S, K, C) value indices, got shape {v.shape}")
    n_values = check_values(v.reshape(-1, *v.shape[2:]), n_values, "values")[1]
    v = torch.as_tensor(v, dtype=torch.long)
    y = torch.as_tensor(checks.reals(embeddings, "embeddings", ndim=3), dtype=torch.float32)
    if v.shape[:2] != y.shape[:2]:
        raise ValueError(f"values, embeddings: mismatched scene counts {tuple(v.shape[:2])} vs {tuple(y.shape[:2])}")
    M, S, K, C = v.shape
    device = config.device()
    params = {k: t.detach().to(device).requires_grad_(True)
              for k, t in _init(M, K * C, n_values, cfg.table_dim, width, y.shape[-1], cfg.seed).items()}
    v, y = v.to(device), y.to(device)
    opt = torch.optim.Adam(list(params.values()), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps)
    g = torch.Generator().manual_seed(cfg.seed + 1)
    m = torch.arange(M, device=device)[:, None]
    for _ in range(cfg.steps):
        idx = torch.randint(0, S, (M, min(cfg.batch, S)), generator=g).to(device)
        loss = ((mlp_predict(params, v[m, idx]) - y[m, idx]) ** 2).mean((1, 2)).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    return {k: t.detach().cpu() for k, t in params.items()}


@dataclass
class FrozenProbes:
    """Linear read-outs fitted to real embeddings: ``concept[k][c]`` and ``object[k]`` (scikit-learn)."""

    concept: list
    object: list
    sizes: tuple

    def accuracy(self, values: np.ndarray, embeddings: np.ndarray) -> tuple[float, float]:
        """(concept accuracy, object accuracy), each averaged over slots (and concepts)."""
        K, C = values.shape[1:]
        ids = np.ravel_multi_index(tuple(np.moveaxis(values, -1, 0)), self.sizes)     # (S, K)
        conc = np.mean([(self.concept[k][c].predict(embeddings) == values[:, k, c]).mean()
                        for k in range(K) for c in range(C)])
        obj = np.mean([(self.object[k].predict(embeddings) == ids[:, k]).mean() for k in range(K)])
        return float(conc), float(obj)


def fit_frozen_probes(values: np.ndarray, embeddings: np.ndarray, sizes) -> FrozenProbes:
    """Concept and object logistic-regression probes on real embeddings (S, D) of scenes values (S, K, C)."""
    K, C = values.shape[1:]
    ids = np.ravel_multi_index(tuple(np.moveaxis(values, -1, 0)), tuple(sizes))

    def lr(y):
        return LogisticRegression(max_iter=300, C=10.0).fit(embeddings, y)
    return FrozenProbes([[lr(values[:, k, c]) for c in range(C)] for k in range(K)],
                        [lr(ids[:, k]) for k in range(K)], tuple(sizes))


def complexity_table(train_values, train_emb, test_values, test_emb, sizes, cfg: ComplexityConfig,
                     labels=None) -> list[dict]:
    """Rows {model, width, concept, object} plus width 0 = the encoder's own test embeddings (the ceiling).

    train_values (M, S, K, C), train_emb (M, S, D): scenes of train objects; test_*: held-out-object scenes.
    """
    widths = check_widths(cfg.widths)
    M = len(train_values)
    labels = list(range(M)) if labels is None else list(labels)
    probes = [fit_frozen_probes(np.concatenate([train_values[m], test_values[m]]),
                                np.concatenate([train_emb[m], test_emb[m]]), sizes) for m in range(M)]
    rows = []
    for m in range(M):
        c, o = probes[m].accuracy(test_values[m], test_emb[m])
        rows.append({"model": labels[m], "width": 0, "concept": c, "object": o})
    for w in widths:
        params = fit_binding_mlp(train_values, train_emb, sizes, w, cfg)
        with torch.no_grad():
            pred = mlp_predict(params, torch.as_tensor(test_values, dtype=torch.long)).numpy()
        for m in range(M):
            c, o = probes[m].accuracy(test_values[m], pred[m])
            rows.append({"model": labels[m], "width": w, "concept": c, "object": o})
    return rows


def encoder_binding(train_values, train_emb, test_values, test_emb, sizes, widths=(64, 256, 1024),
                    cfg: ComplexityConfig | None = None) -> dict:
    """One encoder's binding function, both ways (chapter 12, the image dual encoder's section).

    ``train_values`` (S, 2, C) int slot-concept values and ``train_emb`` (S, D): scenes of train objects;
    ``test_*``: scenes of held-out objects. Returns ``{"complexity": rows, "probes": {kind: R^2}}``: the
    :func:`complexity_table` rows at ``widths`` (width 0 = the encoder itself) and the held-out R^2 of the three
    :func:`~compbook.binding.probes.fit_probe` kinds, each fitted on the train scenes only.
    """
    from .probes import PROBE_KINDS, fit_probe

    tr_v, te_v = np.asarray(train_values), np.asarray(test_values)
    tr_z, te_z = np.asarray(train_emb, dtype=float), np.asarray(test_emb, dtype=float)
    for name, v, z in (("train_values", tr_v, tr_z), ("test_values", te_v, te_z)):
        if v.ndim != 3 or z.ndim != 2 or len(v) != len(z):
            raise ValueError(f"{name}: need (S, slots, C) values matching (S, D) embeddings, got "
                             f"{v.shape} and {z.shape}")
    cfg = dataclasses.replace(cfg or default_complexity(), widths=check_widths(widths))
    rows = complexity_table(tr_v[None], tr_z[None], te_v[None], te_z[None], tuple(sizes), cfg)
    r2 = {k: fit_probe(k, tr_v, tr_z, n_values=tuple(sizes)).r2(te_v, te_z) for k in PROBE_KINDS}
    return {"complexity": [{k: v for k, v in r.items() if k != "model"} for r in rows], "probes": r2}


def controlled_complexity(record: dict, cfg: ComplexityConfig, seed: int = 0) -> list[dict]:
    """The complexity table for the saved controlled models of one seed (one per coverage) of a sweep record
    (:func:`compbook.binding.runs.sweep.load_sweep`); rows labelled by coverage."""
    from .splits import coverage_split
    from .controlled import scene_embeddings, subsample

    ccfg = record["config"]
    space = ccfg.tokens.space
    keep = [m for m, s in enumerate(record["seeds"]) if s == seed]
    tr_v, tr_z, te_v, te_z = [], [], [], []
    for m in keep:
        split = coverage_split(space.n_objects, record["coverages"][m], seed=seed,
                               max_scenes=record["sweep"]["max_scenes"])
        one = {k: v[m:m + 1] for k, v in record["params"].items()}
        tr = subsample(np.asarray(split.train), cfg.fit_scenes, cfg.seed)
        te = subsample(np.asarray(split.test), cfg.eval_scenes, cfg.seed)
        tr_v.append(space.object_values(tr)), te_v.append(space.object_values(te))
        tr_z.append(scene_embeddings(one, ccfg, tr[None])[0]), te_z.append(scene_embeddings(one, ccfg, te[None])[0])
    n_tr, n_te = min(map(len, tr_v)), min(map(len, te_v))
    stack = lambda xs, n: np.stack([x[:n] for x in xs])   # noqa: E731 (equal scene counts for the stack)
    return complexity_table(stack(tr_v, n_tr), stack(tr_z, n_tr), stack(te_v, n_te), stack(te_z, n_te),
                            space.sizes, cfg, labels=[record["coverages"][m] for m in keep])


def load_complexity(n_values: int, directory=None) -> dict:
    """The stored table ``{"config": ..., "rows": [...]}`` of ``data/binding/complexity_V{n_values}.json``
    (chapter 12; fetched outside a checkout, :func:`compbook.results.door.stored_path`)."""

    n_values = checks.integer(n_values, "n_values", 2)     # also keeps the file name inside its folder
    name = f"complexity_V{n_values}.json"
    path = door.stored_path(Path(directory) / name if directory else f"binding/{name}",
                            f"python -m compbook.binding complexity --n-values {n_values}")
    return results.json_file(path, "complexity table")
