"""A simulated Colab, offline: the pieces ``tests/test_colab.py`` runs every chapter with.

* :func:`install_wheel`: compbook built as a wheel from a copy of its sources and installed (``--no-deps``) into
  a folder outside the checkout; the kernel runs with the interpreter that runs the tests (so with exactly its
  packages, wherever it is: the system Python or a virtual environment) and ``PYTHONPATH`` = that folder, which
  comes before every site folder (an editable install of compbook there cannot shadow the wheel; a first cell
  checks where compbook comes from).
* :class:`Host`: a local HTTP server on 127.0.0.1 standing in for this repository (``data/`` as
  ``raw.githubusercontent.com/<owner>/<repo>/<branch>/data/``) and for FER's repository (the third-party files); each
  chapter gets its own URL prefix, so its requests are logged apart.
* :func:`prepare` / :func:`execute` / :func:`strip`: a chapter with a first and a last cell inserted (an audit hook
  records every file of the checkout or the shared folder the kernel opens), executed by nbclient with a per-cell
  time limit, then the inserted cells taken out again (the book is built from the rest).
* :func:`shows_what_the_book_shows`: every cell ran, no error output, every glue name the chapter's prose
  reads was glued, and every cell that draws a figure has a figure in its outputs.

``python tests/colab.py NOTEBOOK`` executes one prepared notebook in place (the test starts one such process per
chapter, with the chapter's environment).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import warnings
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
#: the folder standing in for FER's repository ($COMPBOOK_PICBREEDER_URL), laid out as that repository is
THIRD_PARTY = SHARED / "fer"
HOST = "127.0.0.1"
DATA_PREFIX = "/compbook/compbook/main/data/"         # as raw.githubusercontent.com/<owner>/<repo>/<branch>/data/
THIRD_PARTY_PREFIX = "/third-party/"
CELL_TIMEOUT = 600                                    # seconds per cell, as nbmake's --nbmake-timeout
MARK = "colab-check"                                  # metadata key of the inserted cells

FIRST_CELL = """\
# inserted by tests/colab.py: the wheel's compbook, no checkout, and every opened file recorded
import os, sys
from pathlib import Path
import compbook, compbook.results.paths
assert sys.executable == {python!r}, sys.executable
assert Path(compbook.__file__).resolve().is_relative_to({wheel!r}), compbook.__file__
assert compbook.results.paths.repository_root() is None
OPENED_OUTSIDE = []
def _record(event, args, forbidden={forbidden!r}, environment={environment!r}):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        p = str(Path(os.fsdecode(os.fspath(args[0]))).resolve())
        inside = lambda folders: any(p == f or p.startswith(f + "/") for f in folders)
        if inside(forbidden) and not inside(environment):
            OPENED_OUTSIDE.append(p)
sys.addaudithook(_record)
print("COLAB-CHECK compbook from", compbook.__file__)
"""
LAST_CELL = """\
# inserted by tests/colab.py
assert not OPENED_OUTSIDE, OPENED_OUTSIDE
print("COLAB-CHECK opened nothing of the checkout")
"""
# a cell that draws, outside a function it defines: a figure made, a plot helper or a slider (each such cell of
# a chapter shows a figure)
DRAWS = re.compile(r"\bplt\.(subplots|figure|imshow|plot)\(|\bplots\.\w+\(|\bframe_slider\(|\.imshow\(")
FIGURE_MIMES = ("image/png", "image/svg+xml")
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")
GLUE_DIRECTIVE = re.compile(r"^[`:]{3,}\{glue(?::\w+)?\}\s+(\S+)", re.M)


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd[:5]))}... failed ({r.returncode}):\n{r.stdout[-3000:]}\n"
                           f"{r.stderr[-5000:]}")
    return r


def install_wheel(tmp: Path) -> Path:
    """The wheel built from a copy of the package's sources (no build/ left in the checkout), installed without
    dependencies into ``tmp/site``; returns that folder (the kernel's ``PYTHONPATH``)."""
    src = tmp / "src"
    shutil.copytree(ROOT / "compbook", src / "compbook", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
          str(src), "-w", str(tmp / "wheel")])
    wheel, = (tmp / "wheel").glob("compbook-*.whl")
    site = tmp / "site"
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
          str(wheel)])
    if not (site / "compbook" / "__init__.py").is_file():
        raise RuntimeError(f"{wheel.name}: installed into {site} without compbook/__init__.py")
    return site


