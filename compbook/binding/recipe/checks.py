"""Checks of the recipe's evaluation and of what its models learned (chapter 13).

Three questions asked of the recipe (:mod:`compbook.binding.recipe.train` and its modules) before reading its no-go
as a result:

* **Is the evaluation right?** :class:`TokenOracle` is a reference "model" that reads the scene and query
  tokens back to objects (refusing any token layout other than the released one) and embeds a scene as the sum
  of orthonormal per-object vectors (``kind="objects"``: it binds exactly, swap-only binding must be 1) or of
  per-value vectors (``kind="concepts"``: a bag of concepts, whose present objects and swaps tie).
* **Does the end-of-scene output see the whole scene?** :func:`pooling_sensitivity`: the gradient norm of the
  pooled output with respect to each position's input (every non-pad position > 0, every pad 0).
* **Why below a random order?** :func:`interaction`: for a scene of objects ``a = (a0, a1)``, ``b = (b0, b1)``
  and swaps ``a' = (a0, b1)``, ``b' = (b0, a1)``, swap-only binding needs ``min(l_a, l_b) > max(l_a', l_b')``,
  hence ``D = (l_a + l_b) - (l_a' + l_b') > 0``. Any model whose logit is additive in (slot, concept) terms has
  ``D = 0`` exactly (the four logits' sums are equal), so it passes only by noise, and with unequal slot or
  concept weights it fails more often than a random order (1/6): one swap always beats one present object.
  ``D`` is the model's interaction term, the part of its score no additive model has.

:func:`recipe_probe_fits` fits the three probes of :mod:`compbook.binding.probes` to a recipe model's two-object scene
embeddings (train objects), scored by R^2 on held-out-object scenes, as the old sweep's models were;
:func:`probe_records` does so for every recipe model stored in a folder (``python -m compbook.binding recipe
--probes`` writes them to ``recipe_probes.json``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ... import checks
from ..probes import PROBE_KINDS, fit_probe
from .config import RecipeConfig
from .data import (
    binding_scenes, object_ids, object_values, query_tokens, recipe_scene_tokens, split_objects, swap_sets
)
from .model import FORMAT, load_recipe


class TokenOracle(nn.Module):
    """A reference dual encoder that parses tokens: ``kind="objects"`` embeds a scene as the sum of orthonormal
    per-object vectors (dimension ``|O|``) and a query as its object's vector; ``kind="concepts"`` uses one
    orthonormal vector per concept value (a bag of concepts). ``noise``: Gaussian noise (seeded) added to every
    output of the ``noise_on`` side, to break the bag of concepts' ties: on the queries each candidate gets its
    own noise (a random order: 1/6 for C = 2); on the scene it is one vector per scene, an additive term shared
    by all candidates (``D = 0`` still, see :func:`interaction`: below a random order).
    ``.scene(tokens) -> (N, D)``, ``.query(tokens) -> (Q, D)``."""

    def __init__(self, cfg: RecipeConfig, kind: str = "objects", noise: float = 0.0, seed: int = 0,
                 noise_on: str = "query"):
        super().__init__()
        self.cfg = checks.instance(cfg, "cfg", RecipeConfig)
        self.kind = checks.choice(kind, "kind", ("objects", "concepts"))
        self.noise = checks.real(noise, "noise", 0.0)
        self.noise_on = checks.choice(noise_on, "noise_on", ("query", "scene"))
        n = cfg.n_objects if kind == "objects" else cfg.n_concepts * cfg.n_values
        # the float64 draw, QR's copy, Q and R, and the float32 table
        checks.check_budget(8.0 * 4 * n * n + 4.0 * n * n, f"TokenOracle of {n} vectors")
        g = torch.Generator().manual_seed(int(seed))
        self.table = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))[0].float()
        self.gen = torch.Generator().manual_seed(int(seed) + 1)
        self.tau = nn.Parameter(torch.tensor(0.0))

    def parse(self, tokens: torch.Tensor) -> list[list[np.ndarray]]:
        """Each row's objects as value-token arrays (C,); ``ValueError`` on any other layout than
        ``[soo, C value tokens (concept k in k V .. k V + V - 1), eoo] * n + [eos] + pads``."""
        c = self.cfg
        out = []
        for r, row in enumerate(np.asarray(tokens).tolist()):
            objs, i = [], 0
            while i < len(row) and row[i] == c.soo:
                vals = np.array(row[i + 1:i + 1 + c.n_concepts])
                ok = (len(vals) == c.n_concepts and i + 1 + c.n_concepts < len(row)
                      and row[i + 1 + c.n_concepts] == c.eoo
                      and ((vals // c.n_values) == np.arange(c.n_concepts)).all())
                if not ok:
                    raise ValueError(f"tokens: row {r} has a malformed object at position {i}: {row}")
                objs.append(vals)
                i += c.n_concepts + 2
            if i >= len(row) or row[i] != c.eos or any(t != c.pad for t in row[i + 1:]) or not objs:
                raise ValueError(f"tokens: row {r} does not end [eos] + pads after its objects: {row}")
            out.append(objs)
        return out

    def _encode(self, tokens: torch.Tensor, noisy: bool = False) -> torch.Tensor:
        c = self.cfg
        rows = []
        for objs in self.parse(tokens):
            z = torch.zeros(self.table.shape[1])
            for vals in objs:
                if self.kind == "objects":
                    z = z + self.table[int(object_ids(c, vals - np.arange(c.n_concepts) * c.n_values))]
                else:
                    z = z + self.table[torch.as_tensor(vals)].sum(0)
            rows.append(z)
        z = torch.stack(rows)
        return z + self.noise * torch.randn(z.shape, generator=self.gen) if noisy and self.noise else z

    def scene(self, tokens: torch.Tensor) -> torch.Tensor:
        return self._encode(tokens, self.noise_on == "scene")

    def query(self, tokens: torch.Tensor) -> torch.Tensor:
        return self._encode(tokens, self.noise_on == "query")

    def logits(self, scene_tok: torch.Tensor, query_tok: torch.Tensor, z_scene=None) -> torch.Tensor:
        """(N, Q) cosines (scale 1), as :meth:`~compbook.binding.recipe.model.RecipeEncoder.logits`."""
        zs = F.normalize(self.scene(scene_tok), dim=1, eps=1e-6) if z_scene is None else z_scene
        return zs @ F.normalize(self.query(query_tok), dim=1, eps=1e-6).T


def pooling_sensitivity(encoder, tokens: torch.Tensor, pad: int) -> np.ndarray:
    """(N, L) gradient norm of each row's pooled output (summed over dimensions) with respect to each
    position's input vector (token embedding + position): > 0 where the output sees the position, 0 where not.
    ``encoder``: a :class:`~compbook.binding.recipe.model.TokenEncoder` (train mode, exact gradients)."""
    tokens = torch.as_tensor(tokens)
    x = (encoder.embed(tokens) + encoder.pe[: tokens.shape[1]]).detach().requires_grad_(True)
    mask = tokens == pad
    h = encoder.blocks(x, src_key_padding_mask=mask)
    last = (~mask).sum(1) - 1
    out = encoder.proj(h[torch.arange(len(h)), last])
    grads = [torch.autograd.grad(out[i].sum(), x, retain_graph=True)[0][i].norm(dim=1)
             for i in range(len(out))]
    return torch.stack(grads).numpy()


@torch.no_grad()
def recipe_swap_logits(model, cfg: RecipeConfig, scenes: np.ndarray) -> np.ndarray:
    """(N, 4) cosines of each two-object scene (C = 2) with ``[a, b, a', b']`` (present, then swaps)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    if cfg.n_concepts != 2 or scenes.ndim != 2 or scenes.shape[1] != 2:
        raise ValueError(f"scenes: need (N, 2) two-object scenes with C = 2, got {scenes.shape}, "
                         f"C = {cfg.n_concepts}")
    if hasattr(model, "eval"):
        model.eval()
    zs = F.normalize(model.scene(recipe_scene_tokens(cfg, scenes)), dim=1, eps=1e-6)
    cand = np.concatenate([scenes, swap_sets(cfg, scenes)], 1)
    zq = F.normalize(model.query(query_tokens(cfg, cand.reshape(-1))), dim=1, eps=1e-6)
    return torch.einsum("nd,nkd->nk", zs, zq.reshape(len(scenes), 4, -1)).numpy()


