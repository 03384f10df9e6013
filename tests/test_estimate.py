"""compbook.runs.estimate and the parts' fulltime modules: the arithmetic against a hand-computed case, every chapter
with an estimate printed by its first cells, the subsets shorter, README's table as the functions compute it."""

import json
import math
from pathlib import Path

import pytest

from compbook import config
from compbook.runs import estimate
from compbook.binding.runs import fulltime as part_b
from compbook.cppn.runs import fulltime as part_a
from compbook.sae.runs import fulltime as part_c

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
PARTS = (part_a, part_b, part_c)
#: chapters whose estimate is printed after their first cell: chapter 5 prints it where it chooses the judge (the
#: VLM, which dominates its cost), its code lines being at the teaching rules' limit
ELSEWHERE = {"ch05"}


def key_of(notebook: Path) -> str:
    """``07_depth`` -> ``ch07``; a notes chapter is its own key."""
    return "ch" + notebook.stem[:2] if notebook.stem[0].isdigit() else notebook.stem


def part_of(key: str):
    return next(p for p in PARTS if key in p.CHAPTERS)


def rows() -> dict:
    """README's rows: notebook name -> (full works, subset works)."""
    return {nb.stem: (part_of(key_of(nb)).works(key_of(nb)), part_of(key_of(nb)).works(key_of(nb), subset=True))
            for nb in NOTEBOOKS}


def test_seconds_by_hand():
    gpu = estimate.GPU("test", peak_flops=1e12, launch_s=1e-5)
    works = [estimate.Work(3e12, steps=1000, kernels=20), estimate.Work(0.0, steps=10, kernels=1)]
    # 3e12 / (1e12 * 0.5) = 6 s; (1000 * 20 + 10) * 1e-5 = 0.2001 s
    assert estimate.seconds(works, gpu, achieved=0.5) == pytest.approx(6.2001)
    assert estimate.seconds(works, gpu) == pytest.approx(3e12 / (1e12 * estimate.ACHIEVED) + 0.2001)
    # training: 6 x params x samples x steps
    w = estimate.training(params=100, samples=50, steps=7, kernels=3)
    assert (w.flops, w.steps, w.kernels) == (6 * 100 * 50 * 7, 7, 3)


def test_cppn_counts_by_hand():
    # a depth-2, width-3 CPPN: 4 x 3 in, 3 x 3 between, 3 x 3 out
    assert part_a.weights(2, 3) == 12 + 9 + 9
    w = part_a.fit(30, depth=2, res=4, steps=10, nets=2)
    assert w.flops == 6 * 30 * 2 * 16 * 10 and w.kernels == part_a.KERNELS_PER_LAYER * 3
    render, judge = part_a.scoring(30, depth=2, renders=100, res=8)
    assert render.flops == 2 * 30 * 64 * 100 and render.steps == math.ceil(100 / part_a.RENDER_BATCH)
    assert judge.flops == 2 * part_a.SSIM_FLOPS_PER_PIXEL * 64 * 100
    assert part_a.vlm_judge(16).flops == 2 * 4e9 * 1024 * 16


def test_duration_words():
    assert estimate.duration(59) == "under a minute"
    assert estimate.duration(40 * 60) == "40 min"
    assert estimate.duration(2.5 * 3600) == "2.5 h"
    assert estimate.duration(30 * 3600) == "30 h"


def test_faster_gpu_is_faster_and_more_work_takes_longer():
    small, big = [estimate.Work(1e15, 100, 10)], [estimate.Work(2e15, 100, 10)]
    assert estimate.seconds(small, estimate.A100) < estimate.seconds(small, estimate.T4)
    assert estimate.seconds(small, estimate.T4) < estimate.seconds(big, estimate.T4)


@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan, True, "1"])
def test_bad_work_refused(bad):
    with pytest.raises(ValueError, match="Work.flops"):
        estimate.Work(bad)


def test_bad_inputs_named():
    with pytest.raises(ValueError, match="gpu"):
        estimate.seconds([estimate.Work(1.0)], "A100")
    with pytest.raises(ValueError, match="chapter"):
        part_a.works("ch99")
    with pytest.raises(ValueError, match="cls"):
        estimate.sized(dict)


def test_say_lines_fit_and_name_colab_and_subset():
    long = [estimate.Work(estimate.T4.peak_flops * estimate.ACHIEVED * 5 * 3600)]    # 5 h on a T4
    short = [estimate.Work(estimate.T4.peak_flops * estimate.ACHIEVED * 40 * 60)]    # 40 min on a T4
    text = estimate.say(long, short)
    assert text.startswith("At the paper's scale it takes about") and "(5.0 h on a T4)" in text
    assert estimate.COLAB_LIMIT in " ".join(text.split())
    assert " ".join(text.split()).endswith(f"{estimate.SUBSET_HINT} runs a subset in about 40 min on a T4.")
    assert all(len(line) <= 80 for line in text.splitlines())
    assert not [line for line in text.splitlines() if line.split()[0] in ("s", "min", "h")], "a time split"
    assert "Colab" not in estimate.say(short) and "subset" not in estimate.say(short, short)
    tiny = [estimate.Work(1.0)]
    assert "under a minute on one GPU" in estimate.say(tiny)


