"""Property tests (hypothesis) for the shared rules of ``compbook.checks``: random ints, floats, bools, strings,
numpy and torch 0-d values, NaN, inf and huge values. Each check either returns the accepted value with the right
meaning (never a truncated fraction, a wrapped index or a NaN let through) or raises ``ValueError`` naming the
argument, quickly; no other exception escapes."""

import fractions
import math
import time

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings, strategies as st

from compbook import checks

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
NAME = "arg_name"
specials = st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.7, float("nan"), float("inf"), -float("inf"), 1e300, -1e300])
huge_ints = st.sampled_from([2 ** 31, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 10 ** 30, 10 ** 400, -10 ** 400])


@st.composite
def scalars(draw):
    """A number in one of the forms a caller may pass, or something that only looks like one."""
    kind = draw(st.sampled_from(["int", "float", "special", "huge", "bool", "str", "none", "np", "array0",
                                 "tensor0", "fraction", "complex", "list"]))
    if kind == "int":
        return draw(st.integers(-50, 50))
    if kind == "float":
        return draw(st.floats(-1e6, 1e6, allow_nan=False))
    if kind == "special":
        return draw(specials)
    if kind == "huge":
        return draw(huge_ints)
    if kind == "bool":
        return draw(st.booleans())
    if kind == "str":
        return draw(st.sampled_from(["3", "2.5", "nan", "", "abc"]))
    if kind == "none":
        return None
    if kind == "np":
        dtype = draw(st.sampled_from([np.int64, np.uint8, np.bool_, np.float32, np.float64]))
        if dtype in (np.int64, np.uint8, np.bool_):
            return dtype(draw(st.integers(0, 200)))
        return dtype(draw(st.one_of(st.floats(-1e3, 1e3), specials)))
    if kind == "array0":
        return np.array(draw(st.one_of(st.integers(-50, 50), specials, st.booleans(), st.just("7"))))
    if kind == "tensor0":
        return torch.tensor(draw(st.one_of(st.integers(-50, 50), specials, st.booleans())))
    if kind == "fraction":
        return fractions.Fraction(draw(st.integers(-20, 20)), draw(st.integers(1, 4)))
    if kind == "complex":
        return complex(draw(st.integers(-3, 3)), draw(st.integers(-3, 3)))
    return [draw(st.integers(-3, 3))]


def as_number(value):
    """The number ``value`` stands for, exactly (a Fraction for floats), or None when it is not a real number."""
    if isinstance(value, (np.ndarray, torch.Tensor)):
        if value.ndim != 0 or value.dtype in (np.bool_, torch.bool):
            return None
        value = value.item()
    if isinstance(value, (bool, np.bool_, str, complex, list)) or value is None:
        return None
    if isinstance(value, (float, np.floating)):
        return fractions.Fraction(float(value)) if math.isfinite(value) else None
    return fractions.Fraction(value)


def valid_or_value_error(call, check, name=NAME):
    """``check(call())``, or a ``ValueError`` whose message names ``name``; either way within 2 s of this process's CPU
    time (a busy neighbour does not count)."""
    t0 = time.process_time()
    try:
        out = call()
    except ValueError as e:
        assert name in str(e), f"the message does not name {name!r}: {e}"
        refused = True
    else:
        check(out)
        refused = False
    assert time.process_time() - t0 < 2.0
    return refused


bounds = st.one_of(st.none(), st.integers(-5, 60))


@SETTINGS
@given(scalars(), bounds, bounds)
def test_integer_returns_the_same_whole_number_or_refuses(value, lo, hi):
    n = as_number(value)

    def check(r):
        assert type(r) is int and n is not None and r == n, f"{value!r} read as {r!r}"
        assert (lo is None or r >= lo) and (hi is None or r <= hi)
    refused = valid_or_value_error(lambda: checks.integer(value, NAME, lo, hi), check)
    whole = n is not None and n.denominator == 1 and (lo is None or n >= lo) and (hi is None or n <= hi)
    assert refused != whole, f"{value!r} in [{lo}, {hi}]: refused={refused}"


@SETTINGS
@given(st.integers(-10 ** 6, 10 ** 6), st.floats(0.001, 0.999), st.sampled_from([float, np.float32, np.float64,
                                                                                   np.array, torch.tensor]))
def test_integer_never_truncates_a_fraction(whole, frac, wrap):
    value = wrap(whole + frac)
    if float(value) == whole or float(value) == whole + 1:      # float32 rounded the fraction away
        return
    assert valid_or_value_error(lambda: checks.integer(value, NAME, None), lambda r: None)
    assert checks.optional_integer(None, NAME) is None


