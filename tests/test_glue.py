"""The chapters' glue: values stored for the prose are plain, finite numbers or strings."""

import numpy as np
import pytest
import torch

from compbook.glue import _plain, glue


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
    from compbook.glue import say
    say("held out:", ", ".join(["purple square"] * 12))
    say("short", 1)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 2 and all(len(l) <= 80 for l in lines), lines
    assert lines[1].startswith("  ") and lines[-1] == "short 1"


def test_printed_configs_fit_the_page():
    from compbook.sae.s2ae import SAETrainConfig
    text = str(SAETrainConfig(d_sae=384, k=32, lam=0.01))
    assert text.startswith("SAETrainConfig(d_sae=384") and all(len(l) <= 80 for l in text.splitlines())
