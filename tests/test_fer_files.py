"""FER's files fetched offline from a local HTTP server standing in for FER's raw-file host: checked by digest,
cached, refused when tampered with; local folders in FER's layout and in the older flat one."""

import functools
import hashlib
import http.server
import shutil
import threading

import numpy as np
import pytest
import torch

from compbook.results import paths
from compbook.cppn import fer, picbreeder
from compbook.cppn.data import fer_files


def _source_folder():
    """The local copy of FER's repository (``../shared/fer``), found the way the book finds it."""
    path = fer_files.find_local("data/sgd_skull/params.pkl")
    assert path is not None and path.parts[-3:] == ("data", "sgd_skull", "params.pkl"), (
        "this test serves a local copy of FER's repository laid out as FER's (../shared/fer/)")
    return path.parents[2]


class _Server:
    """``http.server`` on 127.0.0.1 over a folder, counting the paths asked for."""

    def __init__(self, folder):
        self.asked = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                server.asked.append(self.path)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A copy of FER's repository served on 127.0.0.1 through $COMPBOOK_PICBREEDER_URL, no local folder, and an
    empty cache under tmp_path (``$XDG_CACHE_HOME``). Yields ``(server, copy, cache)``."""
    copy = tmp_path / "fer"
    shutil.copytree(_source_folder(), copy)
    monkeypatch.setattr(fer_files, "local_folders", lambda: [])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    server = _Server(copy)
    monkeypatch.setenv(fer_files.URL_VARIABLE, server.url + "/")
    yield server, copy, fer_files.cache_dir()
    server.close()


def test_empty_cache_fetches_every_file_checked_by_digest(served):
    server, copy, cache = served
    assert not cache.exists()
    assert fer.available() is True
    genome, render = picbreeder.load_genome("skull"), picbreeder.reference_render("apple")
    want = {f"/data/sgd_{n}/{f}" for n in fer.NAMES for f in fer.FILES}
    want |= {"/picbreeder_genomes/skull.zip", "/data/picbreeder_apple/img.png"}
    assert sorted(server.asked) == sorted(want)
    for rel in [a.lstrip("/") for a in want]:
        got = (cache / rel).read_bytes()
        assert got == (copy / rel).read_bytes() and hashlib.sha256(got).hexdigest() == fer_files.SHA256[rel]
    assert not list(cache.rglob("*.part"))
    assert "downloaded from " + server.url in fer.source_note()
    assert str(cache) not in fer.source_note()          # no path of the machine on a page
    assert len(genome.nodes) > 4 and render.shape == (256, 256, 3)


def test_downloaded_networks_equal_the_local_ones(served, monkeypatch):
    downloaded = {n: fer.load_fer(n) for n in fer.NAMES}
    monkeypatch.undo()                                    # the local folder again
    for n in fer.NAMES:
        local = fer.load_fer(n)
        assert all(torch.equal(a, b) for a, b in zip(downloaded[n].weights, local.weights))


def test_no_fetch_when_cached(served):
    server, _, _ = served
    fer.load_fer("butterfly")
    assert len(server.asked) == 3
    fer.load_fer("butterfly"), fer.fer_info("butterfly")
    assert fer.available(download=False) is False and len(server.asked) == 3
    assert fer.available() is True and len(server.asked) == 3 + 6       # the two other networks, once each
    fer.load_fer("skull"), picbreeder.find_genome("skull"), picbreeder.find_genome("skull")
    assert fer.available(download=False) is True and len(server.asked) == 3 + 6 + 1


def test_a_tampered_file_is_refused_naming_the_url_and_not_kept(served):
    server, copy, cache = served
    params = copy / "data" / "sgd_skull" / "params.pkl"
    data = bytearray(params.read_bytes())
    data[-40] ^= 1                                # one bit of one weight
    params.write_bytes(bytes(data))
    url = f"{server.url}/data/sgd_skull/params.pkl"
    with pytest.raises(paths.DownloadError, match=rf"{url}: refused \(sha256 .* FER's data/sgd_skull/params\.pkl "
                                                  rf"at commit 23a9c45\).*COMPBOOK_PICBREEDER_URL"):
        fer.load_fer("skull")
    assert not (cache / "data" / "sgd_skull" / "params.pkl").exists()
    assert not list(cache.rglob("*.part"))


def test_a_cached_file_whose_digest_differs_is_fetched_again(served):
    server, _, cache = served
    path = picbreeder.find_genome("apple")
    good = path.read_bytes()
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    assert picbreeder.find_genome("apple") == path and path.read_bytes() == good
    assert server.asked == ["/picbreeder_genomes/apple.zip"] * 2
    path.write_bytes(b"edited")
    with pytest.raises(FileNotFoundError, match=r"picbreeder_genomes/apple\.zip not found"):
        picbreeder.find_genome("apple", download=False)        # refused, never served
    assert not path.exists()


def test_a_missing_file_names_the_url(served):
    server, copy, _ = served
    (copy / "picbreeder_genomes" / "butterfly.zip").unlink()
    with pytest.raises(paths.DownloadError, match=rf"{server.url}/picbreeder_genomes/butterfly\.zip failed"):
        picbreeder.load_genome("butterfly")


def test_without_the_url_the_source_is_fers_repository_at_the_pinned_commit(served, monkeypatch):
    monkeypatch.delenv(fer_files.URL_VARIABLE)
    asked = []
    monkeypatch.setattr(paths, "fetch", lambda url, *a, **k: asked.append(url) or pytest.fail("stop"))
    with pytest.raises(pytest.fail.Exception):
        fer.load_fer("apple")
    assert asked == ["https://raw.githubusercontent.com/akarshkumar0101/fer/"
                     "23a9c452a57810c86db07c3ed23c1d1352011299/data/sgd_apple/arch.pkl"]
    with pytest.raises(ValueError, match="not a file this book reads"):
        fer_files.fetch("data/sgd_apple/losses.pkl")


# -- local folders: FER's layout first, the older flat one too; a file with another digest is refused -------------
def test_local_folders_in_both_layouts_and_their_order(tmp_path, monkeypatch):
    flat, fers = tmp_path / "shared" / "picbreeder", tmp_path / "shared" / "fer"
    flat.mkdir(parents=True)
    shutil.copy(_source_folder() / "picbreeder_genomes" / "skull.zip", flat / "skull.zip")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(fer_files.ENV_VARIABLE, str(tmp_path / "mine"))
    monkeypatch.chdir(tmp_path)
    assert fer_files.local_folders()[:3] == [tmp_path / "mine", fers, flat]
    monkeypatch.setattr(fer_files, "local_folders", lambda: [fers, flat])
    assert picbreeder.find_genome("skull", download=False) == flat / "skull.zip"
    (fers / "picbreeder_genomes").mkdir(parents=True)
    shutil.copy(flat / "skull.zip", fers / "picbreeder_genomes" / "skull.zip")
    assert picbreeder.find_genome("skull", download=False) == fers / "picbreeder_genomes" / "skull.zip"


def test_a_local_file_with_another_digest_is_refused_by_name(tmp_path, monkeypatch):
    folder = tmp_path / "shared" / "fer" / "data" / "picbreeder_skull"
    folder.mkdir(parents=True)
    img = np.zeros((4, 4, 3), np.uint8)
    from PIL import Image
    Image.fromarray(img).save(folder / "img.png")
    monkeypatch.setattr(fer_files, "local_folders", lambda: [tmp_path / "shared" / "fer"])
    with pytest.raises(ValueError, match=r"picbreeder_skull/img\.png: its SHA-256 is not that of FER's"):
        picbreeder.reference_render("skull")
