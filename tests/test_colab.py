"""A simulated Colab, offline (SLOW: about 3-5 minutes on 2 cores; the one test of this file).

compbook is built as a wheel and installed (``--no-deps``) into a fresh virtual environment in a temporary folder
(``--system-site-packages``: torch and the other dependencies installed here are reused); a local HTTP server on
127.0.0.1 stands in for the repository host (the checkout's ``data/`` as the raw file tree of the repository's
branch) and for the Picbreeder folder (``../shared/picbreeder/``, laid out as ``$COMPBOOK_PICBREEDER_URL`` wants
it). Chapters 1 and 10 run headless in that environment, from a copy outside the checkout, with an empty
``$COMPBOOK_DATA`` and ``$HOME``: the kernel imports the wheel's compbook (checked in a first cell the test
inserts), opens no file of the checkout or the shared folder (an audit hook records every open; checked in a last
cell), and gets genomes, FER's networks, reference renders, the registry and the stored models by download, each
file of ``data/`` equal to the checkout's (checked by digest on download and here).
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "picbreeder"
CHAPTERS = ("01_fractured_vs_unified.ipynb", "10_bag_of_concepts.ipynb")
HOST = "127.0.0.1"
DATA_PREFIX = "/compbook/compbook/main/data/"         # as raw.githubusercontent.com/<owner>/<repo>/<branch>/data/
PICBREEDER_PREFIX = "/picbreeder/"

FIRST_CELL = """\
# inserted by tests/test_colab.py: the wheel's compbook, no checkout, and every opened file recorded
import os, sys
from pathlib import Path
import compbook, compbook.paths
assert Path(compbook.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), compbook.__file__
assert compbook.paths.repository_root() is None
OPENED_OUTSIDE = []
def _record(event, args, forbidden={forbidden!r}):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        p = str(Path(os.fsdecode(os.fspath(args[0]))).resolve())
        if any(p == f or p.startswith(f + "/") for f in forbidden):
            OPENED_OUTSIDE.append(p)
sys.addaudithook(_record)
print("COLAB-CHECK compbook from", compbook.__file__)
"""
LAST_CELL = """\
# inserted by tests/test_colab.py
assert not OPENED_OUTSIDE, OPENED_OUTSIDE
print("COLAB-CHECK opened nothing of the checkout")
"""
# runs in the venv's python: nbclient executes each notebook with the "python3" kernel, which jupyter_client
# starts with this interpreter (sys.executable), so the kernel is the venv's
RUNNER = """\
import sys
from pathlib import Path
import nbclient, nbformat
for p in sys.argv[1:]:
    nb = nbformat.read(p, as_version=4)
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(Path(p).parent)}}).execute()
    nbformat.write(nb, p)