def test_parts_are_the_pieces_of_say():
    """estimate.parts gives say's note as data: the times and the command, each one the note words."""
    long = [estimate.Work(estimate.T4.peak_flops * estimate.ACHIEVED * 5 * 3600)]    # 5 h on a T4
    short = [estimate.Work(estimate.T4.peak_flops * estimate.ACHIEVED * 40 * 60)]    # 40 min on a T4
    p = estimate.parts(long, short)
    assert p["cpu"] is None and p["cpu_time"] is None
    assert p["full_time"].startswith("about ") and p["full_time"].endswith("(5.0 h on a T4)")
    assert p["command"].startswith(estimate.REPRODUCE) and p["command"].endswith("about 40 min on a T4.")
    assert " ".join(estimate.say(long, short).split()) == f"At the paper's scale it takes {p['full_time']}. " \
        + p["command"]
    assert estimate.parts([estimate.Work(1.0)])["full_time"] == "under a minute on one GPU"
    with pytest.raises(ValueError, match="scale"):
        estimate.parts(long, scale="")


def test_chapter_5_parts_are_its_say():
    """part A's say_parts: the recorded CPU time, the paper-scale time and the command of say("ch05")."""
    p = part_a.say_parts("ch05")
    text = " ".join(part_a.say("ch05").split())
    assert text == f"On {p['cpu']} this page runs in about {p['cpu_time']}; at the paper's scale it takes " \
        f"{p['full_time']}. {p['command']}"
    a100 = estimate.seconds(part_a.works("ch05"), estimate.A100)
    assert p["full_time"].startswith(f"about {estimate.duration(a100)} on one A100")
    with pytest.raises(ValueError, match="chapter"):
        part_a.say_parts("ch99")


def test_part_c_says_its_scale_is_a_miniature_not_the_papers():
    """Part C's full mode is a larger miniature of the tiny VLM, so its note names no "paper's scale"."""
    from compbook.sae.runs import fulltime as part_c
    tiny = [estimate.Work(1.0)]
    assert estimate.say(tiny, scale="in the big setting").startswith("In the big setting it takes under a minute")
    with pytest.raises(ValueError, match="scale"):
        estimate.say(tiny, scale="")
    for key in part_c.CHAPTERS:
        text = " ".join(part_c.say(key).split())
        assert "paper's scale" not in text and "not the paper's Qwen2.5-VL-7B" in text, key
        assert all(len(line) <= 80 for line in part_c.say(key).splitlines()), key


def test_say_is_a_readers_note():
    """Words, not tools: no module or file names; the settings only in the one line that starts "Reproduce"."""
    long = [estimate.Work(estimate.T4.peak_flops * estimate.ACHIEVED * 5 * 3600)]
    short = [estimate.Work(estimate.T4.peak_flops * estimate.ACHIEVED * 40 * 60)]
    text = " ".join(estimate.say(long, short, page="ch01").split())
    said, settings = text.split(estimate.REPRODUCE)
    for word in ("compbook", "COMPBOOK_", ".json", "make test", "landing page", "full mode"):
        assert word not in said, word
    assert f"{config.MODE_VARIABLE}=full" in settings and estimate.SUBSET_HINT in settings
    assert "compbook." not in settings and ".json" not in settings


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chapters_note_states_its_recorded_cpu_time(notebook):
    """The CPU time in a chapter's note is the run-time record's (data/runtimes.json), for that very notebook; the
    GPU times are the estimate's."""
    from compbook.results import runtimes
    key = key_of(notebook)
    rec = runtimes.load()
    recorded = rec["seconds"][notebook.stem]
    assert runtimes.page_seconds(key) == runtimes.page_seconds(notebook.stem) == ("a 2-core CPU", recorded) \
        or "2-core" not in rec["where"]
    text = " ".join(part_of(key).say(key).split())
    cpu = f"{recorded} s" if recorded < 90 else f"{round(recorded / 60)} min"
    assert f"this page runs in about {cpu};" in text, text
    works = part_of(key).works(key)
    a100 = estimate.seconds(works, estimate.A100)
    assert (f"about {estimate.duration(a100)} on one A100" in text) if a100 >= 60 else "under a minute" in text
    changed = dict(rec, seconds=dict(rec["seconds"], **{notebook.stem: recorded + 7}))
    assert runtimes.page_seconds(key, changed)[1] == recorded + 7     # read from the record, not typed


