"""What the compositional score counts, made explicit (chapter 5).

Paper A's score is "the fraction of non-zero parameters w such that the image rendered with w' = w + delta still
has the same global identity". Three things in it are not fixed by the paper's text (delta's size and sign policy
among them), and each one changes what a Picbreeder-versus-SGD contrast means. Here each is a parameter:

- **rule**, which weights are perturbed: ``"nonzero"`` (every non-zero weight of the network as it computes:
  the paper's wording, and the book's default in :mod:`compbook.cppn.emc2`; a layerized Picbreeder network's
  copy weights count) or ``"links"`` (the layerization copy weights left out: for a Picbreeder network only its
  genome links, found from :func:`compbook.cppn.picbreeder.layerize`'s structure and checked against the genome
  by :func:`~compbook.cppn.picbreeder.genome_link_weights`; a dense SGD network has no copy weights, so for it
  both rules are the same set);
- **policy**, the size of the change (:data:`SIZE_POLICIES`), each with the same number :data:`SCALE` (0.5, our
  choice, the book's delta): ``"fixed"`` w + 0.5; ``"relative"`` w + 0.5 |w|; ``"layer"`` w + 0.5 s_l;
  ``"noise"`` w + 0.5 s_l N(0, 1) (seeded), where s_l is the layer's weight scale, our choice the root mean
  square of the counted non-zero weights of that layer (the standard deviation would be 0 in a layer with one
  weight, or one repeated value);
- **judge**, by its name in :mod:`compbook.cppn.judges.registry`: ``"ssim"`` (SSIM against the unperturbed render
  at :data:`~compbook.cppn.judges.base.SSIM_THRESHOLD`) and ``"default"`` (the book's default CPU judge, "is this
  still a <concept>?").

The sample (our choice for a CPU run): per network and rule, ``sample`` weights drawn uniformly without
replacement (seeded), *the same weights under every policy and judge* (a paired comparison); a network with fewer
counted weights is scored on all of them (a census, its interval then only says how few weights there are).
Networks: Picbreeder's three (layerized), FER's three SGD networks (:mod:`compbook.cppn.fer`), and the stored
twins (:func:`compbook.cppn.twins.load_twins`), or any list of :class:`CountedNetwork`.
"""

from __future__ import annotations

import time
from pathlib import Path
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ... import checks, stats
from ... import results
from .. import emc2, fer, picbreeder
from ..data import store
from ..judges.registry import make_judges
from ..network import CPPN
from ...results import door

COUNT_RULES = ("nonzero", "links")
SIZE_POLICIES = ("fixed", "relative", "layer", "noise")
#: the judges every network is scored under (names in :data:`compbook.cppn.judges.registry.JUDGES`)
JUDGE_NAMES = ("ssim", "default")
KINDS = ("picbreeder", "fer", "twin", "fertwin")   # fertwin: twins of FER's architecture (where stored)
#: Our choice: the one number every policy uses (the book's delta 0.5).
SCALE = 0.5
FILE = "emc2/counting.json"


@dataclass
class CountedNetwork:
    """A network to score: ``kind`` one of :data:`KINDS`, ``target`` its concept (skull, butterfly, apple),
    ``copies`` the layerization copy weights (bool masks, Picbreeder only; None: it has none)."""
    name: str
    kind: str
    target: str
    model: CPPN
    copies: list[torch.Tensor] | None = None


def picbreeder_network(target: str) -> CountedNetwork:
    checks.choice(target, "target", picbreeder.GENOMES)
    g = picbreeder.load_genome(target)
    m = picbreeder.layerize(g)
    links = picbreeder.genome_link_weights(g, m)       # checks the copy masks against the genome
    copies = [(w.detach() != 0) & ~k for w, k in zip(m.effective_weights(), links)]
    return CountedNetwork(f"picbreeder {target}", "picbreeder", target, m, copies)


def default_networks(kinds: Sequence[str] = KINDS, targets: Sequence[str] = picbreeder.GENOMES) -> list[CountedNetwork]:
    """Picbreeder's layerized networks, FER's SGD networks and the stored twins, for ``targets``."""
    from .. import twins
    for k in checks.sequence(kinds, "kinds"):
        checks.choice(k, "kinds", KINDS)
    out = []
    for t in targets:
        if "picbreeder" in kinds:
            out.append(picbreeder_network(t))
        if "fer" in kinds:
            out.append(CountedNetwork(f"fer {t}", "fer", t, fer.load_fer(t)))
        if "twin" in kinds:
            paths = twins._loaded_paths(t)
            out += [CountedNetwork(f"twin {t} {p.stem.split('_')[-1]}", "twin", t, m)
                    for p, m in zip(paths, twins.load_twins(t))]
        if "fertwin" in kinds:
            out += [CountedNetwork(f"fertwin {t} {p.stem.split('_')[-1]}", "fertwin", t, store.load_cppn(p))
                    for p in twins.stored_fer_twins(t)]
    return out