def kernel_spec(folder: Path) -> Path:
    """A Jupyter data folder with one kernel, ``python3``, run by this interpreter (whatever an installed
    ``python3`` kernel names); returns the folder for ``$JUPYTER_PATH``."""
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (the tests' interpreter)", "language": "python"}))
    return folder


class _Handler(SimpleHTTPRequestHandler):
    """``/<chapter>/compbook/compbook/main/data/...`` from the checkout's data/, ``/<chapter>/third-party/...``
    from the third-party folder, nothing else, no listings; each request logged as ``(chapter, status, path)``."""
    log: list
    lock: threading.Lock

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        _, chapter, rest = (path.split("/", 2) + ["", ""])[:3]
        rest = "/" + rest
        for prefix, folder in ((DATA_PREFIX, ROOT / "data"), (THIRD_PARTY_PREFIX, THIRD_PARTY)):
            if chapter and rest.startswith(prefix):
                self.directory = str(folder)
                return super().translate_path("/" + rest[len(prefix):])
        return "/nonexistent/" + path.strip("/")

    def list_directory(self, path):
        self.send_error(404, "no listings")

    def log_request(self, code="-", size="-"):
        _, chapter, rest = (self.path.split("/", 2) + ["", ""])[:3]
        with self.lock:
            self.log.append((chapter, int(code) if str(code).isdigit() else str(code), "/" + rest))

    def log_message(self, *args):
        pass


class Host:
    """The local host on a free port of 127.0.0.1 (``start()`` / ``stop()``); :meth:`urls` gives a chapter its
    two base URLs, :meth:`requests` what it asked for."""

    def __init__(self):
        self.log = []
        handler = type("Handler", (_Handler,), {"log": self.log, "lock": threading.Lock()})
        self.server = ThreadingHTTPServer((HOST, 0), partial(handler, directory=str(ROOT / "data")))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "Host":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def urls(self, chapter: str) -> tuple[str, str]:
        base = f"http://{HOST}:{self.server.server_address[1]}/{chapter}"
        return base + DATA_PREFIX, base + THIRD_PARTY_PREFIX

    def requests(self, chapter: str) -> list[tuple[int, str]]:
        return [(status, path) for c, status, path in list(self.log) if c == chapter]


def read(path: Path):
    with warnings.catch_warnings():          # a chapter's cells without an id are given one (the chapter's matter)
        warnings.simplefilter("ignore", nbformat.warnings.MissingIDFieldWarning)
        return nbformat.read(path, as_version=4)


def environment() -> list[str]:
    """The folders of the interpreter that runs the tests (its prefix, its base prefix): its packages are Colab's
    own packages, not the checkout's files, even where the virtual environment lies inside the checkout (the
    README's ``python3 -m venv .venv``)."""
    return sorted({str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


def prepare(source: Path, folder: Path, wheel: Path, forbidden: list[str]) -> Path:
    """``source`` with the checking cells inserted, written into ``folder``; returns its path."""
    nb = read(source)
    first = nbformat.v4.new_code_cell(FIRST_CELL.format(python=sys.executable, wheel=str(wheel.resolve()),
                                                        forbidden=forbidden, environment=environment()))
    last = nbformat.v4.new_code_cell(LAST_CELL)
    for cell in (first, last):
        cell.metadata[MARK] = True
    nb.cells.insert(1, first)
    nb.cells.append(last)
    path = folder / source.name
    nbformat.write(nb, path)
    return path


def execute(path: Path) -> int:
    """Run the notebook at ``path`` in place with the ``python3`` kernel, cwd its folder, ``CELL_TIMEOUT`` s per
    cell; on a failure, the notebook as far as it ran is written and the failing cell named; returns the exit
    status (0: every cell ran)."""
    import nbclient
    nb = read(path)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except (nbclient.exceptions.CellExecutionError, nbclient.exceptions.CellTimeoutError,
            nbclient.exceptions.DeadKernelError) as err:
        nbformat.write(nb, path)
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        index = next((i for i in code if any(o.output_type == "error" for o in nb.cells[i].outputs)),
                     next((i for i in code if not nb.cells[i].get("execution_count")), None))
        print(f"{path.name}: cell {index} failed ({type(err).__name__}):\n{err}", file=sys.stderr)
        return 1
    nbformat.write(nb, path)
    return 0


def strip(nb):
    """The notebook without the inserted cells (in place; returned)."""
    nb.cells = [c for c in nb.cells if not c.metadata.get(MARK)]
    return nb


def text(nb) -> str:
    """Every printed or displayed text of the notebook's code cells."""
    return "\n".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def glued(nb) -> set[str]:
    """The names MyST-NB's ``glue`` stored in the notebook's outputs."""
    return {o.get("metadata", {}).get("scrapbook", {}).get("name") for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", [])} - {None}


def glue_names(nb) -> set[str]:
    """The glue names the notebook's prose reads (``{glue:text}`name:.2f``` and glue directives), this page's."""
    out = set()
    for c in nb.cells:
        if c.cell_type == "markdown":
            src = c.source
            out |= {m.split(":", 1)[0] for m in GLUE_ROLE.findall(src) if "::" not in m}
            out |= set(GLUE_DIRECTIVE.findall(src))
    return out


def shows_what_the_book_shows(nb) -> list[str]:
    """What the executed chapter lacks of what its page shows (empty: nothing): every code cell ran, no error
    output, every glue name the prose reads glued, and a figure in every cell whose source draws one."""
    found = []
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        head = f"cell {i} ({c.source.strip().splitlines()[0][:60] if c.source.strip() else 'empty'!r})"
        if not c.get("execution_count"):
            found.append(f"{head}: did not run")
        for o in c.get("outputs", []):
            if o.output_type == "error":
                found.append(f"{head}: {o.ename}: {o.evalue[:300]}")
        if DRAWS.search(_top_level(c.source)) and not any(map(_figure, c.get("outputs", []))):
            found.append(f"{head}: draws a figure in its source, none in its outputs")
    missing = glue_names(nb) - glued(nb)
    if missing:
        found.append(f"glue names the prose reads and the run did not glue: {sorted(missing)}")
    return found


def _top_level(source: str) -> str:
    """The cell's source without its function and class definitions (a ``def draw(...)`` draws when called)."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:                         # IPython syntax (a magic): the lines that are not indented
        return "\n".join(line for line in source.splitlines() if not line[:1].isspace())
    return "\n".join(ast.get_source_segment(source, node) or "" for node in tree.body
                     if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def _figure(output) -> bool:
    """An output that is a figure: an image, or HTML holding one (a slider's frames)."""
    data = output.get("data", {})
    return any(m in data for m in FIGURE_MIMES) or "<img" in "".join(data.get("text/html", ""))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Outcome:
    """One chapter's run: exit status, seconds (kernel start included), the run's stderr tail, and whether the
    test's checks of it passed (``checked``)."""
    name: str
    status: int
    seconds: float
    stderr: str = ""
    folder: Path = field(default=None)
    checked: bool = False


def junit(outcomes: list[Outcome], path: Path, jobs: int = 1) -> Path:
    """A JUnit-like report, one ``testcase`` per chapter with its seconds and a ``failure`` when it failed or
    its checks did not pass, and how many chapters ran at a time (``jobs``: a property of the suite), what
    ``python -m compbook.results runtimes`` reads."""
    import xml.etree.ElementTree as ET

    from compbook.results.runtimes import AT_A_TIME
    suite = ET.Element("testsuite", name="colab", tests=str(len(outcomes)),
                       failures=str(sum(o.status != 0 or not o.checked for o in outcomes)),
                       time=f"{sum(o.seconds for o in outcomes):.3f}")
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name=AT_A_TIME, value=str(jobs))
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname="colab", file=f"chapters/{o.name}",
                             name=o.name, time=f"{o.seconds:.3f}")
        if o.status or not o.checked:
            ET.SubElement(case, "failure", message=f"{o.name} failed" if o.status else f"{o.name}: a check failed"
                          ).text = o.stderr[-5000:]
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


if __name__ == "__main__":
    sys.exit(execute(Path(sys.argv[1])))
