"""Part A's long runs as sweeps of :mod:`compbook.runs.sweeps` (chapters 5-9): the SGD twins of the Picbreeder targets
(:mod:`compbook.cppn.twins`) and EMC2 scores of many stored networks (:mod:`compbook.cppn.emc2`).

Each is a :class:`compbook.runs.sweeps.Sweep`: one JSON config per result, a module-level task that computes it, and
the runner's store, so a killed run resumes with only the missing configs and a backend (``local``, ``ray``)
spreads the tasks.

* :func:`twin_sweep`: one config per twin (target, resolution, steps, lr, seed, recipe options). The seeds of one
  recipe are trained together (:func:`compbook.cppn.twins.train_twins` stacks them in one ``fit_many``): a twin's
  config names its ``stack`` (the seeds trained with it), because training stops when *every* seed of the stack
  has plateaued and the stored ``made_by`` names the stack; :func:`train_twin_stack` (the ``run_many``) trains a
  stack in one task. :func:`write_twins` writes the records as :func:`~compbook.cppn.twins.save_twins` writes
  them (``data/emc2/twin_*``, what :func:`~compbook.cppn.twins.load_twins` reads).
* :func:`fer_twin_sweep`: the same for twins of FER's architecture (:class:`~compbook.cppn.twins.FerTwinRecipe`),
  one per target and seed; :func:`write_fer_twins`.
* :func:`scoring_sweep`: one config per network (a stored checkpoint's path and content hash, or a genome's name
  and hash) with the score's settings and the judge (its registry name, options and identity); the task builds
  the judge from the config (:func:`compbook.cppn.judges.registry.make_judge`, or a
  :class:`~compbook.cppn.judges.server.ServerJudge` when the config names a server: its batches are streamed),
  renders the perturbations on :func:`compbook.config.device` and returns the score record (:func:`score_result`
  turns it back into a :class:`~compbook.cppn.emc2.ScoreResult`).
* :func:`tiny_scoring_sweep`: four tiny networks, the SSIM judge, seconds on a CPU (the runner's tests).
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np

from ... import checks, config
from ...results import paths
from ...runs import sweeps
from ...config import using_threads
from ...results.journal import canonical
from .. import emc2, picbreeder, twins as tw
from ..data import store
from ..network import CPPN
from ...results import door

TWIN_SWEEP = "cppn/twins"
FER_TWIN_SWEEP = "cppn/fer-twins"
SCORING_SWEEP = "cppn/emc2-scores"
#: Judges a config can name (the registry's; "image-reference" needs an image, not a JSON option)
SCORING_JUDGES = ("default", "reference", "classifier", "ssim", "vlm", "server")
#: What a VLM in process takes on its device while scoring (Qwen3-VL-4B in bf16 and its activations; our estimate)
VLM_BYTES = 12 * 2**30
_TWIN_FIELDS = ("target", "res", "steps", "lr", "optimizer", "normalize_grad", "straight_through",
                "stop_at_plateau", "max_minutes", "keep_best")


def default_store(name: str) -> Path:
    """Where a command keeps a sweep's records unless told: :func:`compbook.runs.sweeps.store_for` (Part A's store
    ``emc2``)."""
    return sweeps.store_for(name, "emc2")


def run_sweep(sweep: sweeps.Sweep, store=None, progress: bool = False, check: bool = True,
              run_options: dict | None = None) -> sweeps.Report:
    """:func:`compbook.runs.sweeps.run` of ``sweep`` into ``store`` (default :func:`default_store`) with
    ``run_options`` (backend, address, workers, retries, per_task); the report, checked unless ``check`` is False."""
    report = sweeps.run(sweep, Path(store) if store else default_store(sweep.name), progress=progress,
                        **(run_options or {}))
    return report.check() if check else report


def _model_tensors(model: CPPN) -> dict:
    """A CPPN's weights and masks as record entries ``weight<l>``, ``mask<l>`` (``(out, in)`` each, on the CPU)."""
    out = {}
    for l, (w, m) in enumerate(zip(model.weights, model.masks)):
        out[f"weight{l}"], out[f"mask{l}"] = w.detach().cpu().clone(), m.detach().cpu().clone()
    return out


