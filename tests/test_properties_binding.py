"""Property tests (hypothesis) for three Part B entry points: random shapes, dtypes, NaN / inf, empty and huge
sizes. Each call either returns a valid result or raises ``ValueError`` quickly; no other exception escapes."""

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compbook.binding import decomposition, probes, symbolic

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
specials = st.sampled_from([0.0, 1.0, -1.0, float("nan"), float("inf"), 1e300])


def arrays(draw, max_rows=6, max_cols=5):
    rows, cols = draw(st.integers(0, max_rows)), draw(st.integers(0, max_cols))
    kind = draw(st.sampled_from(["float", "int", "bool", "special"]))
    g = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    if kind == "float":
        return g.normal(size=(rows, cols))
    if kind == "int":
        return g.integers(-3, 4, (rows, cols))
    if kind == "bool":
        return g.random((rows, cols)) > 0.5
    a = g.normal(size=(rows, cols))
    if a.size:
        a.flat[draw(st.integers(0, a.size - 1))] = draw(specials)
    return a


def valid_or_value_error(call, check):
    t0 = time.process_time()          # this process's CPU: a busy neighbour does not count
    try:
        out = call()
    except ValueError as e:
        assert len(str(e)) > 15
    else:
        check(out)
    assert time.process_time() - t0 < 2.0


@SETTINGS
@given(st.data())
def test_retrieval(data):
    zhat, z = arrays(data.draw), arrays(data.draw)
    target = data.draw(st.one_of(st.none(), st.lists(st.integers(-2, 8), max_size=8)))
    valid_or_value_error(lambda: decomposition.retrieval(zhat, z, target), lambda r: 0.0 <= r <= 1.0)


@SETTINGS
@given(st.data())
def test_fit_probe(data):
    s = data.draw(st.integers(0, 8))
    g = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    values = g.integers(data.draw(st.integers(-1, 0)), 3, (s, 2, data.draw(st.integers(1, 3))))
    emb = arrays(data.draw)
    kind = data.draw(st.sampled_from(probes.PROBE_KINDS))
    sweeps = data.draw(st.sampled_from([-1, 0, 1, 2, 2.5, 10 ** 9 if False else 3]))
    restarts = data.draw(st.sampled_from([0, 1, 2, 2.5, 10 ** 8]))

    def check(p):
        assert np.isfinite(p.predict(values)).all()
    valid_or_value_error(lambda: probes.fit_probe(kind, values, emb, sweeps=sweeps, restarts=restarts), check)


@SETTINGS
@given(st.integers(-2, 4), st.integers(-2, 6), st.one_of(st.lists(st.integers(-3, 40), max_size=6),
                                                          st.sampled_from([[0.5], ["a"], [], [10 ** 12]])))
def test_symbolic_encode(n_concepts, n_values, objects):
    def call():
        return symbolic.SymbolicTokens(n_concepts, n_values).encode(objects)

    def check(ids):
        tok = symbolic.SymbolicTokens(n_concepts, n_values)
        assert ids.dtype == np.int64 and ids[-1] == tok.eos and ((0 <= ids) & (ids < tok.vocab_size)).all()
    valid_or_value_error(call, check)
