"""compbook.sae.crossmodal: coherence and monosemanticity on planted latents, against a naive reference, and on
the exact labels of real scenes."""

import numpy as np
import pytest
import torch

from compbook.sae import crossmodal as cm
from compbook.sae.data import make_scenes

NAMES = ["red", "blue", "background", "'a'"]
RED, BLUE, BG, A = range(4)


def planted():
    """2 images x 4 patches, 3 caption tokens each; 4 planted latents (see the test)."""
    p_lab = torch.tensor([[RED, RED, BLUE, BG], [BLUE, BLUE, RED, BG]])
    t_lab = torch.tensor([[A, RED, BLUE], [A, BLUE, RED]])
    labels = cm.ConceptLabels(NAMES, 2, torch.nn.functional.one_hot(p_lab, 4).bool(),
                              torch.nn.functional.one_hot(t_lab, 4).bool())
    z_img, z_txt = torch.zeros(2, 4, 4), torch.zeros(2, 3, 4)
    z_img[..., 0] = (p_lab == RED).float()                     # 0: red patches and "red": coherent and pure
    z_txt[..., 0] = (t_lab == RED).float()
    z_img[..., 1] = ((p_lab == RED) | (p_lab == BLUE)).float()  # 1: red and blue on both sides: neither
    z_txt[..., 1] = ((t_lab == RED) | (t_lab == BLUE)).float()
    z_img[..., 2] = (p_lab == RED).float()                     # 2: red patches but "blue": pure, not coherent
    z_txt[..., 2] = (t_lab == BLUE).float()
    return z_img, z_txt, labels                                # 3: silent


def test_planted_latents_coherent_and_pure_or_not():
    z_img, z_txt, labels = planted()
    s = cm.crossmodal_scores(z_img, z_txt, labels, top_n=6, min_fires=2).set_index("latent")
    assert s.loc[0, "coherent"] and s.loc[0, "purity image"] == 1 and s.loc[0, "purity text"] == 1
    assert s.loc[0, "top image"] == "red" and s.loc[0, "top text"] == "red"
    assert not s.loc[1, "coherent"], "a latent on two concepts split 50/50 must not count as coherent"
    assert s.loc[1, "purity image"] == 0.5 and s.loc[1, "purity text"] == 0.5
    assert not s.loc[2, "coherent"], "image concept and text concept differ: coherence must compare concepts"
    assert s.loc[2, "purity image"] == 1 and s.loc[2, "purity text"] == 1
    assert not s.loc[3, "live"] and np.isnan(s.loc[3, "purity image"])
    summ = cm.crossmodal_summary(s.reset_index())
    assert summ["coherence"] == pytest.approx(1 / 3) and summ["live"] == 3
    assert summ["mono image"] == pytest.approx(2.5 / 3) and summ["mono text"] == pytest.approx(2.5 / 3)


def test_top_activations_decide_the_purity():
    _, _, labels = planted()
    z = torch.zeros(2, 4, 1)
    z[..., 0] = 2.0 * (labels.patches[..., RED]) + 1.0 * labels.patches[..., BLUE]
    shares, fires = cm.top_shares(z, labels.patches, top_n=3)
    assert fires.item() == 6
    assert shares[0, RED] == 1, "purity must use the largest activations, not any activations"
    shares, _ = cm.top_shares(z, labels.patches, top_n=8)     # all 6 active (zeros ignored)
    assert shares[0, RED] == pytest.approx(0.5) and shares[0, BG] == 0


def naive_shares(codes, labels, top_n):
    z, lab = codes.reshape(-1, codes.shape[-1]).numpy(), labels.reshape(-1, labels.shape[-1]).numpy()
    out = np.zeros((z.shape[1], lab.shape[1]))
    for j in range(z.shape[1]):
        order = sorted(range(len(z)), key=lambda i: -z[i, j])[:top_n]
        on = [i for i in order if z[i, j] > 0]
        if on:
            out[j] = lab[on].mean(0)
    return out


