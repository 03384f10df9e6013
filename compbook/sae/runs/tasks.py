"""Part C's SAE sweeps on the runner (:mod:`compbook.runs.sweeps`): chapter 15's k / lambda study, its region counts
and the reference optimiser, one config per SAE.

A **config** holds everything that changes an SAE: ``{"data": spec, "train": fields, "optimiser", "device"}``.

* ``data``: how the training activations are made, and their digest (:func:`compbook.sae.experiment.data_digest`)
  and shape (N, T, d_in): ``{"source": "tiny-vlm", "n", "seed", "layer"}`` (the stored tiny VLM, layer ``layer`` on
  ``make_scenes(n, seed)``: :func:`compbook.sae.experiment.load_setting`'s training set), ``"object-vlm"`` (plus
  ``variant``, ``layout``: :func:`compbook.sae.studies.objsae.setting`'s), ``"synthetic"`` (:func:`synthetic_data`) or
  ``"given"`` (activations handed over in this process; only this process can train on them;
  :mod:`compbook.sae.sources`). A worker makes the activations again (:func:`load_data`, kept per process) and
  refuses them when their digest differs: no tensors travel in a config.
* ``train``: the fields of :class:`~compbook.sae.s2ae.SAETrainConfig` (``optimiser="reference"``: of
  :class:`~compbook.sae.studies.refopt.ReferenceTrainConfig`), k, lambda and seed among them;
* ``device``: where it trains (``"cpu"``, or ``"cuda"`` in full mode on a GPU): the rounding differs.

A **record**: the SAE's ``W_enc (d_in, d_sae)``, ``W_dec (d_sae, d_in)``, ``b_enc (d_sae,)``, ``b_dec (d_in,)``
(float32 tensors), ``"train s"`` (seconds of training; a stack's time shared out) and ``"final loss"``; the tables'
scores are computed from the weights (:func:`compbook.sae.studies.study.study_table`). :func:`fit_many` trains the
configs of one :func:`group_of` (same data, shape, budget and optimiser; lambda, seed and region count may differ) as
one stack (:func:`compbook.sae.runs.stack.fit_stack`: on the CPU bit-identical to training each alone).

:func:`trained` is what :func:`compbook.sae.studies.study.study_runs` (and the region and reference runs) call: records
of the runner's store ``data/<store>/sweep/`` first, then the SAEs stored before the runner
(:func:`compbook.sae.experiment.stored_runs`' files, which the chapters read), and the missing ones run through
:func:`compbook.runs.sweeps.run` (``backend``, ``address``, ``workers``... of ``python -m compbook.sae study``).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict

import torch

from ... import checks
from ..s2ae import SAEData, SAETrainConfig, check_data
from ..sources import check_source, noted
from ...results import door

NAME = "sae/train"
OPTIMISERS = ("ours", "reference")
#: Activation sets a process keeps (our choice: a study's training set and one more).
CACHE_SIZE = 2
#: Where the runner's records of a store live: ``data/<store>/<RECORDS>/``.
RECORDS = "sweep"

_CACHE: OrderedDict = OrderedDict()  # digest -> SAEData, this process's


# -- the training data ---------------------------------------------------------------------------------------------
def data_spec(data: SAEData, source: dict | None = None) -> dict:
    """The ``data`` field of a config for ``data``: its ``source`` (default: the one noted by
    :func:`compbook.sae.sources.note_source`, else ``"given"``) with its digest and shape; ``data`` is kept for
    this process's tasks."""
    from ..experiment import data_digest

    check_data(data, None, False, "data")
    if source is None:
        source = noted(data) or {"source": "given"}
    spec = {**check_source(source), "digest": data_digest(data), "shape": list(data.acts.shape)}
    _keep(spec["digest"], data)
    return spec


def _keep(digest: str, data: SAEData) -> None:
    _CACHE[digest] = data
    _CACHE.move_to_end(digest)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)


def synthetic_data(n: int = 24, tokens: int = 20, d: int = 16, grid=(4, 4), seed: int = 0) -> SAEData:
    """Small activations with a sparse structure for tests and :func:`tiny_sweep`: ``n`` images of ``tokens``
    tokens (the first ``rows * cols`` the patches of ``grid``, the last two padding on every third image), each a
    sparse mix of ``2 d`` random directions in width ``d``, and row-normalised random attention; deterministic in
    ``seed``."""
    n, tokens, d, seed = (checks.integer(n, "n"), checks.integer(tokens, "tokens"), checks.integer(d, "d"),
                          checks.seed(seed))
    rows, cols = (checks.integer(g, "grid") for g in checks.sequence(grid, "grid", 2, 2))
    if rows * cols + 2 > tokens:
        raise ValueError(f"tokens={tokens}: need the {rows * cols} patches of grid={tuple(grid)} and 2 more")
    g = torch.Generator().manual_seed(seed)
    atoms = torch.randn(2 * d, d, generator=g)
    codes = torch.relu(torch.randn(n, tokens, 2 * d, generator=g) - 1.0)
    acts = codes @ atoms + 0.05 * torch.randn(n, tokens, d, generator=g)
    attn = torch.rand(n, rows * cols, rows * cols, generator=g)
    valid = torch.ones(n, tokens, dtype=torch.bool)
    valid[::3, -2:] = False
    return SAEData(acts, valid, torch.arange(rows * cols), (rows, cols), attn / attn.sum(-1, keepdim=True))


