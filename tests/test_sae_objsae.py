"""compbook.sae.studies.objsae (SAEs on object-VLM variants), extract's prefix tokens, and compbook.sae.runs.full."""

import os

import numpy as np
import pandas as pd
import pytest
import torch

from compbook.sae.studies import objregions as orr
from compbook.sae.studies import objsae
from compbook.sae.experiment import sae_inputs
from compbook.sae.vlm import IMAGE, PAD, TEXT, extract

from test_sae_objregions import cfg, inputs


@pytest.mark.parametrize("n_prefix, bidi", [(0, False), (3, False), (2, True)])
def test_extract_marks_prefix_tokens_and_finds_the_patches(n_prefix, bidi):
    m = orr.ObjectVLM(cfg(), n_prefix, bidi).eval()
    p, t = inputs()
    ex = extract(m, (p, t), 1)
    assert list(ex.patch_idx) == list(range(n_prefix, n_prefix + 6))
    assert (ex.token_type[:, :n_prefix] == PAD).all(), "prefix tokens are not data"
    assert (ex.token_type[:, n_prefix:n_prefix + 6] == IMAGE).all()
    assert (ex.token_type[:, n_prefix + 6:] == TEXT).all()                   # tokens 1..10: no padding here
    rc = ex.patch_rc[0, n_prefix:n_prefix + 6].tolist()
    assert rc == [[r, c] for r in range(2) for c in range(3)]
    assert (ex.patch_rc[:, :n_prefix] == -1).all()
    # the book's model: the same as before prefix tokens existed (patches first, no PAD among them)
    if n_prefix == 0:
        assert (ex.token_type[:, :6] == IMAGE).all()


def test_sae_inputs_leave_prefix_tokens_out_and_take_patch_attention():
    class Scenes:
        def __init__(self, p, t):
            self.patches, self.tokens = p, t

        def __len__(self):
            return len(self.tokens)

    m = orr.ObjectVLM(cfg(), 3, True).eval()
    p, t = inputs()
    data = sae_inputs(m, Scenes(p, t), 1)
    assert not data.valid[:, :3].any() and data.valid[:, 3:].all()
    assert list(data.patch_idx) == [3, 4, 5, 6, 7, 8] and data.attn.shape == (3, 6, 6)
    want = orr.patch_attention(m, Scenes(p, t))
    assert torch.allclose(data.attn, want, atol=1e-6), "the same patch block as objregions reads"


def test_store_of_and_bad_input():
    assert objsae.store_of("4 prefix tokens", "grid2") == "sae/objsae/grid2_prefix4_causal"
    assert objsae.store_of("bidirectional patches", "grid3") == "sae/objsae/grid3_prefix0_bidi"
    with pytest.raises(ValueError, match="variant"):
        objsae.store_of("sideways", "grid2")
    with pytest.raises(ValueError, match="layout"):
        objsae.store_of("4 prefix tokens", "grid9")


def _table():
    rows = []
    rng = np.random.default_rng(0)
    for variant in ("a", "b"):
        for s in range(3):
            for method, n, bump in (("vanilla", 0, 0.0), ("S2AE, 20 regions", 20, 1.0),
                                    ("S2AE, 4 regions", 4, 2.0)):
                rows.append({"layout": "grid2", "variant": variant, "regions": n, "method": method, "seed": s,
                             "purity (regions)": np.nan if n == 0 else 0.8,
                             **{c: 0.5 + 0.01 * bump * (variant == "b") + rng.normal(0, 0.001)
                                for c in objsae.COLUMNS}})
    return pd.DataFrame(rows)


