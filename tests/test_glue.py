"""The chapters' glue: values stored for the prose are plain, finite numbers or strings."""

import numpy as np
import pytest
import torch

from compbook.book.glue import _plain, glue


def test_glue_returns_the_value_unchanged():
    x = np.float32(0.25)
    assert glue("a_value", x) is x


def test_scalars_become_plain_python_numbers():
    assert type(_plain("n", np.int64(3))) is int
    assert type(_plain("x", torch.tensor(0.5))) is float
    assert _plain("x", torch.tensor(0.5)) == 0.5
    assert _plain("b", np.bool_(True)) is True


@pytest.mark.parametrize("bad", [float("nan"), np.inf, torch.tensor(float("nan"))])
def test_a_non_finite_number_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="r2_image"):
        glue("r2_image", bad)


@pytest.mark.parametrize("name", ["1st", "with space", "", None, "a-b"])
def test_a_name_no_glue_role_can_spell_is_refused(name):
    with pytest.raises(ValueError, match="name"):
        glue(name, 1.0)


def test_an_array_is_refused_not_stored():
    with pytest.raises(ValueError, match="number or a string"):
        glue("arr", np.arange(3))


def test_say_wraps_long_lines_to_the_page_and_leaves_short_ones(capsys):
    from compbook.book.glue import say
    say("held out:", ", ".join(["purple square"] * 12))
    say("short", 1)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 2 and all(len(l) <= 80 for l in lines), lines
    assert lines[1].startswith("  ") and lines[-1] == "short 1"


def test_printed_configs_fit_the_page():
    from compbook.sae.s2ae import SAETrainConfig
    text = str(SAETrainConfig(d_sae=384, k=32, lam=0.01))
    assert text.startswith("SAETrainConfig(d_sae=384") and all(len(l) <= 80 for l in text.splitlines())


def test_readable_rounds_to_four_significant_digits_and_writes_n_a():
    import sys
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from compbook.book.glue import readable
    sys.path.insert(0, str(Path(__file__).parent))
    import page_rules

    df = pd.DataFrame({"r2": [0.785078, np.nan, -5.89123], "n": [12, 7, 70000],
                       "big": [1234.5678, 12.3, 0.5], "name": ["a", None, "c"], "k": [1.0, 2.0, np.nan],
                       "seeds": [[0.0333000011742115, 0.5], [1.0], []]})
    out = readable(df)
    assert out["r2"].tolist() == ["0.785", "n/a", "-5.891"]
    assert out["big"].tolist() == ["1235", "12.30", "0.500"]
    assert out["n"].tolist() == ["12", "7", "70,000"] and out["k"].tolist() == ["1", "2", "n/a"]
    assert out["name"].tolist() == ["a", "n/a", "c"]
    assert out["seeds"].tolist() == ["[0.033, 0.500]", "[1.000]", "[]"]
    assert all(page_rules.cell_value_problems(v) == [] for v in out.to_numpy().ravel())
    assert readable(df["r2"]).shape == (3, 1)
    with pytest.raises(ValueError, match="digits"):
        readable(df, digits=0)
    with pytest.raises(ValueError, match="DataFrame"):
        readable([1, 2])