def test_say_run_states_this_run_beside_the_record():
    from compbook.results import runtimes
    rec = {"where": "a 4-core CPU machine", "seconds": {"07_depth": 30}}
    assert runtimes.say_run("07_depth", 61.4, "cpu", rec) == \
        "This run of the page took 61 s in CPU mode (the recorded run on a 4-core CPU: 30 s)."
    with pytest.raises(ValueError, match="ch99"):
        runtimes.page_seconds("ch99", rec)
    with pytest.raises(ValueError, match="took"):
        runtimes.say_run("07_depth", -1.0, "cpu", rec)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chapter_has_an_estimate_and_prints_it(notebook):
    key = key_of(notebook)
    part = part_of(key)
    for line in part.say(key).splitlines():
        assert len(line) <= 80, line
    cells = ["".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    calls = (f'fulltime.say("{key}")', f'fulltime.say_parts("{key}")')   # the note, or its parts as data
    where = cells[1:2] if key not in ELSEWHERE else cells      # cells[1]: after the Colab install cell
    assert any(call in src for call in calls for src in where), \
        f"{notebook.name} prints no estimate ({calls[0]}) where it should"


def test_long_chapters_offer_a_shorter_subset():
    for name, (works, subset) in rows().items():
        full_t4 = estimate.seconds(works, estimate.T4)
        assert estimate.seconds(subset, estimate.T4) <= full_t4
        if full_t4 > 3600:
            assert estimate.seconds(subset, estimate.T4) < 0.5 * full_t4, name


def test_subset_is_read_by_full(monkeypatch):
    from compbook.binding.runs.sweep import SweepConfig
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    monkeypatch.delenv("COMPBOOK_SMOKE", raising=False)
    monkeypatch.delenv(config.SUBSET_VARIABLE, raising=False)
    assert SweepConfig.for_mode().seeds == SweepConfig.FULL["seeds"]
    monkeypatch.setenv(config.SUBSET_VARIABLE, "1")
    assert SweepConfig.for_mode().seeds == SweepConfig.SUBSET["seeds"]
    assert estimate.sized(SweepConfig, subset=True) == SweepConfig.for_mode()
    monkeypatch.setenv(config.SUBSET_VARIABLE, "yes")
    with pytest.raises(ValueError, match=config.SUBSET_VARIABLE):
        SweepConfig.for_mode()


def test_picbreeder_counts_are_the_genomes():
    from compbook.cppn import emc2, picbreeder
    for name, (depth, n, scored) in part_a.PICBREEDER.items():
        model = picbreeder.layerize(picbreeder.load_genome(name))
        assert (model.depth, sum(w.numel() for w in model.weights), len(emc2.nonzero_weights(model))) == \
            (depth, n, scored)


def test_typed_sizes_match_the_models():
    from compbook.binding import clevr
    from compbook.sae.studies import objsae
    from compbook.sae import vlm
    cfg = vlm.TinyVLMConfig(vocab_size=32)
    assert (part_c.D_MODEL, part_c.TOKENS) == (cfg.d_model, cfg.n_patches + cfg.max_text)
    assert part_c.OBJECT_VARIANTS == len(objsae.VARIANTS)
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from compbook.binding.train import DualStack
    setup = estimate.sized(clevr.Setup)
    enc = clevr.encoder_config(setup)
    stack = DualStack(enc, 1, device="cpu")
    with FlopCounterMode(display=False) as counter:
        stack.encode_images(torch.zeros(1, enc.res, enc.res, 3))
        stack.encode_texts(torch.zeros(1, enc.max_len, dtype=torch.long))
    assert part_b.dual_forward(enc) == pytest.approx(counter.get_total_flops(), rel=0.15)


def test_readme_table_is_the_functions():
    text = (ROOT / "README.md").read_text()
    want = estimate.table(rows())
    assert estimate.table_in(text) == want, "README's full-mode table differs; put this between its markers:\n" + want


def sweep_rows() -> dict:
    """README's sweep rows: description -> works (each part's fulltime; the paper's sweep of Part B)."""
    from compbook.binding.runs import fulltime as b
    from compbook.cppn.runs import fulltime as a
    from compbook.sae.runs import fulltime as c
    return {"A: depth sweep (chapter 7, full mode)": a.ch07(), "A: EMC2 scoring by the VLM (chapter 5)": a.ch05(),
            "B: coverage sweep (chapter 13, full mode)": b.ch13(), "B: coverage sweep of the paper's size (513 models)":
            b.paper_sweep(), "C: k / lambda study (chapter 15, full mode)": c.ch15()}


def test_readme_sweep_table_is_the_functions():
    text = (ROOT / "README.md").read_text()
    want = estimate.sweep_table(sweep_rows())
    got = estimate.table_in(text, estimate.SWEEPS_BEGIN, estimate.SWEEPS_END)
    assert got == want, "README's sweep table differs; put this between its markers:\n" + want


def test_paper_sweep_is_readmes_command():
    from compbook.binding.runs import fulltime as b, sweep
    n_cov = len(estimate.sized(sweep.SweepConfig).coverages)
    assert n_cov * 3 * 19 == 513, "README's command: --sizes 5 14 50 --seeds 0..18 at the full sweep's coverages"
    one = estimate.seconds(b.paper_sweep((5,), 1), estimate.A100)
    assert estimate.seconds(b.paper_sweep(), estimate.A100) == pytest.approx(3 * 19 * one, rel=0.05)
    with pytest.raises(ValueError, match="seeds"):
        b.paper_sweep(seeds=0)