def interaction(model, cfg: RecipeConfig, scenes: np.ndarray) -> dict:
    """The interaction term ``D = (l_a + l_b) - (l_a' + l_b')`` per scene (see the module docstring) and
    what it implies: ``d_mean``, ``d_sd``, ``d_positive`` (share with D > 0, necessary for binding),
    ``spread`` (mean sd of the four logits, the scale D is read against), ``binding`` (swap-only binding)."""
    lg = recipe_swap_logits(model, cfg, scenes)
    d = lg[:, :2].sum(1) - lg[:, 2:].sum(1)
    ok = lg[:, :2].min(1) > lg[:, 2:].max(1)
    return {"d_mean": float(d.mean()), "d_sd": float(d.std()), "d_positive": float((d > 0).mean()),
            "spread": float(lg.std(1).mean()), "binding": float(ok.mean())}


@torch.no_grad()
def recipe_probe_fits(model, cfg: RecipeConfig, n_fit: int = 400, n_test: int = 400, seed: int = 0) -> dict:
    """{probe kind: held-out R^2}: each probe of :mod:`compbook.binding.probes` fitted to the scene embeddings
    (unnormalised, the encoder's output) of ``n_fit`` ordered two-object scenes of train objects and scored on
    ``n_test`` scenes of held-out objects (both whose objects differ in every concept; our choice of sizes,
    as the old sweep's 400 fit scenes)."""
    n_fit, n_test = checks.integer(n_fit, "n_fit", 2), checks.integer(n_test, "n_test", 2)
    train, test = split_objects(cfg)
    rng = np.random.default_rng(seed)
    tr, te = binding_scenes(cfg, train, n_fit, rng), binding_scenes(cfg, test, n_test, rng)
    model.eval()
    z_tr, z_te = (model.scene(recipe_scene_tokens(cfg, s)).numpy() for s in (tr, te))
    sizes = (cfg.n_values,) * cfg.n_concepts
    v_tr, v_te = object_values(cfg, tr), object_values(cfg, te)
    return {k: fit_probe(k, v_tr, z_tr, n_values=sizes).r2(v_te, z_te) for k in PROBE_KINDS}


