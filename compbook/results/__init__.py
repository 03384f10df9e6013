"""Stored results have one home: ``data/registry.json``, every artifact of ``data/`` with its files' SHA-256 and
the command that makes it (d2l's ``DATA_HUB`` is the model).

An **artifact** is one file (``emc2/counting.json``), one checkpoint (a stem: ``binding/clevr2d_swap`` for its
``.json`` and ``.safetensors``) or one folder of files (``sae/study/k32/``). Its **name** is its path without the
``.json`` suffix or the trailing ``/``. The registry (format ``compbook-registry/1``, sorted, one entry per
artifact)::

    {"format": "compbook-registry/1",
     "artifacts": {"emc2/counting": {"path": "emc2/counting.json",
                                     "command": "python -m compbook.cppn counting --sample 150 ...",
                                     "files": {"emc2/counting.json": "<sha256>"}}, ...}}

``command`` is the project command that makes the artifact (several joined by ``" ; "`` where several runs
made one file); ``note`` (optional) says what a command does not, e.g. that a labeller typed the file.

* :func:`load` (``results.load("emc2/counting")``) returns :class:`Stored` ``(data, provenance)``: the parsed
  JSON of a ``.json`` file, the text of another file, the stem path of a checkpoint or the folder path of a folder
  (what the part's loader takes: ``checkpoints.load``, ``experiment.stored_runs``), each file verified first, and
  one provenance line (name, command, digest).
* :func:`verify` refuses, with a ``ValueError`` naming the file, a file of a registered data folder whose digest
  differs from the registry's (edited, or re-made without recording) or that the registry does not list. The
  shared readers call it (:func:`compbook.results.json_file`, :mod:`compbook.results.checkpoints`, the judge caches);
  files outside such a folder (a test's temporary folder) are not registered and load as before.
* :func:`record` (called by every writer: :func:`write_json`, :func:`compbook.results.checkpoints.save`, the judge
  caches) puts a written file's new digest into the registry, so re-running a project command updates the registry.
* :mod:`compbook.results.upkeep` (``python -m compbook.results check|refresh|add|stamp|show``) checks every
  file, re-registers changed files, registers a new artifact, gives an old JSON its ``made_by``.

* :mod:`compbook.results.door` is the one door every part reads a stored result through
  (``door.stored_path``, ``is_stored``, ``stored_names``) and makes one that is not stored (``door.stored_or_made``:
  refused or made again, never served, when stored for other settings; ``door.made_path`` is where a writer
  puts it): ``from compbook.results import door``.

A registered data folder is the checkout's ``data/`` (or ``$COMPBOOK_DATA`` when it holds a registry). Outside a
checkout (Colab), :func:`compbook.results.paths.data_file` downloads the registry and the files (from the repository, or
``$COMPBOOK_DATA_URL``), each file checked against the downloaded registry's digest before it is written.

The registry is input (downloaded from the network in Colab), so :func:`read_registry` checks every entry's shape
(:func:`check_entry`: ``ValueError`` naming the entry and the field) and every path in it is confined to the data
folder (:func:`compbook.results.paths.safe_path`: relative, no ``..``, no absolute path, no link out of the folder),
again just before :func:`load` reads a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from . import paths
from .. import checks
from .journal import atomic_write_text

REGISTRY = paths.REGISTRY
FORMAT = "compbook-registry/1"
#: Files of a data folder that are documentation, not artifacts (never registered).
UNREGISTERED = ("README.md",)
PROJECT_COMMAND = "python -m compbook."
CHECKPOINT_SUFFIXES = (".json", ".safetensors")


class Stored(NamedTuple):
    """What :func:`load` returns: the data and one provenance line."""
    data: Any
    provenance: str


def wrap(line: str, width: int = 80) -> str:
    """A provenance line wrapped for the page (lines of at most ``width`` characters)."""
    return textwrap.fill(line, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


# -- where ------------------------------------------------------------------------------------------------------------
def sha256(path) -> str:
    """SHA-256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def home(path) -> Path | None:
    """The registered data folder that holds ``path`` (its registry governs it), or None: the checkout's
    ``data/`` or ``$COMPBOOK_DATA`` where a registry is there; outside a checkout,
    :func:`compbook.results.paths.data_dir` (the registry is downloaded with the files)."""
    path = Path(os.path.abspath(path))
    root = paths.repository_root()
    folders = [paths.data_dir()] + ([root / "data"] if root is not None else [])
    for folder in folders:
        folder = Path(os.path.abspath(folder))
        if _inside(path, folder) and ((folder / REGISTRY).is_file() or root is None):
            return folder
    return None


