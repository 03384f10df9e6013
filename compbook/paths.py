"""Where the book's files live: the project's ``data/`` folder (checkpoints, judge caches) and its repository.

In a checkout, :func:`data_dir` is the ``data/`` folder at the repository root. In Colab (compbook installed from
the repository, no checkout), :func:`data_file` downloads a file of ``data/`` from the repository on first use.
:func:`safe_name` and :func:`safe_path` are the one rule for names and relative paths that must stay inside their
folder (``compbook.checks`` offers them with the other argument checks; the registry of stored results reads its
paths by them).
"""

from __future__ import annotations

import os
import re
import urllib.request
from pathlib import Path

#: The repository; ``_config.yml``'s ``repository.url`` must say the same (a test checks it).
REPOSITORY_URL = "https://github.com/compbook/compbook"
BRANCH = "main"
DATA_VARIABLE = "COMPBOOK_DATA"


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


def data_file(relative: str, download: bool = True) -> Path:
    """Path of ``data/<relative>``; outside a checkout, fetched from the repository when ``download``."""
    path = data_dir() / relative
    if path.exists() or not download or repository_root() is not None:
        return path
    raw = REPOSITORY_URL.replace("https://github.com/", "https://raw.githubusercontent.com/")
    url = f"{raw}/{BRANCH}/data/{relative}"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        urllib.request.urlretrieve(url, path)
    except OSError as e:
        raise FileNotFoundError(f"data file {relative!r} is not in {data_dir()} and {url} failed ({e})") from e
    return path


_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def safe_name(value, name: str) -> str:
    """``value`` as one file or folder name that cannot leave its folder: letters, digits, ``_ . + -``, not
    starting with a dot, no separator, no ``..``."""
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{name} must be a plain file name (letters, digits, _ . + -; no '/', no '..'), "
                         f"got {value!r}")
    return value


def safe_path(folder, relative, name: str) -> Path:
    """``folder / relative`` where ``relative`` (``"emc2/twin_skull"``) is a relative path of :func:`safe_name`
    parts separated by ``/``, so the result stays inside ``folder`` (resolved: a link out of it is refused too)."""
    if not isinstance(relative, str) or not relative or relative.startswith("/") or "\\" in relative:
        raise ValueError(f"{name} must be a relative path inside {folder} (parts joined by '/'), got {relative!r}")
    for part in relative.split("/"):
        safe_name(part, f"{name} (part {part!r} of {relative!r})")
    path = Path(folder) / relative
    if not path.resolve().is_relative_to(Path(folder).resolve()):
        raise ValueError(f"{name}={relative!r} leaves its folder {folder} (a link?)")
    return path
