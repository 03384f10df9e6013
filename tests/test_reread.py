"""compbook.cppn.audit.reread: scores under several judges from one set of renders."""

import numpy as np

from compbook.cppn.audit import reread


def test_labeller_scores_count_only_perturbed_items_and_cant_tell_as_no():
    q = lambda w, d: {"model": "m", "weight": w, "delta": d, "policy": "plus", "res": 64}   # noqa: E731
    key = [{"concept": "skull", "kind": "sgd", "question": q([0, 0, 0], 0.5)},
           {"concept": "skull", "kind": "sgd", "question": q([0, 0, 1], 0.5)},
           {"concept": "skull", "kind": "sgd", "question": q(None, 0.0)}]
    rows = reread.labeller_scores(key, ["yes", "can't tell", "no"])
    row = [r for r in rows if r["concept"] == "skull" and r["network"] == "sgd" and r["delta"] == 0.5][0]
    assert (row["k"], row["n"], row["cant_tell"]) == (1, 2, 1)
    assert row["ci95"][0] < 0.5 < row["ci95"][1]
    assert np.isfinite(row["score"])


def test_merge_needs_every_concept_once_and_the_same_settings():
    """A run split by ``--concepts`` must merge to what one run writes: concepts in order, labeller rows once."""
    part = lambda cs, made="m": {"made_by": made, "seconds": 1.0, "concepts": cs, "chosen": "reference",  # noqa: E731
                                 "twins": {c: ["h"] for c in cs}, "labeller_rows": [{"concept": "skull", "h": 1}],
                                 "rows": [{"concept": c} for c in cs]}
    out = reread.merge([part(["apple"]), part(["skull", "butterfly"])])
    assert [r["concept"] for r in out["rows"]] == ["skull", "butterfly", "apple", "skull"]
    assert out["seconds"] == 2.0 and set(out["twins"]) == {"skull", "butterfly", "apple"}
    import pytest
    with pytest.raises(ValueError, match="once"):
        reread.merge([part(["apple"]), part(["apple", "skull", "butterfly"])])
    with pytest.raises(ValueError, match="settings"):
        reread.merge([part(["apple"]), part(["skull", "butterfly"], made="other")])


def test_unperturbed_counts_ask_each_network_alone():
    """k of n networks whose own render the judge accepts; a judge that only accepts bright images must
    accept the bright network and not the dark one (a bug would judge the stack once, or the first image)."""
    import torch

    class Flat:
        def __init__(self, v):
            self.v = v

        def render(self, res):
            return torch.full((res, res, 3), self.v)

    from compbook.cppn import panel
    bright = lambda imgs, concept, reference=None: imgs.mean((1, 2, 3)) > 0.5   # noqa: E731
    same = lambda imgs, concept, reference=None: (imgs - reference).abs().amax((1, 2, 3)) < 1e-6  # noqa: E731
    out = panel.unperturbed_counts([Flat(0.9), Flat(0.1), Flat(0.8)], {"bright": bright,
                                   "ssim (own render, 0.5)": same}, "skull")
    assert out == {"bright": [2, 3], "ssim (own render, 0.5)": [3, 3]}


def test_labeller_scores_split_current_and_earlier_twins():
    """SGD items of twins not scored now must not be pooled with the current twins' (the likely bug: one row
    over two different sets of networks); Picbreeder items count under both names."""
    q = lambda w: {"model": "m", "weight": w, "delta": 0.5, "policy": "plus", "res": 64}   # noqa: E731
    key = [{"concept": "skull", "kind": "sgd", "source": "emc2/new", "question": q([0, 0, 0])},
           {"concept": "skull", "kind": "sgd", "source": "emc2/old", "question": q([0, 0, 1])},
           {"concept": "skull", "kind": "sgd", "source": "emc2/old", "question": q([0, 0, 2])},
           {"concept": "skull", "kind": "picbreeder", "source": "picbreeder:skull", "question": q([0, 1, 0])}]
    rows = reread.labeller_scores(key, ["yes", "no", "no", "yes"], current={"emc2/new"})
    get = lambda judge, net: [r for r in rows if r["judge"] == judge and r["network"] == net  # noqa: E731
                              and r["concept"] == "skull" and r["delta"] == 0.5][0]
    assert (get(reread.LABELLER_ROWS, "sgd")["k"], get(reread.LABELLER_ROWS, "sgd")["n"]) == (1, 1)
    assert (get(reread.EARLIER, "sgd")["k"], get(reread.EARLIER, "sgd")["n"]) == (0, 2)
    assert get(reread.LABELLER_ROWS, "picbreeder")["n"] == get(reread.EARLIER, "picbreeder")["n"] == 1
