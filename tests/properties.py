"""Shared pieces of the property tests (``test_properties_*.py``): draw a call's arguments with at most one bad,
and assert "a valid result, or a quick ValueError naming the bad argument"."""

import time

import numpy as np
import pytest
import torch
from hypothesis import strategies as st


class Arguments:
    """Draws a call's arguments, all valid but ``bad`` (None: all valid)."""

    def __init__(self, data, bad):
        self.data, self.bad = data, bad

    def __call__(self, name, valid, bad):
        return self.data.draw(bad if name == self.bad else valid)


def each_bad(*names):
    """Run a property once with every argument valid, then once per argument with that one bad."""
    return pytest.mark.parametrize("bad", [None, *names])


def valid_or_value_error(call, check, args, names=None):
    """``check(call())`` when every argument is valid; else a ``ValueError`` within 2 s of this process's CPU time
    (a neighbour's load does not count) naming the bad one
    (``names[args.bad]``: the words its message uses, by default the argument's name)."""
    t0 = time.process_time()
    try:
        out = call()
    except ValueError as e:
        assert args.bad is not None, f"valid arguments refused: {e}"
        said = (names or {}).get(args.bad, args.bad)
        said = (said,) if isinstance(said, str) else said
        assert any(s in str(e) for s in said), f"bad {args.bad}: the message names none of {said}: {e}"
    else:
        assert args.bad is None, f"bad {args.bad} accepted"
        check(out)
    assert time.process_time() - t0 < 2.0


def tensor_strategy(specials):
    """``tensors(shape, kinds)``: a strategy drawing a tensor of ``shape`` of one of ``kinds``: float32 / float64
    normal values, ``int`` / ``bool`` values, ``special`` (float, with one of ``specials`` at a random position;
    an empty shape grows to one element) or ``numpy`` (a float32 array)."""
    @st.composite
    def tensors(draw, shape, kinds=("float32", "float64")):
        g = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            return torch.from_numpy(g.integers(-3, 4, shape))
        if kind == "bool":
            return torch.from_numpy(g.random(shape) > 0.5)
        a = g.normal(size=shape).astype("float64" if kind == "float64" else "float32")
        if kind == "special":
            if not a.size:
                a = np.ones(tuple(max(s, 1) for s in shape) or (1,), "float32")
            a.flat[draw(st.integers(0, a.size - 1))] = draw(specials)
        return a if kind == "numpy" else torch.from_numpy(a)
    return tensors