def counted_weights(net: CountedNetwork, rule: str) -> list[tuple[int, int, int]]:
    """The weights ``(layer, out, in)`` a rule counts, in lexicographic order."""
    rule = checks.choice(rule, "rule", COUNT_RULES)
    weights = emc2.nonzero_weights(net.model)
    if rule == "links" and net.copies is not None:
        weights = [(l, o, i) for l, o, i in weights if not bool(net.copies[l][o, i])]
    return weights


def check_weights(net: CountedNetwork, weights) -> list[tuple[int, int, int]]:
    """``weights`` as a non-empty list of ``(layer, out, in)`` int triples that exist in ``net``'s model
    (``ValueError`` naming the first one that does not)."""
    checks.instance(net, "net", CountedNetwork)
    checks.sequence(weights, "weights")
    idx = checks.integers(weights, "weights", 0, ndim=2, min_size=1)
    if idx.shape[1] != 3:
        raise ValueError(f"weights must be (layer, out, in) triples, got shape {idx.shape}")
    shapes = [tuple(w.shape) for w in net.model.weights]
    for l, o, i in idx.tolist():
        if l >= len(shapes) or o >= shapes[l][0] or i >= shapes[l][1]:
            raise ValueError(f"weights: ({l}, {o}, {i}) is not a weight of {net.name!r} (layers of shapes "
                             f"{shapes})")
    return [tuple(w) for w in idx.tolist()]


def layer_scales(net: CountedNetwork, weights) -> dict[int, float]:
    """Per layer, the root mean square of the counted weights ``weights`` in it (the "layer" scale)."""
    weights = check_weights(net, weights)
    ws = [w.detach() for w in net.model.effective_weights()]
    vals: dict[int, list[float]] = {}
    for l, o, i in weights:
        vals.setdefault(l, []).append(float(ws[l][o, i]))
    return {l: float(np.sqrt(np.mean(np.square(v)))) for l, v in vals.items()}


def deltas_for(net: CountedNetwork, weights, policy: str, scale: float = SCALE, seed: int = 0,
               scales: dict[int, float] | None = None) -> torch.Tensor:
    """The change of each weight under ``policy`` (float64). ``scales``: the layer scales (default: computed
    from ``weights``; pass the full counted set's when ``weights`` is a sample)."""
    weights = check_weights(net, weights)
    policy = checks.choice(policy, "policy", SIZE_POLICIES)
    scale = checks.real(scale, "scale", 0, low_open=True)
    seed = checks.seed(seed)
    if scales is not None:
        checks.mapping(scales, "scales")
        for l in sorted({l for l, _, _ in weights}):
            if l not in scales:
                raise ValueError(f"scales has no scale for layer {l} (has {sorted(scales)})")
            checks.real(scales[l], f"scales[{l}]", 0)
    ws = [w.detach() for w in net.model.effective_weights()]
    w = torch.tensor([float(ws[l][o, i]) for l, o, i in weights], dtype=torch.float64)
    if policy == "fixed":
        return torch.full_like(w, scale)
    if policy == "relative":
        return scale * w.abs()
    s_l = scales if scales is not None else layer_scales(net, weights)
    s = torch.tensor([s_l[l] for l, _, _ in weights], dtype=torch.float64)
    if policy == "layer":
        return scale * s
    g = torch.Generator().manual_seed(int(seed) + 104729)
    return scale * s * torch.randn(len(weights), generator=g, dtype=torch.float64)


def sample_weights(weights, sample: int | None, seed: int = 0):
    """A seeded uniform sample (without replacement, kept in order) of ``sample`` weights; all when fewer."""
    sample = checks.optional_integer(sample, "sample")
    seed = checks.seed(seed)
    weights = checks.sequence(weights, "weights", 0)
    if sample is None or sample >= len(weights):
        return list(weights)
    keep = torch.randperm(len(weights), generator=torch.Generator().manual_seed(seed + 7919))[:sample]
    return [weights[j] for j in keep.sort().values.tolist()]


