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
#: the most modules at the top of a part's folder (and of compbook's): the paper's ideas; the rest in subpackages
MAX_TOP_MODULES = 16

#: the shared top of compbook, in layers: a module may import from its own layer and the layers before it, never
#: after; every part may import all of them, none of them imports a part.
SHARED_LAYERS = [
    {"compbook.config", "compbook.checks", "compbook.stats", "compbook.papers", "compbook.cli",
     "compbook.objects", "compbook.scenes"},                                # the base: mode, argument checks, stats
    {"compbook.results", "compbook.results.paths", "compbook.results.journal", "compbook.results.checkpoints",
     "compbook.results.door", "compbook.results.upkeep", "compbook.results.runtimes",
     "compbook.results.__main__"},                                          # the data door
    {"compbook.runs", "compbook.runs.estimate", "compbook.runs.serving", "compbook.runs.sweeps",
     "compbook.runs.sweeps.spec", "compbook.runs.sweeps.store", "compbook.runs.sweeps.backends",
     "compbook.runs.sweeps.runner", "compbook.runs.sweeps.cli", "compbook.runs.sweeps.toys",
     "compbook.runs.sweeps.__main__"},                                      # the run machinery
    {"compbook.book", "compbook.book.glue", "compbook.book.plots", "compbook.book.sliders",
     "compbook.book.legibility", "compbook.book.exercises", "compbook.book.images"},  # the book's helpers
    {"compbook"},                                                           # the package itself
]
SHARED = set().union(*SHARED_LAYERS)
#: library modules that hold command-line options: the runner's, which every part's sweep command adds
SHARED_OPTIONS = {"compbook.runs.sweeps.cli"}
#: each part's layers (names relative to the part): the paper's ideas at the part's top, then its long runs
#: (``runs/``), then the audit behind its notes chapters; the exercises and command lines last
PART_LAYERS = {
    "cppn": [
        {"", "paper", "network", "data", "data.fer_files", "data.fer_pickle", "picbreeder", "fer", "data.store",
         "frames", "volume_ratio"},                                         # the papers' figures, the networks
        {"optim", "backprop", "train", "prune", "twins"},                   # training
        {"emc2", "verdicts", "judges", "judges.base", "judges.cache", "judges.augment", "judges.semantic",
         "judges.vlm", "judges.registry", "judges.server"},                 # judging
        {"panel", "depth"},                                                 # every judge at once, depth
        {"runs", "runs.experiments", "runs.fulltime"},                      # chapters 6-9 as functions
        {"runs.tasks", "runs.scoring_tasks"},                               # ... on the sweep runner
        {"audit", "audit.labelling", "audit.reader_labels", "audit.agreement", "audit.labellers"},  # blind verdicts
        {"audit.reread", "audit.counting", "audit.tables"},                 # re-reads of the stored runs
        {"audit.claims"},                                                   # the claims table
        {"exercises", "__main__"},                                          # exercises, command lines
    ],
    "binding": [
        {"", "paper", "data", "symbolic", "splits", "recognition", "train", "probes", "decomposition", "encoders",
         "pretrained", "clevr", "controlled", "complexity", "plots"},      # the paper's ideas
        {"recipe", "recipe.config", "recipe.data", "recipe.model", "recipe.train", "recipe.evaluate",
         "recipe.checks"},                                                  # the released recipe (chapter 13)
        {"runs", "runs.scoring", "runs.sweep", "runs.tasks", "runs.fulltime"},   # the coverage sweep
        {"exercises", "__main__"},                                          # exercises, command lines
    ],
    "sae": [
        {"", "paper", "sizes", "data", "vlm", "topk", "regions", "s2ae", "metrics", "coherence", "crossmodal",
         "describe", "interpret", "experiment", "sources", "show"},        # the SAEs, their measures, scenes
        {"servers", "servers.hf_interpret", "servers.server_interpret"},    # the pipeline with real models
        {"studies", "studies.objregions", "studies.refopt"},                # regions that follow objects, refopt
        {"runs", "runs.stack", "runs.tasks"},                               # SAE stacks on the sweep runner
        {"studies.study", "studies.objsae", "studies.claims"},              # the studies behind chapters 15-16
        {"runs.full", "runs.fulltime"},                                     # every SAE of the book at once
        {"exercises", "__main__"},                                          # exercises, command lines
    ],
}
PARTS = list(PART_LAYERS)


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
    """(part, layer) of a module; parts: 0 the shared top, 1 Part A, 2 Part B, 3 Part C."""
    for i, layer in enumerate(SHARED_LAYERS):
        if name in layer:
            return 0, i
    for p, part in enumerate(PARTS, start=1):
        prefix = f"compbook.{part}"
        if name == prefix or name.startswith(prefix + "."):
            short = name.removeprefix(prefix).lstrip(".")
            for i, layer in enumerate(PART_LAYERS[part]):
                if short in layer:
                    return p, i
            raise AssertionError(f"{name} is in no layer of PART_LAYERS[{part!r}]: add it to the layer it "
                                 f"belongs to")
    raise AssertionError(f"{name}: a new top-level module? add it to a layer of SHARED_LAYERS or to a part")


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
    """The shared top imports no part and runs base -> data door -> run machinery -> book helpers; a part imports
    no other part, and inside a part each module imports only from its own layer and the layers before it (the
    paper's ideas, then long runs, then the audit, then exercises and command lines). The graph holds every
    import statement, those inside functions too: an import moved into a function to dodge a layer fails here."""
    part, layer = rank(name)
    for other in GRAPH[name]:
        if other in tuple(f"compbook.{p}" for p in PARTS) and other.startswith(name):
            continue
        o_part, o_layer = rank(other)
        if o_part == 0 and part != 0:
            continue   # every part may use the shared top
        assert part != 0 or o_part == 0, \
            f"{name} (shared) imports {other} (a part): shared code must not depend on a part"
        assert o_part == part, f"{name} imports {other}: the book's parts stay apart (move it to the shared top)"
        assert o_layer <= layer, (f"{name} (layer {layer}) imports {other} (layer {o_layer}): imports run one way "
                                  f"(tests/test_layout.py lists the layers)")