def relative(path, folder: Path) -> str:
    """``path`` relative to ``folder``, with ``/`` separators."""
    return Path(os.path.abspath(path)).relative_to(folder).as_posix()


# -- the registry file -------------------------------------------------------------------------------------------------
_CACHE: dict = {}


def read_registry(folder: Path) -> dict:
    """The registry of data folder ``folder`` (downloaded outside a checkout), checked; ``ValueError`` naming it."""
    path = folder / REGISTRY
    if not path.is_file() and paths.repository_root() is None:
        paths.data_file(REGISTRY)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no registry of stored results (python -m compbook.results refresh)")
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        try:
            reg = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: the registry is not valid JSON ({e}); restore it (git)") from None
        if not isinstance(reg, dict) or reg.get("format") != FORMAT or not isinstance(reg.get("artifacts"), dict):
            raise ValueError(f"{path}: not a registry of format {FORMAT!r}")
        for name, artifact in reg["artifacts"].items():
            check_entry(folder, name, artifact, path)
        _CACHE.clear()
        _CACHE[key] = reg
    return json.loads(json.dumps(_CACHE[key]))          # a copy: callers may change it


_FIELDS = {"path": str, "command": str, "note": str, "files": dict}
_SHA256 = re.compile(r"[0-9a-f]{64}")


def check_entry(folder: Path, name: str, artifact, registry="the registry") -> None:
    """Refuse (``ValueError`` naming ``registry``, the entry ``name`` and the field) a registry entry of the wrong
    shape: not an object; a field missing (``path``, ``command``, ``files``), unknown or of another type; a path
    (``path``, each of ``files``) that would leave ``folder`` (:func:`compbook.results.paths.safe_path`); a file that is
    not its artifact's (the file itself, under the folder, or the checkpoint's ``.json`` / ``.safetensors``); a
    digest that is not 64 hex digits; a name that is not its path's (:func:`name_of`)."""
    where = f"{registry}: entry {name!r}"
    if not isinstance(artifact, dict):
        raise ValueError(f"{where} must be an object with path, command and files, got {type(artifact).__name__}")
    for field in sorted(set(artifact) | {"path", "command", "files"}):
        want = _FIELDS.get(field)
        if want is None:
            raise ValueError(f"{where}: field {field!r} is not one of {sorted(_FIELDS)}")
        if not isinstance(artifact.get(field), want):
            raise ValueError(f"{where}: field {field!r} must be a {'JSON object' if want is dict else 'string'}, "
                             f"got {type(artifact.get(field)).__name__}" + ("" if field in artifact else " (missing)"))
    path = artifact["path"]
    paths.safe_path(folder, path.removesuffix("/"), f"{where}: field 'path'")
    if name != name_of(path):
        raise ValueError(f"{where}: field 'path' {path!r} is not the entry's own (expected {name!r} from it)")
    stem = path.removesuffix(".json")
    for rel, digest in artifact["files"].items():
        paths.safe_path(folder, rel, f"{where}: field 'files'")
        mine = rel.startswith(path) if path.endswith("/") else rel == path or rel in (
            f"{stem}{suffix}" for suffix in CHECKPOINT_SUFFIXES)
        if not mine:
            raise ValueError(f"{where}: field 'files' lists {rel!r}, which is not under its path {path!r}")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise ValueError(f"{where}: field 'files' gives {rel!r} the digest {digest!r}, not a SHA-256 (64 hex)")


