"""FER's repository as the source of every third-party file: pinned to one commit, checked by SHA-256, cached.

The Picbreeder genomes, their reference renders and FER's SGD networks are files of FER's public repository
(``akarshkumar0101/fer``, Apache 2.0), never copied into this project. Each is named by its path there
(e.g. ``picbreeder_genomes/skull.zip``, ``data/sgd_skull/params.pkl``) and has a SHA-256 in :data:`SHA256`, taken
at commit :data:`COMMIT`. :func:`fetch` returns a local path to a file whose bytes have that digest, from the first
of:

1. a local folder (:func:`local_folders`): ``$COMPBOOK_PICBREEDER``, then, above the working directory and above
   this package, ``shared/fer/`` (laid out as FER's repository is: the primary layout) and ``shared/picbreeder/``
   (the older layout, flat: ``skull.zip``, ``skull.png``, ``fer_sgd_skull.png``; no networks). In each folder a
   file is looked for at FER's path, then at its older flat name (:data:`FLAT_NAMES`). A file found there whose
   digest differs is refused (``ValueError`` naming it), never read;
2. the cache, :func:`cache_dir` (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``compbook/fer/<commit>``). A cached
   file whose digest differs is removed and fetched again;
3. a download (:func:`source_url`): ``$COMPBOOK_PICBREEDER_URL/<path>`` when that is set (a folder URL laid out
   as FER's repository is, like ``../shared/fer/``), else FER's raw file at :data:`COMMIT`. The bytes are kept
   (written whole, atomically) only when their digest is the pinned one; otherwise
   :class:`compbook.results.paths.DownloadError` names the URL and the setting that chose it.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from pathlib import Path

from ...results import paths

REPOSITORY = "akarshkumar0101/fer"
COMMIT = "23a9c452a57810c86db07c3ed23c1d1352011299"
RAW_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}"
#: A local folder holding FER's files (FER's layout, or the older flat one).
ENV_VARIABLE = "COMPBOOK_PICBREEDER"
#: A folder URL laid out as FER's repository is; replaces :data:`RAW_URL` for every download.
URL_VARIABLE = "COMPBOOK_PICBREEDER_URL"
MAX_BYTES = 16 * 2**20   # the largest file here (FER's apple network) is 186 kB
#: Picbreeder branch ids of the three genomes (FER's ``assets/img_<id>_*.png``).
GENOMES = {"skull": 576, "butterfly": 4376, "apple": 5736}

#: SHA-256 of each file read from FER's repository at :data:`COMMIT` (computed from a copy of that commit).
SHA256 = {
    "assets/img_4376_pb.png": "4bf002036a577c506f47a6d4fe2015b7e84a8b2a7e2a430391709cac1fb86e8b",
    "assets/img_4376_sgd_pb.png": "406eb9f404f4ee2fd29ee1bedfa3474cfbb4f2d5b8c4da4a1354bf6f2c7fd18a",
    "assets/img_5736_pb.png": "50d1cbd3cc97fa30622c7a4d481526fe8841b3d9752101c973752c0c5982c265",
    "assets/img_5736_sgd_pb.png": "ae3e1d1add0226cea3513e5b0154617f586be4422aacc26ba01297b3a4e0f3c1",
    "assets/img_576_pb.png": "940cbd0a95440b69f601606b3cae3eca2fd9992bb552ac6697c4c299d2829e16",
    "assets/img_576_sgd_pb.png": "6ccdc57ab3f57ae94a90b8ea9115264896122874df02aabec7af6882a0fcc824",
    "data/picbreeder_apple/img.png": "09d1ded2c6edf5defdedc4d45fa76bd8112ecff46e371be08cebc2b77f666c46",
    "data/picbreeder_butterfly/img.png": "b9847109eef3146f57ef7e80fe94cc5ba26f4010c91f4331570a39fd1c037ac4",
    "data/picbreeder_skull/img.png": "996b4532a9a21554930047a1e0776412d45f182be11fc10589e3ee4548d40f3c",
    "data/sgd_apple/arch.pkl": "dd8e507c43213c23c92df1caa86f91fdbb8cb3a01d378bbb6b6a3f5a2ceae5bf",
    "data/sgd_apple/args.pkl": "ffb779f5cac52b9151ac1d7481a43bf2422ded2d5cba081925315a07cbd9d808",
    "data/sgd_apple/img.png": "fa957c49de301fdde1b0e08965674d17797f5f44730b74a523545e0d3878ec9e",
    "data/sgd_apple/params.pkl": "fb37e48391b396e661c2b6b715842115fca87c24631784d4ab7cd4f2a9797827",
    "data/sgd_butterfly/arch.pkl": "ce27ccd495c474447770a663be0ef43cf395be23bbe77b61059a236035fac6fe",
    "data/sgd_butterfly/args.pkl": "c6aee6542577313c304f2384389011fbb5322682932c580c382525f38dcd6623",
    "data/sgd_butterfly/img.png": "bb993b96cc5b9e297aaaa71c3a7c8b25e6a34a7cc3590d40fabc3ae4d5b72fd0",
    "data/sgd_butterfly/params.pkl": "f82c32d2f88fffc50b27f5e4def2286a408ff419b3229b7bc1adf7b27b590281",
    "data/sgd_skull/arch.pkl": "ca7d70a863a27cd65575c41b880d737d7c39b2ef804fdc9d59c44d8f15aab0b2",
    "data/sgd_skull/args.pkl": "94fd431b6624ae579dce0c5adcfd2f9230a8d14d8c30730994687abbc08af527",
    "data/sgd_skull/img.png": "583e76ede2510c36770d19989dea6cceec9a17650613d9578371f573e2467352",
    "data/sgd_skull/params.pkl": "1cc7964677dac1b4b10faddba713dbfe592a95fe533437ceac5f1dd999522930",
    "picbreeder_genomes/apple.zip": "2a81d8ce890d39e80d7221c0d58034d0a402560cf138229e2f73219d6e261434",
    "picbreeder_genomes/butterfly.zip": "62df8bf336617ffbcf1a981a70d31378453e806efdd1850f4d394da88b106610",
    "picbreeder_genomes/skull.zip": "63adfccc384d6fb48c79719c9336483c478839e1fc4773f289d3aee9fefaabb2",
}
#: The older flat layout's names (``shared/picbreeder/``) of the files it holds.
FLAT_NAMES = {f"picbreeder_genomes/{n}.zip": f"{n}.zip" for n in GENOMES} \
    | {f"data/picbreeder_{n}/img.png": f"{n}.png" for n in GENOMES} \
    | {f"assets/img_{i}_sgd_pb.png": f"fer_sgd_{n}.png" for n, i in GENOMES.items()}


def cache_dir() -> Path:
    """Where downloaded files are kept: ``$XDG_CACHE_HOME`` (else ``~/.cache``) ``/compbook/fer/<commit>``."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "compbook" / "fer" / COMMIT