def _make(source: dict) -> SAEData:
    """The activations ``source`` describes, made again."""
    from .. import experiment as ex
    from ..data import make_scenes

    kind = source["source"]
    if kind == "synthetic":
        return synthetic_data(source["n"], source["tokens"], source["d"], source["grid"], source["seed"])
    if kind == "tiny-vlm":
        from ..vlm import pretrained_vlm
        model = pretrained_vlm(progress=False)[0]
        scenes = make_scenes(source["n"], seed=source["seed"])
    elif kind == "object-vlm":
        from ..studies.objregions import stored_object_vlm
        model = stored_object_vlm(source["variant"], source["layout"])[0]
        scenes = make_scenes(source["n"], seed=source["seed"], layout=source["layout"])
    else:
        raise ValueError("data: activations 'given' in another process cannot be made again here; note their "
                         "source (compbook.sae.sources.note_source) or run on the local backend with one worker")
    return ex.sae_inputs(model, scenes, source["layer"])


def check_spec(spec) -> dict:
    """``spec`` if it is a config's ``data`` field: a source (:func:`compbook.sae.sources.check_source`) with its
    ``digest`` (64 hex digits) and ``shape`` (N, T, d_in)."""
    checks.mapping(spec, "data")
    digest = spec.get("digest")
    if not isinstance(digest, str) or len(digest) != 64 or set(digest) - set("0123456789abcdef"):
        raise ValueError(f"data['digest'] must be the 64 hex digits of compbook.sae.experiment.data_digest, got "
                         f"{digest!r:.80}")
    checks.integers(spec.get("shape"), "data['shape']", 1, ndim=1, min_size=3)
    check_source({k: v for k, v in spec.items() if k not in ("digest", "shape")})
    return spec


def load_data(spec: dict) -> SAEData:
    """The training activations of a config's ``data`` spec: this process's copy, else made again from its source
    (ValueError when their digest differs from the spec's: another VLM, scenes or code than the config's)."""
    from ..experiment import data_digest

    digest = check_spec(spec)["digest"]
    if digest in _CACHE:
        _CACHE.move_to_end(digest)
        return _CACHE[digest]
    source = {k: v for k, v in spec.items() if k not in ("digest", "shape")}
    data = _make(source)
    got = data_digest(data)
    if got != digest:
        raise ValueError(f"data: activations made again from {source} have digest {got[:12]}..., the config's are "
                         f"{digest[:12]}... (another VLM, scenes or code): not trained on")
    _keep(digest, data)
    return data


# -- configs, tasks, records ---------------------------------------------------------------------------------------
def config_of(spec: dict, cfg: SAETrainConfig, optimiser: str = "ours", device: str | None = None) -> dict:
    """The config of one SAE: training data ``spec`` (:func:`data_spec`), ``cfg``'s fields, the optimiser and
    the device (default :func:`compbook.config.device`'s)."""
    from ...config import device as default_device
    from ..studies.refopt import ReferenceTrainConfig

    check_spec(spec)
    checks.instance(cfg, "cfg", SAETrainConfig)
    checks.choice(optimiser, "optimiser", OPTIMISERS)
    if optimiser == "reference" and not isinstance(cfg, ReferenceTrainConfig):
        cfg = ReferenceTrainConfig(**dataclasses.asdict(cfg))
    if optimiser == "ours" and type(cfg) is not SAETrainConfig:
        raise ValueError(f"cfg: a {type(cfg).__name__} trains with optimiser='reference', not 'ours'")
    device = default_device().type if device is None else checks.choice(device, "device", ("cpu", "cuda"))
    return {"data": dict(spec), "train": dataclasses.asdict(cfg), "optimiser": optimiser, "device": device}


def train_config(config: dict) -> SAETrainConfig:
    """The :class:`SAETrainConfig` (or :class:`~compbook.sae.studies.refopt.ReferenceTrainConfig`) of a config."""
    from ..studies.refopt import ReferenceTrainConfig

    checks.fields(checks.mapping(config, "config"), "config", ("data", "train", "optimiser", "device"),
                  ("data", "train", "optimiser", "device"))
    kind = ReferenceTrainConfig if checks.choice(config["optimiser"], "config['optimiser']",
                                                 OPTIMISERS) == "reference" else SAETrainConfig
    return checks.from_fields(kind, checks.mapping(config["train"], "config['train']"), "config['train']")


