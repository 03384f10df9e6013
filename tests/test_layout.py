"""The package's layout (issue 20): imports run one way, parts stay apart, old paths keep working for a release.

The import graph is read from the source (every ``import`` statement, the ones inside functions too), so a
circle hidden behind a function-level import fails here as well.
"""

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "compbook"

#: the layers of compbook: a module may import from its own layer and the layers before it, never after.
SHARED = {"compbook", "compbook._compat", "compbook.cli", "compbook.checks", "compbook.config", "compbook.paths", "compbook.stats",
          "compbook.checkpoints", "compbook.images", "compbook.plots", "compbook.sliders", "compbook.scenes",
          "compbook.results", "compbook.results.upkeep", "compbook.results.__main__"}
PART_A_LAYERS = [
    {"network", "picbreeder", "fer", "store", "theory"},                   # the networks
    {"optim", "backprop", "train", "prune", "twins"},                       # training
    {"emc2", "judges", "judges.base", "judges.cache", "judges.augment", "judges.semantic", "judges.vlm"},
    {"labelling", "agreement"},                                             # human verdicts
    {"panel", "depth", "reread", "experiments", "counting", "tables"},      # experiments
    {"claims"},                                                             # claims
    {"__main__"},                                                           # command lines
]


def module_name(path: Path) -> str:
    parts = ("compbook",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The compbook modules that ``name``'s source imports (statements anywhere in the file)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    tree = ast.parse(path.read_text())
    for block in [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]:
        tree.body.remove(block)    # `if __name__ == "__main__":` runs only as a script, never on import
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            for a in node.names:     # "from . import x": x may be a module
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in out if m in MODULES and m != name}


GRAPH = {m: imports_of(m) for m in MODULES}


def rank(name: str):
    """(part, layer) of a module; parts: 0 shared, 1 Part A, 2 Part B, 3 Part C."""
    if name in SHARED:
        return 0, 0
    if name.startswith("compbook.cppn"):
        short = name.removeprefix("compbook.cppn").lstrip(".")
        if short == "":
            return 1, 0
        for i, layer in enumerate(PART_A_LAYERS):
            if short in layer:
                return 1, i
        raise AssertionError(f"{name} is in no layer of PART_A_LAYERS: add it to the layer it belongs to")
    if name.startswith("compbook.binding"):
        return 2, 0
    if name.startswith("compbook.sae"):
        return 3, 0
    raise AssertionError(f"{name}: a new top-level module? add it to SHARED or to a part")


def test_every_module_has_a_place():
    for m in MODULES:
        rank(m)


def test_no_import_circle():
    """Depth-first search for a cycle; the message prints the circle."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(GRAPH[m]):
            if state.get(n) == "open":
                circle = stack[stack.index(n):] + [n]
                raise AssertionError("import circle: " + " -> ".join(circle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(MODULES):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_run_one_way(name):
    """Shared modules import no part; a part imports no other part; Part A's layers import only earlier ones."""
    part, layer = rank(name)
    for other in GRAPH[name]:
        if other in ("compbook.cppn", "compbook.binding", "compbook.sae") and other.startswith(name):
            continue
        o_part, o_layer = rank(other)
        if o_part == 0:
            continue   # everyone may use the shared modules
        assert part != 0, f"{name} (shared) imports {other} (a part): shared code must not depend on a part"
        assert o_part == part, f"{name} imports {other}: the book's parts stay apart (move it to the shared top)"
        if part == 1:
            assert o_layer <= layer, (f"{name} (layer {layer}) imports {other} (layer {o_layer}): imports run "
                                      f"one way, networks -> training -> judges -> verdicts -> experiments -> "
                                      f"claims")


def test_no_argument_parsing_in_library_modules():
    """Command lines live in each part's ``__main__.py`` (the library modules hold no argparse)."""
    for name, path in MODULES.items():
        if name.endswith("__main__") or name == "compbook._compat":
            continue
        assert "argparse" not in path.read_text(), f"{name} parses arguments: move it to its part's __main__.py"


@pytest.mark.parametrize("old, new", [("compbook.judges", "compbook.cppn.judges"),
                                      ("compbook.train", "compbook.cppn.train"),
                                      ("compbook.semantic", "compbook.cppn.judges.semantic"),
                                      ("compbook.claims", "compbook.cppn.claims")])
def test_old_import_paths_give_the_same_module_with_a_warning(old, new):
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        sys.modules.pop(old, None)
        module = importlib.import_module(old)
    assert module is importlib.import_module(new), "the alias must be the module itself, not a second copy"
    assert module.__spec__.name == new, "the alias must leave the real module's spec alone"


def test_old_network_names_still_import():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from compbook.cppn import CPPN, uniform_cppn   # the package re-exports the network's names
    assert uniform_cppn(1, 2).render(4).shape == (4, 4, 3) and CPPN.__module__ == "compbook.cppn.network"
    with pytest.warns(DeprecationWarning, match="compbook.cppn.store"):
        from compbook.checkpoints import save_cppn
    from compbook.cppn.store import save_cppn as new
    assert save_cppn is new


def test_old_command_line_runs_the_new_one(tmp_path):
    """``python -m compbook.twins --report`` still runs: it is ``python -m compbook.cppn twins --report``."""
    old = subprocess.run([sys.executable, "-m", "compbook.twins", "--help"], capture_output=True, text=True)
    new = subprocess.run([sys.executable, "-m", "compbook.cppn", "twins", "--help"], capture_output=True, text=True)
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stdout == new.stdout and "python -m compbook.cppn twins" in new.stdout
    assert "is now python -m compbook.cppn twins" in old.stderr


def test_importing_the_package_loads_no_part():
    code = ("import sys, compbook, compbook.cppn, compbook.cppn.judges; "
            "print(sorted(m for m in sys.modules if m.startswith('compbook.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["compbook._compat", "compbook.cppn", "compbook.cppn.judges"]