def local_folders() -> list[Path]:
    """The local folders searched, in order: ``$COMPBOOK_PICBREEDER``, then ``shared/fer/`` and
    ``shared/picbreeder/`` in the working directory and each folder above it, then the same above this package."""
    dirs = [Path(os.environ[ENV_VARIABLE])] if os.environ.get(ENV_VARIABLE) else []
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for p in (start, *start.parents):
            dirs += [p / "shared" / "fer", p / "shared" / "picbreeder"]
    return list(dict.fromkeys(dirs))


def source_url(relative: str) -> tuple[str, str]:
    """``(url, setting)``: where ``relative`` is downloaded from, and the setting that chose it."""
    _known(relative)
    if os.environ.get(URL_VARIABLE):
        return f"{paths.base_url(URL_VARIABLE, '')}/{urllib.parse.quote(relative)}", f"${URL_VARIABLE}"
    return f"{RAW_URL}/{relative}", f"${URL_VARIABLE} (unset: FER's repository at commit {COMMIT[:7]})"


def _known(relative: str) -> str:
    if relative not in SHA256:
        raise ValueError(f"{relative!r} is not a file this book reads from FER's repository; known: "
                         f"{', '.join(sorted(SHA256))}")
    return relative


def _digest_check(relative: str):
    """A download check: ``ValueError`` unless the bytes' SHA-256 is the pinned one of ``relative``."""
    def check(data: bytes) -> None:
        got = hashlib.sha256(data).hexdigest()
        if got != SHA256[relative]:
            raise ValueError(f"sha256 {got[:12]}... is not {SHA256[relative][:12]}..., the digest of FER's "
                             f"{relative} at commit {COMMIT[:7]}")
    return check


def _digest_of(path: Path) -> str:
    if path.stat().st_size > MAX_BYTES:
        return "too large"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def find_local(relative: str) -> Path | None:
    """The first local copy of ``relative`` (:func:`local_folders`), checked; None when there is none.
    ``ValueError`` naming the file when a copy's digest is not the pinned one."""
    _known(relative)
    for d in local_folders():
        for name in dict.fromkeys((relative, FLAT_NAMES.get(relative, relative))):
            path = d / name
            if path.is_file():
                if _digest_of(path) != SHA256[relative]:
                    raise ValueError(f"{path}: its SHA-256 is not that of FER's {relative} at commit {COMMIT[:7]} "
                                     f"({SHA256[relative][:12]}...): replace it with FER's file or remove it")
                return path
    return None


def fetch(relative: str, download: bool = True) -> Path:
    """A local path to FER's file ``relative`` (its path in FER's repository), with the pinned digest: a local
    copy, else the cache, else (``download``) fetched into the cache. ``FileNotFoundError`` naming the folders
    and settings when it is nowhere and ``download`` is False; :class:`compbook.results.paths.DownloadError` naming the
    URL when a download fails or brings other bytes."""
    found = find_local(relative)
    if found is not None:
        return found
    cached = cache_dir() / relative
    if cached.is_file():
        if _digest_of(cached) == SHA256[relative]:
            return cached
        cached.unlink(missing_ok=True)           # never served: fetched again below, or reported missing
    if not download:
        raise FileNotFoundError(f"{relative} not found in {[str(d) for d in local_folders()]} nor in the cache "
                                f"{cache_dir()}; set ${ENV_VARIABLE} to a folder holding FER's files, or allow the "
                                f"download (from ${URL_VARIABLE}, a folder URL laid out as FER's repository, else "
                                f"FER's repository)")
    url, setting = source_url(relative)
    return paths.fetch(url, cached, setting, _digest_check(relative), MAX_BYTES)
