"""One door for stored results: every chapter reads what ``data/`` stores through it, and makes what is not stored
through it (chapters 5-9 and Part A's notes read their twins and stored runs, chapters 12-13 and Part B's notes
their binding models, chapters 14-16 and Part C's notes their SAE tables).

A stored result is named by its path under ``data/`` (:func:`compbook.results.paths.data_dir`): a file
(``"emc2/counting.json"``), a checkpoint stem (``"binding/controlled_V5"`` for its ``.json`` and ``.safetensors``)
or a folder (``"sae/study/k32/"``); a :class:`~pathlib.Path` inside the data folder names the same result, and
one outside it (a test's folder) is taken as it is.

* :func:`stored_path` reads: the local path of a stored result. In a checkout it is the file itself; outside one
  (Colab: compbook installed as a wheel) the registry's files are downloaded and checked against its SHA-256
  first (:func:`compbook.results.paths.data_file`). ``FileNotFoundError`` naming it when it is not stored.
* :func:`is_stored` and :func:`stored_names` ask without reading: is a result stored, which stored files match a
  glob (the registry's too, outside a checkout).
* :func:`made_path` is where a writer puts a result it makes (``data/<name>``, inside the data folder);
  :func:`local_path` is the stored one where there is one, else that place (a file read and extended: a cache).
* :func:`stored_or_made` is "stored, else made": the stored result when it was made for the settings asked,
  else ``make()`` (or a refusal, at the caller's choice), the made result registered in the data folder's
  registry (the mode's store: ``data/`` in a checkout, the full-mode folder a caller names, the cache
  ``~/.cache/compbook/data`` outside a checkout). A stored result made for other settings is never served.

Import it as ``from compbook.results import door`` (``door.stored_path("emc2/counting.json")``).

Test hook: when ``make`` runs for a result the registry lists (one that should have been read, not made), a JSON
line ``{"name": ..., "why": ...}`` is appended to the file named by ``$COMPBOOK_MADE_LOG`` when it is set.
"""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path
from typing import Any, Callable

from . import paths
from . import CHECKPOINT_SUFFIXES, home, name_of, read_registry, record, verify

#: Set to a file, every make of a result the registry lists appends a JSON line to it (``name``, ``why``).
MADE_LOG_VARIABLE = "COMPBOOK_MADE_LOG"
_GLOB = frozenset("*?[")
STALE = ("refuse", "remake")


def _folder() -> Path:
    return Path(os.path.abspath(paths.data_dir()))


def _where(name, what: str = "name") -> tuple[Path, str | None]:
    """``(local path, name under data/ or None)`` of ``name`` (a relative name or a path); ``ValueError`` for a
    relative name that leaves the data folder."""
    if isinstance(name, os.PathLike):
        path, folder = Path(os.path.abspath(name)), _folder()
        return (path, path.relative_to(folder).as_posix()) if path.is_relative_to(folder) else (path, None)
    if not isinstance(name, str) or not name.strip("/"):
        raise ValueError(f"{what} must be a stored result's path under data/ (e.g. 'emc2/counting.json'), "
                         f"got {name!r}")
    rel = name.rstrip("/")
    if _GLOB & set(rel):
        if rel.startswith("/") or ".." in rel.split("/") or "\\" in rel:
            raise ValueError(f"name={name!r}: a pattern must stay inside data/ (relative, no '..')")
        return _folder() / rel, rel
    return paths.safe_path(_folder(), rel, what), rel


def _present(path: Path) -> bool:
    """Whether a file, folder or checkpoint (its ``.json``) is at ``path``."""
    return path.exists() or path.with_name(path.name + ".json").is_file()


def _registry() -> dict | None:
    """The data folder's registry (downloaded outside a checkout), or None where the folder has none."""
    try:
        return read_registry(_folder())
    except FileNotFoundError:
        return None


def _registered_files(rel: str, reg: dict) -> list[str]:
    """The registry's files of the result ``rel``: its artifact's (a file, a checkpoint), its own in a folder
    artifact (a file, a checkpoint's two), or every file under folder ``rel``."""
    arts = reg["artifacts"]
    if name_of(rel) in arts:
        return sorted(arts[name_of(rel)]["files"])
    own = {rel} | {rel + s for s in CHECKPOINT_SUFFIXES}
    listed = sorted(f for a in arts.values() for f in a["files"] if f in own)
    return listed or sorted(f for a in arts.values() for f in a["files"] if f.startswith(rel + "/"))


def _outside_checkout() -> bool:
    return paths.repository_root() is None


