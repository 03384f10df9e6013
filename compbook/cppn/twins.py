"""SGD twins of the Picbreeder networks, trained with FER's recipe (chapters 5-9).

A *twin* is a dense CPPN with the layerized Picbreeder network's architecture (same depth, widths and
per-neuron activations, every connection present, ``CPPN(..., seed=s)`` initialisation), fitted to the genome's
float64 render by FER's recipe: MSE, Adam on the gradient normalised to unit L2 norm, lr 3e-3 (apple 3e-4),
straight-through output clips (:mod:`compbook.cppn.train`). FER runs 100k steps at 256x256; the book's stored twins
(``data/emc2/twin_<target>_<res>px_<steps>steps_seed<s>``) run as many steps at 64x64 as a CPU allows, and their
JSON holds the recipe, the loss curve (every ``LOG_EVERY`` steps), the final MSE and the PSNR against the
reference render at 64 px and at 256 px (the reference PNG, as ``../shared/picbreeder/README.md`` measures FER's).

Command line (what made ``data/emc2/``)::

    nice -n 10 python -m compbook.cppn twins --target skull --steps 100000 --max-minutes 25
    python -m compbook.cppn twins --report          # MSE / PSNR of every stored twin

A run ends at ``--steps``, when every seed has plateaued (:func:`plateaued`, our rule), or after
``--max-minutes``; the JSON records which and the steps run (``data/emc2/README.md``).

Twins of *FER's* architecture (:class:`FerTwinRecipe`, ``data/emc2/fertwin_<target>_seed<s>``): FER's
uniform activation mix per layer, the true clip gradient, our minibatch-then-cosine CPU schedule, resumable::

    nice -n 5 python -m compbook.cppn twins --arch fer --target skull --seeds 0 --minibatch-steps 8000 --full-steps 300
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from .data import store
from . import picbreeder, train
from .. import checks, config
from ..book import images
from .network import CPPN
from .paper import figure
from ..results import door

TARGETS = ("skull", "butterfly", "apple")
LOG_EVERY = 100
FOLDER = "emc2"
#: Our choice of "converged": a seed has *plateaued* when its best loss over the last ``PLATEAU_WINDOW`` steps is
#: less than ``PLATEAU_TOL`` (1%) below its best loss before them (checked every ``CHECK_EVERY`` steps).
PLATEAU_WINDOW = 5000
PLATEAU_TOL = 0.01
CHECK_EVERY = 1000


@dataclass
class TwinRecipe:
    """What a twin's training is: FER's recipe at ``res`` for ``steps`` (stored in the checkpoint's JSON)."""
    target: str
    res: int = 64
    steps: int = 20000
    lr: float | None = None          # None: FER's lr for the target
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    optimizer: str = "adam"
    normalize_grad: bool = True
    straight_through: bool = True
    stop_at_plateau: bool = True      # end when every seed has plateaued (:func:`plateaued`)
    max_minutes: float | None = None  # end after this wall time (the JSON then records the steps actually run)
    keep_best: bool = True            # our choice: return each seed's lowest-loss weights, not its last ones

    def __post_init__(self):
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {self.target!r}")
        self.res = checks.check_render_size(self.res, 64, 4, "a twin's training render")
        self.steps = checks.integer(self.steps, "steps")
        if self.lr is not None:
            checks.real(self.lr, "lr", 0, low_open=True)
        self.seeds = [int(s) for s in checks.integers(checks.sequence(self.seeds, "seeds"), "seeds", 0, ndim=1)]
        checks.choice(self.optimizer, "optimizer", train.OPTIMIZERS)
        if self.lr is None:
            self.lr = figure("fer_lr")[self.target]


def plateaued(losses, window: int = PLATEAU_WINDOW, tol: float = PLATEAU_TOL) -> np.ndarray:
    """Which seeds have plateaued: ``losses (steps, B)`` -> ``(B,)`` bools, True where the best loss of the last
    ``window`` steps is less than ``tol`` below the best loss before them (False with ``window`` steps or fewer)."""
    window = checks.integer(window, "window")
    checks.real(tol, "tol", 0, 1)
    losses = checks.tensor(losses, "losses").double().numpy().reshape(len(losses), -1)
    if len(losses) <= window:
        return np.zeros(losses.shape[1], dtype=bool)
    return losses[-window:].min(0) > (1 - tol) * losses[:-window].min(0)


def plateau_steps(losses, window: int = PLATEAU_WINDOW, tol: float = PLATEAU_TOL,
                  every: int = CHECK_EVERY) -> list[int | None]:
    """Per seed, the first step (a multiple of ``every``, an integer >= 1) at which :func:`plateaued` held, None if
    never. ``losses (steps, B)`` or ``(steps,)``."""
    every = checks.integer(every, "every")
    losses = checks.tensor(losses, "losses").double().numpy()
    losses = losses.reshape(len(losses), -1) if losses.ndim else losses.reshape(1, 1)
    out: list[int | None] = [None] * losses.shape[1]
    for s in range(every, len(losses) + 1, every):
        for j, done in enumerate(plateaued(losses[:s], window, tol)):
            if done and out[j] is None:
                out[j] = s
    return out


def stop_rule(recipe: TwinRecipe):
    """The ``stop`` rule :func:`compbook.cppn.train.fit_many` asks: every seed plateaued, or ``max_minutes`` spent.
    Sets ``rule.reason`` to ``"plateau"`` or ``"time"`` when it stops."""
    t0 = time.perf_counter()

    def rule(losses) -> bool:
        if recipe.stop_at_plateau and plateaued(losses).all():
            rule.reason = "plateau"
        elif recipe.max_minutes is not None and time.perf_counter() - t0 > 60 * recipe.max_minutes:
            rule.reason = "time"
        return rule.reason is not None

    rule.reason = None
    return rule


def twin_stem(target: str, res: int, steps: int, seed: int) -> str:
    """The checkpoint name under ``data/``: ``emc2/twin_<target>_<res>px_<steps>steps_seed<seed>``."""
    checks.choice(target, "target", TARGETS)
    res, steps, seed = checks.integer(res, "res"), checks.integer(steps, "steps"), checks.seed(seed)
    return f"{FOLDER}/twin_{target}_{res}px_{steps}steps_seed{seed}"


def quality(model: CPPN, target: str) -> dict:
    """MSE and PSNR of ``model``'s render against the genome's float64 render at 64 px, and against the
    reference PNG at 256 px (FER's figures are measured that way)."""
    out = {}
    with torch.no_grad():
        for res, ref in ((64, picbreeder.render(picbreeder.load_genome(target), 64)),
                         (256, picbreeder.reference_render(target))):
            img = model.render(res).double().numpy()
            out[f"mse_{res}"] = float(np.mean((img - ref) ** 2))
            out[f"psnr_{res}"] = images.psnr(img, ref)
    return out


def train_twins(recipe: TwinRecipe, progress: bool = True) -> tuple[list[CPPN], np.ndarray, float]:
    """Train one twin per seed of ``recipe``, all at once (``train.fit_many``).

    Training ends after ``recipe.steps`` steps, or earlier when every seed has plateaued
    (``recipe.stop_at_plateau``) or ``recipe.max_minutes`` are spent: then ``recipe.steps`` becomes the steps
    actually run and ``recipe.stopped_by`` says why ("plateau", "time"; "steps" otherwise).
    Returns ``(models, losses (steps, n_seeds), seconds)``.
    """
    g = picbreeder.load_genome(recipe.target)
    pb = picbreeder.layerize(g)
    models = [CPPN(pb.activations, pb.color, seed=s) for s in recipe.seeds]
    rule = stop_rule(recipe)
    fit = train.fit_many(models, picbreeder.render(g, recipe.res), steps=recipe.steps, lr=recipe.lr,
                         optimizer=recipe.optimizer, normalize_grad=recipe.normalize_grad, progress=progress,
                         straight_through=recipe.straight_through, stop=rule, check_every=CHECK_EVERY,
                         keep_best=recipe.keep_best)
    losses = np.asarray(fit.losses).reshape(-1, len(recipe.seeds))
    recipe.max_steps, recipe.steps, recipe.stopped_by = recipe.steps, len(losses), rule.reason or "steps"
    return fit.models, losses, fit.seconds


def twin_files(recipe: TwinRecipe, model: CPPN, losses, seconds: float, j: int) -> tuple[str, dict, str]:
    """What :func:`save_twins` writes for seed ``recipe.seeds[j]`` (chapter 5): ``(stem, metadata, made_by)``,
    the checkpoint name under ``data/``, its JSON metadata (recipe, loss curve, final MSE, PSNR) and the command.
    ``losses (steps, n_seeds)`` of the whole run, ``seconds`` its training time (all seeds together)."""
    seed = recipe.seeds[j]
    curve = losses[::LOG_EVERY, j].tolist()
    ran = {k: getattr(recipe, k) for k in ("max_steps", "stopped_by") if hasattr(recipe, k)}
    made_by = (f"python -m compbook.cppn twins --target {recipe.target} --res {recipe.res} "
               f"--steps {recipe.steps} --seeds {' '.join(map(str, recipe.seeds))}")
    meta = {"target": recipe.target, "seed": seed, "recipe": asdict(recipe) | {"seeds": [seed]},
            "run": ran | {"plateau_window": PLATEAU_WINDOW, "plateau_tol": PLATEAU_TOL,
                          "plateau_step": plateau_steps(losses[:, j:j + 1])[0],
                          "loss_best_last_window": float(losses[-PLATEAU_WINDOW:, j].min()),
                          "loss_best_before": float(losses[:-PLATEAU_WINDOW, j].min())
                          if len(losses) > PLATEAU_WINDOW else None},
            "fer_recipe": "Adam on the unit-normalised gradient, lr 3e-3 (apple 3e-4), MSE, FER's code",
            "train_seconds_all_seeds": round(seconds, 1), "threads": torch.get_num_threads(),
            "loss_every": LOG_EVERY, "loss_curve": [round(x, 7) for x in curve],
            "final_mse_train_res": float(train.mse(model, picbreeder.render(
                picbreeder.load_genome(recipe.target), recipe.res)))} | quality(model, recipe.target)
    return twin_stem(recipe.target, recipe.res, recipe.steps, seed), meta, made_by


def save_twins(recipe: TwinRecipe, models, losses, seconds, folder=None) -> list[Path]:
    """Write each twin (safetensors + JSON with the recipe, loss curve, final MSE and PSNR, :func:`twin_files`);
    returns JSON paths."""
    out = []
    for j, model in enumerate(models):
        stem, meta, made_by = twin_files(recipe, model, losses, seconds, j)
        out.append(store.save_cppn(model, _place(stem, folder), meta, made_by))
    return out


def stored_twins(target: str, folder=None, res: int | None = None) -> list[Path]:
    """JSON paths of the stored twins of ``target`` (every resolution, or those trained at ``res`` px; all step
    counts), sorted by name."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    px = "*" if res is None else checks.integer(res, "res")
    return _stored(f"twin_{target}_{px}px_*steps_seed*.json", folder)


def load_twins(target: str, folder=None, res: int | None = None) -> list[CPPN]:
    """The stored twins of ``target`` (trained at ``res`` px, if given): of the longest run stored, one per seed
    (``FileNotFoundError`` if none)."""
    if not stored_twins(target, folder, res):
        at = "" if res is None else f" at {res} px"
        raise FileNotFoundError(f"no stored twins of {target!r}{at} in data/{FOLDER}/ "
                                f"(make them: python -m compbook.cppn twins --target {target})")
    return [store.load_cppn(p) for p in _loaded_paths(target, folder, res)]


def stored_or_trained(target: str, res: int, retrain: bool = False) -> list[CPPN]:
    """Chapter 5's SGD twins of ``target`` trained at ``res`` px: the stored ones (fetched outside a checkout),
    trained and stored first when ``retrain`` or none are stored at ``res`` (full mode's 256 px): FER's recipe,
    100,000 steps, seeds 0-2; a CPU run stops at a plateau or after 70 minutes; the full-mode smoke trains them
    for 5 steps (:func:`compbook.results.door.stored_or_made`)."""
    checks.boolean(retrain, "retrain")
    checks.choice(target, "target", TARGETS)
    recipe = TwinRecipe(target, res=checks.integer(res, "res"), steps=config.by_mode(100_000, 100_000, smoke=5),
                        seeds=[0, 1, 2], max_minutes=config.by_mode(70, None))
    door.stored_or_made(f"{FOLDER}/twin_{target}_{res}px_*steps_seed*.json", None,
                        lambda: save_twins(recipe, *train_twins(recipe)), remake=retrain,
                        command=f"python -m compbook.cppn twins --target {target} --res {res}")
    return load_twins(target, res=res)


def _place(stem: str, folder=None) -> Path:
    """Where a twin ``stem`` (``emc2/...``) is written: under ``folder``, else the data folder's (a writer's
    target, :func:`compbook.results.door.made_path`)."""
    return Path(folder) / stem if folder is not None else door.made_path(stem)


def _stored(pattern: str, folder=None) -> list[Path]:
    """JSON paths of the stored twins matching ``pattern`` in ``emc2/`` of ``folder`` (default: the data folder,
    fetched outside a checkout: :func:`compbook.results.door.stored_names`), sorted by name."""
    if folder is not None:
        return sorted((Path(folder) / FOLDER).glob(pattern))
    return [door.stored_path(n) for n in door.stored_names(f"{FOLDER}/{pattern}")]


_STEM = re.compile(r"twin_(?P<target>[a-z]+)_(?P<res>\d+)px_(?P<steps>\d+)steps_seed(?P<seed>\d+)")


def stored_metadata(path) -> dict:
    """The metadata of the stored twin ``path``, checked against its file name (target, seed, resolution and
    steps) and for the fields the book reads (a recipe, a finite loss curve): ``ValueError`` naming the file
    when its JSON was edited or belongs to another twin (the weights' own content hash is checked on load)."""
    m = store.load_metadata(path)
    name = _STEM.fullmatch(Path(path).with_suffix("").name)
    recipe = m.get("recipe")
    if name is None or not isinstance(recipe, dict):
        raise ValueError(f"{path}: not a stored twin (expected twin_<target>_<res>px_<steps>steps_seed<s> with a "
                         f"'recipe' in its metadata)")
    said = {"target": m.get("target"), "seed": m.get("seed"), "res": recipe.get("res"), "steps": recipe.get("steps")}
    named = {"target": name["target"], "seed": int(name["seed"]), "res": int(name["res"]),
             "steps": int(name["steps"])}
    if said != named:
        raise ValueError(f"{path}: its JSON says {said}, its name {named} (edited or renamed); restore it (git) or "
                         f"train it again")
    curve = m.get("loss_curve")
    if not isinstance(curve, list) or not curve or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) for x in curve):
        raise ValueError(f"{path}: 'loss_curve' must be a non-empty list of finite numbers (edited?)")
    checks.integer(m.get("loss_every"), f"{path}: 'loss_every'")
    return m


