"""The symbolic track of the paper's released controlled models (chapter 13): token scenes of C concepts x V values.

:class:`SymbolicTokens`: value v of concept c is the token ``c*V + v``, then start-of-object, end-of-object,
end-of-scene and pad tokens; a scene of objects is ``[soo, c0 v, c1 v, ..., eoo] * n + [eos]``. Objects are those
of :class:`compbook.scenes.ObjectSpace` (concepts ``c0..``, values ``v0..``), so the ids match the coverage splits
of :mod:`compbook.binding.splits`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from ..objects import ObjectSpace, pad_sequences
from .probes import MAX_VALUES


#: the most concepts a token scene may have (the book uses 2 and 3)
MAX_CONCEPTS = 64
#: the most objects of a token space, V^C: their ids are int64
MAX_OBJECT_IDS = 2 ** 62


@dataclass(frozen=True)
class SymbolicTokens:
    """Token scenes of the released controlled models: C concepts x V values.

    Ids: value v of concept c is ``c*V + v``; then ``soo`` (start of object) = C*V, ``eoo`` = C*V+1,
    ``eos`` (end of scene) = C*V+2, ``pad`` = C*V+3; ``vocab_size`` = C*V+4.
    """

    n_concepts: int
    n_values: int

    def __post_init__(self):
        checks.integer(self.n_concepts, "n_concepts", 1, MAX_CONCEPTS)
        checks.integer(self.n_values, "n_values", 1, MAX_VALUES)
        if self.n_values ** self.n_concepts > MAX_OBJECT_IDS:
            raise ValueError(f"n_values={self.n_values}, n_concepts={self.n_concepts}: {self.n_values}^"
                             f"{self.n_concepts} objects, more than the {MAX_OBJECT_IDS:.2g} whose ids fit in int64")

    soo = property(lambda self: self.n_concepts * self.n_values)
    eoo = property(lambda self: self.n_concepts * self.n_values + 1)
    eos = property(lambda self: self.n_concepts * self.n_values + 2)
    pad = property(lambda self: self.n_concepts * self.n_values + 3)
    vocab_size = property(lambda self: self.n_concepts * self.n_values + 4)

    @property
    def space(self) -> ObjectSpace:
        """The matching :class:`ObjectSpace` (concepts c0.., values v0..)."""
        return ObjectSpace(tuple(f"c{c}" for c in range(self.n_concepts)),
                           tuple(tuple(f"v{v}" for v in range(self.n_values)) for _ in range(self.n_concepts)))

    def value_token(self, concept: int, value: int) -> int:
        concept = checks.integer(concept, "concept", 0, self.n_concepts - 1)
        return concept * self.n_values + checks.integer(value, "value", 0, self.n_values - 1)

    def encode(self, objects) -> np.ndarray:
        """Object ids of one scene -> [soo, c0 v, c1 v, ..., eoo]*n + [eos] (int64)."""
        n = np.size(objects) if isinstance(objects, np.ndarray) else len(checks.sequence(objects, "objects"))
        checks.check_budget(8.0 * 4 * n * (self.n_concepts + 2), f"encoding a scene of {n:,} objects")
        ids = checks.integers(objects, "objects", 0, self.n_values ** self.n_concepts - 1, min_size=1)
        vals = np.stack(np.unravel_index(ids.reshape(-1), (self.n_values,) * self.n_concepts), axis=-1)  # as space's
        body = np.concatenate([np.full((len(vals), 1), self.soo), vals + np.arange(self.n_concepts) * self.n_values,
                               np.full((len(vals), 1), self.eoo)], axis=1).reshape(-1)
        return np.concatenate([body, [self.eos]]).astype(np.int64)

    def encode_batch(self, scenes, length: int | None = None) -> np.ndarray:
        """List of scenes (object-id sequences, lengths may differ) -> (N, length) padded with ``pad``."""
        scenes = checks.sequence(scenes, "scenes")
        checks.check_budget(8.0 * 4 * len(scenes) * (self.n_concepts + 3) * 50, f"encoding {len(scenes):,} scenes")
        seqs = [self.encode(s) for s in scenes]
        return pad_sequences(seqs, self.pad, length, "scenes")