def stored_models(directory) -> list[str]:
    """Stems (names without suffix) of every recipe-trained model stored in ``directory`` (any prefix),
    sorted: the JSON files whose ``format`` is the recipe model's."""
    import json
    from pathlib import Path

    out = []
    for p in sorted(Path(directory).glob("*_C*V*_cov*_s*.json")):
        try:
            if json.loads(p.read_text()).get("format") == FORMAT:
                out.append(p.stem)
        except (OSError, ValueError):
            continue
    return out


def probe_records(directory, n_fit: int = 400, n_test: int = 400, skip=()) -> list[dict]:
    """One row per stored recipe model of ``directory`` (but the stems in ``skip``): its config's size,
    coverage, lr and steps, final swap-only binding (seen, unseen) and the paper's metric on unseen objects
    (from its record), the three probes' held-out R^2 (:func:`recipe_probe_fits`, computed here) and the seconds."""
    import time
    from pathlib import Path

    rows = []
    for stem in stored_models(directory):
        if stem in skip:
            continue
        t0 = time.perf_counter()
        model, rec = load_recipe(Path(directory) / stem)
        c = RecipeConfig(**rec["config"])
        f = rec["final"]
        rows.append({"model": stem, "n_objects": c.n_objects, "coverage": c.coverage, "lr": c.lr,
                     "steps": rec["steps"], "seen_binding": f["seen_binding"],
                     "unseen_binding": f["unseen_binding"], "unseen_paper": f["unseen_paper"],
                     **recipe_probe_fits(model, c, n_fit, n_test)})
        rows[-1]["seconds"] = round(time.perf_counter() - t0, 1)
    return rows