def record_model(record: dict) -> CPPN:
    """The CPPN a twin record holds (its ``activations``, ``color``, ``weight<l>`` and ``mask<l>``)."""
    if not isinstance(record, dict) or "activations" not in record or "color" not in record:
        raise ValueError(f"record must be a twin record (activations, color, weight<l>, mask<l>), got "
                         f"{type(record).__name__}")
    n = len(record["activations"]) + 1
    return CPPN(record["activations"], record["color"], [record[f"weight{l}"] for l in range(n)],
                [record[f"mask{l}"] for l in range(n)])


# -- SGD twins of the Picbreeder networks ------------------------------------------------------------------------------
def twin_configs(recipe: tw.TwinRecipe, threads: int = 1) -> list[dict]:
    """One config per seed of ``recipe`` (chapter 5): the recipe's fields, ``seed``, ``stack`` (all its seeds,
    trained together) and ``threads`` (torch's CPU threads while training)."""
    checks.instance(recipe, "recipe", tw.TwinRecipe)
    threads = checks.integer(threads, "threads")
    base = {k: getattr(recipe, k) for k in _TWIN_FIELDS} | {"stack": list(recipe.seeds), "threads": threads}
    return [base | {"seed": s} for s in recipe.seeds]


def twin_sweep(recipes, res: int = 64, steps: int = 20000, seeds=(0, 1, 2), lr: float | None = None,
               threads: int = 1, command: str | None = None, **options) -> sweeps.Sweep:
    """The sweep of SGD twins (chapter 5): ``recipes`` a :class:`~compbook.cppn.twins.TwinRecipe`, a list of
    them, a target name or a list of names (each made a recipe with ``res``, ``steps``, ``seeds``, ``lr`` and
    ``options``, the recipe's other fields: ``stop_at_plateau``, ``max_minutes``, ``keep_best``, ...).

    A twin's key names its recipe, seed and stack, not the steps run: a recipe that stops at a plateau or after
    ``max_minutes`` stores what its run reached (``steps_run``, ``stopped_by``; with ``max_minutes`` that depends
    on the machine's speed, as :func:`~compbook.cppn.twins.train_twins`' does)."""
    if isinstance(recipes, (str, tw.TwinRecipe)):
        recipes = [recipes]
    recipes = checks.sequence(recipes, "recipes")
    made = [r if isinstance(r, tw.TwinRecipe) else tw.TwinRecipe(r, res, steps, lr, list(seeds), **options)
            for r in recipes]
    configs = [c for r in made for c in twin_configs(r, threads)]
    return sweeps.Sweep(name=TWIN_SWEEP, configs=configs, run=train_twin, run_many=train_twin_stack,
                        group=twin_group, model_bytes=twin_bytes, command=command)


def _stack_recipe(config: dict) -> tw.TwinRecipe:
    """The recipe of a twin config's stack (``ValueError`` naming a missing or unknown field)."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    want = set(_TWIN_FIELDS) | {"seed", "stack", "threads"}
    if set(config) != want:
        raise ValueError(f"config: a twin config has the fields {sorted(want)}; missing "
                         f"{sorted(want - set(config))}, unknown {sorted(set(config) - want)}")
    checks.integer(config["threads"], "config['threads']")
    recipe = tw.TwinRecipe(**{k: config[k] for k in _TWIN_FIELDS}, seeds=list(config["stack"]))
    if config["seed"] not in recipe.seeds:
        raise ValueError(f"config: seed {config['seed']!r} is not in its stack {recipe.seeds}")
    return recipe


def twin_group(config: dict) -> str:
    """Configs of one stack share a task (everything but the seed)."""
    return canonical({k: v for k, v in config.items() if k != "seed"})


@functools.lru_cache(maxsize=None)
def _widths(target: str) -> tuple[int, ...]:
    return tuple(picbreeder.layerize(picbreeder.load_genome(target)).widths)


def twin_bytes(config: dict) -> int:
    """Memory of one twin while training (our estimate): every layer's pre-activation, activation and gradient
    at ``res * res`` pixels in float32, the coordinates and the target."""
    neurons = sum(_widths(config["target"])) + 4 + 3
    return 3 * 4 * neurons * config["res"] ** 2 + 4 * 7 * config["res"] ** 2


def _twin_record(recipe: tw.TwinRecipe, model: CPPN, losses: np.ndarray, seconds: float, j: int) -> dict:
    """Seed ``recipe.seeds[j]``'s record: its weights and masks, losses ``(steps,)``, and what
    :func:`~compbook.cppn.twins.save_twins` writes (``stem``, ``metadata``, ``made_by``)."""
    stem, meta, made_by = tw.twin_files(recipe, model, losses, seconds, j)
    return {"kind": "twin", "target": recipe.target, "seed": recipe.seeds[j], "stem": stem, "metadata": meta,
            "made_by": made_by, "activations": model.activations, "color": model.color,
            "seconds": seconds, "steps_run": recipe.steps, "max_steps": recipe.max_steps,
            "stopped_by": recipe.stopped_by, "losses": np.ascontiguousarray(losses[:, j])} | _model_tensors(model)


def train_twin_stack(configs: list[dict]) -> list[dict]:
    """``run_many``: train each stack among ``configs`` once (:func:`~compbook.cppn.twins.train_twins`, its seeds
    together) and return the asked twins' records in ``configs`` order (a stack split between tasks is trained
    whole in each, so a twin's record never depends on the split)."""
    stacks: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
        _stack_recipe(c)
        stacks.setdefault(twin_group(c), []).append(i)
    out: list[dict | None] = [None] * len(configs)
    for members in stacks.values():
        first = configs[members[0]]
        recipe = _stack_recipe(first)
        with config.using_threads(first["threads"]):
            models, losses, seconds = tw.train_twins(recipe, progress=False)
            for i in members:
                j = recipe.seeds.index(configs[i]["seed"])
                out[i] = _twin_record(recipe, models[j], losses, seconds, j)
    return out


