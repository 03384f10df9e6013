"""Binder for CPU mode (``binder/``): the environment built from the same files in a fresh venv runs chapter 2.

repo2docker installs ``binder/requirements.txt`` and then runs ``binder/postBuild`` in the repository root. This test
does the same in a fresh venv (where the CPU torch index of ``requirements.txt`` cannot be reached, pip takes the same
``torch==2.13.0`` CPU wheel from the machine's own configuration; repo2docker's base image brings Jupyter, here
``nbclient`` and ``ipykernel`` stand in for it) and executes chapter 2 headless there. Building the venv takes
minutes, so it is kept under ``$COMPBOOK_SCRATCH`` (default ``~/.cache/compbook``), keyed on the digest of the files
that make it: a change to ``binder/`` or ``pyproject.toml`` builds a new one.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CHAPTER = ROOT / "chapters" / "02_compositional_sparsity.ipynb"
# what repo2docker's base image provides and this venv needs to run a notebook
JUPYTER = ["nbclient>=0.10", "ipykernel"]


def _requirements() -> list[str]:
    return [line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_requirements_pin_the_cpu_torch_wheel_and_postbuild_installs_compbook():
    lines = _requirements()
    assert f"--extra-index-url {CPU_INDEX}" in lines
    assert "torch==2.13.0" in lines
    post = (BINDER / "postBuild").read_text()
    assert post.startswith("#!/bin/bash") and os.access(BINDER / "postBuild", os.X_OK)
    assert "pip install" in post and post.rstrip().endswith(".")


def _digest() -> str:
    """What the environment's packages depend on: binder/'s files, compbook's declared dependencies, this Python."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    h = hashlib.sha256()
    for path in (BINDER / "requirements.txt", BINDER / "postBuild"):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(repr((project["dependencies"], project["requires-python"], sys.version_info[:2])).encode())
    return h.hexdigest()[:16]


def _clean_env(env: Path | None = None, **extra) -> dict:
    """This process's environment without what would leak this checkout or Python into the venv's runs."""
    out = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    if env is not None:
        out.update(PATH=f"{env / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", VIRTUAL_ENV=str(env))
    return {**out, **extra}


def _run(cmd, **kw):
    kw.setdefault("env", _clean_env())
    run = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert run.returncode == 0, f"{' '.join(map(str, cmd))} failed ({run.returncode}):\n{run.stdout[-3000:]}\n" \
                                f"{run.stderr[-3000:]}"
    return run


def _checkout_copy(into: Path) -> Path:
    """The checkout as Binder clones it: its tracked and new files (none that git ignores, no build leftovers)."""
    shutil.rmtree(into, ignore_errors=True)
    files = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT).stdout
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


def _post_build(env: Path):
    """binder/postBuild, run as repo2docker runs it: in the repository root, the environment's Python first."""
    checkout = _checkout_copy(env / "checkout")
    _run(["bash", str(checkout / "binder" / "postBuild")], cwd=checkout, timeout=1800, env=_clean_env(env))
    shutil.rmtree(checkout)


def binder_env() -> Path:
    """The venv built from binder/ (requirements, then postBuild), its packages cached by :func:`_digest`; compbook
    itself is installed again by postBuild on every call, so the venv runs this checkout's compbook."""
    scratch = Path(os.environ.get("COMPBOOK_SCRATCH", Path.home() / ".cache" / "compbook"))
    env = scratch / f"binder-venv-{_digest()}"
    python = env / "bin" / "python"
    if not (env / "BUILT").is_file():
        shutil.rmtree(env, ignore_errors=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
        # the file as repo2docker installs it; where the CPU index is out of reach (these machines reach PyPI only),
        # pip passes over it at once and takes the same torch==2.13.0 CPU wheel from the machine's own wheels
        _run([python, "-m", "pip", "install", "-q", "-r", str(BINDER / "requirements.txt")], timeout=1800,
             env=_clean_env(PIP_RETRIES="0"))
        _post_build(env)
        _run([python, "-m", "pip", "install", "-q", *JUPYTER], timeout=1800)
        (env / "BUILT").write_text(_digest())
    else:
        _run([python, "-m", "pip", "uninstall", "-y", "-q", "compbook"])
        _post_build(env)
    return env


def test_chapter_2_runs_in_the_binder_environment(tmp_path):
    env = binder_env()
    python = env / "bin" / "python"
    # compbook comes from the venv (postBuild's install), not from this checkout's source tree
    where = _run([python, "-c", "import compbook, torch; print(compbook.__file__, torch.__version__)"],
                 cwd=tmp_path).stdout
    assert str(env) in where and "2.13.0" in where, where
    installed = Path(where.split()[0]).parent
    here = Path("results") / "paths.py"
    assert (installed / here).read_bytes() == (ROOT / "compbook" / here).read_bytes(), \
        "the venv's compbook is not this checkout's"
    # the venv's own kernel, under a name no other installation uses (a user's "python3" may be another Python)
    kernel = f"compbook-binder-{_digest()}"
    _run([python, "-m", "ipykernel", "install", "--prefix", str(env), "--name", kernel], env=_clean_env(env))
    executed = tmp_path / "executed.ipynb"
    script = ("import sys, nbformat\nfrom nbclient import NotebookClient\n"
              "nb = nbformat.read(sys.argv[1], as_version=4)\n"
              "nb.cells.append(nbformat.v4.new_code_cell("
              "'import sys, compbook; print(sys.prefix, compbook.__file__)'))\n"
              "NotebookClient(nb, timeout=600, kernel_name=sys.argv[4],\n"
              "               resources={'metadata': {'path': sys.argv[3]}}).execute()\n"
              "nbformat.write(nb, sys.argv[2])\n")
    # the kernel starts in the chapter's folder of this checkout, as Binder's does in the repository
    headless = _clean_env(env, COMPBOOK_WIDGETS="static", TQDM_DISABLE="1", COMPBOOK_MODE="cpu")
    _run([python, "-c", script, str(CHAPTER), str(executed), str(CHAPTER.parent), kernel], env=headless,
         timeout=900)
    import nbformat
    nb = nbformat.read(executed, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) or "text/html" in o.get("data", {}) for o in outputs)
    # the chapter ran in the venv's kernel, on the venv's compbook
    last = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert last.split()[0] == str(env) and last.split()[1].startswith(str(env)), last