def _loaded_paths(target: str, folder=None, res: int | None = None) -> list[Path]:
    """JSON paths of the run :func:`load_twins` loads (the longest stored run of ``target``, at ``res`` px if
    given)."""
    found = stored_twins(target, folder, res)
    meta = [stored_metadata(p) for p in found]
    best = max((m["recipe"]["steps"], m["recipe"]["res"]) for m in meta)
    return [p for p, m in zip(found, meta) if (m["recipe"]["steps"], m["recipe"]["res"]) == best]


def _plateau_at_end(run: dict) -> bool | None:
    if run.get("loss_best_before") is None:
        return None
    return run["loss_best_last_window"] > (1 - run["plateau_tol"]) * run["loss_best_before"]


def _best_loss(meta: dict) -> float:
    """The lowest training loss in the stored curve (every ``loss_every`` steps) and the final MSE."""
    return min(min(meta["loss_curve"]), meta["final_mse_train_res"])


def report(folder=None, loaded_only: bool = False) -> list[dict]:
    """One row per stored twin (only those :func:`load_twins` loads with ``loaded_only``): target, seed, steps,
    why training stopped, the first step the plateau rule held (None: never), whether it held at the end (None:
    not recorded), the best training loss logged, lr, MSE and PSNR at 64 and 256 px, FER's PSNR."""
    rows = []
    for t in TARGETS:
        for p in (_loaded_paths(t, folder) if loaded_only else stored_twins(t, folder)):
            m = stored_metadata(p)
            run = m.get("run", {})
            rows.append({"target": t, "seed": m["seed"], "res": m["recipe"]["res"], "steps": m["recipe"]["steps"],
                         "stopped_by": run.get("stopped_by", "steps"), "plateau_step": run.get("plateau_step"),
                         "plateau_at_end": _plateau_at_end(run), "best_loss": _best_loss(m),
                         "lr": m["recipe"]["lr"], "minutes": round(m["train_seconds_all_seeds"] / 60, 1),
                         "mse_64": m["mse_64"], "psnr_64": m["psnr_64"],
                         "mse_256": m["mse_256"], "psnr_256": m["psnr_256"], "fer_psnr_256": figure("fer_psnr_256")[t]})
    return rows