def train_twin(config: dict) -> dict:
    """``run``: one twin's record (its stack trained, :func:`train_twin_stack`)."""
    return train_twin_stack([config])[0]


def _write(records, kind: str, folder) -> list[Path]:
    records = list(records.values()) if isinstance(records, dict) else checks.sequence(records, "records")
    for r in records:
        if not isinstance(r, dict) or r.get("kind") != kind:
            got = r.get("kind") if isinstance(r, dict) else type(r).__name__
            raise ValueError(f"records: expected {kind} records, got {got!r}")
    return [store.save_cppn(record_model(r), Path(folder) / r["stem"] if folder is not None else
                            door.made_path(r["stem"]), r["metadata"], r["made_by"]) for r in records]


def write_twins(records, folder=None) -> list[Path]:
    """Store twin records (a list, or a ``{key: record}`` dict) as :func:`~compbook.cppn.twins.save_twins` does:
    ``<folder>/emc2/twin_<target>_<res>px_<steps>steps_seed<s>`` (default folder ``data/``); JSON paths."""
    return _write(records, "twin", folder)


def make_twins(recipes, folder=None, store=None, threads: int = 1, command: str | None = None,
               progress: bool = False, run_options: dict | None = None) -> list[dict]:
    """Chapter 5's twins of ``recipes`` (:func:`twin_sweep`) trained by the runner (:func:`run_sweep`) and stored
    in ``folder`` as :func:`~compbook.cppn.twins.save_twins` stores them; one row per twin: file, target, seed,
    steps run, why it stopped, seconds (of its stack), MSE and PSNR at 64 px, PSNR at 256 px."""
    report = run_sweep(twin_sweep(recipes, threads=threads, command=command), store, progress, True, run_options)
    records = [r for _, r in report.by_config]
    return [{"file": p.name, "target": r["target"], "seed": r["seed"], "steps_run": r["steps_run"],
             "stopped_by": r["stopped_by"], "seconds": r["seconds"]}
            | {k: r["metadata"][k] for k in ("mse_64", "psnr_64", "psnr_256")}
            for p, r in zip(write_twins(records, folder), records)]