def init(folder) -> Path:
    """Start an empty registry in data folder ``folder`` (none there yet); returns its path."""
    path = Path(folder) / REGISTRY
    if path.exists():
        raise ValueError(f"{path}: a registry is already there")
    Path(folder).mkdir(parents=True, exist_ok=True)
    _write_registry(Path(folder), {"format": FORMAT, "artifacts": {}})
    return path


def _write_registry(folder: Path, reg: dict) -> None:
    order = ("path", "command", "note", "files")
    arts = {n: {k: a[k] for k in order if k in a} | {"files": dict(sorted(a["files"].items()))}
            for n, a in sorted(reg["artifacts"].items())}
    atomic_write_text(folder / REGISTRY, json.dumps({"format": FORMAT, "artifacts": arts}, indent=1,
                                               ensure_ascii=False) + "\n")


@contextmanager
def _locked(folder: Path):
    """Hold ``folder``'s registry lock (two commands writing at once both land)."""
    try:
        import fcntl
    except ImportError:                      # not on POSIX: no lock
        yield
        return
    with open(folder / f".{REGISTRY}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def kind(artifact: dict) -> str:
    """``"folder"`` (its path ends in ``/``), ``"file"`` (its path is its one file) or ``"checkpoint"``."""
    p = artifact["path"]
    return "folder" if p.endswith("/") else "file" if p in artifact["files"] else "checkpoint"


def artifact_of(reg: dict, rel: str) -> str | None:
    """The name of the artifact that holds (or would hold) file ``rel``: the artifact listing it, the checkpoint
    of its stem, or the deepest folder above it; None if none."""
    arts = reg["artifacts"]
    for name, a in arts.items():
        if rel in a["files"]:
            return name
    stem = rel.removesuffix(Path(rel).suffix) if Path(rel).suffix in CHECKPOINT_SUFFIXES else None
    best = None
    for name, a in arts.items():
        k = kind(a)
        if k == "checkpoint" and a["path"] == stem:
            return name
        if k == "folder" and rel.startswith(a["path"]) and (best is None or len(a["path"]) > len(arts[best]["path"])):
            best = name
    return best


def name_of(path: str) -> str:
    """The artifact name of an artifact path: without ``.json`` or a trailing ``/``."""
    return path.rstrip("/").removesuffix(".json")


def _digest(artifact: dict) -> str:
    """One digest for an artifact: its file's SHA-256, or that of its files' ``path sha`` lines."""
    files = artifact["files"]
    if len(files) == 1:
        return next(iter(files.values()))
    return hashlib.sha256("".join(f"{p} {d}\n" for p, d in sorted(files.items())).encode()).hexdigest()


def provenance(name: str, artifact: dict) -> str:
    """One line: the artifact's name, what made it, its digest (12 hex)."""
    note = f"{artifact['note']}; " if artifact.get("note") else ""
    return f"{name}: {note}made by {artifact['command']} (sha256 {_digest(artifact)[:12]})"


# -- verifying and loading ---------------------------------------------------------------------------------------------
_VERIFIED: dict = {}


def verify(path) -> None:
    """Refuse (``ValueError`` naming the file and what differs) a file of a registered data folder that the
    registry does not list or whose SHA-256 differs from the registry's; a file elsewhere passes."""
    folder = home(path)
    if folder is None or Path(path).name == REGISTRY:
        return
    reg, rel = read_registry(folder), relative(path, folder)
    name = artifact_of(reg, rel)
    want = reg["artifacts"][name]["files"].get(rel) if name else None
    if want is None:
        hint = (f"it belongs to artifact {name!r}: python -m compbook.results refresh {rel}" if name else
                f"register it: python -m compbook.results add {rel} --command '<the command that makes it>'")
        raise ValueError(f"{path}: not in the registry {folder / REGISTRY} (an unregistered file); {hint}")
    stat = Path(path).stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size, want)
    if key in _VERIFIED:
        return
    got = sha256(path)
    if got != want:
        raise ValueError(f"{path}: sha256 {got[:12]}... differs from the registry's {want[:12]}... (artifact "
                         f"{name!r}, made by {reg['artifacts'][name]['command']}): edited, or re-made without "
                         f"recording it; restore it (git) or, if it is the new result, python -m compbook.results "
                         f"refresh {rel}")
    _VERIFIED[key] = True


