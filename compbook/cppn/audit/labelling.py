"""Blind verdicts for EMC2-Bench: the protocol, its items and keys, contact sheets and the verdict cache (chapter 5).

The stored verdicts (``data/judge_cache/``) are those of three *model labellers*: a multimodal AI model viewing
the PNG contact sheets, blind to the key (:data:`LABELLER`, :data:`SECOND_LABELLER`, :data:`THIRD_LABELLER`;
identity :func:`labeller_identity`). A reader's own verdicts, given in chapter 5's widget
(:mod:`compbook.cppn.audit.reader_labels`), are human verdicts and are kept apart under :func:`reader_identity`.

The protocol (``PROTOCOL``; written out in ``data/judge_cache/README.md``): each item is one 64x64 render, a
perturbation ``w + delta`` of one weight of a network (or the network's unperturbed render). The labeller sees
only the concept's name and its Picbreeder reference render beside the item, answers "would you still call this
a <concept>?" with yes / no / can't tell, and never sees which network (Picbreeder or SGD, which seed), which
weight or which delta made it: items are shuffled across network kinds, seeds and deltas, and numbered in the
shuffled order. The *key* (item number -> network and question) is a separate file the labeller does not open.

Verdicts go to a :class:`~compbook.cppn.judges.CachedJudge` cache whose identity names the protocol and the labeller
(:func:`labeller_identity`, :func:`reader_identity`), keyed by the same question dicts
:func:`compbook.cppn.emc2.compositional_score` asks, so a verdict is served only for the very same image question.
"Can't tell" is stored as ``verdict: false`` with ``detail: {"answer": "can't tell"}`` (like a VLM answer with no
yes/no); agreement tables leave it out.

Two ways to label: :func:`write_sheets` (PNG contact sheets, then a text file ``<item> y|n|?`` per line, read by
:func:`read_labels`) and :class:`compbook.cppn.audit.reader_labels.LabelWidget` (Jupyter only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from ... import checks, results
from ..data import store
from .. import emc2, judges, picbreeder, twins
from ...results import door

PROTOCOL = ("emc2-blind-v1: one 64x64 render per item, shown x3 beside the concept's Picbreeder reference "
            "render and its name only; question 'Would you still call this a {concept}?'; answers yes / no / "
            "can't tell (stored false, detail can't tell); items shuffled across network kinds, seeds and "
            "deltas; key kept apart")
#: The first model labeller (batches 1 and 2): a multimodal AI model viewing the contact sheets, blind to the key.
LABELLER = "labeller 1"
#: the keys of :data:`LABELLER`'s two batches in ``data/judge_cache/`` (the first: earlier twins; the second: current)
LABELLER_KEYS = ("labeller_key.json", "labeller_key_batch2.json")
#: The model labeller of the third batch, blind to the key and to the first labeller's answers; its verdicts
#: have their own identity and cache file.
SECOND_LABELLER = "labeller 2"
#: The model labeller of the overlap set (items labellers 1 and 2 answered), blind to both.
THIRD_LABELLER = "labeller 3"
#: Whose verdicts the widget stores by default: the reader's own (human) answers.
READER = "reader"
ANSWERS = {"y": "yes", "n": "no", "?": "can't tell"}
RES = 64


def _identity(kind: str, who: str, name: str, protocol: str) -> str:
    checks.non_empty_str(who, name)
    checks.non_empty_str(protocol, "protocol")
    if not who.strip() or not protocol.strip():
        raise ValueError(f"{name} and protocol must be non-empty")
    return f"{kind}:{who}|protocol={protocol}"


def labeller_identity(labeller: str = LABELLER, protocol: str = PROTOCOL) -> str:
    """The judge identity of a model labeller's blind verdicts, ``model:<labeller>|protocol=<protocol>`` (both
    part of every cache key). Caches written under the earlier ``human:`` names are read through
    :data:`compbook.cppn.judges.cache.RENAMED_IDENTITIES`."""
    return _identity("model", labeller, "labeller", protocol)


def reader_identity(reader: str = READER, protocol: str = PROTOCOL) -> str:
    """The judge identity of a reader's own (human) verdicts, ``human:<reader>|protocol=<protocol>``: what
    :class:`~compbook.cppn.audit.reader_labels.LabelWidget` stores by default, never mixed with the model labellers'
    caches."""
    return _identity("human", reader, "reader", protocol)


# -- the items ---------------------------------------------------------------------------------------------------
@dataclass
class Network:
    """A network items are drawn from: ``source`` says how to rebuild it (``picbreeder:<name>`` or a
    checkpoint path relative to ``data/``)."""
    concept: str
    kind: str          # one of KINDS: "picbreeder", "sgd" (our twins), "fer" (FER's own), "fertwin"
    seed: int
    source: str
    model: object


#: Network kinds items can come from: Picbreeder's layerized network, the stored SGD twins of the Picbreeder
#: shapes (``sgd``), FER's own SGD networks (``fer``, :func:`compbook.cppn.fer.load_fer`) and the stored twins
#: of FER's architecture (``fertwin``, :func:`compbook.cppn.twins.stored_fer_twins`).
KINDS = ("picbreeder", "sgd", "fer", "fertwin")


def networks(concepts: Sequence[str] = twins.TARGETS, kinds: Sequence[str] = ("picbreeder", "sgd")) -> list[Network]:
    """Per concept, the networks of ``kinds`` (:data:`KINDS`): by default the layerized Picbreeder network and
    the stored SGD twins (:func:`compbook.cppn.twins.load_twins`)."""
    for c in checks.sequence(concepts, "concepts"):
        checks.choice(c, "concepts", twins.TARGETS)
    for k in checks.sequence(kinds, "kinds"):
        checks.choice(k, "kinds", KINDS)
    out = []
    for c in concepts:
        if "picbreeder" in kinds:
            out.append(Network(c, "picbreeder", 0, f"picbreeder:{c}",
                               picbreeder.layerize(picbreeder.load_genome(c))))
        if "fer" in kinds:
            out.append(Network(c, "fer", 0, f"fer:{c}", load_network(f"fer:{c}")))
        if "fertwin" in kinds:
            for p in twins.stored_fer_twins(c):
                rel = p.relative_to(p.parents[1]).with_suffix("").as_posix()
                out.append(Network(c, "fertwin", int(store.load_metadata(p)["seed"]), rel, load_network(rel)))
        if "sgd" not in kinds:
            continue
        paths = twins.stored_twins(c)
        models = twins.load_twins(c)
        hashes = {store.content_hash(m): m for m in models}
        for p in paths:
            meta = json.loads(p.read_text())
            if meta["content_hash"] in hashes:
                rel = p.relative_to(p.parents[1]).with_suffix("").as_posix()
                out.append(Network(c, "sgd", meta["metadata"]["seed"], rel, hashes[meta["content_hash"]]))
    return out


def load_network(source: str):
    """Rebuild a network from a key's ``source`` (``picbreeder:<name>``, ``fer:<name>`` or ``emc2/<checkpoint
    stem>``)."""
    checks.non_empty_str(source, "source")
    if source.startswith("picbreeder:"):
        return picbreeder.layerize(picbreeder.load_genome(checks.safe_name(source.split(":", 1)[1], "source")))
    if source.startswith("fer:"):
        from .. import fer
        return fer.load_fer(checks.choice(source.split(":", 1)[1], "source (fer:<name>)", fer.NAMES))
    return store.load_cppn(door.stored_path(door.made_path(source, "source")))


def plan_items(nets: Sequence[Network], deltas=(0.5, 1.0, 2.0), per_picbreeder: int = 22, per_sgd: int = 8,
               seed: int = 0, start: int = 1, per_kind: dict | None = None) -> list[dict]:
    """The key: one dict per item (``concept``, ``kind``, ``seed``, ``source``, ``question``), shuffled.

    Per network: its unperturbed render (``weight: None, delta: 0``) and, for each delta, a seeded sample of
    ``per_picbreeder`` (Picbreeder) or ``per_sgd`` (each network of another kind) non-zero weights, moved by
    ``+delta``; ``per_kind`` ({kind: count}) overrides the count of the kinds it names. Items are then shuffled
    within each concept (one concept per sheet) and numbered from ``start``.
    """
    for i, net in enumerate(checks.sequence(nets, "nets")):
        checks.instance(net, f"nets[{i}]", Network)
    for i, d in enumerate(checks.sequence(deltas, "deltas")):
        checks.real(d, f"deltas[{i}]", nonzero=True)
    per_picbreeder = checks.integer(per_picbreeder, "per_picbreeder", 0)
    per_sgd = checks.integer(per_sgd, "per_sgd", 0)
    seed = checks.seed(seed)
    start = checks.integer(start, "start", 0)
    per_kind = dict(checks.mapping(per_kind, "per_kind") if per_kind is not None else {})
    for k, v in per_kind.items():
        checks.choice(k, "per_kind (kind)", KINDS)
        checks.integer(v, f"per_kind[{k!r}]", 0)
    rng = np.random.default_rng(seed)
    by_concept: dict[str, list[dict]] = {}
    for net in nets:
        h = store.content_hash(net.model)
        base = dict(concept=net.concept, kind=net.kind, seed=net.seed, source=net.source)
        items = [base | {"question": _question(h, None, 0.0)}]
        weights = emc2.nonzero_weights(net.model)
        k = per_kind.get(net.kind, per_picbreeder if net.kind == "picbreeder" else per_sgd)
        for d in deltas:
            pick = rng.choice(len(weights), size=min(k, len(weights)), replace=False)
            items += [base | {"question": _question(h, weights[j], float(d))} for j in sorted(pick)]
        by_concept.setdefault(net.concept, []).extend(items)
    out = []
    for c in sorted(by_concept):
        items = by_concept[c]
        out += [items[j] for j in rng.permutation(len(items))]
    for n, item in enumerate(out, start):
        item["item"] = n
    return out


def without_questions(items: Sequence[dict], asked: Sequence[dict], start: int) -> list[dict]:
    """``items`` minus those whose (concept, question) an earlier batch ``asked`` (a verdict is stored once per
    question), renumbered from ``start`` in the same shuffled order."""
    start = checks.integer(start, "start", 0)
    check_items(items)
    check_items(asked, "asked")
    seen = {(it["concept"], judges.canonical_json(it["question"])) for it in asked}
    out = [dict(it) for it in items if (it["concept"], judges.canonical_json(it["question"])) not in seen]
    for n, it in enumerate(out, start):
        it["item"] = n
    return out


def check_items(items, name: str = "items", keys=("concept", "question")) -> list:
    """``items`` checked as key items: a sequence of dicts, each with ``keys`` (``question`` a dict); ValueError
    naming ``name`` otherwise."""
    items = checks.sequence(items, name, 0)
    for i, it in enumerate(items):
        if not isinstance(it, dict) or any(k not in it for k in keys) or \
                "question" in keys and not isinstance(it["question"], dict):
            raise ValueError(f"{name}[{i}] must be a key item with {list(keys)}, got {it!r:.80}")
    return items


def _question(model_hash: str, weight, delta: float) -> dict:
    """The question dict of one item: as :func:`compbook.cppn.emc2.questions_for` (``weight: None`` = unperturbed)."""
    return {"model": model_hash, "weight": None if weight is None else [int(x) for x in weight],
            "delta": float(delta), "policy": "plus", "res": RES}


def render_items(items: Sequence[dict], models: dict | None = None) -> torch.Tensor:
    """The images ``(N, 64, 64, 3)`` of key items, in order (networks rebuilt from ``source``, or ``models``)."""
    items = check_items(items, keys=("concept", "question", "source"))
    for it in items:
        if not it["source"].startswith(("picbreeder:", "fer:")):
            checks.safe_path(".", it["source"], "items: source") if isinstance(it["source"], str) else \
                checks.non_empty_str(it["source"], "items: source")
    models = dict(checks.mapping(models, "models") if models is not None else {})
    out = torch.zeros(len(items), RES, RES, 3)
    by_source: dict[str, list[int]] = {}
    for j, it in enumerate(items):
        by_source.setdefault(it["source"], []).append(j)
    for src, idx in by_source.items():
        model = models.setdefault(src, load_network(src))
        if store.content_hash(model) != items[idx[0]]["question"]["model"]:
            raise ValueError(f"items: network {src} is not the one the key names (content hash differs)")
        plain = [j for j in idx if items[j]["question"]["weight"] is None]
        moved = [j for j in idx if items[j]["question"]["weight"] is not None]
        with torch.no_grad():
            for j in plain:
                out[j] = model.render(RES)
        if moved:
            out[moved] = emc2.render_perturbations(model, [tuple(items[j]["question"]["weight"]) for j in moved],
                                                   [items[j]["question"]["delta"] for j in moved], RES)
    return out


def reference(concept: str, res: int = RES) -> np.ndarray:
    """The concept's Picbreeder reference render ``(res, res, 3)`` (the float64 genome render)."""
    return picbreeder.render(picbreeder.load_genome(concept), res)