def test_reading_pairs_each_variant_with_its_own_vanilla():
    df = _table()
    r = objsae.reading(df)
    assert list(r.index) == [("grid2", v, n) for v in ("a", "b") for n in (4, 20)]
    num = objsae.paired_rows(df, "mIoU").set_index(["variant", "regions"])
    g = df[df.variant == "b"]
    diff = g[g.regions == 4].mIoU.to_numpy() - g[g.method == "vanilla"].mIoU.to_numpy()
    assert num.loc[("b", 4), "mean"] == pytest.approx(diff.mean())
    assert r.loc[("grid2", "b", 4), "mIoU"].startswith(f"{diff.mean():+.3f}")
    assert abs(num.loc[("a", 20), "mean"]) < 0.005 and num.loc[("b", 20), "mean"] == pytest.approx(0.01, abs=2e-3)
    with pytest.raises(ValueError, match="missing"):
        objsae.reading(df.drop(columns="layout"))


def test_full_run_at_tiny_size_writes_every_table(tmp_path, monkeypatch):
    """The GPU reader's command, at TINY size on the CPU: the stored VLMs linked into a scratch data folder."""
    from compbook.results.paths import data_dir
    from compbook.sae.studies import claims
    from compbook.sae.runs import full
    from compbook.sae import sizes

    src = data_dir() / "sae"
    (tmp_path / "sae" / "objvlm").mkdir(parents=True)
    for f in src.glob("tiny_vlm*"):
        os.symlink(f, tmp_path / "sae" / f.name)
    for f in (src / "objvlm").glob("grid2_*"):
        os.symlink(f, tmp_path / "sae" / "objvlm" / f.name)
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    out = full.run(sizes.TINY, log=None)
    assert set(out) == {"study", "optimiser", "regions", "objsae", "coherence", "identification", "claims"}
    for name in out:
        assert (tmp_path / "sae" / "tiny" / "tables" / f"{name}.json").is_file()
    assert set(out["claims"].claim) == set(claims.CLAIMS)
    assert len(out["study"]) == 2 * 2 * 2 and set(out["objsae"].variant) == set(orr.VARIANTS)
    assert len(list((tmp_path / "sae" / "tiny" / "objsae").rglob("*.safetensors"))) == 3 * 3 * 2
    with pytest.raises(ValueError, match="lams"):
        sizes.PartCRun(lams=(0.0, 0.003))
    assert sizes.PartCRun.full().d_sae > sizes.PartCRun().d_sae and sizes.PartCRun.full().store == "sae/full"


def test_merge_table_keeps_the_other_layouts(tmp_path, monkeypatch):
    from compbook.sae.studies import study as st
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    df = _table()
    assert objsae.merge_table(df) is df, "nothing stored: the table itself"
    st.write_table(df, "sae/objsae/table.json")
    grid3 = df.assign(layout="grid3", EV=1.0)
    both = objsae.merge_table(grid3)
    assert sorted(set(both.layout)) == ["grid2", "grid3"] and len(both) == 2 * len(df)
    again = objsae.merge_table(df.assign(EV=2.0))
    assert len(again) == len(df) and (again.EV == 2.0).all(), "a layout's rows are replaced, not duplicated"


def test_chapter15_saes_loads_chapter_15s_k_and_both_methods(monkeypatch):
    from compbook.sae.runs import full
    from compbook.sae.s2ae import LAMBDA
    from compbook.sae.sizes import PartCRun
    from compbook.sae.studies import study as st

    table = pd.DataFrame({"k": [4, 4, 8, 8], "lambda": [0.0, LAMBDA, 0.0, LAMBDA], "EV": [0.5, 0.5, 0.999, 0.2]})
    monkeypatch.setattr(full, "table", lambda cfg, name: table if name == "study" else None)
    calls = []
    monkeypatch.setattr(st, "study_runs", lambda *a: calls.append(a) or ["run"])
    sizes = PartCRun(seeds=2)
    assert full.chapter15_saes(sizes, "train") == (8, ["run"])
    assert calls == [("train", sizes.base(), (8,), (0.0, LAMBDA), (0, 1), sizes.store)]
    with pytest.raises(ValueError, match="sizes"):
        full.chapter15_saes({"seeds": 2}, "train")