def stored_path(name, command: str | None = None) -> Path:
    """The local path of the stored result ``name`` (a file, a checkpoint stem or a folder; see the module
    docstring), downloaded and digest-checked first outside a checkout. ``FileNotFoundError`` naming it (and
    ``command``, what makes it) when it is not stored."""
    path, rel = _where(name)
    if rel is not None and _GLOB & set(rel):
        raise ValueError(f"name={name!r}: a pattern names no one result (stored_names lists its matches)")
    if rel is not None and _outside_checkout() and not _complete(path, rel):
        reg = _registry()
        for f in _registered_files(rel, reg) if reg is not None else []:
            paths.data_file(f)
    if not _present(path):
        where = f"data/{rel}" if rel is not None else str(path)
        raise FileNotFoundError(f"stored result {where}: not stored in {path.parent}" + (
            " nor listed by the repository's registry" if rel is not None and _outside_checkout() else "")
            + (f"; {command} makes it" if command else ""))
    return path


def _complete(path: Path, rel: str) -> bool:
    """Whether the local copy is whole: a file, or a checkpoint's two files (a folder is checked file by file)."""
    if path.is_dir():
        return False
    if path.is_file():
        return True
    return all(path.with_name(path.name + s).is_file() for s in (".json", ".safetensors"))


def is_stored(name) -> bool:
    """Whether the result ``name`` is stored: there, or (outside a checkout) listed by the registry."""
    path, rel = _where(name)
    if _present(path):
        return True
    if rel is None or not _outside_checkout():
        return False
    reg = _registry()
    return reg is not None and bool(_registered_files(rel, reg))


def stored_names(pattern: str) -> list[str]:
    """The stored files under ``data/`` that match the glob ``pattern`` (``"emc2/twin_apple_64px_*.json"``;
    ``*`` does not cross ``/``), as names under ``data/``, sorted: those there and, outside a checkout, those
    the registry lists (read them by :func:`stored_path`)."""
    _, rel = _where(pattern)
    folder = _folder()
    found = {p.relative_to(folder).as_posix() for p in folder.glob(rel) if p.is_file()}
    if _outside_checkout():
        reg = _registry() or {"artifacts": {}}
        found |= {f for a in reg["artifacts"].values() for f in a["files"] if _matches(f, rel)}
    return sorted(found)


def _matches(rel: str, pattern: str) -> bool:
    parts, want = rel.split("/"), pattern.split("/")
    return len(parts) == len(want) and all(fnmatch.fnmatchcase(p, w) for p, w in zip(parts, want))


def made_path(name, what: str = "name") -> Path:
    """Where a writer puts the result ``name`` it makes: ``data/<name>`` (inside the data folder; the folder is
    not created). A path is taken as it is (a caller's own folder). ``what``: how an error names ``name``."""
    path, rel = _where(name, what)
    if rel is not None and _GLOB & set(rel):
        raise ValueError(f"name={name!r}: a pattern is not a place to write")
    return path


def local_path(name, what: str = "name") -> Path:
    """The local path of ``name`` for a reader that may also write it (a judge cache, a choice file): the stored
    result (:func:`stored_path`, fetched outside a checkout) when it is stored, else :func:`made_path`."""
    return stored_path(name) if is_stored(made_path(name, what)) else made_path(name, what)


# -- stored, else made ---------------------------------------------------------------------------------------------
def _json(value):
    return json.loads(json.dumps(value))


def _is_pattern(path: Path) -> bool:
    return bool(_GLOB & set(path.name))


def _matching(path: Path, rel: str | None) -> list[Path]:
    """The local paths of the stored files a glob names (under ``data/``: the registry's too, outside a checkout)."""
    if rel is not None:
        return [_folder() / f for f in stored_names(rel)]
    return sorted(p for p in path.parent.glob(path.name) if p.is_file())


def _problem(path: Path, rel: str | None, settings, recorded) -> str:
    """Why the stored result cannot answer (``""`` if it can): not stored, or stored for other settings."""
    if _is_pattern(path):
        return "" if _matching(path, rel) else "not stored"
    if not is_stored(path):
        return "not stored"
    if settings is None:
        return ""
    have, want = _json(recorded(stored_path(path))), _json(settings)
    if have == want:
        return ""
    if isinstance(have, dict) and isinstance(want, dict):
        fields = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
        return f"stored for other settings ({', '.join(map(str, fields))})"
    return f"stored for other settings ({have!r}, asked {want!r})"


