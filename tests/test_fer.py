"""FER's own SGD networks, read from FER's pickles: the loader reproduces FER's renders, and bad files are refused
by name. FER's files come from ../shared/fer or are downloaded from FER's repository (tests/test_fer_files.py);
without either these tests fail, they never skip."""

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from compbook.book import images
from compbook.cppn import fer, picbreeder
from compbook.cppn.data import fer_files
from compbook.cppn.network import CPPN

#: The earlier conversion of FER's networks to .npz (``params``, ``arch``), kept beside the shared data: the
#: pickles must give the very same networks.
NPZ = Path(__file__).resolve().parents[2] / "shared" / "picbreeder" / "fer_sgd"


@pytest.mark.parametrize("name", fer.NAMES)
def test_fer_network_renders_the_picbreeder_image(name):
    model = fer.load_fer(name)
    with torch.no_grad():
        img = model.render(256).double().numpy()
    assert images.psnr(img, picbreeder.reference_render(name)) >= 33.0


@pytest.mark.parametrize("name", fer.NAMES)
def test_the_pickles_give_the_networks_of_the_npz_conversion(name):
    """FER's params.pkl / arch.pkl read here give the same weights and the same render as the earlier .npz
    conversion of the same files (made with JAX installed, outside this project)."""
    if not (NPZ / f"{name}.npz").is_file():
        pytest.skip(f"the earlier conversion {NPZ / name}.npz is not on this machine (nothing to compare with)")
    with np.load(NPZ / f"{name}.npz", allow_pickle=False) as z:
        params, arch = z["params"], str(z["arch"])
    old, new = fer.fer_cppn(params, arch), fer.load_fer(name)
    assert new.activations == old.activations
    assert all(torch.equal(a, b) for a, b in zip(new.weights, old.weights))
    assert np.array_equal(fer._read(name)["params"], params)
    with torch.no_grad():
        assert torch.equal(new.render(96), old.render(96))


def test_swapping_fer_inputs_breaks_the_render():
    """The input mapping matters (so the test above could fail): FER's y is our x."""
    z = fer._read("skull")
    ws = fer.params_to_weights(z["params"], z["arch"])
    ws[0] = ws[0][:, [1, 0, 2, 3]]
    m = CPPN(fer.arch_layout(z["arch"]), "hsv", ws)
    with torch.no_grad():
        assert images.psnr(m.render(128).double().numpy(),
                           picbreeder.render(picbreeder.load_genome("skull"), 128)) < 20


def test_fer_layout_and_info():
    m = fer.load_fer("skull")
    assert m.depth == 12 and m.widths == [22] * 12
    assert m.activations[0] == ["cache"] * 15 + ["gaussian"] * 4 + ["identity"] * 2 + ["sin"]
    info = fer.fer_info("skull")
    assert info["steps"] == 100000 and info["n_params"] == 4 * 22 + 11 * 22 * 22 + 22 * 3
    assert "'seed': 2" in info["args"] and info["path"].endswith("data/sgd_skull/params.pkl")


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


def test_unknown_name_and_bad_folders(tmp_path):
    with pytest.raises(ValueError, match="name must be one of"):
        fer.find_fer("cat")
    with pytest.raises(ValueError, match="source must be one of"):
        fer.load_fer("cat")
    with pytest.raises(FileNotFoundError):
        fer.load_fer(tmp_path / "none")
    (tmp_path / "arch.pkl").write_bytes(pickle.dumps("2;sin:3"))
    with pytest.raises(ValueError, match=r"missing \['params.pkl'\]"):
        fer.load_fer(tmp_path)
    (tmp_path / "params.pkl").write_bytes(pickle.dumps(np.zeros(5, np.float32)))
    with pytest.raises(ValueError, match="params has 5 values but arch '2;sin:3' needs 30"):
        fer.load_fer(tmp_path)
    (tmp_path / "params.pkl").write_bytes(pickle.dumps({"Dense_0": np.zeros(5, np.float32)}))
    with pytest.raises(ValueError, match="expected a flat array of FER's parameters, got dict"):
        fer.load_fer(tmp_path)


def test_a_folder_of_fers_files_loads_like_the_name(tmp_path):
    for f in fer.FILES:
        (tmp_path / f).write_bytes(fer_files.fetch(f"data/sgd_apple/{f}").read_bytes())
    a, b = fer.load_fer(tmp_path), fer.load_fer("apple")
    assert all(torch.equal(x, y) for x, y in zip(a.weights, b.weights))


@pytest.mark.parametrize("name", fer.NAMES)
def test_fer_arch_constants_match_the_files(name):
    assert fer.fer_info(name)["arch"] == fer.FER_ARCH[name]


def test_source_note_says_where_the_networks_are():
    note = fer.source_note()
    assert "skull, butterfly, apple" in note and "23a9c45" in note
    assert ("found in " in note) or ("downloaded from " in note)
    assert str(Path.home()) not in note and "/tmp/" not in note and ".cache" not in note   # a page shows it


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