def load(name: str) -> Stored:
    """The registered artifact ``name`` (e.g. ``"emc2/counting"``), every file verified (downloaded outside a
    checkout): :class:`Stored` ``(data, provenance)``. ``data``: the parsed JSON of a ``.json`` file, the text of
    another file, the stem :class:`~pathlib.Path` of a checkpoint, the folder's :class:`~pathlib.Path` of a
    folder. ``ValueError`` for a name the registry does not hold or a file that fails :func:`verify`."""
    folder = Path(os.path.abspath(paths.data_dir()))
    if home(folder / REGISTRY) is None:
        return _load_unregistered(folder, name)
    reg = read_registry(folder)
    if not isinstance(name, str) or name not in reg["artifacts"]:
        close = [n for n in reg["artifacts"] if isinstance(name, str) and name.split("/")[-1] in n][:5]
        raise ValueError(f"name={name!r}: not a registered artifact of {folder / REGISTRY}"
                         + (f" (did you mean {close}?)" if close else ""))
    a, where = reg["artifacts"][name], f"{folder / REGISTRY}: entry {name!r}: field"
    for rel in a["files"]:             # confined again: a link made since the registry was read
        paths.safe_path(folder, rel, f"{where} 'files'")
        verify(paths.data_file(rel, required=True))
    path, k = paths.safe_path(folder, a["path"].rstrip("/"), f"{where} 'path'"), kind(a)
    if k == "file":
        text = path.read_text(encoding="utf-8")
        data = _parse(path, text) if path.suffix == ".json" else text
    else:
        data = path
    return Stored(data, provenance(name, a))


def _load_unregistered(folder: Path, name: str) -> Stored:
    """:func:`load` in a data folder without a registry (e.g. a test's scratch ``$COMPBOOK_DATA``): as before,
    unverified."""
    what = "name (an artifact name under the data folder, e.g. 'emc2/counting')"
    here = paths.safe_path(folder, name, what)            # each candidate confined: a link out is refused
    for cand in (paths.safe_path(folder, f"{name}.json", what), here):
        if cand.is_file():
            text = cand.read_text(encoding="utf-8")
            data = _parse(cand, text) if cand.suffix == ".json" else text
            by = data.get("made_by", "?") if isinstance(data, dict) else "?"
            return Stored(data, f"{name}: made by {by} (not registered: {folder} holds no {REGISTRY})")
    if here.is_dir() or paths.safe_path(folder, f"{name}.safetensors", what).is_file():
        return Stored(here, f"{name}: not registered ({folder} holds no {REGISTRY})")
    raise FileNotFoundError(f"{folder / name}: no such stored result (and {folder} holds no {REGISTRY})")