def interaction_by_swap_split(model, cfg: RecipeConfig, scenes: np.ndarray):
    """DataFrame, one row per number of a scene's two swaps that are training objects (0, 1, 2): scenes,
    mean cosine of the present objects and of the swaps, mean ``D`` and swap-only binding. An additive model
    with a per-object bias shows ``D`` moving with the split and ``D`` near 0 where all four candidates are
    of one kind (all train or all held out)."""
    import pandas as pd
    lg = recipe_swap_logits(model, cfg, scenes)
    n_train = np.isin(swap_sets(cfg, scenes), split_objects(cfg)[0]).sum(1)
    d = lg[:, :2].sum(1) - lg[:, 2:].sum(1)
    ok = lg[:, :2].min(1) > lg[:, 2:].max(1)
    rows = []
    for k in range(3):
        s = n_train == k
        rows.append({"swaps that are train objects": k, "scenes": int(s.sum()),
                     "present": float(lg[s, :2].mean()) if s.any() else np.nan,
                     "swaps": float(lg[s, 2:].mean()) if s.any() else np.nan,
                     "D": float(d[s].mean()) if s.any() else np.nan,
                     "binding": float(ok[s].mean()) if s.any() else np.nan})
    return pd.DataFrame(rows).set_index("swaps that are train objects")


def reference_models(cfg: RecipeConfig, model=None, noise: float = 1e-3) -> dict:
    """The check (a) line-up (Part B's notes): an exact binder, a bag of concepts with ``noise`` on the query
    side (a random order), the same with noise on the scene side, and ``model`` when given (its name
    ``"go / no-go model"``)."""
    refs = {"exact binder (reference)": TokenOracle(cfg),
            "bag of concepts + query noise": TokenOracle(cfg, "concepts", noise),
            "bag of concepts + scene noise": TokenOracle(cfg, "concepts", noise, noise_on="scene")}
    return refs if model is None else refs | {"go / no-go model": model}


def interaction_table(models: dict, cfg: RecipeConfig, scenes: np.ndarray):
    """:func:`interaction` of each model of ``{name: model}`` on the same scenes, one row per model."""
    import pandas as pd
    return pd.DataFrame({name: interaction(m, cfg, scenes) for name, m in models.items()}).T


def interaction_by_scenes(model, cfg: RecipeConfig, sets: dict):
    """:func:`interaction_by_swap_split` on the seen and the unseen evaluation scenes of ``sets``
    (:func:`~compbook.binding.recipe.evaluate.eval_sets`), stacked (Part B's notes)."""
    import pandas as pd
    return pd.concat({"seen scenes": interaction_by_swap_split(model, cfg, sets["seen_binding"]),
                      "unseen scenes": interaction_by_swap_split(model, cfg, sets["unseen_binding"])},
                     names=["scenes of"])


def pooling_table(model, cfg: RecipeConfig, scene) -> tuple:
    """Checks (b) and (c) on one two-object ``scene`` (2,) (Part B's notes): a DataFrame of the tokens of its
    first object alone and of both, each with the gradient norm of the pooled output per position
    (:func:`pooling_sensitivity`), and ``{"objects", "swaps", "swap queries"}`` (the swaps' query tokens)."""
    import pandas as pd

    scene = np.asarray(scene, dtype=np.int64)
    tok = recipe_scene_tokens(cfg, np.array([[scene[0], -1], scene]))
    grad = pooling_sensitivity(model.scene, tok, cfg.pad)
    special = {cfg.soo: "soo", cfg.eoo: "eoo", cfg.eos: "eos", cfg.pad: "pad"}
    words = [[special.get(t, str(t)) for t in row] for row in tok.tolist()]
    norms = [[f"{g:.1f}" for g in row] for row in grad]
    table = pd.DataFrame([words[0], norms[0], words[1], norms[1]],
                         index=["1 object", "gradient", "2 objects", "gradient"])
    sw = swap_sets(cfg, scene[None])[0]
    return table, {"objects": object_values(cfg, scene).tolist(), "swaps": object_values(cfg, sw).tolist(),
                   "swap queries": query_tokens(cfg, sw).tolist()}