def group_of(config: dict) -> list:
    """What the SAEs of one stack share: data, device, optimiser and every training field but lambda, seed and
    the regions' count, exponent and penalty weights (:data:`compbook.sae.runs.stack.SHARED` among them)."""
    own = ("lam", "seed", "n_regions", "exponent", "gs_weight", "es_weight")
    return [config["data"]["digest"], config["device"], config["optimiser"],
            {k: v for k, v in sorted(config["train"].items()) if k not in own}]


def bytes_of(config: dict) -> int:
    """Memory of one SAE while it trains (float32): weights, gradients and Adam's two moments, and one batch's
    activations, codes and their gradients."""
    n, t, d = config["data"]["shape"]
    tr = config["train"]
    d_sae, b = int(tr["d_sae"]), min(int(tr["batch_images"]), int(n))
    params = 2 * d * d_sae + d_sae + d
    return 4 * (4 * params + 4 * b * t * (d_sae + d))


def _device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("config device='cuda': this worker has no GPU")
    return torch.device(name)


def fit_many(configs: list) -> list:
    """Train the SAEs of ``configs`` (one :func:`group_of`) as one stack; one record per config, in order."""
    from ..studies.refopt import reference_start
    from .stack import fit_stack
    from ..topk import TopKSAE

    configs = checks.sequence(configs, "configs", 1)
    cfgs = [train_config(c) for c in configs]
    if len({_group_text(c) for c in configs}) > 1:
        raise ValueError("configs: a stack needs one group (same data, device, optimiser, shape and budget)")
    data = load_data(configs[0]["data"])
    schedule = clip = None
    if configs[0]["optimiser"] == "reference":
        starts = [reference_start(data, c) for c in cfgs]
        saes, cfgs, schedule, clip = [s[0] for s in starts], [s[1] for s in starts], starts[0][2], cfgs[0].clip
    else:
        saes = []
        for c in cfgs:                                       # as compbook.sae.s2ae.train_sae starts one
            sae = TopKSAE(data.acts.shape[-1], c.d_sae, c.k, seed=c.seed)
            with torch.no_grad():
                sae.b_dec.copy_(data.tokens.mean(0))
            saes.append(sae)
    results = fit_stack(saes, data, cfgs, schedule=schedule, clip=clip, device=_device(configs[0]["device"]))
    return [{"W_enc": r.sae.W_enc.detach().clone(), "W_dec": r.sae.W_dec.detach().clone(),
             "b_enc": r.sae.b_enc.detach().clone(), "b_dec": r.sae.b_dec.detach().clone(),
             "train s": float(r.seconds), "final loss": float(r.losses[-1])} for r in results]


def _group_text(config: dict) -> str:
    """:func:`group_of` as canonical text (hashable)."""
    from ...results.journal import canonical
    return canonical(group_of(config), where="group_of(config)")


def fit_one(config: dict) -> dict:
    """One config's record (a stack of one)."""
    return fit_many([config])[0]


def record_sae(record: dict, config: dict):
    """The :class:`~compbook.sae.topk.TopKSAE` of ``config`` holding ``record``'s weights."""
    from ..topk import TopKSAE

    c = train_config(config)
    checks.fields(checks.mapping(record, "record"), "record", ("W_enc", "W_dec", "b_enc", "b_dec", "train s",
                                                               "final loss"), ("W_enc", "W_dec", "b_enc", "b_dec"))
    sae = TopKSAE(int(config["data"]["shape"][-1]), c.d_sae, c.k, seed=c.seed)
    try:
        sae.load_state_dict({k: record[k] for k in ("W_enc", "W_dec", "b_enc", "b_dec")}, strict=True)
    except RuntimeError as e:
        raise ValueError(f"record: its weights do not fit the config's SAE ({e})") from None
    return sae


def sweep_of(configs: list, command: str | None = None):
    """The :class:`compbook.runs.sweeps.Sweep` of SAE ``configs`` (:func:`config_of`): stacked by :func:`group_of`."""
    from ...runs import sweeps
    return sweeps.Sweep(NAME, configs, run=fit_one, run_many=fit_many, group=group_of, model_bytes=bytes_of,
                        command=command)


