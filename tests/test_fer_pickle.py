"""FER's pickles: read without JAX, and a pickle naming anything else is refused before it runs."""

import io
import os
import pickle
import pickletools
import subprocess
import sys

import numpy as np
import pytest

from compbook.cppn import fer
from compbook.cppn.data import fer_files, fer_pickle
from compbook.cppn.data.fer_pickle import RefusedGlobal

NETWORK_FILES = [f"data/sgd_{n}/{f}" for n in fer.NAMES for f in fer.FILES]


def _globals(data: bytes) -> set[tuple[str, str]]:
    """The globals a pickle names, read by :mod:`pickletools` (which executes nothing): ``GLOBAL``/``INST``
    arguments, and for ``STACK_GLOBAL`` the two strings pushed before it (directly or from the memo)."""
    found, memo, pushed = set(), {}, []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("GLOBAL", "INST"):
            found.add(tuple(arg.split(" ", 1)))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            pushed.append(arg)
        elif op.name == "MEMOIZE":
            memo[len(memo)] = pushed[-1] if pushed else None
        elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[int(arg)] = pushed[-1] if pushed else None
        elif op.name in ("GET", "BINGET", "LONG_BINGET"):
            pushed.append(memo[int(arg)])
        elif op.name == "STACK_GLOBAL":
            found.add((pushed[-2], pushed[-1]))
            pushed.append(None)
        else:
            pushed.append(None)
    return found


@pytest.mark.parametrize("relative", NETWORK_FILES)
def test_the_real_pickles_name_only_the_allowed_globals(relative):
    data = fer_files.fetch(relative).read_bytes()
    want = {"arch.pkl": set(), "args.pkl": {("argparse", "Namespace")},
            "params.pkl": {("jax._src.array", "_reconstruct_array"), ("numpy._core.multiarray", "_reconstruct"),
                           ("numpy", "ndarray"), ("numpy", "dtype")}}[relative.rsplit("/", 1)[1]]
    assert _globals(data) == want
    assert want <= set(fer_pickle.ALLOWED)


def test_the_real_pickles_load_without_jax():
    """In a fresh interpreter where JAX cannot be imported (even where it is installed): plain ``pickle`` cannot
    read FER's params.pkl (it imports JAX), this unpickler can, and imports nothing of JAX."""
    code = ("import sys, pickle\n"
            "for m in ('jax', 'jax._src', 'jax._src.array', 'jaxlib', 'flax'): sys.modules[m] = None\n"
            "from compbook.cppn import fer\n"
            "try:\n"
            "    pickle.loads(fer.find_fer('skull')['params.pkl'].read_bytes())\n"
            "except ImportError as e:\n"
            "    print('plain pickle:', type(e).__name__, e.name)\n"
            "[fer.load_fer(n) for n in fer.NAMES]\n"
            "print(sorted(m for m, v in sys.modules.items() if v is not None and "
            "m.split('.')[0] in ('jax', 'jaxlib', 'flax')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["plain pickle: ModuleNotFoundError jax._src.array", "[]"], out.stdout


def test_params_are_numpy_float32_and_args_a_namespace():
    files = fer.find_fer("skull")
    params = fer_pickle.load(files["params.pkl"])
    assert type(params) is np.ndarray and params.dtype == np.float32 and params.shape == (5478,)
    args = fer_pickle.load(files["args.pkl"])
    assert vars(args)["n_iters"] == 100000 and vars(args)["arch"] == fer_pickle.load(files["arch.pkl"])


# -- refused: every global FER's pickles do not name, before it runs ------------------------------------------------
class _Reduces:
    """An object whose pickle calls ``call(*args)`` on load."""

    def __init__(self, call, *args):
        self.call, self.args = call, args

    def __reduce__(self):
        return self.call, self.args


class Itself:
    """A class of this module that pickles as itself (its global is this test module's)."""

    def __reduce__(self):
        return Itself, ()


def _malicious(sentinel):
    """Pickles that, loaded by ``pickle.loads``, would create ``sentinel``: ``{label: (bytes, global named)}``."""
    touch = f"open({str(sentinel)!r}, 'w').close()"
    system = f"{os.system.__module__}.system"                 # os.system pickles as posix.system
    shell = f"touch {sentinel}"
    return {
        "os.system (protocol 0)": (f"cos\nsystem\n(V{shell}\ntR.".encode(), "os.system"),
        "os.system (INST)": (f"(V{shell}\nios\nsystem\n.".encode(), "os.system"),
        "os.system (__reduce__)": (pickle.dumps(_Reduces(os.system, shell), protocol=4), system),
        "builtins.eval": (pickle.dumps(_Reduces(eval, touch), protocol=4), "builtins.eval"),
        "builtins.exec (protocol 2)": (pickle.dumps(_Reduces(exec, touch), protocol=2), "__builtin__.exec"),
        "subprocess.Popen": (pickle.dumps(_Reduces(subprocess.Popen, ["touch", str(sentinel)]), protocol=4),
                             "subprocess.Popen"),
        "a class with __reduce__": (pickle.dumps(Itself(), protocol=4), f"{__name__}.Itself"),
        "inside a Namespace": (pickle.dumps(_namespace_with(_Reduces(os.system, shell)), protocol=4), system),
    }


def _namespace_with(value):
    import argparse
    return argparse.Namespace(seed=0, arch=value)


@pytest.mark.parametrize("label", list(_malicious("x")))
def test_a_malicious_pickle_is_refused_and_runs_nothing(label, tmp_path, monkeypatch):
    sentinel = tmp_path / "sentinel"
    data, named = _malicious(sentinel)[label]
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a) or 0)
    with pytest.raises(RefusedGlobal, match=rf"<crafted>: refused global {named.replace('.', '[.]')}"):
        fer_pickle.loads(data, "<crafted>")
    assert not sentinel.exists() and not called
    assert issubclass(RefusedGlobal, ValueError)