@torch.no_grad()
def score_network(net: CountedNetwork, judges: dict, rules: Sequence[str] = COUNT_RULES,
                  policies: Sequence[str] = SIZE_POLICIES,
                  res: int = 64, sample: int | None = 150, seed: int = 0, scale: float = SCALE,
                  batch_size: int = 64) -> list[dict]:
    """One row per (rule, policy, judge): ``k`` kept of ``n`` perturbations, and the judge's verdict on the
    unperturbed render. A dense network's "links" rows repeat its "nonzero" rows (the same weights)."""
    rows = []
    reference = net.model.render(res)
    base_ok = {j: bool(judge(reference[None], net.target, reference=reference.clone())[0])
               for j, judge in judges.items()}
    done: dict = {}
    for rule in rules:
        counted = counted_weights(net, rule)
        key = tuple(counted)
        weights = sample_weights(counted, sample, seed)
        scales = layer_scales(net, counted)
        for policy in policies:
            if (key, policy) not in done:
                t0 = time.perf_counter()
                d = deltas_for(net, weights, policy, scale, seed, scales)
                imgs = emc2.render_perturbations(net.model, weights, d, res, batch_size)
                kept = {}
                for j, judge in judges.items():
                    v = torch.cat([torch.as_tensor(judge(imgs[s:s + batch_size], net.target,
                                                         reference=reference.clone()))
                                   for s in range(0, len(imgs), batch_size)])
                    kept[j] = int(v.sum())
                done[(key, policy)] = (kept, time.perf_counter() - t0, float(d.abs().median()))
            kept, secs, med = done[(key, policy)]
            for j in judges:
                rows.append({"network": net.name, "kind": net.kind, "target": net.target, "rule": rule,
                             "policy": policy, "judge": j, "k": kept[j], "n": len(weights),
                             "n_counted": len(counted), "median_abs_delta": med,
                             "unperturbed_kept": base_ok[j], "seconds": round(secs, 2)})
    return rows


def run(networks: Sequence[CountedNetwork] | None = None, judges: Sequence[str] = JUDGE_NAMES, res: int = 64,
        sample: int | None = 150, seed: int = 0, scale: float = SCALE, progress=None) -> dict:
    """Score every network under every rule x policy x judge; the dict :func:`save` stores."""
    checks.check_render_size(res, 64, 4, "counting's renders")
    networks = default_networks() if networks is None else list(networks)
    js = make_judges(judges)
    t0, rows = time.perf_counter(), []
    for net in networks:
        rows += score_network(net, js, res=res, sample=sample, seed=seed, scale=scale)
        if progress:
            progress(f"{net.name}: done at {time.perf_counter() - t0:.0f} s")
    return {"rows": rows, "res": res, "sample": sample, "seed": seed, "scale": scale,
            "judges": {j: getattr(v, "identity", type(v).__name__) for j, v in js.items()},
            "weight_stats": [weight_stats(n) for n in networks], "seconds": round(time.perf_counter() - t0, 1)}


def weight_stats(net: CountedNetwork) -> dict:
    """How many weights each rule counts and their typical size (median |w|)."""
    out = {"network": net.name, "kind": net.kind}
    ws = [w.detach() for w in net.model.effective_weights()]
    for rule in COUNT_RULES:
        c = counted_weights(net, rule)
        out[f"n_{rule}"] = len(c)
        out[f"median_abs_w_{rule}"] = float(np.median([abs(float(ws[l][o, i])) for l, o, i in c]))
    return out


def save(result: dict, command: str, path=None):
    """Write ``result`` with its ``made_by`` (``command``) to ``path`` (default ``data/emc2/counting.json``)."""
    from ... import results
    return results.write_json(door.made_path(FILE) if path is None else path, result, command)


def load(path=None) -> dict:
    """A stored result (default ``data/emc2/counting.json``), verified against the registry where registered."""
    path = door.stored_path(FILE if path is None else Path(path), "python -m compbook.cppn counting")
    return results.json_file(path, "counting result")


def merge(*results: dict) -> dict:
    """Several stored runs as one (rows and weight stats concatenated; ``made_by`` lists each run's)."""
    if not results:
        raise ValueError("merge: give at least one result")
    keys = ("res", "scale", "seed")
    for r in results[1:]:
        for k in keys:
            if r.get(k) != results[0].get(k):
                raise ValueError(f"merge: {k} differs ({r.get(k)!r} vs {results[0].get(k)!r})")
    return dict(results[0], rows=[x for r in results for x in r["rows"]],
                weight_stats=[x for r in results for x in r["weight_stats"]],
                made_by=" ; ".join(r.get("made_by", "?") for r in results),
                seconds=sum(r.get("seconds", 0) for r in results))


