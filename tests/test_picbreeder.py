import zipfile

import numpy as np
import pytest
import torch

from compbook.cppn import picbreeder
from compbook.cppn.picbreeder import GenomeError, layerize, load_genome, parse_genome, render

GENOME_NAMES = ("skull", "butterfly", "apple")


def psnr(a, b):
    return 10 * np.log10(1.0 / np.mean((a - b) ** 2))


@pytest.mark.parametrize("name", GENOME_NAMES)
def test_dag_render_reproduces_reference(name, genomes, reference_renders):
    img = render(genomes[name], 256)
    assert img.shape == (256, 256, 3) and img.dtype == np.float64
    assert psnr(img, reference_renders[name]) >= 40.0


@pytest.mark.parametrize("name", GENOME_NAMES)
def test_layerized_render_equals_dag_render(name, genomes, reference_renders):
    model = layerize(genomes[name], dtype=torch.float64)
    with torch.no_grad():
        img = model.render(256).numpy()
    assert np.abs(img - render(genomes[name], 256)).max() < 1e-5
    with torch.no_grad():
        img32 = layerize(genomes[name]).render(256).double().numpy()
    assert psnr(img32, reference_renders[name]) >= 40.0


@pytest.mark.parametrize("name,depth", [("butterfly", 16), ("apple", 33)])
def test_layerized_depth_matches_fer(name, depth, genomes):
    """FER reports butterfly 16 and apple 33 layers (skull: 12 there, 11 here; see chapter 1)."""
    assert layerize(genomes[name]).depth == depth


def test_layerized_is_sparse_with_exact_zeros(genomes):
    model = layerize(genomes["apple"])
    total = sum(o * i for o, i in model.shapes)
    assert model.n_weights() / total < 0.06        # ~97% zeros in FER's layerization
    assert all(torch.all(w[m == 0] == 0) for w, m in zip(model.weights, model.masks))
    assert len(set(model.widths)) == 1               # padded to one width


def test_depths_are_longest_paths(genomes):
    g = genomes["skull"]
    depth = g.depths()
    for link in g.links:
        assert depth[link.target] >= depth[link.source] + 1
    assert all(depth[n.key] == 0 for n in g.inputs)


def test_colour_modes(genomes):
    assert genomes["skull"].color == "gray" and genomes["apple"].color == "hsv"


def test_load_by_path_and_xml(genomes, tmp_path):
    path = picbreeder.find_genome("skull", download=False)
    assert load_genome(path).links == genomes["skull"].links
    xml = zipfile.ZipFile(path).read("a")
    (tmp_path / "skull.xml").write_bytes(xml)
    assert load_genome(tmp_path / "skull.xml").nodes == genomes["skull"].nodes


# -- bad input ------------------------------------------------------------------------------------------------
@pytest.fixture
def skull_xml():
    return zipfile.ZipFile(picbreeder.find_genome("skull", download=False)).read("a").decode()


def test_truncated_zip(tmp_path):
    raw = picbreeder.find_genome("skull", download=False).read_bytes()
    bad = tmp_path / "bad.zip"
    bad.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(GenomeError, match="bad.zip"):
        load_genome(bad)


def test_zip_with_garbage_member(tmp_path):
    bad = tmp_path / "junk.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("a", b"\x00\x01 this is not xml")
    with pytest.raises(GenomeError, match="junk.zip.*not a well-formed"):
        load_genome(bad)


def test_non_genome_xml():
    with pytest.raises(GenomeError, match="not a Picbreeder genome"):
        parse_genome("<data><other/></data>", where="x.xml")


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="nope.zip"):
        load_genome("nope.zip")


def test_unknown_name():
    with pytest.raises(GenomeError, match="unknown genome name"):
        picbreeder.find_genome("dragon")


def test_unknown_activation(skull_xml):
    with pytest.raises(GenomeError, match="unknown activation 'swish'"):
        parse_genome(skull_xml.replace("sin(x)", "swish(x)", 1))