# -- contact sheets --------------------------------------------------------------------------------------------
def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:     # Pillow < 10.1
        return ImageFont.load_default()


def to_pil(img, scale: int) -> Image.Image:
    """An ``(H, W, 3)`` render in [0, 1] (clipped) as a PIL image ``scale`` times enlarged (nearest neighbour)."""
    a = np.clip(np.asarray(img, dtype=np.float64), 0, 1)
    pil = Image.fromarray(np.round(a * 255).astype(np.uint8))
    return pil.resize((a.shape[1] * scale, a.shape[0] * scale), Image.NEAREST)


def contact_sheet(images, numbers: Sequence[int], concept: str, rows: int = 4, cols: int = 6,
                  scale: int = 3) -> Image.Image:
    """One sheet: the reference render and the concept's name at the top, then ``rows x cols`` items, each
    ``scale`` times enlarged under its big item number. Nothing else is drawn (no network, weight or delta)."""
    scale = checks.integer(scale, "scale", 1, 8)
    rows = checks.integer(rows, "rows")
    cols = checks.integer(cols, "cols")
    images = checks.tensor(images, "images", (None, None, None, 3), low=0, high=1)
    n, side = len(images), RES * scale
    pad, label, head = 10, 34, side + 20
    size = (cols * (side + pad) + pad, head + rows * (side + label + pad) + pad)
    # the sheet (PIL keeps RGB in 4 bytes a pixel), the checked images (two 8-byte copies at most) and one item's
    # float64, uint8 and enlarged copies at a time
    checks.check_budget(4.0 * size[0] * size[1] + 16.0 * images.numel() + 40.0 * side * side,
                        f"contact_sheet {rows} x {cols} at scale {scale}")
    if n > rows * cols or n != len(numbers):
        raise ValueError(f"images: {n} items for {len(numbers)} numbers and a {rows}x{cols} sheet")
    sheet = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(sheet)
    sheet.paste(to_pil(reference(concept), scale), (pad, 10))
    draw.text((side + 3 * pad, 20), f"reference: {concept}", fill="black", font=_font(32))
    draw.text((side + 3 * pad, 70), f"Would you still call this a {concept}?  y / n / ?", fill="black",
              font=_font(24))
    for k, (img, num) in enumerate(zip(images, numbers)):
        r, c = divmod(k, cols)
        x, y = pad + c * (side + pad), head + r * (side + label + pad)
        draw.text((x, y), str(num), fill="black", font=_font(30))
        sheet.paste(to_pil(img, scale), (x, y + label))
    return sheet


