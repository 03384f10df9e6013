"""A reader's own blind verdicts in chapter 5: the label widget, the reader's labels file, and how often each judge
agrees with it.

Chapter 5 offers a reader a seeded handful of key items (:func:`reader_items`) to label in :class:`LabelWidget`
(Jupyter only), under the same protocol as the model labellers (:mod:`compbook.cppn.audit.labelling`: the concept's
reference render beside the item, yes / no / can't tell, blind to the key). These are human verdicts: they go to
a labels file of the reader's own (:func:`reader_labels_path`, one ``<item> y|n|?`` line per item) and, when a
cache path is given, to a cache under :func:`compbook.cppn.audit.labelling.reader_identity`, never mixed with the model
labellers' caches (:func:`reader_answers` reads them back). :func:`reader_agreement` counts how often each judge
agrees with the reader's yes / no.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ... import checks
from . import labelling
from ...results import door


# -- the notebook widget -----------------------------------------------------------------------------------------
class LabelWidget:
    """Label items in Jupyter: the reference render and the item, buttons yes / no / can't tell (chapter 5).

    ``items`` are key dicts (:func:`~compbook.cppn.audit.labelling.plan_items`), ``images`` their renders. These are the
    reader's own (human) answers: they collect in ``.labels`` ({item: 'y'|'n'|'?'}; :meth:`answers` per item);
    with ``path`` each answer is also stored at once (:func:`~compbook.cppn.audit.labelling.store_verdicts`) under
    ``identity`` (default :func:`~compbook.cppn.audit.labelling.reader_identity`, never a model labeller's); with
    ``labels_file`` (:func:`reader_labels_path`) the answers so far are written there after each click, in
    :func:`~compbook.cppn.audit.labelling.read_labels`' format, and a widget opened again starts where the file stops.
    Call ``.show()`` in a live kernel only (the chapter checks that it is not headless).
    """

    def __init__(self, items: Sequence[dict], images, path=None, identity: str | None = None,
                 labels_file=None):
        items = labelling.check_items(items, keys=("concept", "item"))
        if not hasattr(images, "__len__") or isinstance(images, (str, bytes)):
            raise ValueError(f"images must be the items' renders (N, 64, 64, 3), got {type(images).__name__}")
        if len(items) != len(images):
            raise ValueError(f"images: {len(images)} for {len(items)} items")
        self.items, self.images, self.path = list(items), images, path
        self.identity = identity or labelling.reader_identity()
        self.labels_file = None if labels_file is None else reader_labels_path(labels_file)
        self.labels: dict[int, str] = {}
        if self.labels_file is not None and self.labels_file.exists():     # carry on where the reader stopped
            numbers = {it["item"] for it in self.items}
            self.labels = {n: a for n, a in labelling.read_labels(self.labels_file).items() if n in numbers}
        self.pos = next((j for j, it in enumerate(self.items) if it["item"] not in self.labels), len(self.items))

    def show(self):
        import ipywidgets as w
        from IPython.display import display
        self._img, self._ref = w.Image(format="png"), w.Image(format="png")
        self._text = w.HTML()
        buttons = [w.Button(description=labelling.ANSWERS[a]) for a in labelling.ANSWERS]
        for b, a in zip(buttons, labelling.ANSWERS):
            b.on_click(lambda _, a=a: self.answer(a))
        self._update()
        display(w.VBox([self._text, w.HBox([self._ref, self._img]), w.HBox(buttons)]))

    def answers(self) -> list[str | None]:
        """The reader's answer (``"yes"``, ``"no"``, ``"can't tell"``) to each item so far, None where none."""
        return [labelling.ANSWERS.get(self.labels.get(it["item"])) for it in self.items]

    def answer(self, a: str) -> None:
        """Record answer ``a`` ('y', 'n' or '?') for the current item and move to the next."""
        if a not in labelling.ANSWERS:
            raise ValueError(f"a must be one of {list(labelling.ANSWERS)}, got {a!r}")
        if self.pos >= len(self.items):
            return
        n = self.items[self.pos]["item"]
        self.labels[n] = a
        if self.path is not None:
            labelling.store_verdicts(self.items, {n: a}, self.path, self.identity)
        if self.labels_file is not None:
            write_reader_labels(self.labels, self.labels_file)
        self.pos += 1
        if hasattr(self, "_img"):
            self._update()

    def _update(self) -> None:
        import io
        if self.pos >= len(self.items):
            self._text.value = f"<b>done: {len(self.labels)} answers</b>"
            return
        it = self.items[self.pos]
        for widget, img in ((self._ref, labelling.reference(it["concept"])),
                            (self._img, self.images[self.pos])):
            buf = io.BytesIO()
            labelling.to_pil(img, 3).save(buf, format="png")
            widget.value = buf.getvalue()
        self._text.value = (f"item {self.pos + 1} of {len(self.items)}: would you still call the right "
                            f"image a <b>{it['concept']}</b>? (left: the reference)")


def reader_answers(items: Sequence[dict], path, reader: str = labelling.READER) -> list[str | None]:
    """A reader's own (human) answers to key items, as stored by ``LabelWidget(items, images, path)``
    (:func:`~compbook.cppn.audit.labelling.reader_identity`); None where the reader gave none. The model labellers'
    answers: :func:`~compbook.cppn.audit.labelling.answers_for`."""
    if path is None:
        raise ValueError("path: give the reader's own cache file (LabelWidget(..., path=...))")
    return labelling.answers_for(items, path, labelling.reader_identity(reader))


# -- the reader's labels file, and the judges' agreement with it ----------------------------------------------
#: the environment variable that names the file of a reader's own verdicts
READER_LABELS_VARIABLE = "COMPBOOK_READER_LABELS"
#: where the label widget keeps a reader's verdicts when neither a path nor the variable says otherwise
READER_LABELS_DEFAULT = Path("~/.cache/compbook/reader_labels.txt")


def reader_labels_path(path=None) -> Path:
    """The file of a reader's own verdicts: ``path``, else ``$COMPBOOK_READER_LABELS``, else
    :data:`READER_LABELS_DEFAULT` (``~`` expanded). The file need not exist yet."""
    if path is None:
        path = os.environ.get(READER_LABELS_VARIABLE, "").strip() or READER_LABELS_DEFAULT
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ValueError(f"reader labels path must be a str or os.PathLike, got {path!r}")
    p = Path(path).expanduser()
    if p.is_dir():
        raise ValueError(f"reader labels path {p} is a folder, not a file")
    return p


def write_reader_labels(labels: dict[int, str], path=None) -> Path:
    """Write ``labels`` ({item: 'y'|'n'|'?'}) as ``<item> <answer>`` lines
    (:func:`~compbook.cppn.audit.labelling.read_labels`' format) to :func:`reader_labels_path` ``(path)``, atomically (a
    temporary file, then a rename); returns the path."""
    checks.mapping(labels, "labels")
    for n, a in labels.items():
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"labels: item numbers must be non-negative integers, got {n!r}")
        if a not in labelling.ANSWERS:
            raise ValueError(f"labels[{n!r}] must be one of {list(labelling.ANSWERS)}, got {a!r}")
    path = reader_labels_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("# a reader's own verdicts: <item> y|n|?\n"
                   + "".join(f"{int(n)} {labels[n]}\n" for n in sorted(labels)), encoding="utf-8")
    tmp.replace(path)
    return path