def test_link_to_missing_node(skull_xml):
    bad = skull_xml.replace('<target branch="576" id="30"/>', '<target branch="999" id="999"/>', 1)
    with pytest.raises(GenomeError, match=r"\(999, 999\) is not a node"):
        parse_genome(bad)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_weight(skull_xml, value):
    bad = skull_xml.replace("<weight>-0.4450539653659765</weight>", f"<weight>{value}</weight>", 1)
    with pytest.raises(GenomeError, match="non-finite weight"):
        parse_genome(bad)


def test_cycle(skull_xml):
    # link 576:30 -> 540:106 exists; add 540:106 -> 542:103 which feeds 576:30: a cycle
    extra = ('<link><marking branch="1" id="1"/><source branch="540" id="106"/>'
             '<target branch="542" id="103"/><weight>1.0</weight></link>')
    bad = skull_xml.replace("</links>", extra + "</links>")
    with pytest.raises(GenomeError, match="cycle"):
        parse_genome(bad)


def test_entity_expansion_is_refused_quickly(skull_xml):
    bomb = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            + "".join(f'<!ENTITY lol{i} "{"&lol%s;" % (i - 1 if i else "") * 10}">' for i in range(1, 9))
            + ']><data><genome>&lol8;</genome></data>')
    with pytest.raises(GenomeError, match="not a well-formed"):
        parse_genome(bomb)


def test_huge_file_refused(tmp_path):
    big = tmp_path / "big.xml"
    with open(big, "wb") as f:
        f.seek(picbreeder.MAX_XML_BYTES + 10)
        f.write(b"0")
    with pytest.raises(GenomeError, match="too large"):
        load_genome(big)


def test_zip_bomb_member_refused(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("a", b"0" * (picbreeder.MAX_XML_BYTES + 1))
    with pytest.raises(GenomeError, match="too large"):
        load_genome(bomb)


# -- hardening -------------------------------------------------------------------------------------------------
def test_render_over_the_budget_is_refused_quickly(genomes):
    import time
    t0 = time.process_time()          # this process's CPU: a busy neighbour does not count
    with pytest.raises(ValueError, match=r"res=20000: .* render budget of 2,048 MiB"):
        render(genomes["skull"], 20000)
    with pytest.raises(ValueError, match="render budget of 1 MiB"):
        render(genomes["skull"], 256, budget_mb=1)
    assert time.process_time() - t0 < 1.0


@pytest.mark.parametrize("value", ["1e308", "-1e308", "2000"])
def test_huge_finite_weight_refused_at_load(skull_xml, value):
    """±1e308 used to load as valid and render NaN; layerize then blamed "NaN or inf" weights."""
    bad = skull_xml.replace("<weight>-0.4450539653659765</weight>", f"<weight>{value}</weight>", 1)
    with pytest.raises(GenomeError, match=r"beyond the range \[-1000, 1000\]"):
        parse_genome(bad)


def test_overflowing_render_raises_not_nan(skull_xml, monkeypatch):
    """Weights within the range can still overflow along a long chain: the render says so instead of NaN."""
    import re
    monkeypatch.setattr(picbreeder, "MAX_WEIGHT", 1e308)
    g = parse_genome(re.sub(r"<weight>[^<]*</weight>", "<weight>1e308</weight>", skull_xml))
    with pytest.raises(GenomeError, match="overflows to NaN or inf"):
        render(g, 16)
    with pytest.raises(GenomeError, match="overflow torch.float32"):     # not "weights contain NaN or inf"
        layerize(g)


def test_genome_path_that_is_a_directory(tmp_path):
    with pytest.raises(ValueError, match="is a directory, not a file"):
        load_genome(tmp_path)



# -- where the files come from: FER's repository at a pinned commit, checked by digest (tests/test_fer_files.py) ---
def test_the_genomes_and_renders_are_fers_files_at_the_pinned_commit(genomes, reference_renders):
    import hashlib
    from compbook.cppn.data import fer_files
    for name in GENOME_NAMES:
        path = picbreeder.find_genome(name)
        assert path.name in (f"{name}.zip",) and hashlib.sha256(path.read_bytes()).hexdigest() == \
            fer_files.SHA256[f"picbreeder_genomes/{name}.zip"]
        assert np.array_equal(picbreeder.reference_render(name), reference_renders[name])
    with pytest.raises(GenomeError, match="unknown genome name 'cat'"):
        picbreeder.reference_render("cat")