def write_sheets(items: Sequence[dict], images, folder, per_sheet: int = 24, cols: int = 6,
                 scale: int = 3) -> list[Path]:
    """Contact sheets ``sheet_NN_<concept>.png`` of key items (one concept per sheet, in item order)."""
    items = check_items(items, keys=("concept", "item"))
    checks.same_length(items, images, "items", "images")
    per_sheet = checks.integer(per_sheet, "per_sheet")
    cols = checks.integer(cols, "cols")
    scale = checks.integer(scale, "scale", 1, 8)
    checks.tensor(images, "images", (None, None, None, 3), low=0, high=1)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"folder {folder} is a file, not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    out, start = [], 0
    while start < len(items):
        c = items[start]["concept"]
        stop = start
        while stop < len(items) and stop - start < per_sheet and items[stop]["concept"] == c:
            stop += 1
        sheet = contact_sheet(images[start:stop], [it["item"] for it in items[start:stop]], c,
                              rows=-(-per_sheet // cols), cols=cols, scale=scale)
        path = folder / f"sheet_{len(out) + 1:02d}_{c}.png"
        sheet.save(path)
        out.append(path)
        start = stop
    return out


def read_labels(path) -> dict[int, str]:
    """A labels file: one ``<item> <y|n|?>`` per line (``#`` comments, blank lines ignored) -> {item: answer}."""
    path = checks.file_path(path, "labels file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"labels file {path} is not text ({e})") from None
    out = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[0].isdigit() or parts[1] not in ANSWERS:
            raise ValueError(f"{path}:{lineno}: expected '<item> y|n|?', got {line!r}")
        if int(parts[0]) in out:
            raise ValueError(f"{path}:{lineno}: item {parts[0]} labelled twice")
        out[int(parts[0])] = parts[1]
    return out


# -- the cache ---------------------------------------------------------------------------------------------------
def store_verdicts(items: Sequence[dict], labels: dict[int, str], path=None, identity: str | None = None) -> Path:
    """Write the labelled key items into a verdict cache (``CachedJudge`` format; default: the first model
    labeller's, :func:`labeller_identity`); returns its path.

    An existing file must have the same identity (else ``ValueError``); a question already stored with another
    answer is an error too (a verdict is never silently replaced)."""
    identity = identity or labeller_identity()
    checks.non_empty_str(identity, "identity")
    items = check_items(items, keys=("concept", "question", "item"))
    numbers = [it["item"] for it in items]
    if len(set(numbers)) != len(numbers):
        raise ValueError("items: an item number appears twice (two keys mixed?)")
    checks.mapping(labels, "labels", 1)
    for n, a in labels.items():
        if a not in ANSWERS:
            raise ValueError(f"labels[{n!r}] must be one of {list(ANSWERS)}, got {a!r}")
    path = Path(path) if path is not None else judges.cache_path(identity)
    entries = judges.read_cache(path)[1] if path.exists() else {}
    if path.exists() and judges.read_cache(path)[0] != identity:
        raise ValueError(f"{path} holds verdicts of {judges.read_cache(path)[0]!r}, not {identity!r}")
    by_item = {it["item"]: it for it in items}
    for n, a in labels.items():
        if n not in by_item:
            raise ValueError(f"labels: item {n} is not in the key")
        it = by_item[n]
        key = judges.entry_key(identity, it["concept"], it["question"])
        entry = {"concept": it["concept"], "question": json.loads(judges.canonical_json(it["question"])),
                 "verdict": a == "y", "detail": {"answer": ANSWERS[a]}}
        if key in entries and entries[key]["detail"] != entry["detail"]:
            raise ValueError(f"item {n}: already stored as {entries[key]['detail']['answer']!r}, now {ANSWERS[a]!r}")
        entries[key] = entry
    return judges.write_cache(path, identity, entries)


def labeller_judge(path=None, identity: str | None = None) -> judges.CachedJudge:
    """A model labeller's stored verdicts (default: the first's) as a strict
    :class:`~compbook.cppn.judges.CachedJudge` (refuses another identity)."""
    identity = identity or labeller_identity()
    checks.non_empty_str(identity, "identity")
    return judges.CachedJudge(path if path is not None else judges.cache_path(identity), identity=identity)


def answers_for(items: Sequence[dict], path=None, identity: str | None = None) -> list[str | None]:
    """The stored answer (``"yes"``, ``"no"``, ``"can't tell"``) of each key item, None where none is stored
    (default: the first model labeller's, :func:`labeller_identity`)."""
    identity = identity or labeller_identity()
    checks.non_empty_str(identity, "identity")
    items = check_items(items)
    _, entries = judges.read_cache(path if path is not None else judges.cache_path(identity))
    out = []
    for it in items:
        e = entries.get(judges.entry_key(identity, it["concept"], it["question"]))
        out.append(None if e is None else e["detail"]["answer"])
    return out


def judge_verdicts(judge, items: Sequence[dict], images) -> list[bool]:
    """``judge``'s yes / no on each item's render, asked one concept at a time (``images`` ``(N, 64, 64, 3)``,
    in the order of ``items``)."""
    items = check_items(items, keys=("concept",))
    if not callable(judge):
        raise ValueError(f"judge must be callable (images, concept) -> verdicts, got {type(judge).__name__}")
    if len(images) != len(items):
        raise ValueError(f"images: {len(images)} for {len(items)} items")
    out = [False] * len(items)
    for c in sorted({it["concept"] for it in items}):
        idx = [j for j, it in enumerate(items) if it["concept"] == c]
        for j, v in zip(idx, judge(images[idx], c)):
            out[j] = bool(v)
    return out


# -- command line ------------------------------------------------------------------------------------------------
def relabel_items(items: Sequence[dict], fraction: float = 0.1, seed: int = 1, start: int = 9001) -> list[dict]:
    """A seeded ``fraction`` of ``items``, shuffled again and renumbered from ``start`` (``"of"``: the original
    item number), for the labeller's self-agreement."""
    items = check_items(items, keys=("concept", "item"))
    fraction = checks.real(fraction, "fraction", 0, 1, low_open=True)
    seed = checks.seed(seed)
    start = checks.integer(start, "start", 0)
    if not items:
        raise ValueError("items must hold at least one item")
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(items), size=max(1, round(fraction * len(items))), replace=False)
    by_concept: dict[str, list[dict]] = {}
    for j in pick:
        by_concept.setdefault(items[j]["concept"], []).append(dict(items[j]) | {"of": items[j]["item"]})
    out = [it for c in sorted(by_concept) for it in by_concept[c]]
    for n, it in enumerate(out, start):
        it["item"] = n
    return out


def read_key(path) -> list[dict]:
    """The items of a key file, checked: a JSON object of this :data:`PROTOCOL` whose items are dicts with
    concept, kind, source, question and a distinct item number (a truncated or mixed key is refused)."""
    data = results.json_file(path, "labelling key")
    if data.get("protocol", PROTOCOL) != PROTOCOL:     # relabel keys were written without the field
        raise ValueError(f"{path}: key of another protocol {str(data.get('protocol'))[:40]!r}..., not this one")
    items = data.get("items")
    if not isinstance(items, list):
        raise ValueError(f"{path}: key has no 'items' list")
    check_items(items, f"{path}: items", ("concept", "kind", "source", "question", "item"))
    numbers = [it["item"] for it in items]
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"{path}: an item number appears twice (two keys merged?)")
    return items


def write_key(path, items, note: str) -> None:
    checks.non_empty_str(note, "note")
    text = judges.canonical_json({"note": note, "protocol": PROTOCOL, "items": checks.sequence(items, "items", 0)},
                                 "items")
    del text      # checked: JSON-able, no NaN
    results.write_json(path, {"note": note, "protocol": PROTOCOL, "items": items}, indent=0)


# -- an overlap set: items other labellers answered, asked again -----------------------------------------
def stratified_draw(items: Sequence[dict], answers: Sequence[str], counts: dict, seed: int = 0) -> list[dict]:
    """A seeded draw of answered key ``items``: ``counts[answer]`` items of each answer ("yes", "no",
    "can't tell"; every item of that answer where there are fewer), spread over concepts (round-robin over the
    concepts in a seeded order, each concept's items in a seeded order). Returns copies with ``"of"`` (the
    original item number) and ``"answer"``, in draw order."""
    items = check_items(items, keys=("concept", "item"))
    answers = checks.sequence(answers, "answers", 0)
    checks.same_length(items, answers, "items", "answers")
    rng = np.random.default_rng(checks.seed(seed))
    out = []
    for answer, k in checks.mapping(counts, "counts", 1).items():
        checks.choice(answer, "counts (an answer)", tuple(ANSWERS.values()))
        k = checks.integer(k, f"counts[{answer!r}]", 0)
        by_c: dict[str, list[int]] = {}
        for j, a in enumerate(answers):
            if a == answer:
                by_c.setdefault(items[j]["concept"], []).append(j)
        queues = [[by_c[c][i] for i in rng.permutation(len(by_c[c]))] for c in
                  [sorted(by_c)[i] for i in rng.permutation(len(by_c))]]
        order = [q[r] for r in range(max(map(len, queues), default=0)) for q in queues if r < len(q)]
        out += [dict(items[j]) | {"of": items[j]["item"], "answer": answer} for j in order[:k]]
    return out


def number_by_concept(items: Sequence[dict], starts: dict, seed: int = 0) -> list[dict]:
    """``items`` shuffled (seeded) within each concept and numbered from ``starts[concept]``; copies, in the
    order of ``starts``' concepts then item number (one concept per sheet)."""
    items = check_items(items, keys=("concept",))
    rng = np.random.default_rng(checks.seed(seed))
    starts = checks.mapping(starts, "starts", 1)
    missing = {it["concept"] for it in items} - set(starts)
    if missing:
        raise ValueError(f"starts has no first number for concept(s) {sorted(missing)}")
    out = []
    for c, start in starts.items():
        group = [dict(it) for it in items if it["concept"] == c]
        group = [group[j] for j in rng.permutation(len(group))]
        for n, it in enumerate(group, checks.integer(start, f"starts[{c!r}]", 0)):
            it["item"] = n
        out += group
    return out