def test_top_shares_match_a_naive_loop():
    g = torch.Generator().manual_seed(0)
    codes = torch.relu(torch.randn(5, 7, 6, generator=g) - 0.8)
    labels = torch.rand(5, 7, 3, generator=g) > 0.5
    shares, _ = cm.top_shares(codes, labels, top_n=4)
    assert np.allclose(shares.numpy(), naive_shares(codes, labels, 4))


def test_concept_labels_follow_the_exact_ground_truth():
    sc = make_scenes(6, seed=3)
    lab = cm.concept_labels(sc)
    space = sc.vocab.space
    assert lab.names[:lab.n_shared] == list(space.values[0]) + list(space.values[1])
    for i, objs in enumerate(sc.objects):
        for p, o in enumerate(sc.labels[i].tolist()):
            got = {lab.names[c] for c in np.flatnonzero(lab.patches[i, p])}
            want = {"background"} if o < 0 else set(space.named(objs[o]).values())
            assert got == want, f"scene {i} patch {p}"
        for t, tok in enumerate(sc.tokens[i].tolist()):
            got = [lab.names[c] for c in np.flatnonzero(lab.tokens[i, t])]
            word = sc.vocab.tokens[tok]
            assert got == ([] if tok == sc.vocab.pad_id else [word if word in lab.names else f"'{word}'"])


def test_bad_inputs_name_the_argument():
    z_img, z_txt, labels = planted()
    with pytest.raises(ValueError, match="latents: .*empty"):
        cm.crossmodal_scores(z_img, z_txt, labels, top_n=2, latents=[])
    with pytest.raises(ValueError, match="top_n=9: .*number of samples"):
        cm.top_shares(z_img, labels.patches, top_n=9)
    with pytest.raises(ValueError, match="latents: indices"):
        cm.top_shares(z_img, labels.patches, top_n=2, latents=[7])
    with pytest.raises(ValueError, match="labels:"):
        cm.top_shares(z_img, labels.tokens, top_n=2)


def test_report_on_a_real_sae_is_consistent():
    from compbook.sae import experiment as ex
    from compbook.sae.s2ae import SAETrainConfig

    s = ex.load_setting(40, 30, 2)
    runs = ex.train_runs(s.train, SAETrainConfig(d_sae=64, k=4, steps=20, batch_images=8), seeds=(0,))
    df = cm.compare_crossmodal(runs, s.test, cm.concept_labels(s.test_scenes), top_n=10, min_fires=3)
    assert list(df.method) == ["vanilla", "S2AE (lambda=0.01)"]
    for _, r in df.iterrows():
        assert 0 <= r.coherence <= r.bimodal <= 1 and 0 < r["mono image"] <= 1 and 0 < r["mono text"] <= 1
    with pytest.raises(ValueError, match="labels: "):
        cm.crossmodal_report(runs[0]["sae"], s.test, cm.concept_labels(s.train_scenes))


def test_latent_shares_in_the_chapter_words_and_the_most_coherent_latent():
    z_img, z_txt, labels = planted()
    z_txt[0, 0, 0] = 0.5                                       # latent 0: "'a'" joins its text side
    s = cm.latent_shares(z_img, z_txt, labels, top_n=6, min_fires=2)
    assert {"share image", "share text", "fires in both"} <= set(s.columns)
    assert "purity image" not in s.columns
    z_img[..., 3] = (labels.patches[..., RED]).float()         # latent 3: red on both sides, pure
    z_txt[..., 3] = (labels.tokens[..., RED]).float()
    s = cm.latent_shares(z_img, z_txt, labels, top_n=6, min_fires=2)
    assert s.loc[s.latent == 0, "share text"].item() < 1
    assert cm.most_coherent(s).latent == 3, "the weaker side decides: latent 3 is pure on both"
    with pytest.raises(ValueError, match="no coherent latent"):
        cm.most_coherent(s.assign(coherent=False))
    with pytest.raises(ValueError, match="shares"):
        cm.most_coherent(s.drop(columns="share text"))