def quality_table(sgd: dict, judge, res: int = 64):
    """Chapter 5's table of the loaded twins (:func:`report`): steps, plateau, MSE, PSNR at 256 px and how far
    below FER's, and the score ``judge`` (a semantic judge with ``.scores(images, concept)``) gives each
    unperturbed twin ``sgd[target][seed]`` rendered at ``res``."""
    import pandas as pd
    q = pd.DataFrame(report(loaded_only=True))
    q["dB below FER"] = q.fer_psnr_256 - q.psnr_256
    with torch.no_grad():
        own = {t: judge.scores(torch.stack([m.render(res) for m in ms]), t) for t, ms in sgd.items()}
    q["judge, unperturbed"] = [float(own[t][s]) for t, s in zip(q.target, q.seed)]
    q = q.rename(columns={"plateau_at_end": "plateau", "best_loss": "best MSE"})
    cols = ["target", "seed", "steps", "plateau", "best MSE", "mse_64", "psnr_256", "dB below FER",
            "judge, unperturbed"]
    return q[cols].set_index(["target", "seed"]).round({"best MSE": 4, "mse_64": 4, "psnr_256": 1,
                                                       "dB below FER": 1, "judge, unperturbed": 2})


def stored_loss_curves(target: str, folder=None) -> tuple[np.ndarray, np.ndarray]:
    """The stored loss curves of the twins :func:`load_twins` loads: ``(steps (P,), losses (P, seeds))``, one
    point every ``loss_every`` steps (chapter 5)."""
    metas = [stored_metadata(p) for p in _loaded_paths(target, folder)]
    losses = np.array([m["loss_curve"] for m in metas]).T
    return np.arange(len(losses)) * metas[0]["loss_every"], losses