def table(result: dict, by: str = "network"):
    """A DataFrame: per ``by="network"`` one row per network x rule x policy x judge with its Wilson interval;
    ``by="kind"`` pooled over the networks of a kind (interval: :func:`compbook.stats.pooled_ci`, networks and
    their verdicts resampled)."""
    import pandas as pd
    by = checks.choice(by, "by", ("network", "kind"))
    df = pd.DataFrame(result["rows"])
    if by == "network":
        lo_hi = [stats.wilson(k, n) for k, n in zip(df.k, df.n)]
        df["score"] = df.k / df.n
        df["lo"], df["hi"] = [a for a, _ in lo_hi], [b for _, b in lo_hi]
        return df[["network", "rule", "policy", "judge", "score", "lo", "hi", "n", "n_counted"]]
    rows = []
    for (kind, rule, policy, judge), g in df.groupby(["kind", "rule", "policy", "judge"], sort=False):
        p, n = (g.k / g.n).to_numpy(), g.n.to_numpy()
        lo, hi = stats.pooled_ci(p, n) if len(g) > 1 else stats.wilson(int(g.k.sum()), int(n.sum()))
        rows.append({"kind": kind, "rule": rule, "policy": policy, "judge": judge,
                     "score": float(g.k.sum() / n.sum()), "lo": lo, "hi": hi, "networks": len(g)})
    return pd.DataFrame(rows)


def wide(result: dict):
    """The kind table pivoted: rows rule x policy x judge, columns the kinds' ``score [lo, hi]``."""
    t = table(result, "kind")
    t["cell"] = [f"{s:.2f} [{lo:.2f}, {hi:.2f}]" for s, lo, hi in zip(t.score, t.lo, t.hi)]
    kinds = [k for k in KINDS if k in set(t.kind)]
    return t.pivot_table(index=["rule", "policy", "judge"], columns="kind", values="cell",
                         aggfunc="first", sort=False)[kinds]


# -- the judge across labelled batches ---------------------------------------------------------------------------
CROSS_FILE = "emc2/judge_cross_batch.json"


def cross_batch(keys: Sequence[str] | None = None, seed: int = 0) -> dict:
    """Choose the CPU judge on one stored labelled batch (:func:`compbook.cppn.audit.agreement.choose`: thresholds on
    its calibration half, the candidate on its held-out half) and validate it, thresholds fixed, on the other
    (:func:`~compbook.cppn.audit.agreement.validate`), each way round. Rows per network kind (all, picbreeder, sgd).
    Both batches are one labeller's (model labeller 1): this measures how the choice moves with the batch, not with the
    labeller. ``keys``: default :data:`compbook.cppn.audit.labelling.LABELLER_KEYS`."""
    from . import agreement, labelling
    keys = labelling.LABELLER_KEYS if keys is None else keys
    if len(keys) != 2 or keys[0] == keys[1]:
        raise ValueError(f"keys must be two different stored batches, got {keys!r}")
    t0 = time.perf_counter()
    batches = {}
    for k in keys:
        items, answers = agreement.answered_items(k)
        batches[k] = (items, answers, labelling.render_items(items))
    out = {"keys": list(keys), "split_seed": seed, "directions": []}
    for a, b in (keys, keys[::-1]):
        ch = agreement.choose(*batches[a], seed=seed)
        val = agreement.validate(*batches[b], ch["thresholds"])
        out["directions"].append({
            "chosen_on": a, "validated_on": b, "thresholds": ch["thresholds"], "chosen": ch["chosen"],
            "n_choice": ch["n_labelled"], "n_validation": val["n_labelled"],
            "choice_held_out": {k: v[:3] for k, v in ch["tables"].items()},
            "validation": val["tables"]})
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def cross_batch_table(result: dict):
    """One row per direction x candidate x network kind: the threshold chosen on one batch, the balanced
    accuracy and agreement on its own held-out half and on the other batch."""
    import pandas as pd
    rows = []
    for d in result["directions"]:
        for cand, val_rows in d["validation"].items():
            own = {r["network"]: r for r in d["choice_held_out"].get(cand, [])}
            for r in val_rows:
                o = own.get(r["network"], {})
                rows.append({"chosen on": d["chosen_on"].removesuffix(".json"),
                             "candidate": cand + (" (chosen)" if cand == d["chosen"] else ""),
                             "threshold": d["thresholds"].get(cand), "network": r["network"],
                             "balanced, own held-out": o.get("balanced_accuracy"),
                             "balanced, other batch": r["balanced_accuracy"],
                             "agreement, other batch": r["agreement"], "n other": r["n"]})
    return pd.DataFrame(rows)
