"""Every ``python -m compbook...`` command the project prints answers ``--help``, at every level.

The commands are collected from the chapters (markdown and code cells), ``README.md``, ``CONTRIBUTING.md``,
``intro.md`` and ``data/**/README.md``. For ``python -m compbook.cppn judges fill --genome skull`` the test runs
``python -m compbook.cppn --help``, ``... judges --help`` and ``... judges fill --help``: each must exit 0 and
print a usage line, and the last one's help must name every option the printed command uses (``--genome``). They run in
this process through :func:`runpy.run_module`, which is what ``python -m`` does (a module without an entry point runs,
prints nothing and fails here); one subprocess checks the three parts' real ``python -m``.
"""

import contextlib
import io
import json
import re
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: a module path, not a placeholder (``compbook.<part>``) or an ellipsis (``compbook...``)
COMMAND = re.compile(r"python -m (compbook(?:\.[a-z_][a-z0-9_]*)*)(?![.<\w|])([^`\n\"]*)")
WORD = re.compile(r"[a-z][a-z0-9_-]*")
OPTION = re.compile(r"(?<!\S)(--[a-z][a-z0-9-]*)")


def sources() -> dict[str, str]:
    """Text per file: every cell of every chapter, the READMEs, CONTRIBUTING.md, intro.md."""
    out = {}
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        out[str(nb.relative_to(ROOT))] = "\n".join("".join(c["source"]) for c in cells)
    for f in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "intro.md",
              *sorted((ROOT / "data").rglob("README.md"))]:
        out[str(f.relative_to(ROOT))] = f.read_text()
    return out


def commands(text: str) -> list[tuple[str, tuple[str, ...], set[str]]]:
    """``(module, subcommands, options)`` of every command in ``text``: the words after the module up to the
    first option or argument that is not a plain word, and the ``--options`` after them."""
    out = []
    for m in COMMAND.finditer(text):
        words = []
        for token in m.group(2).split():
            if not WORD.fullmatch(token):
                break
            words.append(token)
        out.append((m.group(1), tuple(words), set(OPTION.findall(m.group(2)))))
    return out


def levels() -> tuple[dict[tuple, list[str]], dict[tuple, set[str]]]:
    """Every level of every printed command -> the files that print it; and each printed command -> the options
    it is printed with."""
    where: dict[tuple, list[str]] = {}
    options: dict[tuple, set[str]] = {}
    for name, text in sources().items():
        for module, words, opts in commands(text):
            options.setdefault((module, words), set()).update(opts)
            for k in range(len(words) + 1):
                where.setdefault((module, words[:k]), [])
                if name not in where[(module, words[:k])]:
                    where[(module, words[:k])].append(name)
    return where, options


LEVELS, OPTIONS = levels()


def run_help(module: str, words: tuple) -> tuple[int, str]:
    """``python -m module *words --help`` in this process: (exit code, stdout + stderr)."""
    buffer, argv = io.StringIO(), sys.argv
    sys.argv = [module, *words, "--help"]
    code = 0
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            warnings.simplefilter("ignore", RuntimeWarning)   # "found in sys.modules": a test imported it first
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except ImportError as e:   # what python -m says for a module with no __main__ or none at all
        code, buffer = 1, io.StringIO(f"{type(e).__name__}: {e}")
    finally:
        sys.argv = argv
    return code, buffer.getvalue()


def test_the_collector_finds_the_commands():
    text = ("run `python -m compbook.cppn judges fill --genome skull` or python -m compbook.sae study --regions 4 8; "
            "not `python -m compbook.<part> --help` nor python -m compbook...; `python -m compbook.cppn.twins`")
    assert commands(text) == [("compbook.cppn", ("judges", "fill"), {"--genome"}),
                              ("compbook.sae", ("study",), {"--regions"}), ("compbook.cppn.twins", (), set())]
    assert ("compbook.cppn", ()) in LEVELS and ("compbook.binding", ()) in LEVELS and ("compbook.sae", ()) in LEVELS
    assert len(LEVELS) >= 20, sorted(LEVELS)


def test_a_module_without_an_entry_point_fails():
    """``python -m compbook.cppn.runs.experiments --help`` runs the library module and prints nothing: not a command."""
    code, out = run_help("compbook.cppn.runs.experiments", ())
    assert not (code == 0 and "usage:" in out)
    code, out = run_help("compbook.cppn.no_such_module", ())
    assert code != 0


@pytest.mark.parametrize("module, words", sorted(LEVELS), ids=lambda x: " ".join(x) if isinstance(x, tuple) else x)
def test_printed_command_answers_help(module, words):
    code, out = run_help(module, words)
    where = ", ".join(LEVELS[(module, words)])
    assert code == 0 and re.search(r"(?m)^usage: ", out), (
        f"`python -m {module} {' '.join(words)} --help` exited {code} without a usage line (printed in {where}):"
        f"\n{out[-600:]}")
    unknown = sorted(o for o in OPTIONS.get((module, words), ()) if not re.search(rf"{o}(?![a-z0-9-])", out))
    assert not unknown, f"`python -m {module} {' '.join(words)}` has no option {unknown} (printed in {where})"


def test_the_parts_answer_help_through_python_m():
    """The real ``python -m`` once per part: ``--help`` exits 0 with usage; no command at all exits 2."""
    code = ("import subprocess, sys\n"
            "for part in ('cppn', 'binding', 'sae'):\n"
            "    h = subprocess.run([sys.executable, '-m', f'compbook.{part}', '--help'], "
            "capture_output=True, text=True)\n"
            "    n = subprocess.run([sys.executable, '-m', f'compbook.{part}'], capture_output=True, text=True)\n"
            "    print(part, h.returncode, h.stdout.startswith('usage: '), n.returncode, "
            "n.stderr.startswith('usage: '))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split("\n")[:3] == [f"{p} 0 True 2 True" for p in ("cppn", "binding", "sae")], out
