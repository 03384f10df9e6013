"""The book's run times: one stored record of the last CPU run, ``data/runtimes.json``.

``make test`` executes every chapter once (in its simulated Colab, ``tests/test_colab.py``) and writes a JUnit-like
report, ``_executed/colab.xml``; ``make runtimes`` (``python -m compbook.results runtimes REPORT``) reads each
notebook's time from it and writes the record (registered like every stored result). Every run time the book states
comes from this record: the landing page's table (:func:`table_markdown`, which :func:`write_intro` puts into
``intro.md`` between two markers, and a test keeps equal to the record) and each chapter's run time
(``glue("run_time", runtimes.seconds("07_depth"))``). A chapter also prints its own time in the run at hand, which on a
shared machine may be up to about twice the record's.

Record (``compbook-runtimes/1``)::

    {"format": "compbook-runtimes/1", "measured": "5 December 2026", "where": "...",
     "seconds": {"01_fractured_vs_unified": 34, ...}, "made_by": "python -m compbook.results runtimes ..."}
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from .. import checks
from . import paths

NAME = "runtimes"
FILE = "runtimes.json"
FORMAT = "compbook-runtimes/1"
#: the lines of ``intro.md`` the table sits between (written by :func:`write_intro`, read by the tests)
BEGIN, END = "<!-- run times: begin -->", "<!-- run times: end -->"
#: the JUnit report's property naming how many chapters ran at a time (``make test``'s report writes it)
AT_A_TIME = "chapters_at_a_time"
_NOTEBOOK = re.compile(r"(?:^|[/\\])((?:\d\d|notes)_[A-Za-z0-9_]+)\.ipynb")


def from_junit(path) -> dict[str, float]:
    """Seconds per notebook (``{"07_depth": 30.2, ...}``) from a JUnit XML report of a run of the chapters (one
    ``testcase`` per notebook, its ``file`` or ``classname`` naming the notebook: ``make test``'s
    ``_executed/colab.xml``, or pytest's ``--junitxml`` of an nbmake run). A report with a failed or
    skipped notebook is refused: a run that did not pass measures nothing the book can state."""
    path = checks.file_path(path, "report")
    root = ET.parse(path).getroot()
    out = {}
    for case in root.iter("testcase"):
        where = " ".join(case.get(k, "") for k in ("file", "classname", "name"))
        m = _NOTEBOOK.search(where.replace(".", "/").replace("/ipynb", ".ipynb"))
        if not m:
            continue
        if any(case.find(t) is not None for t in ("failure", "error", "skipped")):
            raise ValueError(f"{path}: {m.group(1)} did not pass; no run time is recorded from a failed run")
        out[m.group(1)] = out.get(m.group(1), 0.0) + float(case.get("time", "nan"))
    if not out:
        raise ValueError(f"{path}: no notebook test cases (is it the JUnit report of `make test`'s nbmake run?)")
    return out


def at_a_time(path) -> int:
    """How many chapters ran at a time in the run a JUnit report records (its ``chapters_at_a_time`` property,
    which ``make test``'s ``_executed/colab.xml`` carries; 1 where the report names none, as an nbmake run's)."""
    path = checks.file_path(path, "report")
    values = [p.get("value", "") for p in ET.parse(path).getroot().iter("property")
              if p.get("name") == AT_A_TIME]
    if not values:
        return 1
    if len(set(values)) > 1 or not values[0].isdigit() or int(values[0]) < 1:
        raise ValueError(f"{path}: {AT_A_TIME} {values}: expected one positive whole number")
    return int(values[0])


def where_in_words(where: str, jobs: int) -> str:
    """``where`` (the machine, in words) with how many chapters ran beside each other, when more than one
    (``"a 2-core CPU, two chapters at a time"``): a chapter timed beside another takes longer than alone."""
    jobs = checks.integer(jobs, "jobs", 1)
    words = {2: "two", 3: "three", 4: "four"}
    return where if jobs == 1 else f"{where}, {words.get(jobs, str(jobs))} chapters at a time"


def record(seconds: dict, measured: str, where: str) -> dict:
    """The record: whole seconds per notebook (each finite and > 0), the date and the machine in words."""
    seconds = checks.mapping(seconds, "seconds", 1)
    out = {}
    for name, s in seconds.items():
        s = checks.real(s, f"seconds[{name!r}]", 0, low_open=True)
        if not math.isfinite(s):
            raise ValueError(f"seconds[{name!r}]: {s} is not a time")
        out[name] = max(1, round(s))
    return {"format": FORMAT, "measured": str(measured), "where": str(where), "seconds": out}


def write(rec: dict, folder=None) -> Path:
    """Write ``rec`` to ``data/runtimes.json`` (registered, with its ``made_by``)."""
    from . import write_json
    folder = Path(folder) if folder is not None else paths.data_dir()
    return write_json(folder / FILE, rec)


def load() -> dict:
    """The stored record (verified against the registry)."""
    from . import load as load_stored
    rec = load_stored(NAME).data
    if rec.get("format") != FORMAT:
        raise ValueError(f"{FILE}: format {rec.get('format')!r}, expected {FORMAT!r}")
    return rec


def seconds(chapter: str, rec: dict | None = None) -> int:
    """The recorded CPU time of one notebook (its file stem: ``"07_depth"``), whole seconds."""
    rec = load() if rec is None else rec
    if chapter not in rec["seconds"]:
        raise ValueError(f"chapter {chapter!r}: not in the run-time record (recorded: {sorted(rec['seconds'])})")
    return rec["seconds"][chapter]


def page_seconds(page: str, rec: dict | None = None) -> tuple[str, int]:
    """``(the CPU in words, whole seconds)`` of one page: ``page`` is a notebook's stem (``"07_depth"``) or a
    chapter's key as the parts' ``fulltime`` modules name it (``"ch07"``); the CPU is read off the record's
    ``where`` (``"a 2-core CPU"``; ``"a CPU"`` where it names no core count)."""
    rec = load() if rec is None else rec
    stem = checks.instance(page, "page", str)
    if re.fullmatch(r"ch\d\d", page):
        found = [s for s in rec["seconds"] if s.startswith(page[2:] + "_")]
        if len(found) != 1:
            raise ValueError(f"page {page!r}: {len(found)} notebooks of the run-time record start {page[2:]}_")
        stem = found[0]
    cores = re.search(r"(\d+)-core", rec.get("where", ""))
    return (f"a {cores.group(1)}-core CPU" if cores else "a CPU"), seconds(stem, rec)


def say_run(page: str, took: float, mode: str = "cpu", rec: dict | None = None) -> str:
    """The line a chapter may print at its end: how long this run of the page took (``took`` seconds, in
    ``mode``) beside the recorded run (:func:`page_seconds`), in a reader's words."""
    took = checks.real(took, "took", 0)
    cpu, s = page_seconds(page, rec)
    said = "CPU" if mode == "cpu" else str(mode)
    return f"This run of the page took {took:.0f} s in {said} mode (the recorded run on {cpu}: {s} s)."


def table_rows(titles: dict, rec: dict | None = None) -> list[tuple[str, str]]:
    """``(title, "34 s")`` per notebook in ``titles`` order (``{stem: title}``, the table of contents), then the
    total in minutes."""
    rec = load() if rec is None else rec
    rows = [(title, f"{seconds(stem, rec)} s") for stem, title in titles.items()]
    total = sum(seconds(stem, rec) for stem in titles)
    return rows + ([(f"**all {len(titles)} notebooks**", f"**{total / 60:.1f} min**")])


def table_markdown(titles: dict, rec: dict | None = None) -> str:
    """The landing page's table, as markdown, with the sentence that says when and where it was measured."""
    rec = load() if rec is None else rec
    import textwrap
    said = (f"Measured on {rec['measured']} by `make test` ({rec['where']}). Each time is one chapter executed "
            "once in CPU mode, kernel start included (`data/runtimes.json`, recorded by `make runtimes`; each "
            "chapter states its own from it).")
    lines = textwrap.wrap(said, 115) + ["", "| chapter | time |", "|---|---|"]
    lines += [f"| {t} | {s} |" for t, s in table_rows(titles, rec)]
    return "\n".join(lines)


def intro_table(text: str) -> str:
    """The part of ``intro.md``'s ``text`` between the markers (stripped)."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"intro.md: no run-time table between {BEGIN!r} and {END!r}")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def write_intro(intro, titles: dict, rec: dict | None = None) -> bool:
    """Put :func:`table_markdown` between the markers of ``intro`` (a path); True when the file changed."""
    intro = Path(intro)
    text = intro.read_text()
    old = intro_table(text)
    new = table_markdown(titles, rec)
    if old == new:
        return False
    head, rest = text.split(BEGIN, 1)
    intro.write_text(f"{head}{BEGIN}\n{new}\n{END}{rest.split(END, 1)[1]}")
    return True


def toc_titles(book) -> dict:
    """``{stem: title}`` of every notebook of the book's ``_toc.yml``, in its order: a main chapter's heading up
    to its colon, without math (``3. The volume ratio``); a notes chapter's whole heading."""
    import json

    import yaml
    book = Path(book)
    toc = yaml.safe_load((book / "_toc.yml").read_text())
    out = {}
    for part in toc["parts"]:
        for c in part["chapters"]:
            path = book / f"{c['file']}.ipynb"
            if not path.is_file():            # a page of prose (the API appendix): nothing runs, no run time
                continue
            nb = json.loads(path.read_text())
            head = next(("".join(x["source"]) for x in nb["cells"] if x["cell_type"] == "markdown"), "")
            title = head.split("\n", 1)[0].lstrip("# ").strip()
            stem = Path(c["file"]).name
            if not stem.startswith("notes_"):
                title = " ".join(re.sub(r"\$[^$]*\$", "", title.split(": ", 1)[0]).split())
            out[stem] = title
    return out
