"""Object spaces and their words: the symbolic side of Parts B and C's scenes.

Chapters 10-16 name objects through here; :mod:`compbook.scenes` draws them.

* An **object space** is C concepts, concept k with V_k values; an object is a tuple of value indices and has an
  id in ``range(prod V_k)`` (mixed radix, last concept fastest): :class:`ObjectSpace`, ``space.object_id(values)``
  (value indices or value names), ``space.object_values(id)``.
* :class:`Vocabulary` (:func:`vocabulary`) encodes captions; ``vocab.value_token(concept, value)`` says which
  token id names which concept value (colour words are shared by "colour" and "pattern colour").
  :func:`object_phrase` is one object's words, each with the concept it names.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import checks


def pad_sequences(seqs, pad_id: int, length: int | None = None, name: str = "seqs") -> np.ndarray:
    """Right-pad id sequences with ``pad_id`` -> (N, length) int64 (``length`` defaults to the longest).

    A sequence longer than ``length`` raises a ValueError naming ``name[i]``.
    """
    seqs = [checks.integers(s, f"{name}[{i}]", 0, ndim=1) for i, s in enumerate(checks.sequence(seqs, name))]
    pad_id = checks.integer(pad_id, "pad_id", 0)
    length = max(len(s) for s in seqs) if length is None else checks.integer(length, "length")
    checks.check_budget(8.0 * len(seqs) * length + sum(s.nbytes + 160.0 for s in seqs), f"{name}: to length {length}")
    out = np.full((len(seqs), length), pad_id, dtype=np.int64)
    for i, s in enumerate(seqs):
        if len(s) > length:
            raise ValueError(f"{name}[{i}]: {len(s)} tokens > length={length}")
        out[i, :len(s)] = s
    return out


@dataclass(frozen=True)
class ObjectSpace:
    """C concepts with named values; objects are value tuples with ids ``0 .. n_objects - 1``.

    ``concepts``: concept names, e.g. ("colour", "shape"); ``values[k]``: the value names of concept k.
    Object id = mixed-radix number of its value indices (last concept varies fastest).
    """

    concepts: tuple
    values: tuple

    def __post_init__(self):
        checks.sequence(self.concepts, "concepts")
        checks.sequence(self.values, "values")
        for i, c in enumerate(self.concepts):
            checks.non_empty_str(c, f"concepts[{i}]")
        for i, vs in enumerate(self.values):
            for j, v in enumerate(checks.sequence(vs, f"values[{i}]")):
                checks.non_empty_str(v, f"values[{i}][{j}]")
        if len(self.concepts) != len(self.values) or not self.concepts:
            raise ValueError(f"concepts={self.concepts!r}: need one value list per concept, at least one")
        if len(set(self.concepts)) != len(self.concepts):
            raise ValueError(f"concepts={self.concepts!r}: names must be distinct")
        for c, vs in zip(self.concepts, self.values):
            if len(vs) < 1 or len(set(vs)) != len(vs):
                raise ValueError(f"values of concept {c!r}: need distinct names, got {vs!r}")

    @property
    def sizes(self) -> tuple:
        """(V_1, ..., V_C)."""
        return tuple(len(v) for v in self.values)

    @property
    def n_objects(self) -> int:
        """|O| = prod V_k."""
        return math.prod(self.sizes)

    def object_values(self, object_id) -> tuple:
        """Value indices (C,) of an object id (or an array of ids -> (N, C) array)."""
        ids = checks.integers(object_id, "object_id")
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_objects):
            raise ValueError(f"object_id={object_id!r}: outside 0..{self.n_objects - 1}")
        out = np.stack(np.unravel_index(ids, self.sizes), axis=-1)
        return tuple(int(v) for v in out) if ids.ndim == 0 else out

    def object_id(self, values) -> int:
        """Id of an object from its value indices (C,) or names (chapter 10: ``("red", "square")``); (N, C) -> (N,)."""
        if isinstance(values, tuple) and values and all(isinstance(x, str) for x in values):
            if len(values) != len(self.concepts):
                raise ValueError(f"values={values!r}: need {len(self.concepts)} names, one per concept "
                                 f"{self.concepts}")
            values = tuple(self.value_of(c, n) for c, n in zip(self.concepts, values))
        v = checks.integers(values, "values")
        if (v.ndim not in (1, 2) or v.shape[-1] != len(self.sizes) or np.any(v < 0)
                or np.any(v >= np.asarray(self.sizes))):
            raise ValueError(f"values={values!r}: need {len(self.sizes)} indices below {self.sizes}")
        ids = np.ravel_multi_index(tuple(np.moveaxis(v, -1, 0)), self.sizes)
        return int(ids) if v.ndim == 1 else ids

    def named(self, object_id) -> dict:
        """{concept: value name} of one object."""
        return {c: self.values[k][v] for k, (c, v) in enumerate(zip(self.concepts, self.object_values(object_id)))}

    def value_of(self, concept: str, name: str) -> int:
        """Index of a value name within a concept."""
        k = self.concept_index(concept)
        if name not in self.values[k]:
            raise ValueError(f"{concept}={name!r}: not one of {self.values[k]}")
        return self.values[k].index(name)

    def concept_index(self, concept: str) -> int:
        if concept not in self.concepts:
            raise ValueError(f"concept={concept!r}: not one of {self.concepts}")
        return self.concepts.index(concept)


# ---------------------------------------------------------------- words

SPECIALS = ("<pad>", "<bos>", "<eos>", "a", "and", "with")


@dataclass(frozen=True)
class Vocabulary:
    """A small fixed word vocabulary: special tokens, then every value name of the space (shared words once).

    ``tokens``: id -> word. ``value_token(concept, value_index)``: the id of the word that names it.
    """

    tokens: tuple
    space: ObjectSpace

    @property
    def index(self) -> dict:
        return {t: i for i, t in enumerate(self.tokens)}

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def bos_id(self) -> int:
        return 1

    @property
    def eos_id(self) -> int:
        return 2

    def __len__(self) -> int:
        return len(self.tokens)

    def value_token(self, concept: str, value: int) -> int:
        """Token id naming ``value`` (index) of ``concept``."""
        k = self.space.concept_index(concept)
        value = checks.integer(value, "value", 0, len(self.space.values[k]) - 1)
        return self.index[self.space.values[k][value]]

    def concept_tokens(self, concept: str) -> np.ndarray:
        """(V_k,) token ids of all values of a concept, in value order."""
        k = self.space.concept_index(concept)
        return np.array([self.index[v] for v in self.space.values[k]])

    def encode(self, text: str, specials: bool = True) -> np.ndarray:
        """Caption -> (L,) int64 ids (with <bos> ... <eos> when ``specials``); unknown words raise ValueError."""
        checks.non_empty_str(text, "text")
        idx = self.index
        words = text.split()
        bad = [w for w in words if w not in idx]
        if bad:
            raise ValueError(f"text={text!r}: words {bad} are not in the vocabulary")
        ids = [idx[w] for w in words]
        return np.array([self.bos_id, *ids, self.eos_id] if specials else ids, dtype=np.int64)

    def decode(self, ids) -> str:
        """Ids -> caption (pad, bos and eos dropped)."""
        ids = checks.integers(ids, "ids", 0, len(self.tokens) - 1, ndim=1)
        return " ".join(self.tokens[int(i)] for i in ids if int(i) > 2)

    def pad(self, seqs, length: int | None = None) -> np.ndarray:
        """Right-pad id sequences with <pad> -> (N, length) int64."""
        return pad_sequences(seqs, self.pad_id, length, "seqs")


@functools.lru_cache(maxsize=64)
def vocabulary(space: ObjectSpace) -> Vocabulary:
    """The fixed vocabulary of a space (deterministic order: specials, then values by concept)."""
    checks.instance(space, "space", ObjectSpace)
    words = list(SPECIALS)
    for vs in space.values:
        words += [v for v in vs if v not in words]
    return Vocabulary(tuple(words), space)


def object_phrase(space: ObjectSpace, object_id: int) -> list:
    """Words of one object: [(word, concept or None)], e.g. a small red square with a blue core."""
    n = space.named(object_id)
    words = [("a", None)] + [(n[c], c) for c in ("size", "colour", "shape") if c in n]
    if "pattern" in n:
        words += [("with", None), ("a", None), (n["pattern colour"], "pattern colour"), (n["pattern"], "pattern")]
    return words
