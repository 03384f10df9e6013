"""Stored judge verdicts (chapter 5): :class:`CachedJudge` answers from ``data/judge_cache/`` and fills it.

A cache file is keyed by the judge's identity; each entry by the concept and the question (checkpoint hash,
weight, delta, policy, resolution), so a stored verdict is never served for another question. ``python -m
compbook.cppn judges fill ...`` fills a cache (:mod:`compbook.cppn.__main__`).
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Callable, Iterator

import torch

from ... import checks, results
from ...results.journal import Journal, journal_path, read_journal
from .base import Judge, canonical_json, check_concept, check_images, check_questions, consecutive_batches
from ...results import door

CACHE_FORMAT = "compbook-judge-cache/1"
CACHE_FOLDER = "judge_cache"
#: Identities renamed after caches were written under them (old prefix -> new prefix): the three model labellers'
#: blind verdicts were first filed as ``human:``. :func:`read_cache` reads a file of an old identity as the new
#: one (its keys and digest checked under the old, then re-keyed) and :func:`cache_path` finds a file under its
#: old name; the next write stores it under the new identity.
RENAMED_IDENTITIES = {"human:book authors|": "model:labeller 1|",
                      "human:second labeller|": "model:labeller 2|",
                      "human:third labeller|": "model:labeller 3|"}


def current_identity(identity: str) -> str:
    """``identity`` under its current name (:data:`RENAMED_IDENTITIES`); unchanged when it was never renamed."""
    for old, new in RENAMED_IDENTITIES.items():
        if identity.startswith(old):
            return new + identity[len(old):]
    return identity


def former_identities(identity: str) -> list[str]:
    """The earlier names of ``identity`` (:data:`RENAMED_IDENTITIES`), none for most judges."""
    return [old + identity[len(new):] for old, new in RENAMED_IDENTITIES.items() if identity.startswith(new)]


# -- cached verdicts -----------------------------------------------------------------------------------------------
class CacheMiss(LookupError):
    """A strict :class:`CachedJudge` has no stored verdict for a question."""


def entry_key(identity: str, concept: str, question: dict) -> str:
    """The cache key: sha256 (hex) of the canonical JSON of ``[identity, concept, question]``."""
    return hashlib.sha256(canonical_json([identity, concept, question]).encode()).hexdigest()


def cache_file_name(identity: str) -> str:
    """``<readable slug>-<8 hex of sha256(identity)>.json``, e.g.
    ``vlm-qwen-qwen3-vl-4b-thinking-main-1a2b3c4d.json``."""
    slug = re.sub(r"[^a-z0-9.]+", "-", identity.split("|", 1)[0].lower()).strip("-.")[:60].rstrip("-.")
    return f"{slug or 'judge'}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}.json"


def cache_folder() -> Path:
    """The book's judge caches: ``data/judge_cache/`` (:func:`compbook.results.door.made_path`)."""
    return door.made_path(CACHE_FOLDER)


def cache_path(identity: str, folder=None) -> Path:
    """Where the cache of ``identity`` lives: ``folder`` (default :func:`cache_folder`) / :func:`cache_file_name`;
    a file named after a former name of the identity (:func:`former_identities`) when only that one exists."""
    if folder is None:              # the book's: the stored file (fetched outside a checkout), else a new one
        for name in (identity, *former_identities(identity)):
            if door.is_stored(f"{CACHE_FOLDER}/{cache_file_name(name)}"):
                return door.stored_path(f"{CACHE_FOLDER}/{cache_file_name(name)}")
        return door.made_path(f"{CACHE_FOLDER}/{cache_file_name(identity)}")
    folder = Path(folder)
    path = folder / cache_file_name(identity)
    if not path.exists():
        for old in former_identities(identity):
            if (folder / cache_file_name(old)).exists():
                return folder / cache_file_name(old)
    return path


