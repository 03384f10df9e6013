"""The package's layout: imports run one way, parts stay apart, no module is imported by a computed name, no module
is over :data:`MAX_LINES` lines.

The import graph is read from the source (every ``import`` statement, the ones inside functions too), so a
circle hidden behind a function-level import fails here as well; ``importlib.import_module`` or ``__import__``
would hide an import from it, so neither may appear.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "compbook"
#: the most lines a module of compbook may have (CONTRIBUTING.md: one concept per module, a few hundred lines)
MAX_LINES = 600

#: the layers of compbook: a module may import from its own layer and the layers before it, never after.
SHARED = {"compbook", "compbook.cli", "compbook.checks", "compbook.config", "compbook.results.paths", "compbook.stats",
          "compbook.results.checkpoints", "compbook.book.images", "compbook.book.plots", "compbook.book.glue", "compbook.book.exercises",
          "compbook.book.sliders", "compbook.scenes", "compbook.papers", "compbook.runs.serving", "compbook.results.journal",
          "compbook.results", "compbook.results.door", "compbook.results.upkeep", "compbook.results.runtimes",
          "compbook.results.__main__",
          "compbook.book.legibility", "compbook.runs.estimate", "compbook.runs.sweeps", "compbook.runs.sweeps.spec", "compbook.runs.sweeps.store",
          "compbook.runs.sweeps.backends", "compbook.runs.sweeps.runner", "compbook.runs.sweeps.cli", "compbook.runs.sweeps.toys",
          "compbook.runs.sweeps.__main__"}
#: library modules that hold command-line options: the runner's, which every part's sweep command adds
SHARED_OPTIONS = {"compbook.runs.sweeps.cli"}
PART_A_LAYERS = [
    {"paper", "network", "fer_files", "fer_pickle", "picbreeder", "fer", "store", "frames",
     "volume_ratio"},  # the papers' figures, the networks
    {"optim", "backprop", "train", "prune", "twins"},                       # training
    {"emc2", "verdicts", "judges", "judges.base", "judges.cache", "judges.augment", "judges.semantic", "judges.vlm",
     "judges.registry", "judges.server"},                                   # judging
    {"labelling", "reader_labels", "agreement", "labellers"},               # blind verdicts
    {"panel", "depth", "reread", "experiments", "counting", "tables", "fulltime"},  # experiments
    {"tasks", "scoring_tasks"},                                             # experiments on the sweep runner
    {"claims", "exercises"},                                                # claims
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


def test_every_module_is_at_most_max_lines_long():
    """One concept per module: a module over :data:`MAX_LINES` lines is split where its sections are."""
    lines = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    over = [f"{MODULES[name].relative_to(ROOT.parent)} ({name}): {n} lines"
            for name, n in sorted(lines.items()) if n > MAX_LINES]
    assert not over, (f"modules over {MAX_LINES} lines (split each where its sections are, one concept a module):\n"
                      + "\n".join(over))


def test_no_argument_parsing_in_library_modules():
    """Command lines live in each part's ``__main__.py`` (the library modules build no ``ArgumentParser``; FER's
    pickles name ``argparse.Namespace``, which reading them may rebuild)."""
    for name, path in MODULES.items():
        if name.endswith("__main__") or name in SHARED_OPTIONS:
            continue
        assert "ArgumentParser" not in path.read_text(), f"{name} parses arguments: move it to its part's __main__.py"


def test_no_import_by_computed_name():
    """Every import is a statement the graph above reads: no ``importlib.import_module(`` or ``__import__(``."""
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = ast.unparse(node.func)
                assert not called.endswith(("import_module", "__import__")), \
                    f"{name}:{node.lineno} calls {called}(): import with a statement (the layout test reads those)"


def test_lazy_names_of_the_packages():
    """``from compbook.cppn import CPPN`` and ``from compbook.cppn.judges import make_judge`` work; a submodule
    comes through the import system; an unknown name is an AttributeError."""
    import compbook.cppn
    import compbook.cppn.judges as judges
    from compbook.cppn import CPPN, uniform_cppn, train
    from compbook.cppn.judges import SSIMJudge, make_judge
    assert uniform_cppn(1, 2).render(4).shape == (4, 4, 3) and CPPN.__module__ == "compbook.cppn.network"
    assert train.__name__ == "compbook.cppn.train" and make_judge.__module__ == "compbook.cppn.judges.registry"
    assert SSIMJudge.__module__ == "compbook.cppn.judges.base"
    assert set(judges.__all__) <= set(dir(judges))
    for package in (compbook.cppn, judges):
        with pytest.raises(AttributeError):
            package.no_such_name


PACKAGES = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_name_shadows_one_of_its_modules(package):
    """One name, one thing: ``compbook.binding.recognition`` is the module, never a function of the same name that
    the package's ``__init__`` imports (the likely bug: ``from .recognition import recognition``, which hides the
    module, so ``compbook.binding.recognition.cosine_logits`` is an AttributeError), nor a lazy name that
    ``from package import module`` would return instead of the module."""
    import importlib
    pkg = importlib.import_module(package)
    children = [m for m in MODULES if m.rpartition(".")[0] == package]
    assert children or package == "compbook.results", f"{package}: a package without modules?"
    for child in children:
        short = child.rpartition(".")[2]
        module = importlib.import_module(child)
        assert getattr(pkg, short) is module, (f"{package}.{short} is {getattr(pkg, short)!r}, not the module "
                                               f"{child}: a name re-exported over its own module")
        lazy = getattr(pkg, "__getattr__", None)
        if lazy is not None:
            try:
                got = lazy(short)
            except AttributeError:
                continue
            assert got is module, f"{package}'s lazy names give {short!r} as {got!r}, hiding the module {child}"


def test_old_paths_are_gone():
    """The old Part A module paths and ``python -m`` spellings of 0.1, and ``compbook.cppn.theory`` (split into
    ``frames`` and ``volume_ratio``), are removed (CHANGELOG.md)."""
    for old in ("compbook.judges", "compbook.train", "compbook.twins", "compbook.cppn.theory"):
        with pytest.raises(ModuleNotFoundError):
            __import__(old)
    import compbook.results.checkpoints
    assert not hasattr(compbook.results.checkpoints, "save_cppn")


def test_importing_the_package_loads_no_part():
    code = ("import sys, compbook, compbook.cppn, compbook.cppn.judges; "
            "print(sorted(m for m in sys.modules if m.startswith('compbook.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["compbook.config", "compbook.cppn", "compbook.cppn.judges"]   # config: torch's threads
