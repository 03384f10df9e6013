"""FER's own SGD networks: the loader reproduces FER's renders, and bad files are refused by name."""

import numpy as np
import pytest
import torch

from compbook import images, paths
from compbook.cppn import fer, picbreeder
from compbook.cppn.network import CPPN

needs_data = pytest.mark.skipif(not fer.available(), reason="FER's networks (shared/picbreeder/fer_sgd/*.npz) "
                                "are third-party data not in this repository, and no shared folder was found")


@needs_data
@pytest.mark.parametrize("name", fer.NAMES)
def test_fer_network_renders_the_picbreeder_image(name):
    model = fer.load_fer(name)
    with torch.no_grad():
        img = model.render(256).double().numpy()
    assert images.psnr(img, picbreeder.reference_render(name)) >= 33.0


@needs_data
def test_swapping_fer_inputs_breaks_the_render():
    """The input mapping matters (so the test above could fail): FER's y is our x."""
    z = np.load(fer.find_fer("skull"))
    ws = fer.params_to_weights(z["params"], str(z["arch"]))
    ws[0] = ws[0][:, [1, 0, 2, 3]]
    m = CPPN(fer.arch_layout(str(z["arch"])), "hsv", ws)
    with torch.no_grad():
        assert images.psnr(m.render(128).double().numpy(),
                           picbreeder.render(picbreeder.load_genome("skull"), 128)) < 20


@needs_data
def test_fer_layout_and_info():
    m = fer.load_fer("skull")
    assert m.depth == 12 and m.widths == [22] * 12
    assert m.activations[0] == ["cache"] * 15 + ["gaussian"] * 4 + ["identity"] * 2 + ["sin"]
    info = fer.fer_info("skull")
    assert info["steps"] == 100000 and info["n_params"] == 4 * 22 + 11 * 22 * 22 + 22 * 3


def _naive(params, arch):
    """A naive reading of FER's layout: walk jax's sorted keys, one kernel (in, out) at a time."""
    depth, counts = fer.parse_arch(arch)
    w = sum(counts.values())
    shapes = {i: ((4 if i == 0 else w), (3 if i == depth else w)) for i in range(depth + 1)}
    keys = sorted(f"Dense_{i}" for i in range(depth + 1))
    out, off = {}, 0
    for k in keys:
        i = int(k[6:])
        a, b = shapes[i]
        out[i] = params[off:off + a * b].reshape(a, b)
        off += a * b
    return out


def test_params_layout_against_naive_reading():
    arch = "11;cache:2,sin:1"       # 12 layers: Dense_10, Dense_11 sort before Dense_2
    n = 4 * 3 + 10 * 9 + 3 * 3
    params = np.arange(n, dtype=np.float32)
    ws = fer.params_to_weights(params, arch)
    ref = _naive(params, arch)
    for i in range(1, 12):
        assert np.array_equal(ws[i].numpy(), ref[i].T)
    # FER's (y, x, d, bias) with its y along columns is our (x, y, d, bias): the same column order
    assert fer._input_permutation() == [0, 1, 2, 3]
    assert np.array_equal(ws[0].numpy(), ref[0].T)
    m = CPPN(fer.arch_layout(arch), "hsv", ws)
    assert np.array_equal(fer.weights_to_params(m), params)


def test_params_length_mismatch_names_both():
    with pytest.raises(ValueError, match=r"params has 10 values but arch '2;sin:3' needs 30"):
        fer.params_to_weights(np.zeros(10, np.float32), "2;sin:3")


@pytest.mark.parametrize("arch", ["", "12", "12;", "x;sin:3", "12;sin", "12;sin:3,", "3;wobble:2",
                                  "3;sin:1,sin:2", "0;sin:2", "2;sin:0", 12])
def test_bad_arch_is_refused(arch):
    with pytest.raises(ValueError, match="arch"):
        fer.parse_arch(arch)


def test_unknown_name_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="name must be one of"):
        fer.find_fer("cat")
    with pytest.raises(FileNotFoundError):
        fer.load_fer(tmp_path / "none.npz")
    np.savez(tmp_path / "bad.npz", arch=np.array("2;sin:3"))
    with pytest.raises(ValueError, match="missing"):
        fer.load_fer(tmp_path / "bad.npz")


@needs_data
@pytest.mark.parametrize("name", fer.NAMES)
def test_fer_arch_constants_match_the_files(name):
    assert fer.fer_info(name)["arch"] == fer.FER_ARCH[name]