@SETTINGS
@given(scalars(), st.one_of(st.none(), st.floats(-10, 10)), st.one_of(st.none(), st.floats(-10, 10)),
       st.booleans(), st.booleans(), st.booleans())
@example(10 ** 400, None, None, False, False, False)
def test_real_returns_the_same_finite_number_or_refuses(value, low, high, low_open, high_open, nonzero):
    n = as_number(value)
    if isinstance(value, (np.ndarray, torch.Tensor)):
        n = None                           # 0-d arrays are refused by real (they are not numbers)

    def check(r):
        assert type(r) is float and math.isfinite(r) and n is not None and r == float(n)
        assert low is None or (r > low if low_open else r >= low)
        assert high is None or (r < high if high_open else r <= high)
        assert not (nonzero and r == 0)
    valid_or_value_error(lambda: checks.real(value, NAME, low, high, low_open=low_open, high_open=high_open,
                                             nonzero=nonzero), check)


@SETTINGS
@given(scalars(), st.sampled_from(["boolean", "non_empty_str", "choice"]))
def test_boolean_string_and_choice(value, which):
    if which == "boolean":
        valid_or_value_error(lambda: checks.boolean(value, NAME),
                             lambda r: (type(r) is bool and isinstance(value, (bool, np.bool_))
                                        and r == bool(value)) or pytest.fail(f"{value!r} read as {r!r}"))
    elif which == "non_empty_str":
        valid_or_value_error(lambda: checks.non_empty_str(value, NAME),
                             lambda r: (r is value and r.strip()) or pytest.fail(f"{value!r} accepted"))
    else:
        options = ["3", "abc", "2"]
        valid_or_value_error(lambda: checks.choice(value, NAME, options),
                             lambda r: (isinstance(value, str) and r == value and r in options)
                             or pytest.fail(f"{value!r} accepted"))


@st.composite
def int_like_arrays(draw):
    """What a caller passes as a list of whole numbers: ints, floats (some fractional, NaN, inf, huge), unsigned
    ints beyond int64, bools, strings, ragged lists, nested lists."""
    kind = draw(st.sampled_from(["ints", "floats", "uint64", "huge_float", "bool", "str", "ragged", "nested",
                                 "empty", "scalar", "tensor"]))
    if kind == "ints":
        return draw(st.lists(st.integers(-100, 100), max_size=6))
    if kind == "floats":
        return np.array(draw(st.lists(st.one_of(st.integers(-5, 5).map(float), specials), max_size=6)))
    if kind == "uint64":
        return np.array(draw(st.lists(st.sampled_from([0, 3, 2 ** 63, 2 ** 64 - 1]), min_size=1, max_size=4)),
                        dtype=np.uint64)
    if kind == "huge_float":
        return [draw(st.sampled_from([1e19, -1e19, 9.3e18, 1e300]))]
    if kind == "bool":
        return draw(st.lists(st.booleans(), max_size=4))
    if kind == "str":
        return ["1", "2"]
    if kind == "ragged":
        return [[1, 2], [3]]
    if kind == "nested":
        return draw(st.lists(st.lists(st.integers(-3, 3), min_size=2, max_size=2), max_size=3))
    if kind == "empty":
        return []
    if kind == "scalar":
        return draw(st.integers(-9, 9))
    return torch.tensor(draw(st.lists(st.integers(-9, 9), max_size=4)), dtype=torch.int64)


def exact_entries(value):
    """Every entry of ``value`` as an exact number (int, or Fraction for floats), flattened; None for a NaN."""
    a = np.asarray(value.numpy() if isinstance(value, torch.Tensor) else value, dtype=object).reshape(-1)
    out = []
    for v in a.tolist():
        if isinstance(v, float):
            out.append(fractions.Fraction(v) if math.isfinite(v) else None)
        else:
            out.append(int(v))
    return out


@SETTINGS
@given(int_like_arrays(), bounds, bounds, st.one_of(st.none(), st.integers(0, 2)))
@example([1e19], None, None, None)
@example(np.array([2 ** 63], np.uint64), None, None, None)
def test_integers_keeps_every_value_or_refuses(value, lo, hi, ndim):
    def check(a):
        assert a.dtype == np.int64
        assert ndim is None or a.ndim == ndim
        assert [int(v) for v in a.reshape(-1)] == exact_entries(value), f"{value!r} read as {a!r}"
        assert a.size == 0 or (lo is None or a.min() >= lo) and (hi is None or a.max() <= hi)
    valid_or_value_error(lambda: checks.integers(value, NAME, lo, hi, ndim), check)