# -- twins of FER's architecture ---------------------------------------------------------------------------------------
def fer_twin_sweep(recipes, seeds=(0,), threads: int = 1, max_minutes: float | None = None,
                   checkpoints=None, command: str | None = None, **options) -> sweeps.Sweep:
    """Twins of FER's architecture (chapter 5), one config per target and seed: ``recipes`` a
    :class:`~compbook.cppn.twins.FerTwinRecipe`, a list of them, a target or a list of targets (made recipes with
    each of ``seeds`` and ``options``). ``checkpoints``: a folder for each task's resumable state
    (``fertwin_<target>_seed<s>_ckpt.pt``; None: none); a task stopped by ``max_minutes`` fails, naming its
    checkpoint, and the next run resumes from it (resuming gives the uninterrupted run's weights)."""
    if isinstance(recipes, (str, tw.FerTwinRecipe)):
        recipes = [recipes]
    made = [r if isinstance(r, tw.FerTwinRecipe) else tw.FerTwinRecipe(r, s, **options)
            for r in checks.sequence(recipes, "recipes") for s in ([None] if isinstance(r, tw.FerTwinRecipe)
                                                                   else seeds)]
    if max_minutes is not None:
        max_minutes = checks.real(max_minutes, "max_minutes", 0)
    threads = checks.integer(threads, "threads")
    configs = [asdict(r) | {"threads": threads, "max_minutes": max_minutes, "checkpoint": None if checkpoints is None
                            else str(Path(checkpoints) / f"fertwin_{r.target}_seed{r.seed}_ckpt.pt")} for r in made]
    return sweeps.Sweep(name=FER_TWIN_SWEEP, configs=configs, run=train_fer_twin_task, command=command)


def train_fer_twin_task(config: dict) -> dict:
    """``run``: one twin of FER's architecture, trained to its last step (or ``RuntimeError`` when stopped by
    ``max_minutes``: rerun to resume from the config's checkpoint)."""
    names = {f.name for f in fields(tw.FerTwinRecipe)}
    want = names | {"threads", "max_minutes", "checkpoint"}
    if not isinstance(config, dict) or set(config) != want:
        raise ValueError(f"config: a FER twin config has the fields {sorted(want)}")
    recipe = tw.FerTwinRecipe(**{k: config[k] for k in names})
    ckpt = None if config["checkpoint"] is None else Path(config["checkpoint"])
    if ckpt is not None:
        ckpt.parent.mkdir(parents=True, exist_ok=True)
    with using_threads(config["threads"]):
        model, info = tw.train_fer_twin(recipe, ckpt, max_minutes=config["max_minutes"])
        if not info["done"]:
            raise RuntimeError(f"{recipe.target} seed {recipe.seed}: stopped at step {info['steps']} (time); rerun "
                               f"to resume from {ckpt}")
        stem, meta, made_by = tw.fer_twin_files(recipe, model, info)
    return {"kind": "fertwin", "target": recipe.target, "seed": recipe.seed, "stem": stem, "metadata": meta,
            "made_by": made_by, "activations": model.activations, "color": model.color, "info": info,
            "losses": np.asarray(info["losses"], dtype=np.float64)} | _model_tensors(model)


def write_fer_twins(records, folder=None) -> list[Path]:
    """Store FER-architecture twin records as :func:`~compbook.cppn.twins.save_fer_twin` does; JSON paths."""
    return _write(records, "fertwin", folder)


def make_fer_twins(targets, seeds, folder=None, store=None, threads: int = 1, max_minutes: float | None = None,
                   command: str | None = None, progress: bool = False, run_options: dict | None = None,
                   **recipe) -> tuple[list[dict], list[str]]:
    """Twins of FER's architecture (:func:`fer_twin_sweep`, ``recipe``: :class:`~compbook.cppn.twins.FerTwinRecipe`'s
    fields) trained by the runner, each resumable from ``fertwin_<target>_seed<s>_ckpt.pt`` in ``<folder>/emc2/``
    (no ``folder``: the temporary folder), and the finished ones stored in ``folder`` as
    :func:`~compbook.cppn.twins.save_fer_twin` does. With ``max_minutes`` a task is not retried (the next call
    resumes it). Returns ``(rows: file, PSNR at 256 px, seconds; errors of the tasks not finished)``."""
    ckpts = Path(folder) / tw.FOLDER if folder is not None else Path(tempfile.gettempdir())
    sweep = fer_twin_sweep(targets, seeds, threads, max_minutes, ckpts, command, **recipe)
    run_options = (run_options or {}) | ({"retries": 0} if max_minutes is not None else {})
    report = run_sweep(sweep, store, progress, False, run_options)
    done = [r for _, r in report.by_config if r is not None]
    rows = [{"file": p.name, "psnr_256": r["metadata"]["psnr_256"], "seconds": r["metadata"]["train_seconds"]}
            for p, r in zip(write_fer_twins(done, folder), done)]
    return rows, list(report.failed.values())