def study_sweep(data, ks, lams, seeds, base: SAETrainConfig, optimiser: str = "ours", device: str | None = None,
                command: str | None = None):
    """One config per SAE of the k / lambda study (chapter 15): every k of ``ks``, seed of ``seeds`` and lambda of
    ``lams`` (in that order, as :func:`compbook.sae.studies.study.study_runs`' rows), ``base``'s other fields, trained
    on ``data`` (a spec of :func:`data_spec`, or the :class:`SAEData` itself: this process's)."""
    ks = checks.integers(ks, "ks", 1, ndim=1, min_size=1).tolist()
    lams = [checks.real(lam, "lams", 0) for lam in checks.sequence(lams, "lams")]
    seeds = checks.integers(seeds, "seeds", 0, ndim=1, min_size=1).tolist()
    checks.instance(base, "base", SAETrainConfig)
    spec = data_spec(data) if isinstance(data, SAEData) else data
    cfgs = [dataclasses.replace(base, k=int(k), lam=lam, seed=int(seed)) for k in ks for seed in seeds for lam in lams]
    return sweep_of([config_of(spec, c, optimiser, device) for c in cfgs], command)


#: :func:`tiny_sweep`'s activations and SAE: a few seconds on one CPU.
TINY_SOURCE = {"source": "synthetic", "n": 24, "tokens": 20, "d": 16, "grid": [4, 4], "seed": 0}
TINY_BASE = SAETrainConfig(d_sae=32, k=2, steps=25, batch_images=4, lr=3e-3, n_regions=4)


def tiny_sweep():
    """The study at toy sizes (ks 2 and 4 x seeds 0 and 1 x vanilla and S2AE, 25 steps of a 16 x 32 SAE on
    :func:`synthetic_data`, on the CPU): what the runner's backends are compared on."""
    spec = data_spec(synthetic_data(**{k: v for k, v in TINY_SOURCE.items() if k != "source"}), TINY_SOURCE)
    return study_sweep(spec, (2, 4), (0.0, 0.01), (0, 1), TINY_BASE, device="cpu")


# -- the study's runs: the runner's records, else the SAEs stored before it, else run ------------------------------
def records_store(store: str):
    """The folder of the runner's records of SAE store ``store``: ``data/<store>/sweep/`` (registered records are
    fetched outside a checkout: :func:`compbook.results.door.local_path`)."""
    return door.local_path(f"{store}/{RECORDS}", "store")


def forget(where, keys) -> None:
    """Remove the records of ``keys`` from the runner's store ``where`` (header first: a record is then absent)."""
    for key in keys:
        for suffix in (".json", ".safetensors"):
            (where / f"{key}{suffix}").unlink(missing_ok=True)


def trained(train: SAEData, plan: list, store: str, optimiser: str = "ours", retrain: bool = False,
            progress: bool = False, log=None, **options) -> list:
    """The SAE of every ``(cfg, legacy store)`` of ``plan`` trained on ``train``: the runner's record in
    ``data/<store>/sweep/``, else the file :func:`compbook.sae.experiment.stored_runs` keeps in ``data/<legacy
    store>/``, else trained by :func:`compbook.runs.sweeps.run` (``options``: backend, address, workers, retries,
    per_task) and recorded; ``retrain``: every one trained again. ``[{"method", "seed", "sae", "train s"}]``."""
    from ...runs import sweeps
    from .. import experiment as ex

    checks.boolean(retrain, "retrain")
    spec = data_spec(train)
    configs = [config_of(spec, c, optimiser) for c, _ in plan]
    sweep = sweep_of(configs)
    where = records_store(store)
    have = {} if retrain else sweeps.load_records(where, sweep)
    legacy = {}
    for key, (c, old) in zip(sweep.keys, plan):             # every stored file is checked before any training
        if key not in have and not retrain:
            _, name, path, stored = ex.stored_sae(spec["digest"], c, old)
            if stored:
                legacy[key] = (c, name, path)
    missing = [c for k, c in zip(sweep.keys, configs) if k not in have and k not in legacy]
    if missing:
        if spec["source"] == "given" and (options.get("backend", "local") != "local" or
                                          (options.get("workers") or 1) > 1):
            raise ValueError("train: activations without a source (compbook.sae.sources.note_source) train only in "
                             "this process: use backend='local' with one worker")
        if retrain:
            forget(where, sweep.keys)
        report = sweeps.run(sweep_of(missing), where, progress=progress, **options).check()
        have |= report.records
        if log:
            log(f"{len(report.ran)} SAEs trained in {report.seconds:.1f} s ({len(plan) - len(missing)} stored)")
    runs = []
    for key, (c, _), config in zip(sweep.keys, plan, configs):
        if key in legacy:
            runs.append(ex.load_stored(*legacy[key]))
        else:
            runs.append({"method": ex.method_name(c.lam), "seed": c.seed, "sae": record_sae(have[key], config),
                         "train s": have[key]["train s"]})
    return runs
