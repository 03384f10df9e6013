"""Files that survive a killed run: atomic writes, append-only journals, and a store of server answers
(chapter 5's judge cache filled from a server, chapter 16's server describer).

A long fill (tens of thousands of server answers) cannot rewrite its sealed JSON file after every answer. It
appends each answer, as it arrives, as one line of a **journal** beside the file (:class:`Journal`: a header line
naming what the journal belongs to, then one JSON record per line, flushed to the operating system at once);
when the fill ends, or the next one starts, the journal's records are merged into the sealed file, which is
written atomically (:func:`atomic_write_text`), and the journal is removed. A run killed at any point loses at
most the line being written: :func:`read_journal` drops an unfinished last line (it is asked again) and refuses
any other damage. :class:`AnswerCache` is that pattern for answers keyed by the request that produced them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

ANSWER_CACHE_FORMAT = "compbook-answer-cache/1"
JOURNAL_SUFFIX = ".journal.jsonl"


def canonical(obj, where: str = "record") -> str:
    """Canonical JSON text (sorted keys, no spaces, no NaN); ``ValueError`` naming ``where`` when not JSON-able."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where} is not JSON-able ({e}): {obj!r:.200}") from e


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename: a reader (or a run
    killed meanwhile) sees the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def journal_path(path) -> Path:
    """The journal beside a sealed file: ``answers.json`` -> ``answers.journal.jsonl``."""
    path = Path(path)
    return path.with_name(path.stem + JOURNAL_SUFFIX)


class Journal:
    """Append-only JSON lines for the sealed file at ``path``: ``header`` (a dict) on the first line, then one
    record per :meth:`append`. An existing journal is appended to when its header is the same (a resumed fill),
    else ``ValueError``. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path, header: dict):
        self.path = journal_path(path)
        self.header = json.loads(canonical(header, "journal header"))
        if self.path.exists():
            read_journal(path, header)               # refuses another header or a damaged journal
            self._repair_last_line()
            self._file = self.path.open("a", encoding="utf-8")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
            self._write(self.header)

    def _repair_last_line(self) -> None:
        """Cut an unfinished last line (a run killed while writing it) so the next record starts a line."""
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def _write(self, obj: dict) -> None:
        self._file.write(canonical(obj) + "\n")
        self._file.flush()

    def append(self, record: dict) -> None:
        """One record, written and flushed now (it survives the process being killed right after)."""
        self._write(record)

    def close(self) -> None:
        self._file.close()

    def remove(self) -> None:
        """Close and delete the journal (its records are in the sealed file)."""
        self.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_journal(path, header: dict) -> list[dict]:
    """The records of the journal of ``path`` (``[]`` when there is none).

    ``ValueError`` naming the journal for another header (it belongs to another file or judge) or a damaged
    line; only an unfinished last line (no newline: the run was killed while writing it) is dropped.
    """
    jpath = journal_path(path)
    if not jpath.exists():
        return []
    text = jpath.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1]                           # unfinished: asked again
    lines = [ln for ln in lines if ln]
    records = []
    for n, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{jpath}: line {n} is not JSON ({e}); delete the journal to ask its answers "
                             f"again") from None
    if not records:
        return []
    if records[0] != json.loads(canonical(header, "journal header")):
        raise ValueError(f"{jpath}: its header {records[0]!r:.200} is not {header!r:.200}: the journal belongs to "
                         f"another file or judge")
    if not all(isinstance(r, dict) for r in records[1:]):
        raise ValueError(f"{jpath}: a record is not a JSON object")
    return records[1:]


def answer_key(identity: str, request) -> str:
    """sha256 (hex) of the canonical JSON of ``[identity, request]``: the key of a stored answer."""
    return hashlib.sha256(canonical([identity, request], "request").encode()).hexdigest()


class AnswerCache:
    """Answers (strings) of one asker (``identity``: model, revision, prompt, sampling) keyed by
    :func:`answer_key` of the request that produced them, in a sealed JSON file with a journal beside it.

    :meth:`put` journals an answer at once; :meth:`seal` merges the journal into the file atomically and removes
    it; opening merges a journal left by a killed run. A file of another identity or format, or whose digest does
    not match its entries, raises ``ValueError``.
    """

    def __init__(self, path, identity: str):
        if not isinstance(path, (str, os.PathLike)) or not str(path).endswith(".json"):
            raise ValueError(f"path must be a *.json file for the answers, got {path!r}")
        if not isinstance(identity, str) or not identity:
            raise ValueError(f"identity must be a non-empty string, got {identity!r}")
        self.path, self.identity = Path(path), identity
        self._header = {"format": ANSWER_CACHE_FORMAT, "identity": identity}
        self._entries = self._read() if self.path.exists() else {}
        recovered = read_journal(self.path, self._header)
        for r in recovered:
            self._entries[self._checked(r)] = r["answer"]
        self._journal: Journal | None = None
        if recovered:
            self.seal()

    def _checked(self, record: dict) -> str:
        if not isinstance(record.get("key"), str) or not isinstance(record.get("answer"), str):
            raise ValueError(f"{journal_path(self.path)}: record {record!r:.100} needs a str 'key' and 'answer'")
        return record["key"]

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{self.path}: not valid JSON ({e})") from None
        if not isinstance(data, dict) or data.get("format") != ANSWER_CACHE_FORMAT:
            raise ValueError(f"{self.path}: not an answer cache of format {ANSWER_CACHE_FORMAT!r}")
        if data.get("identity") != self.identity:
            raise ValueError(f"{self.path} holds answers of {data.get('identity')!r}, not of {self.identity!r}")
        entries = data.get("entries")
        if not isinstance(entries, dict) or data.get("digest") != self._digest(entries):
            raise ValueError(f"{self.path}: its digest does not match its entries (edited by hand?)")
        return entries

    def _digest(self, entries: dict) -> str:
        return hashlib.sha256(canonical([self.identity, entries]).encode()).hexdigest()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> str | None:
        return self._entries.get(key)

    def put(self, key: str, answer: str) -> None:
        """Store ``answer`` under ``key``, journaled now."""
        if not isinstance(answer, str):
            raise ValueError(f"answer must be a string, got {type(answer).__name__}")
        if self._journal is None:
            self._journal = Journal(self.path, self._header)
        self._journal.append({"key": key, "answer": answer})
        self._entries[key] = answer

    def seal(self) -> Path:
        """Write every answer to the sealed file (atomically) and remove the journal."""
        body = {**self._header, "digest": self._digest(self._entries), "entries": self._entries}
        atomic_write_text(self.path, json.dumps(body, indent=0, ensure_ascii=False) + "\n")
        if self._journal is not None:
            self._journal.remove()
            self._journal = None
        journal_path(self.path).unlink(missing_ok=True)
        return self.path

    def __repr__(self) -> str:
        return f"AnswerCache({str(self.path)!r}, {len(self)} answers)"
