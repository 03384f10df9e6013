"""compbook.cppn.judges.registry: one name, one judge, the identities stored verdicts are keyed by."""

import json

import numpy as np
import pytest
import torch

from compbook.cppn import panel
from compbook.cppn.judges import base, registry, semantic


def test_names_build_their_classes_with_the_stored_thresholds():
    choice = semantic.read_choice()
    ref = registry.make_judge("reference")
    cls = registry.make_judge("classifier")
    assert isinstance(ref, semantic.ReferenceJudge) and ref.threshold == choice["thresholds"]["reference"]
    assert isinstance(cls, semantic.ClassifierJudge) and cls.threshold == choice["thresholds"]["classifier"]
    default = registry.make_judge("default")
    assert type(default).kind == choice["chosen"]
    assert default.threshold == choice["thresholds"][choice["chosen"]]
    ssim = registry.make_judge("ssim")
    assert isinstance(ssim, base.SSIMJudge) and ssim.threshold == base.SSIM_THRESHOLD
    assert registry.make_judge("ssim", threshold=0.7).threshold == 0.7
    target = torch.rand(16, 16, 3, generator=torch.Generator().manual_seed(0))
    image = registry.make_judge("image-reference", target=target)
    assert isinstance(image, semantic.ImageReferenceJudge) and image.threshold == default.threshold


def test_identities_are_the_classes_own():
    """Stored verdicts are keyed by identity: the registry must build exactly what the classes build."""
    choice = semantic.read_choice()
    assert registry.make_judge("ssim").identity == base.SSIMJudge(base.SSIM_THRESHOLD).identity \
        == "ssim:grey,threshold=0.5|win_size=7|data_range=1"
    t = choice["thresholds"]["reference"]
    assert registry.make_judge("reference").identity == semantic.ReferenceJudge(t).identity
    assert registry.make_judge("default").identity == semantic.default_judge().identity


def test_identities_match_the_stored_runs():
    """The counting run stores each judge's identity: the registry builds those very judges."""
    from compbook.results.paths import data_file
    stored = json.loads(data_file("emc2/counting.json").read_text())["judges"]
    assert stored == {n: registry.make_judge(n).identity for n in stored}


def test_the_panel_and_the_counting_run_use_the_registry():
    from compbook.cppn.audit import counting
    p = panel.default_panel()
    assert list(p) == list(panel.JUDGE_NAMES)
    assert [j.identity for j in p.values()] == [registry.make_judge(n).identity for n in panel.JUDGE_NAMES]
    assert set(counting.JUDGE_NAMES) <= set(registry.JUDGES)


def test_make_judges_and_refusals():
    js = registry.make_judges(["ssim", "default"])
    assert list(js) == ["ssim", "default"]
    imgs = torch.rand(2, 64, 64, 3, generator=torch.Generator().manual_seed(1))
    assert js["ssim"](imgs, "skull", reference=imgs[0]).tolist()[0] is True
    for call in (lambda: registry.make_judge("oracle"), lambda: registry.make_judge("ssim", colour="rgb"),
                 lambda: registry.make_judge("default", threshold=0.5), lambda: registry.make_judges("ssim"),
                 lambda: registry.make_judge("image-reference")):
        with pytest.raises(ValueError):
            call()
    assert np.isclose(registry.make_judge("reference", threshold=0.3).threshold, 0.3)


def test_chapter_judge_in_each_mode(monkeypatch):
    """Chapter 5's judge: the CPU judge on a CPU (no stored VLM verdicts here), a caching server judge in full
    mode when $COMPBOOK_JUDGE_SERVER names one, never the in-process VLM without a GPU."""
    from compbook import config
    from compbook.cppn.judges import CachedJudge, chapter_judge, make_judge
    fallback = make_judge("ssim")
    monkeypatch.setenv(config.MODE_VARIABLE, "cpu")
    monkeypatch.setenv("COMPBOOK_JUDGE_SERVER", "http://127.0.0.1:9/v1")
    judge, line = chapter_judge(fallback)
    assert judge is fallback and "CPU judge" in line, "CPU mode must not ask a server"
    monkeypatch.setenv(config.MODE_VARIABLE, "full")
    judge, line = chapter_judge(fallback, revision="abc123")
    assert isinstance(judge, CachedJudge) and judge.identity.startswith("server:") and "@abc123" in judge.identity
    assert "127.0.0.1:9" in line and judge.mode == "fill"
    monkeypatch.setenv("COMPBOOK_JUDGE_SERVER", "http://127.0.0.1:9/v1|my/model")
    assert chapter_judge(fallback)[0].identity.startswith("server:my/model@")
    monkeypatch.delenv("COMPBOOK_JUDGE_SERVER")
    if config.device().type == "cpu":
        assert chapter_judge(fallback)[0] is fallback, "full mode without a GPU or a server: the CPU judge"


def test_judge_labels_name_registered_judges_and_tell_them_apart():
    # both CPU judges compare by SSIM: a label must say with what, and never be "the SSIM judge"
    assert set(registry.JUDGE_LABELS) <= set(registry.JUDGES)
    labels = list(registry.JUDGE_LABELS.values())
    assert len(set(labels)) == len(labels)
    assert "reference" in registry.JUDGE_LABELS["default"]
    assert "own" in registry.JUDGE_LABELS["ssim"]
    assert all("ssim" not in label.lower() for label in labels)


def test_part_a_pages_name_the_judges_one_way():
    """Chapters 5 and 6 and Part A's notes call the judges by their labels' names, never "the SSIM judge"."""
    import json
    import re
    from pathlib import Path
    chapters = Path(__file__).resolve().parents[1] / "chapters"
    pages = [chapters / "05_emc2_bench.ipynb", chapters / "06_connectivity.ipynb",
             *sorted(chapters.glob("notes_part_a_*.ipynb"))]
    assert len(pages) >= 4 and all(p.exists() for p in pages), pages
    short = {label.split(" (")[0] for label in registry.JUDGE_LABELS.values()}
    assert short == {"default judge", "same-picture judge"}
    for page in pages:
        cells = json.loads(page.read_text())["cells"]
        prose = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        assert not re.search(r"\bSSIM judge", prose, re.I), f"{page.name} says 'SSIM judge'"
