"""compbook.results.door, the one door for stored results: no module but ``paths`` and ``results`` opens a path
under ``data_dir()`` (read from the source); outside a checkout (a simulated Colab: no repository, an empty data
folder, the repository's ``data/`` served as a ``file://`` URL) each chapter's first read of a stored result is
fetched and checked, nothing stored is trained again; a result stored for other settings is refused or made
again, never served; a made result is registered; the made-log names every registered result that was made."""

import ast
import json
from pathlib import Path

import pytest
import torch

from compbook.results import checkpoints, paths
from compbook import results
from compbook.results import door

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {"compbook/results/paths.py"}                    # and every module of compbook/results/
FORBIDDEN = {"data_dir", "data_file"}


# -- the source: nothing reaches data/ around the door -----------------------------------------------------------------
def _uses(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, what)`` of each name in :data:`FORBIDDEN` a module imports, calls or reads."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [(node.lineno, f"imports {a.name}") for a in node.names if a.name in FORBIDDEN]
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN:
            found.append((node.lineno, f"uses {node.id}"))
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN:
            found.append((node.lineno, f"uses .{node.attr}"))
    return found


def offenders(root: Path) -> list[str]:
    """``module:line: what`` for each module under ``root/compbook`` other than paths.py and results/ that
    reaches ``data_dir()`` (or ``data_file``) itself."""
    out = []
    for path in sorted((root / "compbook").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in ALLOWED or rel.startswith("compbook/results/"):
            continue
        out += [f"{rel}:{line}: {what}" for line, what in sorted(_uses(ast.parse(path.read_text(), rel)))]
    return out


def test_no_module_opens_a_path_under_the_data_folder_around_the_door():
    found = offenders(ROOT)
    assert not found, ("these read or build paths under data_dir() without the registry; go through "
                       "compbook.results (stored_path, stored_or_made, made_path):\n" + "\n".join(found))


def test_the_source_check_finds_each_way_round_the_door(tmp_path):
    """The check is not blind: an import, a call and an attribute each fail, naming module and line."""
    (tmp_path / "compbook" / "results").mkdir(parents=True)
    (tmp_path / "compbook" / "bad.py").write_text(
        "from .paths import data_dir\nfrom . import paths\n\n\ndef f():\n    return paths.data_dir() / 'x'\n"
        "\n\ndef g():\n    return paths.data_file('emc2/x.json')\n")
    (tmp_path / "compbook" / "results" / "ok.py").write_text("from ..paths import data_dir\n")
    (tmp_path / "compbook" / "paths.py").write_text("def data_dir():\n    return 1\n")
    assert offenders(tmp_path) == ["compbook/bad.py:1: imports data_dir", "compbook/bad.py:6: uses .data_dir",
                                   "compbook/bad.py:10: uses .data_file"]


# -- a simulated Colab: the book's own stored results, fetched ---------------------------------------------------------
@pytest.fixture
def colab(tmp_path, monkeypatch):
    """No checkout, an empty data folder and made-log, the repository's ``data/`` as the download source:
    returns ``(cache, made_log)``."""
    cache, log = tmp_path / "home" / ".cache" / "compbook" / "data", tmp_path / "made.jsonl"
    monkeypatch.setenv(paths.DATA_VARIABLE, str(cache))
    monkeypatch.setenv(paths.DATA_URL_VARIABLE, (ROOT / "data").as_uri())
    monkeypatch.setenv(door.MADE_LOG_VARIABLE, str(log))
    monkeypatch.setattr(paths, "repository_root", lambda: None)
    log.write_text("")
    return cache, log


def _same_as_repository(cache: Path, *rels: str) -> None:
    for rel in rels:
        assert (cache / rel).read_bytes() == (ROOT / "data" / rel).read_bytes(), rel


def _never(*args, **kwargs):
    raise AssertionError("a stored result was made again")


def test_part_a_stored_runs_are_fetched_chapters_6_to_9_and_the_claims_notes(colab):
    from compbook.cppn.audit import claims, counting, tables
    cache, log = colab
    assert tables.stored("chapter6")["seeds"]
    reread, stored = claims.load()
    assert "chapter9" in stored and reread["rows"] and counting.load()["made_by"]
    assert claims.load_labelled()
    _same_as_repository(cache, "emc2/partA_reread.json", "emc2/reread.json", "emc2/counting.json",
                        "semantic/validation_batch3.json")
    assert log.read_text() == ""


def test_chapter_12_complexity_table_is_fetched(colab):
    from compbook.binding.complexity import load_complexity
    cache, _ = colab
    assert load_complexity(5)["rows"]
    _same_as_repository(cache, "binding/complexity_V5.json")
    with pytest.raises(FileNotFoundError, match=r"binding/complexity_V7\.json.*not stored.*registry"):
        load_complexity(7)


def test_chapter_13_sweeps_are_fetched_not_trained(colab, monkeypatch):
    from compbook.binding.runs import sweep as W
    cache, log = colab
    monkeypatch.setattr(W, "run_size", _never)
    records = W.load_sweeps()
    assert set(records) == set(W.default_sweep().n_values)
    _same_as_repository(cache, *[f"binding/controlled_V{v}{s}" for v in records for s in (".json", ".safetensors")])
    assert log.read_text() == ""


def test_chapter_5_twins_are_fetched_not_trained_and_the_judges_notes_load_them(colab, monkeypatch):
    from compbook.cppn import twins
    cache, log = colab
    monkeypatch.setattr(twins, "train_twins", _never)
    got = twins.stored_or_trained("skull", 64)
    assert len(got) == 3
    apple = twins.load_twins("apple", res=64)                  # the Part A judges notes
    assert len(apple) == 3 and twins.stored_loss_curves("apple")[1].shape[1] == 3
    stems = {p.name for p in (cache / "emc2").glob("twin_apple_64px_*.safetensors")}
    assert stems and all((ROOT / "data" / "emc2" / s).read_bytes() == (cache / "emc2" / s).read_bytes()
                         for s in stems)
    assert log.read_text() == ""


def test_part_b_notes_recipe_models_are_fetched_not_trained(colab, monkeypatch):
    from compbook.binding.recipe import train as recipe, evaluate as E
    from compbook.binding.recipe.config import RecipeConfig
    from compbook.binding.recipe.model import stem_for
    cache, log = colab
    cfg = RecipeConfig(**json.loads((ROOT / "data/binding/overfit_C2V5_cov0.8_s0.json").read_text())["config"])
    assert E.is_stored(stem_for(cfg, prefix="overfit"))
    monkeypatch.setattr(recipe, "run_one", _never)
    monkeypatch.setattr(recipe, "evaluate_stored", lambda stem, cfg, floors_here: stem)   # reading it is not the point
    stem = recipe.stored_or_trained(cfg, "overfit")
    assert stem == cache / "binding" / "overfit_C2V5_cov0.8_s0"
    _same_as_repository(cache, "binding/overfit_C2V5_cov0.8_s0.json", "binding/overfit_C2V5_cov0.8_s0.safetensors")
    other = RecipeConfig(**{**cfg.__dict__, "lr": cfg.lr * 2})
    with pytest.raises(ValueError, match=r"overfit_C2V5_cov0\.8_s0: stored for other settings \(lr\)"):
        recipe.stored_or_trained(other, "overfit")
    assert log.read_text() == ""


def test_a_registered_folder_comes_whole_and_a_pattern_lists_the_registrys_files(colab):
    cache, _ = colab
    folder = door.stored_path("sae/study/k8/")
    listed = json.loads((ROOT / "data/registry.json").read_text())["artifacts"]["sae/study/k8"]["files"]
    assert folder == cache / "sae/study/k8" and sorted(
        p.relative_to(cache).as_posix() for p in folder.rglob("*") if p.is_file()) == sorted(listed)
    names = door.stored_names("emc2/twin_skull_64px_*steps_seed0.json")
    assert names == sorted(f"{n}.json" for n in json.loads((ROOT / "data/registry.json").read_text())["artifacts"]
                           if n.startswith("emc2/twin_skull_64px_") and n.endswith("seed0")) and names
    assert not (cache / names[0]).exists(), "listing fetches nothing"
    assert not door.is_stored("emc2/twin_skull_64px_1steps_seed0") and door.is_stored(names[0])


# -- stored, else made: settings, the made-log, registration ----------------------------------------------------------
@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A registered data folder of its own (in this checkout) and a made-log: returns ``(folder, made_log)``."""
    folder, log = tmp_path / "data", tmp_path / "made.jsonl"
    results.init(folder)
    monkeypatch.setenv(paths.DATA_VARIABLE, str(folder))
    monkeypatch.setenv(door.MADE_LOG_VARIABLE, str(log))
    log.write_text("")
    return folder, log


def _maker(name: str, settings: dict, calls: list):
    def make():
        calls.append(name)
        results.write_json(door.made_path(name), {"settings": settings}, "python -m compbook.cppn test")
    return make


def _settings(path):
    return json.loads(Path(path).read_text())["settings"]


def test_stale_settings_are_refused_or_made_again_never_served(scratch):
    folder, log = scratch
    calls = []
    path = door.stored_or_made("emc2/r.json", {"n": 1, "k": 2}, _maker("emc2/r.json", {"n": 1, "k": 2}, calls),
                                  recorded=_settings, log=None)
    assert calls == ["emc2/r.json"] and _settings(path) == {"n": 1, "k": 2}
    assert door.stored_or_made("emc2/r.json", {"n": 1, "k": 2}, _never, recorded=_settings) == path
    with pytest.raises(ValueError, match=r"emc2/r\.json: stored for other settings \(n\).*never served"):
        door.stored_or_made("emc2/r.json", {"n": 3, "k": 2}, _never, recorded=_settings)
    with pytest.raises(ValueError, match="other settings"):
        door.stored_or_made("emc2/r.json", {"n": 3, "k": 2}, _never, recorded=_settings, may_make=False,
                               stale="remake")
    door.stored_or_made("emc2/r.json", {"n": 3, "k": 2}, _maker("emc2/r.json", {"n": 3, "k": 2}, calls),
                           recorded=_settings, stale="remake", log=None)
    assert calls == ["emc2/r.json"] * 2 and _settings(path) == {"n": 3, "k": 2}
    with pytest.raises(FileNotFoundError, match=r"emc2/q\.json: not stored.*python -m compbook\.cppn q makes it"):
        door.stored_or_made("emc2/q.json", None, _never, may_make=False, command="python -m compbook.cppn q")
    with pytest.raises(RuntimeError, match="stored nothing"):
        door.stored_or_made("emc2/q.json", None, lambda: None, log=None)
    with pytest.raises(ValueError, match="stale"):
        door.stored_or_made("emc2/r.json", None, _never, stale="serve")


def test_the_made_log_names_only_registered_results_that_were_made(scratch):
    folder, log = scratch
    calls = []
    door.stored_or_made("emc2/a.json", None, _maker("emc2/a.json", {}, calls), log=None)
    assert log.read_text() == "", "a result the registry did not list was made: not logged"
    door.stored_or_made("emc2/a.json", None, _never)
    assert log.read_text() == "", "served: nothing made"
    door.stored_or_made("emc2/a.json", None, _maker("emc2/a.json", {}, calls), remake=True, log=None)
    assert [json.loads(x) for x in log.read_text().splitlines()] == [
        {"name": "emc2/a.json", "why": "asked to make it again"}]


def test_a_made_result_is_registered_in_its_store(scratch):
    """A writer that does not record (a plain file) is registered by the door; a checkpoint's two files are."""
    folder, _ = scratch

    def make():
        p = door.made_path("binding/full/m")
        p.parent.mkdir(parents=True)
        p.with_name("m.json").write_text("{}")
        p.with_name("m.safetensors").write_bytes(b"x")

    door.stored_or_made("m", None, make, store="binding/full", log=None)
    art = results.read_registry(folder)["artifacts"]["binding/full/m"]
    assert art["path"] == "binding/full/m" and sorted(art["files"]) == ["binding/full/m.json",
                                                                        "binding/full/m.safetensors"]
    results.verify(folder / "binding/full/m.safetensors")


def test_outside_a_checkout_a_made_result_goes_to_the_cache_and_its_registry(colab):
    cache, log = colab
    calls = []
    door.stored_or_made("emc2/new.json", {"n": 1}, _maker("emc2/new.json", {"n": 1}, calls),
                           recorded=_settings, log=None)
    reg = results.read_registry(cache)
    assert "emc2/new" in reg["artifacts"] and "emc2/partA_reread" in reg["artifacts"]
    assert (cache / "emc2/new.json").is_file() and log.read_text() == ""
    checkpoints.save(door.made_path("emc2/t"), {"w": torch.ones(2)}, {}, format="test/1")
    assert door.is_stored("emc2/t")


def test_a_registered_result_made_in_colab_is_logged(colab):
    cache, log = colab
    door.stored_or_made("binding/complexity_V5.json", None,
                           lambda: results.write_json(cache / "binding/complexity_V5.json", {"rows": []}),
                           remake=True, log=None)
    assert json.loads(log.read_text()) == {"name": "binding/complexity_V5.json", "why": "asked to make it again"}


def test_names_stay_inside_the_data_folder(scratch):
    for bad in ("../x.json", "/etc/passwd", "", "a/../../b", 3):
        with pytest.raises(ValueError):
            door.stored_path(bad)
    with pytest.raises(ValueError, match="pattern"):
        door.stored_path("emc2/*.json")
    with pytest.raises(FileNotFoundError, match=r"data/emc2/none\.json: not stored"):
        door.stored_path("emc2/none.json")
    outside = Path(scratch[0]).parent / "elsewhere.json"
    outside.write_text("{}")
    assert door.stored_path(outside) == outside          # a caller's own folder is taken as it is


def test_a_cache_read_and_extended_is_fetched_when_stored_else_its_new_place(colab):
    """``local_path``: the judge caches and the choice file (read, then filled) come from the repository when
    it stores them, else they start where a writer puts them."""
    from compbook.cppn.judges import semantic
    cache, _ = colab
    assert semantic.choice_path() == cache / "semantic/choice.json" and (cache / "semantic/choice.json").is_file()
    _same_as_repository(cache, "semantic/choice.json")
    new = door.local_path("judge_cache/a-new-judge-0123abcd.json")
    assert new == cache / "judge_cache/a-new-judge-0123abcd.json" and not new.exists()


def test_a_maker_outside_the_door_notes_what_it_makes(colab):
    cache, log = colab
    door.note_made("emc2/not_registered.json", "trained by a command")
    assert log.read_text() == ""
    door.note_made(door.made_path("binding/overfit_C2V5_cov0.8_s0"), "trained by run_one")
    assert json.loads(log.read_text()) == {"name": "binding/overfit_C2V5_cov0.8_s0", "why": "trained by run_one"}
