"""Vanilla vs S2AE on the tiny VLM: activations, runs over seeds, intervals (ch. 14-15).

:func:`sae_inputs` turns scenes into :class:`~compbook.sae.s2ae.SAEData` (residual stream after a layer, and the
image-block attention averaged over all layers and heads: the paper's "all" choice). :func:`compare` trains one
SAE per (method, seed) on the same data with the same budget and scores each on held-out scenes;
:func:`summarise` gives mean and a 95% t-interval over seeds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pandas as pd
import torch
from .. import checks, results
from ..stats import fmt_pm, t_interval

from .metrics import latent_iou, sae_report
from .regions import image_attention
from .s2ae import LAMBDA, SAEData, SAETrainConfig, check_data, train_sae
from .vlm import PAD, extract
from ..results import door

@torch.no_grad()
def sae_inputs(vlm, scenes, layer: int, batch: int = 128) -> SAEData:
    """Residual stream after ``layer`` (N, T, d) of the tiny VLM on ``scenes`` with the image-block attention."""
    if not all(hasattr(scenes, a) for a in ("patches", "tokens", "__len__")):
        raise ValueError(f"scenes must be a SceneSet (patches, tokens), got {type(scenes).__name__}")
    if len(scenes) == 0:
        raise ValueError("scenes: no scenes to extract activations from")
    batch = checks.integer(batch, "batch")
    acts, valid, attn = [], [], []
    for i in range(0, len(scenes), batch):
        ex = extract(vlm, (scenes.patches[i:i + batch], scenes.tokens[i:i + batch]), layer)
        acts.append(ex.resid)
        valid.append(ex.token_type != PAD)
        attn.append(image_attention(ex.attentions, ex.patch_idx))
    return SAEData(torch.cat(acts), torch.cat(valid), ex.patch_idx, ex.grid, torch.cat(attn),
                   question=question_digest(vlm, scenes, layer))


def question_digest(vlm, scenes, layer: int) -> str:
    """SHA-256 of what makes :func:`sae_inputs`' activations (chapters 14-16): the model's weights, the scenes'
    patches (N, P, D) and tokens (N, T), and ``layer``. The activations' own bytes are not the same on every
    CPU (a matrix product's last bits follow the CPU's vector instructions, AVX2 or AVX-512); this is."""
    h = hashlib.sha256(b"compbook-sae-question/1")
    for name, t in sorted(vlm.state_dict().items()):
        h.update(f"{name} {tuple(t.shape)} {t.dtype}".encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    for name in ("patches", "tokens"):
        t = torch.as_tensor(getattr(scenes, name))
        h.update(f"{name} {tuple(t.shape)} {t.dtype}".encode())
        h.update(t.cpu().contiguous().numpy().tobytes())
    h.update(f"layer {int(layer)}".encode())
    return h.hexdigest()


def patch_codes(sae, data: SAEData) -> torch.Tensor:
    """SAE codes of the image patches (N, P, d_sae)."""
    _check_pair(sae, data)
    with torch.no_grad():
        x = data.acts[:, data.patch_idx]
        return sae.encode(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:2], -1)


def _check_pair(sae, data, name: str = "data") -> None:
    """ValueError unless ``sae`` can encode (a TopK SAE) and ``data`` is an :class:`SAEData` of its width."""
    if not callable(getattr(sae, "encode", None)):
        raise ValueError(f"sae must have an encode method (a TopKSAE), got {type(sae).__name__}")
    checks.instance(data, name, SAEData)
    if getattr(sae, "d_in", data.acts.shape[-1]) != data.acts.shape[-1]:
        raise ValueError(f"{name}.acts: tokens of width {data.acts.shape[-1]}, the SAE reads d_in={sae.d_in}")


def score(sae, data: SAEData, masks: torch.Tensor) -> dict:
    """EV, L0 and dead fraction on all valid tokens; L0 and mIoU on image patches (``masks`` (N, C, P))."""
    _check_pair(sae, data)
    out = sae_report(sae, data.tokens, patch_codes(sae, data), masks)
    out["L0 patches"] = float((patch_codes(sae, data) != 0).sum(-1).float().mean())
    return out


def method_name(lam: float) -> str:
    """"vanilla" for ``lam = 0``, else "S2AE (lambda=...)": the label of a run in tables."""
    lam = checks.real(lam, "lam", 0)
    return "vanilla" if lam == 0 else f"S2AE (lambda={lam:g})"


def train_runs(train: SAEData, cfg: SAETrainConfig, seeds=(0, 1, 2), lams=(0.0, LAMBDA),
               progress: bool = False) -> list:
    """One trained SAE per (seed, lambda), same data and budget: [{"method", "seed", "sae", "train s"}]."""
    checks.instance(cfg, "cfg", SAETrainConfig)
    seeds = checks.integers(seeds, "seeds", 0, ndim=1, min_size=1).tolist()     # 2.7 refused, never truncated
    lams = [checks.real(lam, "lams", 0) for lam in checks.sequence(lams, "lams")]
    check_data(train, None, any(lam > 0 for lam in lams), "train")
    runs = []
    for seed in seeds:
        for lam in lams:
            res = train_sae(train, dataclasses.replace(cfg, lam=lam, seed=seed), progress=progress)
            runs.append({"method": method_name(lam), "seed": seed, "sae": res.sae, "train s": res.seconds})
    return runs


def data_digest(data: SAEData) -> str:
    """What a stored SAE was trained on: ``data.question`` where :func:`sae_inputs` made ``data`` (the same on
    every CPU), else SHA-256 of the activations, validity mask and attention (their exact bytes)."""
    if data.question is not None:
        return data.question
    h = hashlib.sha256()
    for t in (data.acts, data.valid, data.attn):
        if t is not None:
            h.update(str(tuple(t.shape)).encode())
            h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


def stored_runs(train: SAEData, cfg: SAETrainConfig, seeds=(0, 1, 2), lams=(0.0, LAMBDA), store: str = "sae/runs",
                retrain: bool = False, progress: bool = False, trainer=None) -> list:
    """:func:`train_runs`, with each SAE kept in ``data/<store>/`` (safetensors + JSON, named by lambda, seed and
    a hash of the question) and loaded again only when its stored training config *and* the digest of its
    training data (:func:`data_digest`) equal this call's; otherwise (or when ``retrain``) trained and stored.
    Another setting (e.g. full mode) gets its own files. ``"train s"`` is the stored training time.
    ``trainer``: the training function (default :func:`~compbook.sae.s2ae.train_sae`; e.g.
    :func:`compbook.sae.studies.refopt.train_sae_reference`, whose config type adds its own fields to the key)."""
    from .topk import save_sae

    checks.instance(cfg, "cfg", SAETrainConfig)
    seeds = checks.integers(seeds, "seeds", 0, ndim=1, min_size=1).tolist()
    lams = [checks.real(lam, "lams", 0) for lam in checks.sequence(lams, "lams")]
    check_data(train, None, any(lam > 0 for lam in lams), "train")
    checks.safe_path("data", store, "store")
    checks.boolean(retrain, "retrain")
    if trainer is not None and not callable(trainer):
        raise ValueError(f"trainer must be a function (data, cfg, progress) -> TrainResult or None, got "
                         f"{trainer!r:.60}")
    digest, plan = data_digest(train), []
    for seed in seeds:                     # every stored run is checked before anything is trained
        for lam in lams:
            c = dataclasses.replace(cfg, lam=lam, seed=seed)
            plan.append((c, *stored_sae(digest, c, store, retrain)))
    runs = []
    for c, want, name, path, stored in plan:
        if stored:
            runs.append(load_stored(c, name, path))
            continue
        door.note_made(path, "not stored")
        res = (trainer or train_sae)(train, c, progress=progress)
        save_sae(res.sae, path, {**want, "seconds": res.seconds})
        runs.append({"method": method_name(c.lam), "seed": c.seed, "sae": res.sae, "train s": res.seconds})
    return runs


def stored_sae(digest: str, cfg: SAETrainConfig, store: str, retrain: bool = False) -> tuple:
    """Where :func:`stored_runs` keeps the SAE of ``cfg`` (its lambda and seed) trained on data of ``digest``
    (:func:`data_digest`) in ``data/<store>/``: ``(want, name, path, stored)``, the sidecar's metadata it must
    hold, the file name under ``data/``, its path without suffix and whether it is stored (never when
    ``retrain``); ValueError when the file named for this question records another one."""

    want = {"data": digest, "train": dataclasses.asdict(cfg)}
    tag = hashlib.sha256(json.dumps(want, sort_keys=True).encode()).hexdigest()[:8]
    name = f"{store}/lam{cfg.lam:g}_seed{cfg.seed}_{tag}".replace(".", "p")   # no dot: suffixes stay .json
    path = door.made_path(name)
    stored = not retrain and door.is_stored(path)
    if stored:
        door.stored_path(path)                                       # fetched outside a checkout
        meta = results.json_file(path.with_suffix(".json"), "stored SAE sidecar").get("metadata", {})
        if not isinstance(meta, dict) or {k: meta.get(k) for k in want} != json.loads(json.dumps(want)):
            raise ValueError(f"store: {path}.json is named for this question but records another data "
                             f"digest or training config (edited, or a hash collision); it is neither "
                             f"served nor trained over: remove it or pass retrain=True")
        if "seconds" not in meta:
            raise ValueError(f"store: {path}.json has no metadata field 'seconds' (its training time); "
                             f"remove it or pass retrain=True")
        checks.real(meta["seconds"], f"store: {path}.json metadata field 'seconds'", 0)
    return want, name, path, stored


def load_stored(cfg: SAETrainConfig, name: str, path) -> dict:
    """The run of :func:`stored_runs` for a stored SAE (:func:`stored_sae`'s ``name`` and ``path``):
    ``{"method", "seed", "sae", "train s"}``."""
    from .topk import load_sae

    door.stored_path(name)                                           # fetched outside a checkout
    meta = results.json_file(path.with_suffix(".json"), "stored SAE sidecar")["metadata"]
    return {"method": method_name(cfg.lam), "seed": cfg.seed, "sae": load_sae(path), "train s": meta["seconds"]}


def compare(train: SAEData, test: SAEData, test_masks: torch.Tensor, cfg: SAETrainConfig, seeds=(0, 1, 2),
            lams=(0.0, LAMBDA), progress: bool = False) -> pd.DataFrame:
    """One row per (lambda, seed): the same data, budget and seed for every lambda (0 = vanilla)."""
    return pd.DataFrame([{"method": r["method"], "seed": r["seed"], **score(r["sae"], test, test_masks),
                          "train s": r["train s"]} for r in train_runs(train, cfg, seeds, lams, progress)])


def summarise(df: pd.DataFrame, columns=("EV", "L0", "L0 patches", "dead", "mIoU")) -> pd.DataFrame:
    """Mean and 95% t-interval half-width over seeds, one row per method: "0.512 ± 0.010"."""
    checks.instance(df, "df", pd.DataFrame)
    missing = ({"method"} | set(columns)) - set(df.columns)
    if missing:
        raise ValueError(f"columns: {sorted(missing)} not in df ({sorted(df.columns)})")
    out = {}
    for method, g in df.groupby("method", sort=False):
        row = {}
        for c in columns:
            row[c] = fmt_pm(*t_interval(g[c].to_numpy(float)))
        row["seeds"] = len(g)
        out[method] = row
    return pd.DataFrame(out).T


def paired_difference(df: pd.DataFrame, column: str, a: str, b: str) -> tuple[float, float]:
    """Mean and 95% t-interval half-width of ``b - a`` in ``column``, paired by seed."""
    checks.instance(df, "df", pd.DataFrame)
    missing = {"method", "seed"} - set(df.columns)
    if missing:
        raise ValueError(f"df: missing columns {sorted(missing)} (one row per method and seed)")
    if column not in df.columns:
        raise ValueError(f"column={column!r}: not a column of df ({sorted(df.columns)})")
    for name, m in (("a", a), ("b", b)):
        if m not in set(df.method):
            raise ValueError(f"{name}={m!r}: no such method in df ({sorted(set(df.method))})")
    x = df[df.method == a].set_index("seed")[column]
    y = df[df.method == b].set_index("seed")[column]
    return t_interval((y - x).dropna().to_numpy(float))


def difference_verdict(mean: float, half: float) -> str:
    """What a paired difference and its 95% half-width say: higher, lower, or not distinguishable from 0."""
    checks.real(mean, "mean")
    if not float(half) >= 0 and half == half:   # NaN or inf (one seed) allowed; a negative one is not
        raise ValueError(f"half must be a half-width >= 0, got {half!r}")
    if mean - half > 0:
        return "higher with S2AE (the interval excludes 0)"
    if mean + half < 0:
        return "LOWER with S2AE (the interval excludes 0)"
    return "not distinguishable from 0 with these seeds"


def fragmented_latents(sae, data: SAEData, labels: torch.Tensor, top: int = 4) -> list:
    """Latents that most often fire on several distinct objects of one image and on background: list of
    (latent, mean number of objects+background touched per firing image), most fragmented first. ``labels``
    (N, P) object index per patch (-1 background)."""
    top = checks.integer(top, "top")
    _check_pair(sae, data)
    labels = torch.as_tensor(checks.integers(labels, "labels", -1, ndim=2))
    if tuple(labels.shape) != (data.acts.shape[0], len(data.patch_idx)):
        raise ValueError(f"labels: shape {tuple(labels.shape)}, expected (N, P) = "
                         f"{(data.acts.shape[0], len(data.patch_idx))}")
    z = patch_codes(sae, data) != 0                                   # (N, P, d)
    n_obj = int(labels.max()) + 2
    onehot = torch.nn.functional.one_hot(labels + 1, n_obj).float()   # (N, P, n_obj): 0 = background
    touched = (torch.einsum("npo,npd->nod", onehot, z.float()) > 0).sum(1).float()   # (N, d)
    fires = z.any(1)
    mean = (touched * fires).sum(0) / fires.sum(0).clamp_min(1)
    order = mean.argsort(descending=True)[:top]
    return [(int(j), float(mean[j])) for j in order]


def per_latent_iou(sae, data: SAEData, masks: torch.Tensor) -> torch.Tensor:
    """:func:`compbook.sae.metrics.latent_iou` of ``sae`` on ``data``'s patches."""
    return latent_iou(patch_codes(sae, data), masks)


@dataclasses.dataclass
class Setting:
    """What chapters 14 and 15 share: the stored tiny VLM, train/test scenes and their SAE inputs."""
    vlm: object
    text_only: object
    meta: dict
    train_scenes: object
    test_scenes: object
    train: SAEData
    test: SAEData
    layer: int
    source: dict | None = None      # how ``train`` is made again elsewhere (:mod:`compbook.sae.runs.tasks`)


def load_setting(n_train: int, n_test: int, layer: int, seed: int = 10) -> Setting:
    """Load the stored tiny VLM (``data/sae/``) and extract layer ``layer`` on fresh scenes (seeds ``seed`` and
    ``seed + 1``, distinct from the VLM's own training (0) and test (1) scenes). The training activations'
    ``source`` (:func:`compbook.sae.sources.note_source`) lets a sweep's worker make them again."""
    from .data import make_scenes
    from .sources import note_source
    from .vlm import pretrained_vlm

    vlm, text, meta = pretrained_vlm(progress=False)
    tr, te = make_scenes(n_train, seed=seed), make_scenes(n_test, seed=seed + 1)
    source = {"source": "tiny-vlm", "n": int(n_train), "seed": int(seed), "layer": int(layer)}
    train = note_source(sae_inputs(vlm, tr, layer), source)
    return Setting(vlm, text, meta, tr, te, train, sae_inputs(vlm, te, layer), layer, source)