def cache_digest(identity: str, entries: dict) -> str:
    """sha256 (hex) of the canonical JSON of ``[identity, entries]``: the file-level seal a cache file carries."""
    return hashlib.sha256(canonical_json([identity, entries], "cache entries").encode()).hexdigest()


def _refuse_duplicate_keys(path: Path):
    """A ``json.loads`` hook that refuses an object with a repeated key (what a bad merge of two caches makes;
    plain ``json`` would keep the last one silently)."""
    def hook(pairs):
        out = {}
        for k, v in pairs:
            if k in out:
                old = out[k]
                if isinstance(old, dict) and isinstance(v, dict) and "verdict" in old and "verdict" in v:
                    what = (f"with conflicting verdicts {old['verdict']!r} and {v['verdict']!r}"
                            if old["verdict"] != v["verdict"] else "twice, with the same verdict")
                else:
                    what = "twice"
                raise ValueError(f"{path}: key {k[:16]!r} appears {what} (a bad merge or a hand edit?); "
                                 f"restore the file (git) or delete it and fill it again")
            out[k] = v
        return out
    return hook


def read_cache(path, verify_digest: bool = True) -> tuple[str, dict]:
    """``(identity, entries)`` of a cache file.

    ``ValueError`` (naming the file) for: a folder; invalid JSON; a repeated key (duplicate or conflicting
    verdicts); another format version; an entry whose key does not match its identity, concept and question;
    and, with ``verify_digest``, a missing or wrong file digest (:func:`cache_digest`: a verdict edited by hand,
    an entry added or removed), and a file of the registered ``data/`` whose digest is not the registry's
    (:func:`compbook.results.verify`). ``FileNotFoundError`` when nothing is there. A file of a renamed identity
    (:data:`RENAMED_IDENTITIES`) is checked under the name it was written with and returned under the current one.
    """
    path = checks.file_path(path, "judge cache")
    if verify_digest:
        results.verify(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_refuse_duplicate_keys(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: judge cache is not valid JSON ({e}); restore it (git) or delete it") from e
    if not isinstance(data, dict) or "format" not in data:
        raise ValueError(f"{path}: not a judge cache (no 'format' field)")
    if data["format"] != CACHE_FORMAT:
        raise ValueError(f"{path}: judge cache format {data['format']!r} is not {CACHE_FORMAT!r} (this compbook)")
    identity, entries = data.get("identity"), data.get("entries")
    if not isinstance(identity, str) or not isinstance(entries, dict):
        raise ValueError(f"{path}: judge cache needs a str 'identity' and a dict 'entries'")
    for key, e in entries.items():
        ok = (isinstance(e, dict) and isinstance(e.get("concept"), str) and isinstance(e.get("question"), dict)
              and isinstance(e.get("verdict"), bool))
        if not ok or entry_key(identity, e["concept"], e["question"]) != key:
            raise ValueError(f"{path}: entry {key[:12]}... is malformed or does not match its key (edited by hand?)")
    if verify_digest:
        if "digest" not in data:
            raise ValueError(f"{path}: judge cache has no 'digest' (not written by "
                             f"compbook.cppn.judges.write_cache, or the field was removed); if you trust its "
                             f"verdicts, re-seal it: see data/judge_cache/README.md")
        if data["digest"] != cache_digest(identity, entries):
            raise ValueError(f"{path}: judge cache digest does not match its entries (a verdict edited by hand, "
                             f"or entries added or removed by a merge); restore the file (git) or fill it again")
    renamed = current_identity(identity)
    if renamed != identity:
        entries = {entry_key(renamed, e["concept"], e["question"]): e for e in entries.values()}
    return renamed, entries


def write_cache(path, identity: str, entries: dict) -> Path:
    """Write a cache file atomically (a temporary file in the same folder, then rename), one entry per line,
    sealed with its :func:`cache_digest` (checked by :func:`read_cache`), with the command that wrote it
    (``made_by``), and recorded in the registry (:func:`compbook.results.record`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    made_by = results.made_by(path)
    lines = [f"  {json.dumps(k)}: {json.dumps(e, ensure_ascii=False)}" for k, e in entries.items()]
    text = (f'{{\n "format": {json.dumps(CACHE_FORMAT)},\n "made_by": {json.dumps(made_by, ensure_ascii=False)},\n'
            f' "identity": {json.dumps(identity, ensure_ascii=False)},\n'
            f' "key": "sha256 of canonical JSON [identity, concept, question]",\n'
            f' "digest": {json.dumps(cache_digest(identity, entries))},\n "entries": {{\n'
            + ",\n".join(lines) + "\n }\n}\n")
    return results.write_text(path, text, made_by)


class CachedJudge:
    """Stored verdicts of one judge, keyed by everything that determines the question.

    Args:
        path: a cache file (``*.json``), or a folder in which the file is named from the identity
            (:func:`cache_file_name`; the book's caches live in ``data/judge_cache/``).
        judge: the judge whose verdicts these are (required for ``mode="fill"``).
        identity: that judge's identity when no judge is given (e.g.
            :func:`~compbook.cppn.judges.vlm.vlm_identity`, to read VLM verdicts on a CPU); with neither, the identity
            written in the file is used.
        mode: ``"strict"``: a question with no stored verdict raises :class:`CacheMiss` (a ``LookupError``)
            naming it; ``"fill"``: misses go to ``judge`` and are stored (the file is rewritten after each call;
            a judge with ``stream`` has each verdict journaled as it arrives, see ``_fill_streaming``, and a
            journal a killed fill left is merged when the cache opens in fill mode: ``recovered`` counts them;
            over a judge with ``stream_batches``, ``stream_batches`` streams the misses of many batches).

    A verdict is keyed by :func:`entry_key` (judge identity, concept, question dict; the engine's question holds
    the checkpoint's content hash, the weight, delta, policy and resolution), so it is never served for another
    question or another judge. Images are not looked at on a hit: the question must say what the image is.
    ``hits`` and ``misses`` count images. Loading a corrupt file, another format version, a file written by
    another judge identity, a repeated key (duplicate or conflicting verdicts), a file whose digest does not match
    its entries (see :func:`read_cache`), or a ``path`` that is a folder named ``*.json`` raises ``ValueError``.
    """

    def __init__(self, path, judge: Judge | None = None, identity: str | None = None, mode: str = "strict"):
        if mode not in ("strict", "fill"):
            raise ValueError(f"mode must be 'strict' or 'fill', got {mode!r}")
        if judge is not None:
            if not callable(judge) or not isinstance(getattr(judge, "identity", None), str):
                raise ValueError(f"judge must be a callable with a str .identity, got {judge!r}")
            if identity is not None and identity != judge.identity:
                raise ValueError(f"identity {identity!r} differs from the judge's identity {judge.identity!r}")
            identity = judge.identity
        if mode == "fill" and judge is None:
            raise ValueError("mode='fill' needs a judge to ask on a miss")
        if not isinstance(path, (str, os.PathLike)) or str(path) == "":
            raise ValueError(f"path must be a cache file (*.json) or a folder, got {path!r}")
        path = Path(path)
        if path.suffix == ".json" and path.is_dir():
            raise ValueError(f"path {path} is a directory, not a cache file; give a *.json file, or a folder "
                             f"whose name does not end in .json")
        if path.suffix != ".json":
            if path.exists() and not path.is_dir():
                raise ValueError(f"path {path} is a file without the .json suffix, not a judge cache")
            if identity is None:
                raise ValueError(f"path {path} is a folder: give judge or identity to choose the cache file in it")
            path = path / cache_file_name(identity)
        self.path, self.judge, self.mode, self.hits, self.misses = path, judge, mode, 0, 0
        if path.exists():
            stored, self._entries = read_cache(path)
            if identity is not None and stored != identity:
                raise ValueError(f"{path} holds verdicts of judge {stored!r}, not of {identity!r}")
            identity = stored
        elif mode == "strict":
            raise FileNotFoundError(f"judge cache {path} does not exist (fill it: python -m compbook.cppn judges fill)")
        else:
            self._entries = {}
        self.identity: str = identity
        self.recovered = self._recover() if mode == "fill" else 0

    def _journal_header(self) -> dict:
        return {"format": CACHE_FORMAT, "journal_of": self.identity}

    def _recover(self) -> int:
        """Merge the journal a killed fill left beside the file (see :meth:`_fill`); the number of verdicts it
        added. A journal record whose key does not match its entry, or that contradicts a stored verdict, raises
        ``ValueError``."""
        records = read_journal(self.path, self._journal_header())
        added = 0
        for r in records:
            key, e = r.get("key"), r.get("entry")
            ok = (isinstance(e, dict) and isinstance(e.get("concept"), str) and isinstance(e.get("question"), dict)
                  and isinstance(e.get("verdict"), bool))
            if not ok or entry_key(self.identity, e["concept"], e["question"]) != key:
                raise ValueError(f"{self.path}: journal record {str(key)[:12]}... is malformed or does not match "
                                 f"its key; delete the journal to ask its questions again")
            if key in self._entries and self._entries[key]["verdict"] != e["verdict"]:
                raise ValueError(f"{self.path}: the journal's verdict for {key[:12]}... contradicts the stored one")
            added += key not in self._entries
            self._entries[key] = e
        if records:
            write_cache(self.path, self.identity, self._entries)
        journal_path(self.path).unlink(missing_ok=True)
        return added

    def __len__(self) -> int:
        return len(self._entries)

    def records(self) -> list[dict]:
        """Every stored entry (``concept``, ``question``, ``verdict``, optional ``detail``), in file order."""
        return [dict(e) for e in self._entries.values()]

    def __call__(self, images, concept, *, reference=None, questions=None) -> torch.Tensor:
        images, concept = check_images(images), check_concept(concept)
        if questions is None:
            raise ValueError("questions is required: CachedJudge keys each verdict by its question dict")
        questions = check_questions(questions, len(images))
        keys = [entry_key(self.identity, concept, q) for q in questions]
        return self._answer(images, concept, reference, questions, keys)

    def _answer(self, images, concept, reference, questions, keys) -> torch.Tensor:
        """:meth:`__call__` on checked arguments, ``keys`` the questions' entry keys."""
        missing, asked = [], set()
        for i, k in enumerate(keys):      # a question repeated within the call is asked once
            if k not in self._entries and k not in asked:
                asked.add(k)
                missing.append(i)
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing and self.mode == "strict":
            raise CacheMiss(f"{len(missing)} of {len(keys)} questions have no stored verdict of judge "
                            f"{self.identity!r} in {self.path}; first: concept={concept!r}, question="
                            f"{canonical_json(questions[missing[0]])}. Fill the cache with this judge on a GPU "
                            f"(python -m compbook.cppn judges fill ...), or use a CPU judge and say so.")
        if missing:
            self._fill(images[missing], concept, reference, [questions[i] for i in missing], [keys[i] for i in missing])
        return torch.tensor([self._entries[k]["verdict"] for k in keys], dtype=torch.bool)

    @staticmethod
    def _entry(concept: str, question: dict, verdict, detail) -> dict:
        entry = {"concept": concept, "question": json.loads(canonical_json(question)), "verdict": bool(verdict)}
        if detail is not None:
            canonical_json(detail, "judge.last_details")
            entry["detail"] = detail
        return entry

    def _fill(self, images, concept, reference, questions, keys) -> None:
        if hasattr(self.judge, "stream"):
            return self._fill_streaming(images, concept, reference, questions, keys)
        verdicts = self.judge(images, concept, reference=reference, questions=questions)
        if not isinstance(verdicts, torch.Tensor) or verdicts.dtype != torch.bool or verdicts.shape != (len(keys),):
            raise ValueError(f"judge {self.identity!r} returned {verdicts!r:.100}, not a BoolTensor ({len(keys)},)")
        details = getattr(self.judge, "last_details", None)
        details = details if isinstance(details, list) and len(details) == len(keys) else [None] * len(keys)
        for k, q, v, d in zip(keys, questions, verdicts.tolist(), details):
            self._entries[k] = self._entry(concept, q, v, d)
        write_cache(self.path, self.identity, self._entries)

    def _fill_streaming(self, images, concept, reference, questions, keys) -> None:
        """A judge with ``stream`` (a server judge) gives each verdict as it arrives: each one is appended to a
        journal beside the cache at once (:class:`compbook.results.journal.Journal`); the cache file is sealed when the
        call ends, even by an error. A run killed meanwhile leaves the journal, which the next fill merges."""
        journal = Journal(self.path, self._journal_header())
        try:
            for i, v, d in self.judge.stream(images, concept, reference=reference, questions=questions):
                if not isinstance(v, bool):
                    raise ValueError(f"judge {self.identity!r} streamed verdict {v!r}, not a bool")
                entry = self._entry(concept, questions[i], v, d)
                journal.append({"key": keys[i], "entry": entry})
                self._entries[keys[i]] = entry
        finally:
            write_cache(self.path, self.identity, self._entries)
            journal.remove()

    def stream_batches(self, batches, concept, *, reference=None, questions=None) -> Iterator[tuple[int, bool, dict]]:
        """``(index, verdict, detail)`` for the images of ``batches`` (``(start, images)`` pairs, consecutive, read
        lazily; ``questions`` a list indexed like the images): EMC2 scoring without a barrier between batches
        (chapter 5). Every batch is answered as one call would answer it (the same verdicts, entries and
        ``hits``/``misses``): hits at once from the stored verdicts; in fill mode over a judge with
        ``stream_batches`` (a server judge), the misses of all batches go to it as one stream and each verdict is
        journaled as it arrives (``_fill_streaming``; the file is sealed when the stream ends, even by an
        error); otherwise batch by batch through ``__call__``. ``detail`` is None for a verdict answered by a
        call."""
        concept = check_concept(concept)
        if not isinstance(questions, list):
            raise ValueError("questions is required: CachedJudge keys each verdict by its question dict (a list "
                             f"indexed like the images), got {type(questions).__name__}")
        questions = check_questions(questions, len(questions))     # once, at the door: not batch by batch
        keys = [entry_key(self.identity, concept, q) for q in questions]
        batches = self._batch_shapes(batches, len(questions))
        if self.mode == "fill" and hasattr(self.judge, "stream_batches"):
            return self._stream_misses(batches, concept, reference, questions, keys)
        return self._batch_by_batch(batches, concept, reference, questions, keys)

    @staticmethod
    def _batch_shapes(batches, n: int):
        """:func:`~compbook.cppn.judges.base.consecutive_batches` within the ``n`` questions, each batch's shape
        checked as it arrives: a tensor (B, H, W, 3). The pixels are read (and checked) only by the judge that
        answers a miss; a stored verdict does not read them."""
        for start, images in consecutive_batches(batches, _image_batch_shape):
            if start + len(images) > n:
                raise ValueError(f"batches: a batch of {len(images)} at {start} does not fit within the {n} "
                                 f"questions")
            yield start, images

    def _batch_by_batch(self, batches, concept, reference, questions, keys):
        for start, images in batches:         # each call its own copies, as compositional_score's calls get
            end = start + len(images)
            verdicts = self._answer(images, concept, copy.deepcopy(reference), copy.deepcopy(questions[start:end]),
                                    keys[start:end])
            yield from ((start + i, v, None) for i, v in enumerate(verdicts.tolist()))

    def _stream_misses(self, batches, concept, reference, questions, all_keys):
        """The streaming fill of :meth:`stream_batches`: ``waiting[key]`` lists the indices a verdict asked for
        (and not yet arrived) answers; ``asked`` the keys and questions sent, in the order sent."""
        waiting, asked_keys, asked_questions, answered = {}, [], [], collections.deque()

        def misses():                       # read by the judge's stream: classify each batch as it is rendered
            for start, images in batches:
                qs, keys = questions[start:start + len(images)], all_keys[start:start + len(images)]
                missing = []
                for i, k in enumerate(keys):
                    if k in self._entries:
                        answered.append((start + i, self._entries[k]["verdict"], self._entries[k].get("detail")))
                    elif k in waiting:     # asked by an earlier image: answered with it (a hit, as in a call)
                        waiting[k].append(start + i)
                    else:
                        waiting[k] = [start + i]
                        missing.append(i)
                self.hits += len(keys) - len(missing)
                self.misses += len(missing)
                if missing:                 # the judge reads the questions of a batch when it gets the batch
                    start = len(asked_keys)
                    asked_keys.extend(keys[i] for i in missing)
                    asked_questions.extend(qs[i] for i in missing)
                    yield start, images[missing]

        journal = Journal(self.path, self._journal_header())
        try:
            for j, v, d in self.judge.stream_batches(misses(), concept, reference=reference,
                                                     questions=asked_questions):
                yield from self._drain(answered)
                if not isinstance(v, bool):
                    raise ValueError(f"judge {self.identity!r} streamed verdict {v!r}, not a bool")
                key, entry = asked_keys[j], self._entry(concept, asked_questions[j], v, d)
                journal.append({"key": key, "entry": entry})
                self._entries[key] = entry
                yield from ((i, v, d) for i in waiting.pop(key))
            yield from self._drain(answered)
        finally:                            # sealed when anything was asked (as a call with misses seals it)
            if asked_keys:
                write_cache(self.path, self.identity, self._entries)
            journal.remove()

    @staticmethod
    def _drain(queue):
        while queue:
            yield queue.popleft()

    def __repr__(self) -> str:
        return (f"CachedJudge({str(self.path)!r}, identity={self.identity!r}, mode={self.mode!r}, "
                f"{len(self)} entries, hits={self.hits}, misses={self.misses})")


def _image_batch_shape(images):
    """``images`` if it is a tensor (B, H, W, 3), its pixels unread; else ``ValueError``."""
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[-1] != 3:
        shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
        raise ValueError(f"batches: each batch must be a tensor (B, H, W, 3), got {shape}")
    return images


def stored_judge(identity: str, folder=None) -> CachedJudge | None:
    """A strict :class:`CachedJudge` over the stored verdicts of judge ``identity`` (e.g. the VLM's, read on a
    CPU), or None when this project has no such file (chapter 5)."""
    if folder is not None:
        path = cache_path(identity, folder)
    else:               # the book's file: fetched outside a checkout (Colab)
        name = f"{CACHE_FOLDER}/{cache_file_name(identity)}"
        if not door.is_stored(name):
            return None
        path = door.stored_path(name)
    return CachedJudge(path, identity=identity) if path.exists() else None


def score_or_fall_back(score: Callable, judge, fallback):
    """``score(judge)``, or ``score(fallback)`` when ``judge`` is a cache without the verdict asked for
    (:class:`CacheMiss`); the result's ``source`` names the judge that answered (chapter 5)."""
    try:
        return score(judge)
    except CacheMiss:
        return score(fallback)


def is_cache_file(path) -> bool:
    """Whether ``path`` holds a judge cache (a JSON object with a judge-cache ``format``); the cache folder also
    holds other JSON files (the labelling keys, self-agreement records), which are not caches. An unreadable file
    counts as a cache: :func:`read_cache` then says what is wrong with it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return True
    return isinstance(data, dict) and str(data.get("format", "")).startswith(CACHE_FORMAT.split("/")[0])
