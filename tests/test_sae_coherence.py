"""compbook.sae.coherence: phrase and next-token labels against naive loops; the two denominators."""

import pandas as pd
import pytest
import torch

from compbook.sae import coherence as co
from compbook.sae import crossmodal as cm
from compbook.sae.data import make_scenes


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(12, seed=3)


def test_phrase_labels_match_a_naive_loop(scenes):
    word = cm.concept_labels(scenes)
    got = co.phrase_labels(scenes, word)
    vocab, s = scenes.vocab, word.n_shared
    for i in range(len(scenes)):
        words = [vocab.tokens[t] for t in scenes.tokens[i]]
        want = word.tokens[i].clone()
        start = 0
        for j in range(len(words) + 1):
            if j == len(words) or words[j] in ("and", "<bos>", "<eos>", "<pad>"):
                named = word.tokens[i, start:j, :s].any(0) if j > start else torch.zeros(s, dtype=torch.bool)
                want[start:j, :s] |= named
                start = j + 1
        assert torch.equal(got.tokens[i], want), i
    assert torch.equal(got.patches, word.patches)
    # every colour or shape word's phrase partner carries its label: "a" of "a red square" carries "red"
    a = vocab.tokens.index("a")
    red = word.names.index("red")
    hit = (scenes.tokens == a) & got.tokens[..., red]
    assert hit.any() and not (word.tokens[..., red] & (scenes.tokens == a)).any()


def test_next_token_labels_shift_by_one(scenes):
    word = cm.concept_labels(scenes)
    got = co.next_token_labels(scenes, word)
    assert torch.equal(got.tokens[:, :-1], word.tokens[:, 1:])
    assert not got.tokens[:, -1].any()


def test_coherence_denominators():
    scores = pd.DataFrame({"live": [True, True, True, True, False],
                           "bimodal": [True, True, False, False, False],
                           "coherent": [True, False, False, False, False]})
    assert co.coherence(scores, "live") == pytest.approx(0.25)
    assert co.coherence(scores, "bimodal") == pytest.approx(0.5)
    assert co.coherence(scores[~scores.bimodal], "bimodal") != co.coherence(scores[~scores.bimodal], "bimodal")
    with pytest.raises(ValueError, match="denominator"):
        co.coherence(scores, "all")


class Oracle:
    """A stand-in SAE with one latent per shared concept: it fires on the patches of objects with that value
    (coded in x[..., j] > 0) and on the caption tokens *before* the word naming it (next-token position)."""
    def __init__(self, d):
        self.d = d

    def encode(self, x):
        return torch.relu(x[:, :self.d])


def test_an_oracle_is_coherent_only_under_next_token_labels(scenes):
    word = cm.concept_labels(scenes)
    nxt = co.next_token_labels(scenes, word)
    s = word.n_shared
    n, p = scenes.labels.shape
    length = scenes.tokens.shape[1]
    acts = torch.zeros(n, p + length, s)
    acts[:, :p] = word.patches[..., :s].float()
    acts[:, p:] = nxt.tokens[..., :s].float()
    valid = torch.ones(n, p + length, dtype=torch.bool)
    valid[:, p:] = scenes.tokens != scenes.vocab.pad_id
    data = cm.SAEData(acts, valid, torch.arange(p), scenes.grid)
    rep = co.coherence_report(Oracle(s), data, co.labellings(scenes), top_n=5, min_fires=1)
    assert rep["next token / bimodal"] > 0.9
    assert rep["word / bimodal"] < 0.1
    with pytest.raises(ValueError, match="labelling"):
        co.coherence_report(Oracle(s), data, {"word": word}, (("phrase", "bimodal"),))


def test_readings_pair_by_seed_against_the_papers_relative_gains():
    rows = []
    for seed, gain in enumerate((0.04, 0.05, 0.06)):
        rows.append({"method": "vanilla", "seed": seed, "next token / bimodal": 0.10, "mono image": 0.8})
        rows.append({"method": "S2AE", "seed": seed, "next token / bimodal": 0.10 + gain, "mono image": 0.8 - gain})
    r = co.readings(pd.DataFrame(rows), "S2AE", ["next token / bimodal", "mono image"])
    assert r.loc["next token / bimodal", "S2AE - vanilla"] == pytest.approx(0.05)
    assert r.loc["next token / bimodal", "vanilla"] == pytest.approx(0.10)
    assert r.loc["next token / bimodal", "reading"] == "reproduced"
    assert r.loc["mono image", "reading"] == "not reproduced (opposite direction)"
    with pytest.raises(ValueError, match="column"):
        co.readings(pd.DataFrame(rows), "S2AE", ["word / live"])


def test_concept_shares_tell_the_word_from_the_token_before_it(scenes):
    word = cm.concept_labels(scenes)
    s = word.n_shared
    z_img = word.patches[..., :s].float()           # latent c fires on concept c
    z_txt = word.tokens[..., :s].float()            # ... and on its word itself
    c = int(z_txt.sum((0, 1)).argmax())
    name = word.names[c]
    got = co.concept_shares(z_img, z_txt, co.labellings(scenes), c, name, top_n=3)
    assert got["image patches"] == 1.0
    assert got["caption tokens, word"] == 1.0
    assert got["caption tokens, next token"] == 0.0
    with pytest.raises(ValueError, match="concept"):
        co.concept_shares(z_img, z_txt, co.labellings(scenes), c, "no such")
    with pytest.raises(ValueError, match="labels"):
        co.concept_shares(z_img, z_txt, {}, c, name)