# -- EMC2 scores of many networks --------------------------------------------------------------------------------------
def _relative(path: Path) -> str:
    """``path`` relative to the checkout's root when inside it (the same on every machine of a cluster)."""
    path = Path(path).resolve()
    root = paths.repository_root()
    if root is not None and path.is_relative_to(root.resolve()):
        return path.relative_to(root.resolve()).as_posix()
    return str(path)


def _resolve(path: str) -> Path:
    p = Path(path)
    root = paths.repository_root()
    return p if p.is_absolute() or root is None else root / p


def network_spec(network) -> dict:
    """A network as a config names it (chapters 5-9): a genome name (``"skull"``) -> ``{"genome", "digest"}``; a
    checkpoint path (``.json``, ``.safetensors`` or the stem) -> ``{"checkpoint", "digest"}``, the path relative to
    the checkout; the digest is the network's :func:`~compbook.cppn.data.store.content_hash`, so a changed
    checkpoint is another question. A dict with ``genome`` or ``checkpoint`` gets its digest (re)computed."""
    if isinstance(network, dict):
        if set(network) - {"genome", "checkpoint", "digest"} or ("genome" in network) == ("checkpoint" in network):
            raise ValueError(f"network: expected {{'genome': name}} or {{'checkpoint': path}}, got {network!r}")
        network = network.get("genome") or Path(network["checkpoint"])
    if isinstance(network, str) and network in picbreeder.GENOMES:
        return {"genome": network, "digest": store.content_hash(_load({"genome": network}))}
    if not isinstance(network, (str, Path)):
        raise ValueError(f"network must be a genome name {tuple(picbreeder.GENOMES)} or a checkpoint path, got "
                         f"{type(network).__name__}")
    p = Path(network)
    p = p.with_suffix("") if p.suffix in (".json", ".safetensors") else p
    if not p.with_suffix(".json").is_file():
        raise ValueError(f"network {str(network)!r}: not a genome {tuple(picbreeder.GENOMES)} and no checkpoint "
                         f"{p.with_suffix('.json')}")
    return {"checkpoint": _relative(p), "digest": store.content_hash(store.load_cppn(p))}


def _load(spec: dict) -> CPPN:
    if "genome" in spec:
        return picbreeder.layerize(picbreeder.load_genome(spec["genome"]))
    return store.load_cppn(_resolve(spec["checkpoint"]))


def load_network(spec: dict) -> CPPN:
    """The network a config's ``network`` names, its content hash checked against the config's digest."""
    if not isinstance(spec, dict) or set(spec) not in ({"genome", "digest"}, {"checkpoint", "digest"}):
        raise ValueError(f"network: expected {{'genome' or 'checkpoint', 'digest'}} (network_spec), got {spec!r}")
    model = _load(spec)
    if store.content_hash(model) != spec["digest"]:
        raise ValueError(f"network {spec}: its content hash is now {store.content_hash(model)}, not the digest "
                         f"planned (the checkpoint changed since the sweep was made; make the sweep again)")
    return model


def _concept(spec: dict, concept: str | None) -> str:
    if concept is not None:
        return checks.non_empty_str(concept, "concept")
    if "genome" in spec:
        return spec["genome"]
    target = store.load_metadata(_resolve(spec["checkpoint"])).get("target")
    if not isinstance(target, str):
        raise ValueError(f"concept: required for {spec['checkpoint']} (its metadata names no 'target')")
    return target