def reader_items(key_name: str = labelling.LABELLER_KEYS[1], per_group: int = 2, seed: int = 5) -> list[dict]:
    """The items chapter 5 offers a reader to label: from a stored key in ``data/judge_cache/`` (default: the
    second batch, on the current twins), a seeded draw of ``per_group`` perturbed renders (``weight`` not None)
    per concept and network kind, sorted by concept and item number (their order says nothing of the kind)."""
    checks.safe_name(key_name, "key_name")
    per_group = checks.integer(per_group, "per_group", 1)
    key = [it for it in labelling.read_key(door.stored_path(f"judge_cache/{key_name}"))
           if it["question"]["weight"] is not None]
    rng = np.random.default_rng(checks.seed(seed))
    out = []
    for group in sorted({(it["concept"], it["kind"]) for it in key}):
        pool = [it for it in key if (it["concept"], it["kind"]) == group]
        out += [pool[k] for k in rng.choice(len(pool), min(per_group, len(pool)), replace=False)]
    return sorted(out, key=lambda it: (it["concept"], it["item"]))


def _yes_no(v) -> bool | None:
    """A verdict as True / False, or None where there is no yes / no (can't tell, not answered)."""
    if v is None or isinstance(v, (bool, np.bool_)):
        return None if v is None else bool(v)
    if v in ("yes", "y"):
        return True
    if v in ("no", "n"):
        return False
    if v in ("can't tell", "?"):
        return None
    raise ValueError(f"a verdict must be a bool, 'yes', 'no', \"can't tell\" or None, got {v!r}")


def reader_agreement(items: Sequence[dict], verdicts: dict, path=None) -> dict | None:
    """How often each judge of ``verdicts`` ({name: one verdict per item: a bool, or a stored answer 'yes' /
    'no' / "can't tell" / None}) agrees with the reader's own labels (:func:`reader_labels_path` ``(path)``) on
    ``items``; None when the reader has no labels file yet.

    Only items the reader answered yes or no count, and for a stored labeller only those it answered yes or no
    too (can't tell is left out, as in the agreement tables). Returns ``{"path", "labelled", "yes_no",
    "cant_tell", "judges": {name: {"agree", "n", "agreement"}}}`` (``agreement`` NaN where ``n`` is 0)."""
    items = labelling.check_items(items, keys=("item",))
    checks.mapping(verdicts, "verdicts", 1)
    for name, v in verdicts.items():
        checks.non_empty_str(name, "verdicts: a judge's name")
        if len(checks.sequence(v, f"verdicts[{name!r}]", 0)) != len(items):
            raise ValueError(f"verdicts[{name!r}]: {len(v)} verdicts for {len(items)} items")
    path = reader_labels_path(path)
    if not path.exists():
        return None
    labels = labelling.read_labels(path)
    mine = [_yes_no(labels.get(it["item"])) for it in items]
    labelled = sum(it["item"] in labels for it in items)
    out = {"path": str(path), "labelled": labelled, "yes_no": sum(m is not None for m in mine),
           "cant_tell": labelled - sum(m is not None for m in mine), "judges": {}}
    for name, v in verdicts.items():
        pairs = [(m, _yes_no(x)) for m, x in zip(mine, v) if m is not None and _yes_no(x) is not None]
        agree = sum(m == x for m, x in pairs)
        out["judges"][name] = {"agree": agree, "n": len(pairs),
                               "agreement": agree / len(pairs) if pairs else float("nan")}
    return out