def _listed(rel: str | None) -> bool:
    """Whether the registry lists the result ``rel`` (a name or a pattern)."""
    if rel is None:
        return False
    reg = _registry()
    if reg is None:
        return False
    if _GLOB & set(rel):
        return any(_matches(f, rel) for a in reg["artifacts"].values() for f in a["files"])
    return bool(_registered_files(rel, reg))


def note_made(name, why: str) -> None:
    """Say that the result ``name`` is being made: a line in ``$COMPBOOK_MADE_LOG`` (when set) if the registry
    lists it (:func:`stored_or_made` says it itself; a maker outside it, e.g. a command's trainer, calls this)."""
    path, rel = _where(name)
    if os.environ.get(MADE_LOG_VARIABLE) and _listed(rel):
        log_made(rel, why)


def log_made(name: str, why: str) -> None:
    """Append ``{"name", "why"}`` to ``$COMPBOOK_MADE_LOG`` when it is set (a registered result was made)."""
    target = os.environ.get(MADE_LOG_VARIABLE)
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": name, "why": why}) + "\n")


def _register(path: Path, rel: str | None) -> None:
    """Register each file of the made result ``path`` that its data folder's registry does not hold as it is."""
    if rel is None or home(path) is None:
        return
    if path.is_dir():
        files = [p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")]
    else:
        files = []
        for p in _matching(path, rel) if _is_pattern(path) else [path]:
            stem = p.with_suffix("") if p.suffix in CHECKPOINT_SUFFIXES else p
            files += [q for q in (p, *(stem.with_name(stem.name + s) for s in CHECKPOINT_SUFFIXES))
                      if q.is_file() and q not in files]
    for f in files:
        try:
            verify(f)
        except ValueError:
            record(f)


def stored_or_made(key, settings, make: Callable[[], Any], *, store=None, recorded: Callable[[Path], Any] | None = None,
                   may_make: bool = True, stale: str = "refuse", remake: bool = False, command: str | None = None,
                   log: Callable[[str], Any] | None = print) -> Path | list[Path]:
    """The stored result ``key`` made for ``settings``, else made by ``make()``: its local path (for a glob
    ``key``, the sorted paths of its matching files).

    ``store``: the folder ``key`` is in (a name under ``data/``, e.g. the mode's ``"binding/full"``, or a path;
    None: ``key`` is a name under ``data/``). ``settings``: what the result must have been made for, compared
    (as JSON) with ``recorded(path)``, the settings the stored result records (None: any stored one serves).
    It is made (``make()`` writes it at :func:`made_path`; its files are then registered in the data folder's
    registry) when ``remake``, when it is not stored, or when it was stored for other settings and ``stale`` is
    ``"remake"``; otherwise a result stored for other settings is a ``ValueError`` naming the fields that differ
    (``stale="refuse"``). ``may_make=False``: nothing is made unless ``remake``; a missing result is a
    ``FileNotFoundError`` naming it and ``command`` (what makes it). ``log``: says what is made and why."""
    if stale not in STALE:
        raise ValueError(f"stale must be one of {STALE}, got {stale!r}")
    if settings is not None and recorded is None:
        raise ValueError("recorded: needed with settings (it reads the settings a stored result was made for)")
    if settings is not None and _GLOB & set(str(key)):
        raise ValueError(f"key={key!r}: a pattern's matches are not compared with settings (pass settings=None)")
    if store is not None:
        key = Path(store) / key if isinstance(store, os.PathLike) else f"{store}/{key}"
    path, rel = _where(key)
    name = rel if rel is not None else str(path)
    why = "asked to make it again" if remake else _problem(path, rel, settings, recorded)
    if why:
        hint = f"; {command} makes it" if command else ""
        if why == "not stored" and not may_make:
            raise FileNotFoundError(f"{name}: not stored in {path.parent}{hint}")
        if why.startswith("stored for other") and (stale == "refuse" or not may_make):
            raise ValueError(f"{name}: {why}; a stored result is never served for other settings"
                             + (f"; {command} makes it again" if command else ""))
        if os.environ.get(MADE_LOG_VARIABLE) and _listed(rel):
            log_made(name, why)
        if log:
            log(f"{name}: {why}; making it here" + (f" (as {command} does)" if command else ""))
        make()
        if _problem(path, rel, None, None):
            raise RuntimeError(f"{name}: make() stored nothing there ({path})")
        _register(path, rel)
    if _is_pattern(path):
        return [stored_path(p) for p in _matching(path, rel)]
    return stored_path(path)
