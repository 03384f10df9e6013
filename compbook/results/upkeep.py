"""Keeping the registry of ``data/`` (:mod:`compbook.results`) true: :func:`check` every file, :func:`refresh`
after a merge or a rerun outside the writers, :func:`add` a new artifact, :func:`stamp` a JSON written without
provenance (``python -m compbook.results check|refresh|add|stamp``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .journal import atomic_write_text
from . import (CHECKPOINT_SUFFIXES, PROJECT_COMMAND, REGISTRY, UNREGISTERED, _locked, _new_path, _parse,
               _write_registry, artifact_of, name_of, place_made_by, read_registry, record,
               registered_command, relative, sha256)


def data_files(folder: Path) -> list[str]:
    """Every file of data folder ``folder`` that should be registered (not the registry, the READMEs, hidden
    files), relative, sorted."""
    return sorted(relative(p, folder) for p in folder.rglob("*")
                  if p.is_file() and p.name not in (REGISTRY, *UNREGISTERED)
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def check(folder: Path) -> list[str]:
    """Every problem of ``folder``'s registry: a file missing, edited or unregistered; an artifact without a
    project command. Empty when all is well."""
    reg, out = read_registry(folder), []
    listed = {}
    for name, a in reg["artifacts"].items():
        for c in a["command"].split(" ; "):
            if not c.startswith(PROJECT_COMMAND):
                out.append(f"{name}: command {c!r} is not a project command ({PROJECT_COMMAND}...)")
        for rel, want in a["files"].items():
            listed[rel] = name
            if not (folder / rel).is_file():
                out.append(f"{rel}: registered (artifact {name!r}) but missing")
            elif sha256(folder / rel) != want:
                out.append(f"{rel}: sha256 differs from the registry's (artifact {name!r})")
    out += [f"{rel}: not registered" for rel in data_files(folder) if rel not in listed]
    return out


def refresh(folder: Path, targets=None) -> tuple[list[str], list[str]]:
    """Re-register the files of ``folder`` (all, or those at or under the relative paths ``targets``): new
    digests of changed files, new files of a registered checkpoint or folder added, missing files dropped (an
    artifact with none left too). Returns ``(changes, unregistered)``: what changed, and files of no artifact
    (register them with :func:`add`)."""
    def wanted(rel):
        return not targets or any(rel == t or rel.startswith(t.rstrip("/") + "/") or
                                  rel.removesuffix(Path(rel).suffix) == t for t in targets)

    changes, unregistered = [], []
    with _locked(folder):
        reg = read_registry(folder)
        for name, a in list(reg["artifacts"].items()):
            for rel in [r for r in a["files"] if wanted(r)]:
                if not (folder / rel).is_file():
                    del a["files"][rel]
                    changes.append(f"{rel}: missing, dropped from {name!r}")
                elif sha256(folder / rel) != a["files"][rel]:
                    a["files"][rel] = sha256(folder / rel)
                    changes.append(f"{rel}: new digest ({name!r})")
            if not a["files"]:
                del reg["artifacts"][name]
                changes.append(f"{name}: no files left, dropped")
        listed = {r for a in reg["artifacts"].values() for r in a["files"]}
        for rel in [r for r in data_files(folder) if wanted(r) and r not in listed]:
            name = artifact_of(reg, rel)
            if name is None:
                unregistered.append(rel)
                continue
            reg["artifacts"][name]["files"][rel] = sha256(folder / rel)
            changes.append(f"{rel}: added to {name!r}")
        if changes:
            _write_registry(folder, reg)
    return changes, unregistered


def add(folder: Path, path: str, command: str | None = None, note: str | None = None) -> str:
    """Register a new artifact at ``path`` (relative to ``folder``): a folder (every file under it), a checkpoint
    stem or a file, made by ``command`` (default: the ``made_by`` its JSON records); returns its name.
    ``ValueError`` if a file is already another artifact's or no command is known."""
    path = path.strip("/") if (folder / path).is_dir() else path
    if (folder / path).is_dir():
        art, rels = path + "/", [r for r in data_files(folder) if r.startswith(path + "/")]
    elif (folder / path).is_file():
        art = _new_path(folder / path, path)
        rels = [art] if art == path else [art + s for s in CHECKPOINT_SUFFIXES if (folder / (art + s)).is_file()]
    elif any((folder / (path + s)).is_file() for s in CHECKPOINT_SUFFIXES):
        art, rels = path, [path + s for s in CHECKPOINT_SUFFIXES if (folder / (path + s)).is_file()]
    else:
        raise FileNotFoundError(f"{folder / path}: no such file, checkpoint or folder")
    if not rels:
        raise ValueError(f"{folder / path}: holds no file to register")
    with _locked(folder):
        reg = read_registry(folder)
        taken = {r: n for n, a in reg["artifacts"].items() for r in a["files"]}
        clash = sorted({taken[r] for r in rels if r in taken})
        if clash or name_of(art) in reg["artifacts"]:
            raise ValueError(f"{path}: already registered (artifact {clash or name_of(art)}); use refresh")
        if command is None:
            side = folder / (art if art.endswith(".json") else art + ".json")
            command = _parse(side, side.read_text()).get("made_by") if side.is_file() else None
        if not command:
            raise ValueError(f"{path}: give the command that makes it (--command); its JSON records none")
        entry = {"path": art, "command": command, "files": {r: sha256(folder / r) for r in rels}}
        reg["artifacts"][name_of(art)] = entry | ({"note": note} if note else {})
        _write_registry(folder, reg)
    return name_of(art)


def stamp(path, command: str | None = None) -> bool:
    """Give a JSON object written without provenance (by code older than :func:`~compbook.results.write_json`, e.g. in
    another branch) its ``made_by`` = ``command`` (default: its old ``command`` key, which goes, else the registered
    command of its artifact), keeping the file's layout (a line inserted after ``format``, or first), and :func:`record`
    it. Returns False when it already says ``made_by``; ``ValueError`` when there is no command."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    data = _parse(path, text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object; rewrite it with write_json (rows under a key)")
    if "made_by" in data:
        return False
    command = command or data.get("command") or registered_command(path)
    if not isinstance(command, str) or not command:
        raise ValueError(f"{path}: give the command that made it (--command)")
    want = place_made_by({k: v for k, v in data.items() if k != "command"}, command)
    indent = re.match(r"[ ]*", text.split("\n")[1]).group() if text.startswith("{\n") else None
    if indent is None or "command" in data:          # one line, or an old key to drop: dump it again
        new = json.dumps(want, indent=None if indent is None else len(indent), ensure_ascii=False)
        new += text[len(text.rstrip()):]
    else:                                             # one line inserted: the rest of the layout stays
        lines = text.split("\n")
        lines.insert(2 if lines[1].lstrip().startswith('"format"') else 1,
                     f'{indent}"made_by": {json.dumps(command, ensure_ascii=False)},')
        new = "\n".join(lines)
    if list(_parse(path, new).items()) != list(want.items()):
        raise ValueError(f"{path}: could not insert made_by in place; rewrite it with write_json")
    atomic_write_text(path, new)
    record(path, command=command)
    return True
