"""Where the book's files live: the project's ``data/`` folder (checkpoints, judge caches) and its repository.

In a checkout, :func:`data_dir` is the ``data/`` folder at the repository root. In Colab (compbook installed from
the repository, no checkout), :func:`data_file` downloads a file of ``data/`` from the repository on first use.
"""

from __future__ import annotations

import os
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