# -- twins of FER's architecture ---------------------------------------------------------------------------
@dataclass
class FerTwinRecipe:
    """A twin of FER's architecture (FER's uniform activation mix per layer, :data:`compbook.cppn.fer.FER_ARCH`),
    trained by our CPU recipe: ``minibatch_steps`` steps on random ``batch_pixels``-pixel minibatches of the
    ``res`` px target (resampled each step, seeded), then ``full_steps`` full-batch steps with the lr decayed
    by a cosine to 0. FER's optimizer (Adam on the unit-normalised gradient, FER's lr), the true gradient of the
    output clips (``straight_through=False``, FER's; True is our trainer's option). Our choices: the phase
    lengths, the minibatch size, the cosine, keeping the last weights."""
    target: str
    seed: int = 0
    arch: str | None = None            # None: FER's arch string for the target
    res: int = 256
    batch_pixels: int = 4096
    minibatch_steps: int = 6000
    full_steps: int = 400
    lr: float | None = None            # None: FER's lr for the target
    straight_through: bool = False
    kind: str = "fer_arch_minibatch_cosine"

    def __post_init__(self):
        from . import fer
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {self.target!r}")
        self.arch = fer.FER_ARCH[self.target] if self.arch is None else self.arch
        fer.parse_arch(self.arch)
        self.seed = checks.seed(self.seed)
        self.res = checks.check_render_size(self.res, 64, 4, "a FER twin's target")
        self.batch_pixels = checks.integer(self.batch_pixels, "batch_pixels", 1, self.res * self.res)
        self.minibatch_steps = checks.integer(self.minibatch_steps, "minibatch_steps", 0)
        self.full_steps = checks.integer(self.full_steps, "full_steps", 0)
        if self.lr is not None:
            checks.real(self.lr, "lr", 0, low_open=True)
        self.lr = figure("fer_lr")[self.target] if self.lr is None else float(self.lr)

    @property
    def total_steps(self) -> int:
        return self.minibatch_steps + self.full_steps


