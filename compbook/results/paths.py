"""Where the book's files live: the project's ``data/`` folder (checkpoints, judge caches) and its repository.

In a checkout, :func:`data_dir` is the ``data/`` folder at the repository root. In Colab (compbook installed from
the repository, no checkout), :func:`data_file` downloads a file of ``data/`` from the repository on first use:
the registry ``data/registry.json`` first, then a file it lists, checked against the registry's SHA-256. One
setting says where: the repository (:data:`REPOSITORY_URL`, :data:`BRANCH`, the same as ``_config.yml``'s
``repository.url`` and ``repository.branch``); ``$COMPBOOK_DATA_URL`` overrides the base URL of ``data/``.
Names and relative paths that must stay inside their folder are checked by :func:`compbook.checks.safe_name`
and :func:`compbook.checks.safe_path` (the registry of stored results reads its paths by them too).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable

from ..checks import safe_name, safe_path

#: The repository; ``_config.yml``'s ``repository.url`` must say the same (a test checks it).
REPOSITORY_URL = "https://github.com/compbook/compbook"
BRANCH = "main"
DATA_VARIABLE = "COMPBOOK_DATA"
#: Overrides the base URL that ``data/<path>`` files are fetched from (default: the repository's raw ``data/``).
DATA_URL_VARIABLE = "COMPBOOK_DATA_URL"
REGISTRY = "registry.json"
#: The largest download accepted (the largest file of ``data/`` is 3 MB; a bigger answer is not one of ours).
MAX_DOWNLOAD_BYTES = 256 * 2**20
URL_SCHEMES = ("https", "http", "file")


class DownloadError(OSError):
    """A download that failed or brought the wrong bytes (the message names the URL and the setting that chose it).
    Not a ``FileNotFoundError``: a file that is not stored is not an error of this kind (:func:`data_file`)."""


def repository_root() -> Path | None:
    """The checkout's root (the folder holding ``_toc.yml`` and ``compbook/``), or None outside a checkout."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for p in (start, *start.parents):
            if (p / "_toc.yml").is_file() and (p / "compbook").is_dir():
                return p
    return None


def data_dir() -> Path:
    """``$COMPBOOK_DATA``, else the checkout's ``data/``, else ``~/.cache/compbook/data``."""
    if os.environ.get(DATA_VARIABLE):
        return Path(os.environ[DATA_VARIABLE])
    root = repository_root()
    return root / "data" if root else Path.home() / ".cache" / "compbook" / "data"


def base_url(variable: str, default: str) -> str:
    """``$variable`` (a folder URL: https, http or file), else ``default``, without a trailing ``/``;
    ``ValueError`` naming the variable for another scheme."""
    url = os.environ.get(variable) or default
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in URL_SCHEMES or not (parts.netloc or parts.scheme == "file" and parts.path.strip("/")):
        raise ValueError(f"${variable}={url!r}: expected a folder URL ({', '.join(URL_SCHEMES)}), "
                         f"e.g. https://raw.githubusercontent.com/<owner>/<repo>/main/data")
    return url.rstrip("/")


def data_url() -> str:
    """The base URL of ``data/`` files: ``$COMPBOOK_DATA_URL``, else the raw ``data/`` folder of
    :data:`REPOSITORY_URL` on :data:`BRANCH` (a GitHub repository)."""
    if not os.environ.get(DATA_URL_VARIABLE) and not REPOSITORY_URL.startswith("https://github.com/"):
        raise ValueError(f"the repository {REPOSITORY_URL} is not on GitHub: set ${DATA_URL_VARIABLE} to the URL "
                         f"its data/ files are served from")
    raw = REPOSITORY_URL.replace("https://github.com/", "https://raw.githubusercontent.com/")
    return base_url(DATA_URL_VARIABLE, f"{raw}/{BRANCH}/data")