def judge_spec(judge="ssim", server: str | None = None, **options) -> dict:
    """A judge as a config names it: ``{"name", "options", "identity"}`` (``options`` JSON-able keyword arguments
    of :func:`compbook.cppn.judges.registry.make_judge`; ``server``: an OpenAI-compatible server's URL, the judge
    then "server"). The identity is computed here (without loading a VLM) and checked again in the task."""
    from ..judges.vlm import vlm_identity
    name = "server" if server is not None and judge in (None, "server") else judge
    checks.choice(name, "judge", SCORING_JUDGES)
    if (name == "server") != (server is not None):
        raise ValueError(f"judge={judge!r}, server={server!r}: a server URL goes with the 'server' judge only")
    if "api_key" in options or "base_url" in options:
        raise ValueError("judge options: give the server as server= and its key as api_key_env= (the name of an "
                         "environment variable), never the key itself")
    try:
        options = json.loads(json.dumps(options, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise ValueError(f"judge options must be JSON-able ({e}): {options!r:.200}") from None
    if name == "vlm":
        keep = ("model_id", "revision", "prompt", "max_new_tokens", "image_size", "generate_kwargs")
        identity = vlm_identity(**{k: options[k] for k in keep if k in options})
    else:
        identity = _make_judge({"name": name, "options": options}, server).identity
    return {"name": name, "options": options, "identity": identity}


def _make_judge(spec: dict, server: str | None):
    """The judge ``spec`` names, built here (in the task: judges are never pickled)."""
    from ..judges.registry import make_judge
    options = dict(spec["options"])
    if spec["name"] == "server":
        env = options.pop("api_key_env", "OPENAI_API_KEY")
        return make_judge("server", base_url=server, api_key=os.environ.get(env) or None, **options)
    return make_judge(spec["name"], **options)


_SCORE_FIELDS = ("network", "concept", "delta", "res", "policy", "seed", "engine", "batch_size", "sample", "judge",
                 "server")


def scoring_sweep(networks, concept: str | None = None, judge="ssim", delta: float = 0.5, res: int = 64,
                  policy: str = "plus", seed: int = 0, engine: str = "fast", batch_size: int = 64,
                  sample: int | None = None, server: str | None = None, judge_options: dict | None = None,
                  command: str | None = None) -> sweeps.Sweep:
    """EMC2 scores of many networks (chapters 5-9), one config per network: ``networks`` genome names and/or
    checkpoint paths (:func:`network_spec`); ``concept`` (None: each genome's name, or a checkpoint's metadata
    ``target``); ``judge`` a name of :data:`SCORING_JUDGES` or a :func:`judge_spec` dict; the rest are
    :func:`~compbook.cppn.emc2.compositional_score`'s settings. The task's record: :func:`score_network`."""
    networks = [networks] if isinstance(networks, (str, Path, dict)) else checks.sequence(networks, "networks")
    spec = judge if isinstance(judge, dict) else judge_spec(judge, server, **(judge_options or {}))
    if set(spec) != {"name", "options", "identity"}:
        raise ValueError(f"judge: a name or a judge_spec dict, got {judge!r}")
    checks.real(delta, "delta", nonzero=True)
    checks.choice(policy, "policy", emc2.POLICIES)
    checks.choice(engine, "engine", emc2.ENGINES)
    settings = {"delta": float(delta), "res": checks.integer(res, "res"), "policy": policy, "seed": checks.seed(seed),
                "engine": engine, "batch_size": checks.integer(batch_size, "batch_size"),
                "sample": checks.optional_integer(sample, "sample"), "judge": spec, "server": server}
    configs = []
    for n in networks:
        net = network_spec(n)
        configs.append({"network": net, "concept": _concept(net, concept)} | settings)
    return sweeps.Sweep(name=SCORING_SWEEP, configs=configs, run=score_network, run_many=score_networks,
                        group=judge_group, model_bytes=scoring_bytes, command=command)


def _check_score_config(config) -> None:
    if not isinstance(config, dict) or set(config) != set(_SCORE_FIELDS):
        got = sorted(config) if isinstance(config, dict) else type(config).__name__
        raise ValueError(f"config: a scoring config has the fields {sorted(_SCORE_FIELDS)}, got {got}")


def judge_group(config: dict) -> str:
    """Configs asking one judge share a task (a VLM is loaded once per task)."""
    return canonical([config["judge"], config["server"]])


def scoring_bytes(config: dict) -> int:
    """Memory of one score on its device (our estimate): a batch of renders and the base pass of a 32-neuron-wide
    network at ``res`` px, and a VLM's weights when one runs in process."""
    px = config["res"] ** 2
    return 4 * px * (3 * config["batch_size"] + 2 * 32 * 8) + (VLM_BYTES if config["judge"]["name"] == "vlm" else 0)


def _score(config: dict, judge) -> dict:
    model = load_network(config["network"])
    result = emc2.compositional_score(model, judge, config["concept"], config["delta"], config["res"],
                                      config["policy"], config["seed"], config["batch_size"], progress=False,
                                      engine=config["engine"], sample=config["sample"])
    return {"kind": "score", "network": config["network"], "judge": judge.identity, "score": result.score,
            "verdicts": result.verdicts.cpu(), "weights": [list(w) for w in result.weights],
            "deltas": result.deltas.cpu(), "source": result.source, "concept": result.concept,
            "policy": result.policy, "delta": result.delta, "res": result.res, "engine": result.engine,
            "model_hash": result.model_hash, "n_nonzero": result.n_nonzero, "seconds": result.seconds,
            "unparsed": len(getattr(judge, "unparsed", [])), "reference": result.reference.cpu()}


def score_networks(configs: list[dict]) -> list[dict]:
    """``run_many``: each config's score record, one judge built per distinct judge of ``configs``."""
    for c in configs:
        _check_score_config(c)
    judges, out = {}, []
    try:
        for c in configs:
            g = judge_group(c)
            if g not in judges:
                judges[g] = _make_judge(c["judge"], c["server"])
                if judges[g].identity != c["judge"]["identity"]:
                    raise ValueError(f"judge: built {judges[g].identity!r}, the config says "
                                     f"{c['judge']['identity']!r} (its settings changed; make the sweep again)")
            out.append(_score(c, judges[g]))
    finally:
        for j in judges.values():
            getattr(j, "close", lambda: None)()
    return out


def score_network(config: dict) -> dict:
    """``run``: one network's score record (:func:`score_networks`): score, verdicts ``(M,)`` bool, weights,
    deltas ``(M,)`` float64, reference ``(res, res, 3)`` and the settings."""
    return score_networks([config])[0]


def score_result(record: dict) -> emc2.ScoreResult:
    """The :class:`~compbook.cppn.emc2.ScoreResult` a score record holds."""
    if not isinstance(record, dict) or record.get("kind") != "score":
        raise ValueError(f"record must be a score record, got {type(record).__name__}")
    return emc2.ScoreResult(record["score"], record["verdicts"], [tuple(w) for w in record["weights"]],
                            record["deltas"], record["source"], record["concept"], record["policy"],
                            record["delta"], record["res"], record["engine"], record["model_hash"],
                            record["n_nonzero"], record["seconds"], record["reference"])


def scores(sweep: sweeps.Sweep, store=None, progress: bool = False, run_options: dict | None = None) -> list[dict]:
    """The scores of a :func:`scoring_sweep` run by :func:`run_sweep`: one row per network (network, concept,
    score, perturbations judged, judge identity, delta, res, policy), in config order."""
    return [{"network": c["network"].get("genome") or c["network"]["checkpoint"], "concept": r["concept"],
             "score": r["score"], "n": len(r["weights"]), "judge": r["judge"], "delta": r["delta"], "res": r["res"],
             "policy": r["policy"]} for c, r in run_sweep(sweep, store, progress, True, run_options).by_config]


# -- a tiny sweep for the runner's tests -------------------------------------------------------------------------------
TINY_LAYOUTS = ([["tanh", "sin", "gaussian"]], [["sin", "sin"], ["tanh", "gaussian"]],
                [["gaussian", "tanh", "sin", "tanh"]], [["tanh", "tanh"], ["sin", "sin"]])


def tiny_networks(folder=None) -> list[Path]:
    """Four tiny CPPNs (one or two hidden layers of 2-4 neurons, gray, seeds 0-3) stored in ``folder`` (default: a
    folder of the temporary directory; a cluster's workers must see it); JSON paths."""
    folder = Path(folder) if folder is not None else Path(tempfile.gettempdir()) / "compbook-tiny-networks"
    out = []
    for k, layout in enumerate(TINY_LAYOUTS):
        model = CPPN(layout, "gray", seed=k)
        path = folder / f"tiny{k}"
        if path.with_suffix(".json").is_file():
            try:
                if store.content_hash(store.load_cppn(path)) == store.content_hash(model):
                    out.append(path.with_suffix(".json"))
                    continue
            except ValueError:
                pass
        out.append(store.save_cppn(model, path, {"target": "tiny"}, "compbook.cppn.runs.scoring_tasks.tiny_networks"))
    return out


def tiny_scoring_sweep(folder=None) -> sweeps.Sweep:
    """EMC2 scores of :func:`tiny_networks` (stored in ``folder``) under the SSIM judge at 16 px, "both" signs:
    four configs, seconds on a CPU."""
    return scoring_sweep(tiny_networks(folder), concept="pattern", judge="ssim", delta=1.0, res=16, policy="both",
                         batch_size=8)