def _parse(path: Path, text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None


# -- recording ---------------------------------------------------------------------------------------------------------
def current_command() -> str | None:
    """The project command this process runs (``python -m compbook.<part> ...``), or None."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if len(argv) >= 3 and argv[1] == "-m" and argv[2].startswith("compbook"):
        return shlex.join(["python", "-m", *argv[2:]])
    return None


def made_by(path=None, command: str | None = None) -> str:
    """What a writer records as ``made_by``: ``command``, else the project command running, else the registered
    command of ``path``'s artifact, else this process's command line."""
    if command:
        return command
    if current_command():
        return current_command()
    return registered_command(path) or shlex.join(["python", *list(getattr(sys, "orig_argv", sys.argv))[1:]])


def registered_command(path) -> str | None:
    """The registered command of the artifact that holds (or would hold) ``path``, or None."""
    folder = home(path) if path is not None else None
    if folder is None or not (folder / REGISTRY).is_file():
        return None
    reg = read_registry(folder)
    name = artifact_of(reg, relative(path, folder))
    return reg["artifacts"][name]["command"] if name else None


def record(*files, command: str | None = None) -> None:
    """Put the new SHA-256 of each written file (of a registered data folder; others are skipped) into the
    registry, with ``command`` (default :func:`made_by`) as its artifact's command when that is a project
    command; a file of no artifact starts a new one (a checkpoint's two files one artifact)."""
    for f in files:
        folder = home(f)
        if folder is None or Path(f).name == REGISTRY or Path(f).name in UNREGISTERED:
            continue
        cmd = made_by(f, command)
        with _locked(folder):
            reg = read_registry(folder)
            rel = relative(f, folder)
            name = artifact_of(reg, rel)
            if name is None:
                path = _new_path(Path(f), rel)
                name = name_of(path)
                reg["artifacts"][name] = {"path": path, "command": cmd, "files": {}}
            a = reg["artifacts"][name]
            a["files"][rel] = sha256(f)
            if cmd.startswith(PROJECT_COMMAND):
                a["command"] = cmd
            _write_registry(folder, reg)


def register_folder(path, command: str) -> None:
    """Make folder ``path`` (of a registered data folder; others are skipped) one folder artifact made by
    ``command``, unless a folder artifact already holds it: the files :func:`record` puts there later join it
    (a sweep's records, one artifact however many)."""
    folder = home(path)
    if folder is None:
        return
    rel = relative(path, folder) + "/"
    with _locked(folder):
        reg = read_registry(folder)
        name = artifact_of(reg, rel + "x.json")
        if name is None or kind(reg["artifacts"][name]) != "folder":
            reg["artifacts"][name_of(rel)] = {"path": rel, "command": command, "files": {}}
            _write_registry(folder, reg)


def _new_path(path: Path, rel: str) -> str:
    """The artifact path of a new file: the stem of a checkpoint (a ``.safetensors`` file or a ``.json`` beside
    one), else the file."""
    if path.suffix == ".safetensors" or (path.suffix == ".json" and path.with_suffix(".safetensors").exists()):
        return rel.removesuffix(path.suffix)
    return rel


def place_made_by(obj: dict, command: str) -> dict:
    """``obj`` with ``made_by`` = ``command``, right after ``format`` when there is one, else first."""
    rest = {k: v for k, v in obj.items() if k != "made_by"}
    head = {"format": rest.pop("format")} if "format" in rest else {}
    return head | {"made_by": command} | rest


def write_json(path, obj: dict, command: str | None = None, indent: int | None = 1, **dumps) -> Path:
    """Write ``obj`` (a dict) as JSON with its provenance ``made_by`` (``command``, else ``obj``'s own
    ``made_by``, else :func:`made_by`), atomically, and :func:`record` it; returns the path."""
    if not isinstance(obj, dict):
        raise ValueError(f"obj must be a dict (a JSON object with a made_by), got {type(obj).__name__}")
    cmd = command or obj.get("made_by") or made_by(path)
    return write_text(path, json.dumps(place_made_by(obj, cmd), indent=indent, **dumps) + "\n", cmd)


def write_text(path, text: str, command: str | None = None) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`compbook.results.journal.atomic_write_text`) and :func:`record` it
    (made by ``command``); returns the path."""
    atomic_write_text(path, text)
    record(path, command=command)
    return Path(path)


def joined(old: str | None, command: str) -> str:
    """``old`` commands with ``command`` appended (``" ; "``), once: the ``made_by`` of a file several runs
    extend."""
    parts = [c for c in (old or "").split(" ; ") if c]
    return " ; ".join(parts + ([command] if command not in parts else []))


def json_file(path, what: str = "JSON file", kind: type = dict):
    """The JSON content (a ``kind``, dict by default) of the file ``path``: ``ValueError`` naming the file when
    it is a folder, not valid JSON (truncated?), holds another kind, or is a file of the registered ``data/``
    that its registry does not list with this digest (:func:`verify`; ``FileNotFoundError`` when
    missing)."""
    p = checks.file_path(path, what)
    verify(p)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{what} {p} is not valid JSON (truncated or edited? {e})") from None
    if not isinstance(data, kind):
        raise ValueError(f"{what} {p} must hold a JSON {'object' if kind is dict else kind.__name__}, "
                         f"got {type(data).__name__}")
    return data