def fer_twin_stem(recipe: FerTwinRecipe) -> str:
    return f"{FOLDER}/fertwin_{recipe.target}_seed{recipe.seed}"


def check_resume(recipe: FerTwinRecipe, stored: dict) -> None:
    """``ValueError`` naming every field where a checkpoint's recipe differs from ``recipe`` (another recipe or
    architecture cannot be resumed; the step counts may grow)."""
    mine = asdict(recipe)
    grow = {"minibatch_steps", "full_steps"}
    diff = [f"{k}: checkpoint {stored.get(k)!r} vs requested {v!r}" for k, v in mine.items()
            if k not in grow and stored.get(k) != v]
    if stored.get("minibatch_steps", 0) > recipe.minibatch_steps:
        diff.append(f"minibatch_steps: checkpoint ran {stored['minibatch_steps']}, more than the requested "
                    f"{recipe.minibatch_steps}")
    ran = stored.get("step", 0)
    if ran > stored.get("minibatch_steps", 0) and stored.get("minibatch_steps") != recipe.minibatch_steps:
        diff.append(f"minibatch_steps: the checkpoint is {ran} steps in, past its minibatch phase of "
                    f"{stored.get('minibatch_steps')} steps; it cannot become {recipe.minibatch_steps}")
    if diff:
        raise ValueError("cannot resume from a checkpoint of another recipe or architecture: " + "; ".join(diff))