# -- downloads (Colab): only from $COMPBOOK_PICBREEDER_URL, kept only when they read as FER's network -----------------
@pytest.fixture
def served(tmp_path, monkeypatch):
    """FER's folder served as a file:// URL in $COMPBOOK_PICBREEDER_URL, no local folder: ``(source, cache)``."""
    source, cache = tmp_path / "served", tmp_path / "cache"
    (source / fer.FOLDER).mkdir(parents=True)
    params = np.linspace(-1, 1, 4 * 3 + 3 * 3 + 3 * 3).astype(np.float32)
    for n in fer.NAMES:
        np.savez(source / fer.FOLDER / f"{n}.npz", params=params, arch=np.array("2;sin:3"))
    monkeypatch.setattr(picbreeder, "cache_dir", lambda: cache)
    monkeypatch.setattr(picbreeder, "_search_dirs", lambda: [cache])
    monkeypatch.delenv(picbreeder.URL_VARIABLE, raising=False)
    return source, cache


def test_without_a_url_fer_is_absent_and_the_note_says_how_to_get_it(served):
    assert fer.available() is False
    assert "not found" in fer.source_note() and "COMPBOOK_PICBREEDER_URL" in fer.source_note()
    with pytest.raises(FileNotFoundError, match=r"fer_sgd/skull\.npz not found.*COMPBOOK_PICBREEDER_URL"):
        fer.load_fer("skull")


def test_fer_networks_come_from_the_picbreeder_url(served, monkeypatch):
    source, cache = served
    monkeypatch.setenv(picbreeder.URL_VARIABLE, source.as_uri())
    assert fer.available() is True and "skull, butterfly, apple found" in fer.source_note()
    assert (cache / fer.FOLDER / "apple.npz").read_bytes() == (source / fer.FOLDER / "apple.npz").read_bytes()
    assert fer.load_fer("skull").depth == 2


@pytest.mark.parametrize("bad", ["pickle", "short", "junk"])
def test_a_download_that_is_not_fers_network_is_refused(served, monkeypatch, bad):
    source, cache = served
    target = source / fer.FOLDER / "skull.npz"
    if bad == "pickle":
        np.savez(target, params=np.array([{"a": 1}], dtype=object), arch=np.array("2;sin:3"))
    elif bad == "short":
        np.savez(target, params=np.zeros(5, np.float32), arch=np.array("2;sin:3"))
    else:
        target.write_bytes(b"<html>Not Found</html>")
    monkeypatch.setenv(picbreeder.URL_VARIABLE, source.as_uri())
    with pytest.raises(paths.DownloadError, match=r"fer_sgd/skull\.npz: refused"):
        fer.available()
    assert not (cache / fer.FOLDER / "skull.npz").exists()


# -- twins of FER's architecture ---------------------------------------------------------------------------------
def _recipe(**kw):
    from compbook.cppn import twins
    return twins.FerTwinRecipe("skull", 0, **(dict(res=24, batch_pixels=64, minibatch_steps=12, full_steps=4) | kw))


def test_fer_twin_resume_matches_one_run(tmp_path):
    """12 minibatch steps, stopped, then resumed for the 4 full-batch steps: bit for bit the uninterrupted run."""
    from compbook.cppn import twins
    one, info = twins.train_fer_twin(_recipe(), tmp_path / "a.pt")
    assert info["done"] and info["steps"] == 16
    assert one.activations[0] == ["cache"] * 15 + ["gaussian"] * 4 + ["identity"] * 2 + ["sin"]
    _, info = twins.train_fer_twin(_recipe(full_steps=0), tmp_path / "b.pt")
    assert info["steps"] == 12
    two, info = twins.train_fer_twin(_recipe(), tmp_path / "b.pt")
    assert info["done"] and info["steps"] == 16
    for a, b in zip(one.weights, two.weights):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="minibatch_steps: checkpoint ran 12, more than the requested 3"):
        twins.train_fer_twin(_recipe(minibatch_steps=3), tmp_path / "b.pt")
    with pytest.raises(ValueError, match="past its minibatch phase of 12 steps; it cannot become 20"):
        twins.train_fer_twin(_recipe(minibatch_steps=20), tmp_path / "b.pt")


def test_fer_twin_resume_of_another_recipe_is_refused(tmp_path):
    from compbook.cppn import twins
    twins.train_fer_twin(_recipe(), tmp_path / "a.pt")
    with pytest.raises(ValueError, match=r"straight_through: checkpoint False vs requested True"):
        twins.train_fer_twin(_recipe(straight_through=True), tmp_path / "a.pt")
    with pytest.raises(ValueError, match=r"arch: checkpoint .* vs requested '12;sin:22'"):
        twins.train_fer_twin(_recipe(arch="12;sin:22"), tmp_path / "a.pt")


def test_fer_twin_learns():
    from compbook.cppn import twins
    _, info = twins.train_fer_twin(twins.FerTwinRecipe("skull", 0, res=32, batch_pixels=256,
                                                       minibatch_steps=200, full_steps=1))
    assert info["losses"][-1] < 0.7 * info["losses"][0]
