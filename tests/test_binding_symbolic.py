"""Tests of compbook.binding.symbolic: the symbolic track's token ids and scenes."""

import numpy as np

from compbook.binding.symbolic import SymbolicTokens


def test_symbolic_tokens():
    st = SymbolicTokens(3, 5)
    assert (st.soo, st.eoo, st.eos, st.pad, st.vocab_size) == (15, 16, 17, 18, 19)
    obj = st.space.object_id((1, 4, 0))
    assert list(st.encode([obj])) == [15, 1, 9, 10, 16, 17]
    batch = st.encode_batch([[obj], [obj, 0]])
    assert batch.shape == (2, 11) and (batch[0, 6:] == st.pad).all()
    assert batch[1].tolist()[:11] == list(st.encode([obj, 0]))


def test_symbolic_tokens_match_a_naive_encoding():
    st = SymbolicTokens(2, 4)
    for obj in range(16):
        c0, c1 = st.space.object_values(obj)
        assert list(st.encode([obj])) == [st.soo, c0, 4 + c1, st.eoo, st.eos]
    assert st.value_token(1, 3) == 7