@SETTINGS
@given(int_like_arrays(), st.booleans())
def test_reals_keeps_every_value_or_refuses(value, finite):
    def check(a):
        assert a.dtype == np.float64
        want = np.asarray(value.numpy() if isinstance(value, torch.Tensor) else value)
        assert want.dtype.kind in "iuf"
        assert np.array_equal(a, want.astype(np.float64), equal_nan=True)
        assert not finite or np.isfinite(a).all()
    valid_or_value_error(lambda: checks.reals(value, NAME, finite=finite), check)


@SETTINGS
@given(int_like_arrays(), st.one_of(st.none(), st.integers(0, 4)))
def test_bools_reads_true_false_or_refuses(value, n):
    def check(a):
        want = exact_entries(value)
        assert a.dtype == bool and a.ndim == 1 and (n is None or len(a) == n)
        assert set(want) <= {0, 1} and a.tolist() == [bool(v) for v in want]
    valid_or_value_error(lambda: checks.bools(value, NAME, n), check)


@st.composite
def float_arrays(draw):
    """A float array or tensor of a random shape and dtype, with NaN / inf at a random position (or none)."""
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    dtype = draw(st.sampled_from(["float16", "float32", "float64"]))
    a = np.random.default_rng(draw(st.integers(0, 2 ** 16))).random(shape).astype(dtype)
    if a.size and draw(st.booleans()):
        a.flat[draw(st.integers(0, a.size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    form = draw(st.sampled_from(["numpy", "torch", "list", "object"]))
    if form == "torch":
        return torch.from_numpy(a)
    if form == "list":
        return a.tolist()
    if form == "object":
        return a.astype(object)
    return a


def has_nonfinite(value):
    a = np.asarray(value.numpy() if isinstance(value, torch.Tensor) else value, dtype=np.float64)
    return bool(a.size) and not np.isfinite(a).all()


@SETTINGS
@given(float_arrays())
def test_finite_refuses_any_nan_position(value):
    refused = valid_or_value_error(lambda: checks.finite(value, NAME), lambda r: r is value or pytest.fail())
    assert refused or not has_nonfinite(value), f"NaN / inf let through: {value!r}"


@SETTINGS
@given(float_arrays(), st.floats(0, 255), st.sampled_from([None, 0.0, -1.0]), st.sampled_from([None, 1.0, 0.5]))
@example(np.array(["a", "b"]), 1.0, 0.0, 1.0)
@example(np.array(["2020-01-01"], dtype="datetime64[D]"), 1.0, 0.0, 1.0)
def test_value_range_and_unit_image(value, scale, low, high):
    if isinstance(value, torch.Tensor):
        value = value * scale
    elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
        value = value * scale

    def check_range(r):
        a = np.asarray(r.numpy() if isinstance(r, torch.Tensor) else r, dtype=np.float64)
        assert r is value and np.isfinite(a).all()
        assert a.size == 0 or (low is None or a.min() >= low) and (high is None or a.max() <= high)
    valid_or_value_error(lambda: checks.value_range(value, NAME, low, high), check_range)

    def check_image(r):
        a = np.asarray(r.numpy() if isinstance(r, torch.Tensor) else r)
        assert a.dtype.kind == "f" and (a.size == 0 or 0 <= a.min() and a.max() <= 1), "not a [0, 1] image"
    valid_or_value_error(lambda: checks.unit_image(value, NAME), check_image)


@SETTINGS
@given(st.one_of(scalars(), int_like_arrays()), st.one_of(st.integers(0, 8), st.sampled_from([2.0, 2.5, -1, True])))
def test_index_accepts_exactly_zero_to_size_minus_one(value, size):
    def check(r):
        n = int(size)
        entries = [as_number(value)] if np.ndim(r) == 0 else exact_entries(value)
        got = [r] if np.ndim(r) == 0 else [int(v) for v in r.reshape(-1)]
        assert got == entries and all(0 <= v < n for v in got), f"{value!r} of {size} read as {r!r}"
    valid_or_value_error(lambda: checks.index(value, NAME, size), check)
    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        for bad in (-1, size, [0, size], [-1]):
            assert valid_or_value_error(lambda: checks.index(bad, NAME, size), lambda r: None)


@SETTINGS
@given(st.one_of(scalars(), int_like_arrays(), st.sampled_from([(), (1, 2), "ab", {"a": 1}, {1, 2}, b"x",
                                                                 range(3), np.array(4)])),
       st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3)))
def test_sequence_returns_a_list_of_allowed_length(value, lo, hi):
    def check(r):
        assert isinstance(r, list) and len(r) >= lo and (hi is None or len(r) <= hi)
        assert not isinstance(value, (str, bytes, dict, set))
    valid_or_value_error(lambda: checks.sequence(value, NAME, lo, hi), check)


@SETTINGS
@given(st.one_of(scalars(), int_like_arrays(), st.just("ab")), st.one_of(scalars(), st.just([1, 2])))
def test_same_length(a, b):
    valid_or_value_error(lambda: checks.same_length(a, b, NAME, "other"), lambda r: r == len(a) == len(b))


@SETTINGS
@given(st.lists(st.one_of(st.integers(0, 4096), huge_ints, st.sampled_from([2.5, float("nan"), -1, "3", True])),
                max_size=4),
       st.sampled_from([1, 4, 8]), st.sampled_from([None, 1.0, 64.0]))
def test_allocation_refuses_every_shape_over_the_budget(shape, bytes_per_value, budget):
    def check(dims):
        assert all(type(d) is int and d >= 0 for d in dims) and list(dims) == [int(d) for d in shape]
        assert math.prod(dims) * bytes_per_value <= (budget or checks.memory_budget_mb()) * 2 ** 20
    valid_or_value_error(lambda: checks.allocation(shape, NAME, bytes_per_value, budget), check)


@SETTINGS
@given(st.one_of(st.integers(1, 5000), huge_ints, scalars()), st.sampled_from([1, 16, 100]),
       st.sampled_from([None, 1.0, 100.0]))
def test_render_size_and_budget(res, per_pixel, budget):
    def check(r):
        assert type(r) is int and r >= 1 and r == as_number(res)
        assert r * r * per_pixel * 4 <= (budget or checks.render_budget_mb()) * 2 ** 20
    valid_or_value_error(lambda: checks.check_render_size(res, per_pixel, 4, "a render", budget), check, "res")
    n_bytes = as_number(res)
    if n_bytes is not None:
        valid_or_value_error(lambda: checks.check_budget(int(n_bytes) * per_pixel, NAME, budget),
                             lambda r: r * 1.0 <= (budget or checks.memory_budget_mb()) * 2 ** 20)


@SETTINGS
@given(st.one_of(float_arrays(), int_like_arrays(), scalars()), st.sampled_from([None, (None,), (None, None), (2, 3)]),
       st.booleans())
def test_tensor(value, shape, floating):
    def check(t):
        assert isinstance(t, torch.Tensor) and not t.is_complex()
        assert not floating or t.is_floating_point()
        assert shape is None or t.ndim == len(shape) and all(s is None or s == n for s, n in zip(shape, t.shape))
        assert not (t.is_floating_point() and t.numel() and not torch.isfinite(t).all())
    valid_or_value_error(lambda: checks.tensor(value, NAME, shape, floating=floating), check)


@SETTINGS
@given(st.one_of(st.text(max_size=12), st.sampled_from(["..", ".", "a/b", "a..b", ".hidden", "ok.txt", "a\\b",
                                                         "a\nb", "é", "x" * 3]), scalars()))
def test_safe_name_and_path_stay_inside(value):
    def check_name(r):
        assert r == value and "/" not in r and "\\" not in r and ".." not in r and not r.startswith(".")
        assert r.isascii() and r.strip() == r and r
    valid_or_value_error(lambda: checks.safe_name(value, NAME), check_name)

    from pathlib import Path
    folder = Path("/tmp/compbook-safe-path-root")
    relative = value if not isinstance(value, str) else value + "/" + value

    def check_path(p):
        assert str(p.resolve()).startswith(str(folder.resolve()) + "/")
    valid_or_value_error(lambda: checks.safe_path(folder, relative, NAME), check_path)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(st.integers(0, 3), st.floats(allow_nan=True),
                                                                    st.lists(st.integers(0, 2), max_size=2))),
       st.dictionaries(st.sampled_from(["a", "b", "config.d"]), st.one_of(st.integers(0, 3),
                                                                         st.lists(st.integers(0, 2), max_size=2))))
def test_sidecar_agrees_only_when_every_fact_matches(header, facts):
    def check(r):
        assert r is header
        for k, v in facts.items():
            assert k in header and header[k] == v
    valid_or_value_error(lambda: checks.sidecar_agrees(header, facts, NAME), check)


@SETTINGS
@given(st.one_of(st.sampled_from(["cpu", "cuda", "cuda:7", "gpu", "", "cpu:0", "mps", "cpu:x"]), scalars()))
def test_torch_device(value):
    def check(d):
        assert isinstance(d, torch.device)
        assert d.type != "cuda" or torch.cuda.is_available()
    valid_or_value_error(lambda: checks.torch_device(value, NAME), check)