"""


class _Host(SimpleHTTPRequestHandler):
    """Serves ``DATA_PREFIX`` from the checkout's data/ and ``PICBREEDER_PREFIX`` from the shared folder, nothing
    else; every request is logged as ``(status, path)``."""
    log: list

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        for prefix, folder in ((DATA_PREFIX, ROOT / "data"), (PICBREEDER_PREFIX, SHARED)):
            if path.startswith(prefix):
                self.directory = str(folder)
                return super().translate_path("/" + path[len(prefix):])
        return "/nonexistent/" + path.strip("/")

    def list_directory(self, path):
        self.send_error(404, "no listings")

    def log_request(self, code="-", size="-"):
        self.log.append((int(code) if isinstance(code, int) or str(code).isdigit() else code, self.path))

    def log_message(self, *args):
        pass


@pytest.fixture
def host():
    """A local host on a free port of 127.0.0.1, stopped at the end: ``(url, log)``."""
    log = []
    handler = type("Host", (_Host,), {"log": log})
    server = ThreadingHTTPServer((HOST, 0), partial(handler, directory=str(ROOT / "data")))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}", log
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{cmd[:4]}... failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


def _venv_with_wheel(tmp: Path) -> Path:
    """The wheel built from a copy of the package's sources (no build/ left in the checkout), installed without
    dependencies into a fresh venv that sees this machine's packages; returns the venv's python."""
    src = tmp / "src"
    shutil.copytree(ROOT / "compbook", src / "compbook", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
          str(src), "-w", str(tmp / "wheel")])
    wheel, = (tmp / "wheel").glob("compbook-*.whl")
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(tmp / "venv")])
    python = tmp / "venv" / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed", str(wheel)])
    return python


def _notebook(name: str, folder: Path, forbidden: list[str]) -> Path:
    with warnings.catch_warnings():          # a chapter's cells without an id are given one (the chapter's matter)
        warnings.simplefilter("ignore", nbformat.warnings.MissingIDFieldWarning)
        nb = nbformat.read(ROOT / "chapters" / name, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(FIRST_CELL.format(forbidden=forbidden)))
    nb.cells.append(nbformat.v4.new_code_cell(LAST_CELL))
    path = folder / name
    nbformat.write(nb, path)
    return path


def _text(nb) -> str:
    return "\n".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.skipif(not (SHARED / "fer_sgd").is_dir(), reason="no ../shared/picbreeder/ with fer_sgd/ to serve")
def test_chapters_1_and_10_run_from_the_wheel_with_downloaded_data(tmp_path, host):
    url, log = host
    python = _venv_with_wheel(tmp_path)
    run, data, home = tmp_path / "run", tmp_path / "data", tmp_path / "home"
    for d in (run, data, home):
        d.mkdir()
    forbidden = [str(ROOT.resolve()), str(SHARED.resolve())]
    notebooks = [_notebook(name, run, forbidden) for name in CHAPTERS]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COMPBOOK_", "PYTHON", "JUPYTER", "VIRTUAL_ENV"))}
    env |= {"COMPBOOK_DATA_URL": url + DATA_PREFIX, "COMPBOOK_PICBREEDER_URL": url + PICBREEDER_PREFIX,
            "COMPBOOK_DATA": str(data), "HOME": str(home), "COMPBOOK_WIDGETS": "static", "TQDM_DISABLE": "1",
            "HF_HUB_OFFLINE": "1"}
    _run([str(python), "-c", RUNNER, *map(str, notebooks)], cwd=run, env=env, timeout=1800)

    outputs = {}
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code), f"{path.name}: a cell did not run"
        assert not [o for c in code for o in c.outputs if o.output_type == "error"]
        outputs[path.name] = _text(nb)
        venv = tmp_path / "venv"
        assert any(f"COLAB-CHECK compbook from {v}/" in outputs[path.name] for v in (venv, venv.resolve()))
        assert "COLAB-CHECK opened nothing of the checkout" in outputs[path.name]
    ch1 = outputs[CHAPTERS[0]]
    assert "FER's SGD networks: skull, butterfly, apple found" in ch1 and "PSNR vs reference" in ch1
    assert "not here" not in ch1 and "skipped" not in ch1

    served = [p for status, p in log if status == 200]
    assert not [entry for entry in log if entry[0] != 200], f"requests that failed: {log}"
    assert len(served) == len(set(served)), f"a file was downloaded twice: {sorted(served)}"
    want_pb = {f"{PICBREEDER_PREFIX}{n}{ext}" for n in ("skull", "butterfly", "apple") for ext in (".zip", ".png")}
    want_pb |= {f"{PICBREEDER_PREFIX}fer_sgd/{n}.npz" for n in ("skull", "butterfly", "apple")}
    assert want_pb <= set(served), f"missing Picbreeder downloads: {want_pb - set(served)}"
    data_files = sorted(p[len(DATA_PREFIX):] for p in served if p.startswith(DATA_PREFIX))
    want_data = {"registry.json"} | {f"binding/clevr2d_{k}{ext}" for k in ("noswap", "swap")
                                     for ext in (".json", ".safetensors")}
    assert want_data <= set(data_files), f"missing data downloads: {want_data - set(data_files)}"
    registry = json.loads((ROOT / "data" / "registry.json").read_text())
    listed = {f for a in registry["artifacts"].values() for f in a["files"]} | {"registry.json"}
    assert set(data_files) <= listed, "a download the registry does not list"
    for rel in data_files:                       # what the kernel kept is the checkout's file, byte for byte
        assert _sha(data / rel) == _sha(ROOT / "data" / rel), rel
    for n in ("skull", "butterfly", "apple"):
        assert _sha(home / ".cache/compbook/picbreeder" / f"{n}.zip") == _sha(SHARED / f"{n}.zip")
        assert _sha(home / ".cache/compbook/picbreeder/fer_sgd" / f"{n}.npz") == _sha(SHARED / "fer_sgd" / f"{n}.npz")