def test_the_malicious_pickles_would_run_with_plain_pickle(tmp_path):
    """The refusals above are real: plain ``pickle.loads`` of one of them creates the sentinel."""
    sentinel = tmp_path / "sentinel"
    pickle.loads(_malicious(sentinel)["builtins.eval"][0])
    assert sentinel.exists()


def test_a_refused_malicious_params_file_is_a_refused_load(tmp_path):
    """A folder whose params.pkl names os.system: load_fer refuses it, naming the global and the file."""
    sentinel = tmp_path / "sentinel"
    folder = tmp_path / "sgd_skull"
    folder.mkdir()
    (folder / "arch.pkl").write_bytes(pickle.dumps("2;sin:3"))
    (folder / "params.pkl").write_bytes(_malicious(sentinel)["os.system (__reduce__)"][0])
    with pytest.raises(RefusedGlobal, match=r"params\.pkl: refused global (os|posix)\.system"):
        fer.load_fer(folder)
    assert not sentinel.exists()


def test_allowed_globals_with_other_arguments_are_refused():
    """The allowed constructors check their arguments: no object arrays, no large empty allocations, no other
    function inside JAX's reconstructor."""
    obj = pickle.dumps(np.array([1, "a"], dtype=object), protocol=4)
    with pytest.raises(ValueError, match="Python objects"):
        fer_pickle.loads(obj)
    big = pickle.dumps(_Reduces(fer_pickle._NP_RECONSTRUCT, np.ndarray, (10 ** 6,), b"b"), protocol=4)
    with pytest.raises(ValueError, match=r"_reconstruct\('ndarray', \(1000000,\)\)"):
        fer_pickle.loads(big)
    import argparse
    with pytest.raises(ValueError, match="expected NumPy's _reconstruct"):
        fer_pickle._reconstruct_array(argparse.Namespace, (), None, {})


@pytest.mark.parametrize("data", [b"", b"\x80\x04junk", b"not a pickle", pickle.dumps(3)[:-1]])
def test_bytes_that_are_not_a_pickle_are_a_value_error(data):
    with pytest.raises(ValueError, match="<bad>: not one of FER's pickles"):
        fer_pickle.loads(data, "<bad>")


def test_plain_values_load():
    value = {"a": [1, 2.5, "x", (None, True)]}
    assert fer_pickle.loads(pickle.dumps(value)) == value
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(fer_pickle.loads(pickle.dumps(arr, protocol=4)), arr)
    assert fer_pickle.loads(io.BytesIO(pickle.dumps(arr)).getvalue()).dtype == np.float32