def test_each_part_top_folder_holds_the_ideas():
    """A newcomer who opens a part's folder finds the chapters' ideas first: at most :data:`MAX_TOP_MODULES`
    modules at a part's top (and at compbook's own top), the rest in named subpackages."""
    for folder in [ROOT] + [ROOT / p for p in PARTS]:
        top = sorted(p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__"))
        assert len(top) <= MAX_TOP_MODULES, f"{folder.name}/ holds {len(top)} modules: {top}"


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
    """The old Part A module paths and ``python -m`` spellings of 0.1, ``compbook.cppn.theory`` (split into
    ``frames`` and ``volume_ratio``) and the flat module paths of 0.3 are removed (CHANGELOG.md)."""
    for old in ("compbook.judges", "compbook.train", "compbook.twins", "compbook.cppn.theory"):
        with pytest.raises(ModuleNotFoundError):
            __import__(old)
    # 0.4.0 moved each part's audit, long runs and files into subpackages: no shim module is left behind
    for old in ("compbook.glue", "compbook.sliders", "compbook.paths", "compbook.journal", "compbook.sweeps",
                "compbook.estimate", "compbook.cppn.labelling", "compbook.cppn.claims", "compbook.cppn.tasks",
                "compbook.cppn.store", "compbook.cppn.fer_files", "compbook.binding.recipe_config",
                "compbook.binding.sweep", "compbook.sae.study", "compbook.sae.full", "compbook.sae.hf_interpret"):
        with pytest.raises(ModuleNotFoundError):
            __import__(old)
    import compbook.results.checkpoints
    assert not hasattr(compbook.results.checkpoints, "save_cppn")


def test_importing_the_package_loads_no_part():
    code = ("import sys, compbook, compbook.cppn, compbook.cppn.judges; "
            "print(sorted(m for m in sys.modules if m.startswith('compbook.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["compbook.config", "compbook.cppn", "compbook.cppn.judges"]   # config: torch's threads