def fetch(url: str, target: Path, setting: str, check: Callable[[bytes], None] | None = None,
             max_bytes: int = MAX_DOWNLOAD_BYTES) -> Path:
    """Fetch ``url`` into ``target`` (written only whole and only after ``check(data)`` returned; a partial or
    refused download leaves nothing behind). :class:`DownloadError` naming the URL and ``setting`` (what chose
    the URL, e.g. ``"$COMPBOOK_DATA_URL"``) when the fetch fails, the answer is over ``max_bytes`` or ``check``
    raises ``ValueError``."""
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            data = r.read(max_bytes + 1)
    except (OSError, ValueError) as e:                       # URLError, HTTPError, timeouts are OSErrors
        raise DownloadError(f"download of {url} failed ({e}); the URL comes from {setting}") from e
    if len(data) > max_bytes:
        raise DownloadError(f"{url}: more than {max_bytes} bytes, not a file of this book; the URL comes from "
                            f"{setting}")
    if check is not None:
        try:
            check(data)
        except ValueError as e:
            raise DownloadError(f"{url}: refused ({e}); the URL comes from {setting}") from e
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _check_registry(data: bytes) -> None:
    try:
        reg = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a registry: not JSON ({e})") from None
    if not isinstance(reg, dict) or not isinstance(reg.get("artifacts"), dict):
        raise ValueError("not a registry of stored results (no 'artifacts')")


def _inside_data(relative) -> bool:
    """Whether ``relative`` is a path inside ``data/``: a non-empty relative path without ``..``."""
    return (isinstance(relative, str) and bool(relative) and not relative.startswith(("/", "\\"))
            and ".." not in Path(relative).parts and not Path(relative).is_absolute())


def _stored_files(relative: str) -> dict[str, str]:
    """``{file: sha256}`` to fetch for ``data/<relative>``: the file and, for a checkpoint, its other file, as
    the (downloaded) registry lists them; empty when the registry does not list ``relative`` (not stored)."""
    path = data_file(REGISTRY)
    try:
        artifacts = json.loads(path.read_text(encoding="utf-8"))["artifacts"]
        for a in artifacts.values():
            files = a["files"]
            if relative in files:
                checkpoint = not a["path"].endswith("/") and a["path"] not in files
                found = dict(files) if checkpoint else {relative: files[relative]}
                if not all(_inside_data(r) and isinstance(d, str) for r, d in found.items()):
                    raise ValueError(f"artifact {a['path']!r} lists a file outside data/ or without a digest")
                return found
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: not a readable registry ({e}); remove it to fetch it again") from e
    return {}


def _digest_is(want: str, rel: str, registry: Path) -> Callable[[bytes], None]:
    """A download check: the bytes' SHA-256 is ``want`` (the registry's for ``rel``), else ``ValueError``."""
    def check(data: bytes) -> None:
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            raise ValueError(f"sha256 {got[:12]}... differs from the registry's {want[:12]}... for {rel}: the "
                             f"repository's file and its registry disagree, or {registry}, fetched earlier, is "
                             f"out of date (remove it to fetch it again)")
    return check


def data_file(relative: str, download: bool = True, required: bool = False) -> Path:
    """Path of ``data/<relative>`` (in :func:`data_dir`).

    In a checkout, or where the file is already there, the path itself. Outside a checkout (Colab) and with
    ``download``: a file the repository's registry lists is fetched from :func:`data_url` (a checkpoint's two
    files together) and checked against the registry's SHA-256 (the registry is fetched first, once); a file the
    registry does not list is **not stored** (e.g. a full-mode result, named by its config): its path comes back,
    no file there, and the caller makes it. ``required``: ``FileNotFoundError`` naming the file instead when it
    is not there after that. A failed or wrong download is a :class:`DownloadError` naming the URL and
    ``$COMPBOOK_DATA_URL``.
    """
    if not _inside_data(relative):
        raise ValueError(f"relative={relative!r}: expected a path inside data/ (e.g. 'emc2/counting.json')")
    folder = data_dir()
    path = folder / relative
    if download and not path.exists() and repository_root() is None:
        where = f"${DATA_URL_VARIABLE}" + ("" if os.environ.get(DATA_URL_VARIABLE) else
                                           f" (unset: the repository {REPOSITORY_URL}, branch {BRANCH})")
        if relative == REGISTRY:
            fetch(f"{data_url()}/{REGISTRY}", path, where, _check_registry)
        else:
            files = _stored_files(relative)
            for rel in sorted(files, key=lambda r: r == relative):      # the file asked for last
                if not (folder / rel).exists():
                    fetch(f"{data_url()}/{urllib.parse.quote(rel)}", folder / rel, where,
                          _digest_is(files[rel], rel, folder / REGISTRY))
    if required and not path.exists():
        raise FileNotFoundError(f"data file {relative!r}: not in {folder}" + (
            "" if repository_root() is not None else
            f" and not stored in the repository (its registry {folder / REGISTRY} does not list it)"))
    return path



