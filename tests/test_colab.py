"""Every chapter in a simulated Colab, offline (SLOW: every chapter once; ``make test`` builds the book from it).

compbook is built as a wheel and installed (``--no-deps``) into a folder outside the checkout; each chapter's
kernel is the interpreter that runs these tests (with exactly its packages, in the system Python or a virtual
environment) with ``PYTHONPATH`` = that folder. A local HTTP server on 127.0.0.1 stands in for the repository
host (the checkout's ``data/`` as the raw file tree of the repository's branch, ``$COMPBOOK_DATA_URL``) and for
FER's repository (``../shared/fer/``, FER's files at FER's paths, ``$COMPBOOK_PICBREEDER_URL``). Each chapter runs
headless from a folder outside the checkout, with its own empty ``$HOME`` and ``$COMPBOOK_DATA`` (a fresh Colab runtime
per notebook), and:

* imports the wheel's compbook and opens no file of the checkout or the shared folder (an audit hook records
  every open; cells the test inserts check both, then are taken out again);
* trains no stored artifact again (``$COMPBOOK_MADE_LOG``, where compbook logs each registered artifact it
  makes, stays empty);
* shows what the book shows (:func:`colab.shows_what_the_book_shows`: every cell ran, no error, every glued
  number of the prose glued, a figure from every cell that draws one);
* downloads each file once, only files the registry lists (of FER's: files FER's repository holds), each kept
  equal to the served one byte for byte.

``$COMPBOOK_EXECUTED`` (``make test``: ``_executed``) is where the executed chapters go (``chapters/``, the
inserted cells taken out: the book is built from them), with the figure check's log (``figures.jsonl``,
``$COMPBOOK_FIGCHECK``) and the chapters' times (``colab.xml``, JUnit-like; ``make runtimes`` records them).
``$COMPBOOK_COLAB_JOBS`` chapters run at a time (default 1); nbclient stops a cell after 600 s, as nbmake.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

import colab

ROOT = colab.ROOT
CHAPTERS = sorted(p.name for p in (ROOT / "chapters").glob("*.ipynb"))
EXECUTED_VARIABLE = "COMPBOOK_EXECUTED"
JOBS_VARIABLE = "COMPBOOK_COLAB_JOBS"
# the process environment a chapter does not inherit: compbook's settings, Python's and Jupyter's paths, caches
NOT_INHERITED = ("COMPBOOK_", "PYTHON", "JUPYTER", "VIRTUAL_ENV", "XDG_", "MPLCONFIGDIR", "TORCH_HOME", "HF_")
# what a chapter prints only when it has everything the book shows
EXPECTED_TEXT = {"01_fractured_vs_unified.ipynb": ("PSNR 256 px (dB)",)}   # FER's networks were loaded
UNEXPECTED_TEXT = ("not here", "skipped")


def _jobs() -> int:
    value = os.environ.get(JOBS_VARIABLE, "1")
    if not value.isdigit() or not 1 <= int(value) <= 4:
        raise ValueError(f"${JOBS_VARIABLE}={value!r}: expected 1 to 4 chapters at a time")
    return int(value)


class Colab:
    """The wheel, the host, and the chapters' runs (started in order, ``jobs`` at a time, when the session
    starts); :meth:`outcome` waits for one."""

    def __init__(self, tmp: Path, chapters: list[str], jobs: int):
        self.tmp, self.outcomes = tmp, []
        self.wheel = colab.install_wheel(tmp)
        self.jupyter = colab.kernel_spec(tmp / "jupyter")
        self.host = colab.Host().start()
        self.forbidden = sorted({str(ROOT.resolve()), str(colab.SHARED.resolve()), str(colab.THIRD_PARTY.resolve())})
        self.jobs, self.pool = jobs, ThreadPoolExecutor(jobs)
        self.futures = {name: self.pool.submit(self._run, name) for name in chapters}

    def env(self, name: str, folder: Path) -> dict:
        data_url, third_party_url = self.host.urls(Path(name).stem)
        env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_INHERITED)}
        return env | {
            "PYTHONPATH": str(self.wheel), "JUPYTER_PATH": str(self.jupyter), "HOME": str(folder / "home"),
            "COMPBOOK_DATA_URL": data_url, "COMPBOOK_PICBREEDER_URL": third_party_url,
            "COMPBOOK_DATA": str(folder / "data"), "COMPBOOK_MADE_LOG": str(folder / "made.jsonl"),
            "COMPBOOK_FIGCHECK": str(folder / "figures.jsonl"), "COMPBOOK_FIGCHECK_WHERE": Path(name).stem,
            "COMPBOOK_WIDGETS": "static", "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1"}

    def _run(self, name: str) -> colab.Outcome:
        folder = self.tmp / Path(name).stem
        for sub in ("run", "home", "data"):
            (folder / sub).mkdir(parents=True)
        path = colab.prepare(ROOT / "chapters" / name, folder / "run", self.wheel, self.forbidden)
        cells = sum(c.cell_type == "code" for c in colab.read(path).cells)
        start = time.monotonic()
        try:
            r = subprocess.run([sys.executable, colab.__file__, str(path)], cwd=folder / "run",
                               env=self.env(name, folder), capture_output=True, text=True,
                               timeout=colab.CELL_TIMEOUT * cells + 120)
            status, stderr = r.returncode, r.stderr
        except subprocess.TimeoutExpired as err:
            status, stderr = -1, f"{name}: stopped after {err.timeout} s\n{err.stderr or ''}"
        return colab.Outcome(name, status, time.monotonic() - start, stderr, folder)

    def outcome(self, name: str) -> colab.Outcome:
        out = self.futures[name].result()
        self.outcomes.append(out)
        return out

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.host.stop()


@pytest.fixture(scope="session")
def executed(tmp_path_factory) -> Path:
    """Where the executed chapters go: ``$COMPBOOK_EXECUTED``, else a temporary folder."""
    value = os.environ.get(EXECUTED_VARIABLE)
    folder = Path(value).resolve() if value else tmp_path_factory.mktemp("executed")
    (folder / "chapters").mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def simulated(request, executed):
    selected = [item.callspec.params["chapter"] for item in request.session.items
                if item.originalname == "test_chapter_in_colab"]
    # a short folder: a chapter that prints a path of its home prints one that fits the page, as Colab's /root
    tmp = Path(tempfile.mkdtemp(prefix="cb"))
    local = [d for p in (tmp, *tmp.parents) for d in (p / "shared" / "fer", p / "shared" / "picbreeder") if d.exists()]
    if local:     # compbook reads FER's files from shared/ above the working folder: Colab has no such folder
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.fail(f"{local[0]} lies above the simulated Colab's folder {tmp}: compbook would read FER's files "
                    f"from it instead of downloading them, as no Colab can. Remove it, or set TMPDIR to a folder "
                    f"with no shared/ above it.")
    sim = Colab(tmp, selected, _jobs())
    yield sim
    sim.close()
    colab.junit(sim.outcomes, executed / "colab.xml", sim.jobs)
    if all(o.status == 0 and o.checked for o in sim.outcomes):
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"\nsimulated Colab: the failed chapters' folders are in {tmp}")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_in_colab(chapter, simulated, executed):
    out = simulated.outcome(chapter)
    ran = out.folder / "run" / chapter
    nb = colab.read(ran)
    with open(executed / "figures.jsonl", "a") as log:
        log.write((out.folder / "figures.jsonl").read_text() if (out.folder / "figures.jsonl").is_file() else "")
    text = colab.text(nb)
    nbformat.write(colab.strip(nb), executed / "chapters" / chapter)
    assert out.status == 0, f"{chapter}: failed in the simulated Colab after {out.seconds:.0f} s:\n{out.stderr[-6000:]}"

    assert f"COLAB-CHECK compbook from {simulated.wheel.resolve()}/" in text, "not the wheel's compbook"
    assert "COLAB-CHECK opened nothing of the checkout" in text
    made = out.folder / "made.jsonl"
    assert not (made.is_file() and made.read_text().strip()), \
        f"{chapter}: trained stored artifacts again:\n{made.read_text()[:3000]}"
    missing = colab.shows_what_the_book_shows(nb)
    assert not missing, f"{chapter}: the run does not show what the book shows:\n  " + "\n  ".join(missing)
    for want in EXPECTED_TEXT.get(chapter, ()):
        assert want in text, f"{chapter}: does not print {want!r}"
    for unwanted in UNEXPECTED_TEXT:
        assert unwanted not in text, f"{chapter}: prints {unwanted!r}"

    requests = simulated.host.requests(Path(chapter).stem)
    assert not [r for r in requests if r[0] != 200], f"{chapter}: requests that failed: {requests}"
    served = [path for _, path in requests]
    assert len(served) == len(set(served)), f"{chapter}: a file downloaded twice: {sorted(served)}"
    data_files = sorted(p[len(colab.DATA_PREFIX):] for p in served if p.startswith(colab.DATA_PREFIX))
    registry = json.loads((ROOT / "data" / "registry.json").read_text())
    listed = {f for a in registry["artifacts"].values() for f in a["files"]} | {"registry.json"}
    assert set(data_files) <= listed, f"{chapter}: downloads the registry does not list: {set(data_files) - listed}"
    for rel in data_files:                       # what the kernel kept is the checkout's file, byte for byte
        kept = out.folder / "data" / rel
        assert kept.is_file() and colab.sha(kept) == colab.sha(ROOT / "data" / rel), f"{chapter}: {rel}"
    cache = out.folder / "home" / ".cache" / "compbook" / "fer"
    for rel in (p[len(colab.THIRD_PARTY_PREFIX):] for p in served if p.startswith(colab.THIRD_PARTY_PREFIX)):
        kept = list(cache.glob(f"*/{rel}"))
        assert len(kept) == 1 and colab.sha(kept[0]) == colab.sha(colab.THIRD_PARTY / rel), f"{chapter}: {rel}"
    out.checked = True


def _nb(cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    return nb


def test_the_shows_check_finds_an_error_a_missing_figure_and_an_unglued_number():
    out = nbformat.v4.new_output
    fig = out("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure>"})
    glued = out("display_data", data={"application/papermill.record/text/plain": "0.5"},
                metadata={"scrapbook": {"name": "r2", "mime_prefix": "application/papermill.record/"}})
    draw = nbformat.v4.new_code_cell("fig = plots.show_images(row, titles)", execution_count=1, outputs=[fig])
    define = nbformat.v4.new_code_cell("def draw(d):\n    return plots.show_images([d], ['x'])", execution_count=2)
    prose = nbformat.v4.new_markdown_cell("R^2 = {glue:text}`r2:.2f`")
    good = _nb([prose, draw, define, nbformat.v4.new_code_cell("glue('r2', 0.5)", execution_count=3,
                                                                outputs=[glued])])
    assert colab.shows_what_the_book_shows(good) == []

    no_figure = _nb([nbformat.v4.new_code_cell("fig = plots.show_images(row, titles)", execution_count=1)])
    assert "draws a figure" in " ".join(colab.shows_what_the_book_shows(no_figure))
    error = _nb([nbformat.v4.new_code_cell("x = 1", execution_count=1, outputs=[
        out("error", ename="FileNotFoundError", evalue="stored results do not exist", traceback=[])])])
    assert "FileNotFoundError" in " ".join(colab.shows_what_the_book_shows(error))
    unglued = _nb([prose, nbformat.v4.new_code_cell("x = 1", execution_count=1)])
    assert "['r2']" in " ".join(colab.shows_what_the_book_shows(unglued))
    not_run = _nb([nbformat.v4.new_code_cell("x = 1")])
    assert "did not run" in " ".join(colab.shows_what_the_book_shows(not_run))


def test_the_timing_report_refuses_a_failed_chapter_and_records_a_passed_one(tmp_path):
    from compbook.results import runtimes
    passed = colab.Outcome("07_depth.ipynb", 0, 30.4, checked=True)
    path = colab.junit([passed], tmp_path / "ok.xml", jobs=2)
    assert runtimes.from_junit(path) == {"07_depth": 30.4} and runtimes.at_a_time(path) == 2
    for bad in (colab.Outcome("07_depth.ipynb", 1, 30.4, "boom"), colab.Outcome("07_depth.ipynb", 0, 30.4)):
        with pytest.raises(ValueError, match="did not pass"):
            runtimes.from_junit(colab.junit([passed, bad], tmp_path / "bad.xml"))


def test_the_open_check_counts_the_checkout_but_not_a_virtual_environment_inside_it(tmp_path):
    """The README's ``python3 -m venv .venv`` puts the interpreter's packages inside the checkout: opening them is
    Colab's own business, opening any other file of the checkout is not (the likely bug: every package import
    reported as a checkout file)."""
    checkout, venv = tmp_path / "checkout", tmp_path / "checkout" / ".venv"
    (venv / "lib").mkdir(parents=True)
    code = colab.FIRST_CELL.format(python="", wheel="", forbidden=[str(checkout.resolve())],
                                   environment=[str(venv.resolve())])
    body = code[code.index("OPENED_OUTSIDE = []"):code.index("sys.addaudithook")]
    scope = {"os": os, "Path": Path}
    exec(body, scope)
    scope["_record"]("open", (str(venv / "lib" / "numpy.py"), "r", 0))
    scope["_record"]("open", (str(tmp_path / "elsewhere.txt"), "r", 0))
    assert scope["OPENED_OUTSIDE"] == []
    scope["_record"]("open", (str(checkout / "data" / "registry.json"), "r", 0))
    assert scope["OPENED_OUTSIDE"] == [str((checkout / "data" / "registry.json").resolve())]
    assert str(Path(sys.prefix).resolve()) in colab.environment()