def _fer_lr(recipe: FerTwinRecipe, step: int) -> float:
    if step < recipe.minibatch_steps:
        return recipe.lr
    t = (step - recipe.minibatch_steps) / max(1, recipe.full_steps)
    return recipe.lr * 0.5 * (1 + np.cos(np.pi * t))


def train_fer_twin(recipe: FerTwinRecipe, checkpoint: Path | None = None, every: int = 500,
                   max_minutes: float | None = None, log=None) -> tuple[CPPN, dict]:
    """Train (or resume, from ``checkpoint`` when it exists: a ``torch.save`` of weights, Adam state, step, rng
    and recipe) one twin of FER's architecture; saves ``checkpoint`` every ``every`` steps and at the end.
    Returns ``(model, info)`` with the losses (every 100 steps), seconds and steps run."""
    from . import fer
    from .backprop import Backprop
    template = CPPN(fer.arch_layout(recipe.arch), "hsv", seed=recipe.seed)
    target = torch.as_tensor(picbreeder.reference_render(recipe.target), dtype=torch.float32) \
        if recipe.res == 256 else torch.as_tensor(picbreeder.render(picbreeder.load_genome(recipe.target),
                                                                    recipe.res), dtype=torch.float32)
    full = Backprop(template, target, recipe.straight_through)
    mini = Backprop(template, target, recipe.straight_through)
    all_coords, all_target = full.coords, full.target
    params = [torch.nn.Parameter(w) for w in full.to_engine_order([w.detach() for w in template.weights])]
    opt = train.adam(params, recipe.lr)
    g = torch.Generator().manual_seed(recipe.seed + 15485863)
    step, seconds, losses = 0, 0.0, []
    if checkpoint is not None and Path(checkpoint).is_file():
        state = torch.load(checkpoint, weights_only=False)
        check_resume(recipe, state["recipe"] | {"step": state["step"]})
        with torch.no_grad():
            for p, w in zip(params, state["weights"]):
                p.copy_(w)
        opt.load_state_dict(state["opt"])
        g.set_state(state["rng"])
        step, seconds, losses = state["step"], state["seconds"], state["losses"]

    def save():
        if checkpoint is not None:
            torch.save({"weights": [p.detach().clone() for p in params], "opt": opt.state_dict(),
                        "rng": g.get_state(), "step": step, "seconds": seconds, "losses": losses,
                        "recipe": asdict(recipe)}, checkpoint)

    n = all_coords.shape[-1]
    t0 = time.perf_counter()
    while step < recipe.total_steps:
        if max_minutes is not None and time.perf_counter() - t0 > 60 * max_minutes:
            break
        if step < recipe.minibatch_steps:
            idx = torch.randint(0, n, (recipe.batch_pixels,), generator=g)
            mini.coords, mini.target = all_coords[:, idx].contiguous(), all_target[idx]
            engine = mini
        else:
            engine = full
        for group in opt.param_groups:
            group["lr"] = _fer_lr(recipe, step)
        loss, grads = engine.loss_and_grads(params)
        train._normalise_grads_(grads, batched=False)
        for p, gr in zip(params, grads):
            p.grad = gr.contiguous()
        opt.step()
        if step % LOG_EVERY == 0:
            losses.append(float(loss))
        step += 1
        if step % every == 0:
            seconds_now = seconds + time.perf_counter() - t0
            seconds, t0 = seconds_now, time.perf_counter()
            save()
            if log:
                log(f"{recipe.target} seed {recipe.seed}: step {step}, loss {float(loss):.5f}, {seconds:.0f} s")
    seconds += time.perf_counter() - t0
    t0 = time.perf_counter()
    save()
    model = template.clone_with(weights=[p.detach() for p in full.to_model_order(params)])
    return model, {"steps": step, "seconds": round(seconds, 1), "loss_every": LOG_EVERY, "losses": losses,
                   "done": step >= recipe.total_steps}


