"""compbook.results.paths: where data lives, and how a file of data/ is fetched outside a checkout (Colab): the registry
first, then a file it lists, checked by its digest; a file it does not list is not stored (the caller makes it).
Downloads here come from a file:// folder or a server on 127.0.0.1 (tests/test_colab.py runs whole chapters)."""

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from compbook.results import checkpoints, paths
from compbook import results


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository's data/ (a registry, a JSON, a checkpoint) and an empty data folder outside any checkout,
    fetching from the first through ``$COMPBOOK_DATA_URL``: returns ``(source, cache)``."""
    source, cache = tmp_path / "repo" / "data", tmp_path / "cache"
    results.init(source)
    monkeypatch.setenv(paths.DATA_VARIABLE, str(source))
    results.write_json(source / "emc2" / "r.json", {"x": 1}, "python -m compbook.cppn reread")
    checkpoints.save(source / "ck" / "model", {"w": torch.ones(3)}, {}, format="test/1",
                     made_by="python -m compbook.cppn twins")
    monkeypatch.setenv(paths.DATA_VARIABLE, str(cache))
    monkeypatch.setenv(paths.DATA_URL_VARIABLE, source.as_uri())
    monkeypatch.setattr(paths, "repository_root", lambda: None)
    return source, cache


def test_a_registered_file_is_fetched_with_the_registry_and_equals_the_repository(repo):
    source, cache = repo
    path = paths.data_file("emc2/r.json")
    assert path == cache / "emc2" / "r.json" and path.read_bytes() == (source / "emc2" / "r.json").read_bytes()
    assert (cache / paths.REGISTRY).read_bytes() == (source / paths.REGISTRY).read_bytes()
    assert results.load("emc2/r").data["x"] == 1
    assert not list(cache.rglob("*.part")), "no partial file left behind"


def test_a_checkpoint_comes_with_its_other_file(repo):
    source, cache = repo
    stem = paths.data_file("ck/model.json").with_suffix("")
    assert (cache / "ck" / "model.safetensors").is_file(), "the weights are fetched with the sidecar"
    tensors, _ = checkpoints.load(stem, format="test/1")
    assert torch.equal(tensors["w"], torch.ones(3))


def test_a_file_the_registry_does_not_list_is_not_stored_and_no_error(repo):
    """A full-mode store name (a config hash) is in no registry: its path comes back, no file there, so the
    caller trains; ``required`` makes it an error naming the file."""
    source, cache = repo
    path = paths.data_file("sae/full/lam0p1_seed0_0123abcd.json")
    assert path == cache / "sae/full/lam0p1_seed0_0123abcd.json" and not path.exists()
    with pytest.raises(FileNotFoundError, match="lam0p1_seed0_0123abcd.json.*not stored in the repository"):
        paths.data_file("sae/full/lam0p1_seed0_0123abcd.json", required=True)


def test_a_download_that_differs_from_the_registry_is_refused_and_not_kept(repo):
    source, cache = repo
    (source / "emc2" / "r.json").write_text('{"x": 2}')                 # the repository's file was edited
    with pytest.raises(paths.DownloadError, match=r"r\.json: refused \(sha256 .* differs from the registry's.*"
                                                  r"COMPBOOK_DATA_URL"):
        paths.data_file("emc2/r.json")
    assert not (cache / "emc2" / "r.json").exists() and not list(cache.rglob("*.part"))


def test_a_failed_download_names_the_url_and_the_setting(repo):
    source, cache = repo
    (source / "emc2" / "r.json").unlink()                               # registered, not there
    with pytest.raises(paths.DownloadError, match=rf"{source.as_uri()}/emc2/r\.json failed.*\$COMPBOOK_DATA_URL"):
        paths.data_file("emc2/r.json")
    assert not isinstance(paths.DownloadError("x"), FileNotFoundError), "not confused with 'not stored'"


def test_no_registry_at_the_url_is_an_error_not_not_stored(repo, tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_URL_VARIABLE, (tmp_path / "nothing").as_uri())
    with pytest.raises(paths.DownloadError, match=r"nothing/registry\.json failed"):
        paths.data_file("emc2/r.json")


def test_a_registry_that_is_not_one_is_refused(repo, tmp_path, monkeypatch):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / paths.REGISTRY).write_text("<html>Not Found</html>")
    monkeypatch.setenv(paths.DATA_URL_VARIABLE, bad.as_uri())
    with pytest.raises(paths.DownloadError, match="registry.json: refused .not a registry"):
        paths.data_file("emc2/r.json")


def test_http_404_from_a_local_host(repo, tmp_path, monkeypatch):
    """The same over HTTP (a server on 127.0.0.1, stopped at the end): a 404 names the URL."""
    source, _ = repo
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(source)))
    server.RequestHandlerClass.log_message = lambda *a: None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        monkeypatch.setenv(paths.DATA_URL_VARIABLE, url + "/")
        assert paths.data_file("emc2/r.json").is_file()
        (source / "ck" / "model.safetensors").unlink()
        with pytest.raises(paths.DownloadError, match=rf"{url}/ck/model\.safetensors failed.*404"):
            paths.data_file("ck/model.json")
    finally:
        server.shutdown()
        server.server_close()


def test_the_default_url_is_the_repositorys_raw_data_folder(monkeypatch):
    monkeypatch.delenv(paths.DATA_URL_VARIABLE, raising=False)
    owner_repo = paths.REPOSITORY_URL.removeprefix("https://github.com/")
    assert paths.data_url() == f"https://raw.githubusercontent.com/{owner_repo}/{paths.BRANCH}/data"


@pytest.mark.parametrize("url", ["ftp://host/data", "data", "file://", "https://"])
def test_a_bad_data_url_names_the_variable(monkeypatch, url):
    monkeypatch.setenv(paths.DATA_URL_VARIABLE, url)
    with pytest.raises(ValueError, match="COMPBOOK_DATA_URL"):
        paths.data_url()


@pytest.mark.parametrize("relative", ["", "../secret", "/etc/passwd", "a/../../b", None])
def test_a_path_outside_data_is_refused(relative):
    with pytest.raises(ValueError, match="relative="):
        paths.data_file(relative)


def test_in_a_checkout_nothing_is_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_VARIABLE, str(tmp_path))
    monkeypatch.setattr(paths, "fetch", lambda *a, **k: pytest.fail("a checkout downloads nothing"))
    assert paths.repository_root() is not None
    assert paths.data_file("emc2/none.json") == tmp_path / "emc2" / "none.json"
    with pytest.raises(FileNotFoundError, match="none.json"):
        paths.data_file("emc2/none.json", required=True)


def test_a_result_not_stored_is_trained_then_kept_outside_a_checkout(repo):
    """Chapters 15-16's path to data_file: a store named by its config hash (as full mode's are) is in no
    registry, so the SAE is trained, not refused; it is kept in the data folder and registered there, and the
    second call loads it instead of training again."""
    from compbook.sae import experiment, s2ae
    source, cache = repo
    g = torch.Generator().manual_seed(0)
    data = s2ae.SAEData(torch.randn(3, 6, 8, generator=g), torch.ones(3, 6, dtype=torch.bool), torch.arange(4),
                        (2, 2), torch.rand(3, 4, 4, generator=g).softmax(-1))
    cfg = s2ae.SAETrainConfig(d_sae=16, k=2, steps=1, batch_images=2)
    first = experiment.stored_runs(data, cfg, seeds=(0,), lams=(0.0,), store="sae/full")
    made = sorted(p.name for p in (cache / "sae" / "full").iterdir())
    assert len(made) == 2 and not (source / "sae").exists()
    second = experiment.stored_runs(data, cfg, seeds=(0,), lams=(0.0,), store="sae/full",
                                    trainer=lambda *a, **k: pytest.fail("a stored SAE is trained again"))
    assert second[0]["train s"] == first[0]["train s"]
    assert torch.equal(second[0]["sae"].W_enc, first[0]["sae"].W_enc)