def fer_twin_files(recipe: FerTwinRecipe, model: CPPN, info: dict) -> tuple[str, dict, str]:
    """What :func:`save_fer_twin` writes (chapter 5): ``(stem, metadata, made_by)`` of a finished twin of FER's
    architecture (``info`` as :func:`train_fer_twin` returns it)."""
    made_by = (f"python -m compbook.cppn twins --arch fer --target {recipe.target} --seeds {recipe.seed} "
               f"--minibatch-steps {recipe.minibatch_steps} --full-steps {recipe.full_steps}"
               + (" --straight-through" if recipe.straight_through else ""))
    meta = {"target": recipe.target, "seed": recipe.seed, "recipe": asdict(recipe), "threads": torch.get_num_threads(),
            "train_seconds": info["seconds"], "steps": info["steps"], "loss_every": info["loss_every"],
            "loss_curve": [round(x, 7) for x in info["losses"]]} | quality(model, recipe.target)
    return fer_twin_stem(recipe), meta, made_by


def save_fer_twin(recipe: FerTwinRecipe, model: CPPN, info: dict, folder=None) -> Path:
    """Store a finished twin of FER's architecture under ``data/emc2/fertwin_<target>_seed<s>`` (safetensors +
    JSON with the recipe, seconds, losses and PSNR at 64 and 256 px, :func:`fer_twin_files`)."""
    stem, meta, made_by = fer_twin_files(recipe, model, info)
    return store.save_cppn(model, _place(stem, folder), meta, made_by)


def load_fer_twins(target: str, folder=None) -> list[CPPN]:
    """The stored twins of FER's architecture of ``target`` (one per seed; may be empty)."""
    checks.choice(target, "target", TARGETS)
    return [store.load_cppn(p) for p in stored_fer_twins(target, folder)]


def stored_fer_twins(target: str, folder=None) -> list[Path]:
    return _stored(f"fertwin_{target}_seed*.json", folder)


def fer_twin_report(folder=None) -> list[dict]:
    """One row per stored twin of FER's architecture: target, seed, steps, training seconds, PSNR at 256 px."""
    rows = []
    for t in TARGETS:
        for p in stored_fer_twins(t, folder):
            m = store.load_metadata(p)
            r = m["recipe"]
            rows.append({"target": t, "seed": m["seed"], "arch": r["arch"], "minibatch steps": r["minibatch_steps"],
                         "full steps": r["full_steps"], "straight-through": r["straight_through"],
                         "seconds": m["train_seconds"], "psnr_64": m["psnr_64"], "psnr_256": m["psnr_256"]})
    return rows
