"""compbook.results (the registry of stored results, data/registry.json: its loader and writers) and
compbook.results.upkeep (its checks)."""

import contextlib
import io
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from compbook.results import checkpoints, paths
from compbook import results
from compbook.results import upkeep
from compbook.cppn.judges.cache import CachedJudge, read_cache, write_cache

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
REGISTRY = json.loads((DATA / results.REGISTRY).read_text())["artifacts"]


# -- the project's registry ----------------------------------------------------------------------------------------
def test_every_file_of_data_is_registered_with_its_digest():
    """Every file of data/ but the READMEs (documentation, not artifacts) and the registry itself."""
    on_disk = upkeep.data_files(DATA)
    assert len(on_disk) > 400 and not [f for f in on_disk if f.endswith("README.md")]
    listed = {rel: sha for a in REGISTRY.values() for rel, sha in a["files"].items()}
    assert sorted(listed) == on_disk, "registered files and files on disk differ: python -m compbook.results refresh"
    wrong = [rel for rel, sha in listed.items() if results.sha256(DATA / rel) != sha]
    assert not wrong, f"digests differ: {wrong[:5]} (python -m compbook.results refresh)"
    assert upkeep.check(DATA) == []


def test_registry_is_sorted_and_each_entry_names_its_files():
    assert list(REGISTRY) == sorted(REGISTRY)
    for name, a in REGISTRY.items():
        assert name == results.name_of(a["path"]) and a["files"]
        kind = results.kind(a)
        if kind == "file":
            assert list(a["files"]) == [a["path"]]
        elif kind == "checkpoint":
            assert sorted(a["files"]) == [a["path"] + ".json", a["path"] + ".safetensors"]
        else:
            assert all(f.startswith(a["path"]) for f in a["files"])


def _commands():
    out = set()
    for a in REGISTRY.values():
        out |= {c.strip() for c in a["command"].split(" ; ")}
    return sorted(out)


@pytest.mark.parametrize("command", _commands())
def test_every_registered_command_answers_help(command):
    """Each command (``python -m compbook.<part> <command> ...``) run with ``--help`` appended: exit 0, usage."""
    argv = shlex.split(command)
    assert argv[:2] == ["python", "-m"] and argv[2].startswith("compbook."), command
    main = __import__(f"{argv[2]}.__main__", fromlist=["main"]).main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as e:
        main(argv[3:] + ["--help"])
    assert e.value.code == 0 and "usage:" in out.getvalue(), command


def test_the_registry_command_line_answers_help():
    r = subprocess.run([sys.executable, "-m", "compbook.results", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "check" in r.stdout and "refresh" in r.stdout


def test_every_json_artifact_says_what_made_it():
    """One spelling: a top-level ``made_by`` (the command line) in every JSON of data/, no ``command`` key."""
    for rel in upkeep.data_files(DATA):
        if rel.endswith(".json"):
            d = json.loads((DATA / rel).read_text())
            assert isinstance(d, dict) and isinstance(d.get("made_by"), str) and d["made_by"], rel
            assert "command" not in d and "made_by" not in d.get("metadata", {}), rel
            assert d["made_by"].startswith(results.PROJECT_COMMAND), rel


def test_load_returns_the_data_and_a_provenance_line():
    got = results.load("emc2/counting")
    assert got.data == json.loads((DATA / "emc2" / "counting.json").read_text())
    assert got.provenance.startswith("emc2/counting: made by python -m compbook.cppn counting")
    sha = results.sha256(DATA / "emc2" / "counting.json")
    assert sha[:12] in got.provenance
    stem, line = results.load("binding/clevr2d_swap")
    assert stem == DATA / "binding" / "clevr2d_swap" and "clevr --retrain" in line
    assert checkpoints.read_header(stem, format=json.loads(stem.with_suffix(".json").read_text())["format"])
    folder = results.load("sae/study/k32").data
    assert folder.is_dir() and len(list(folder.glob("*.safetensors"))) == 15
    text = results.load("judge_cache/labeller_labels_batch2.txt")
    assert text.data.startswith("4000 ") and "labeller" in text.provenance
    assert all(len(line) <= 80 for line in results.wrap(got.provenance).splitlines())


def test_load_refuses_an_unregistered_name():
    with pytest.raises(ValueError, match="not a registered artifact"):
        results.load("emc2/no_such_result")
    with pytest.raises(ValueError, match="did you mean"):
        results.load("counting")


def test_no_chapter_parses_stored_json_itself():
    """Chapters load stored results only through compbook.results (or a part's loader built on it)."""
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        assert not re.search(r"json\.loads?\(", code), f"{nb.name}: json.load in a chapter (use results.load)"


# -- a scratch registered data folder --------------------------------------------------------------------------------
@pytest.fixture
def data(tmp_path, monkeypatch):
    """An empty registered data folder as ``$COMPBOOK_DATA``."""
    folder = tmp_path / "data"
    results.init(folder)
    monkeypatch.setenv("COMPBOOK_DATA", str(folder))
    return folder


def test_a_writer_records_and_load_reads(data):
    path = results.write_json(data / "part" / "table.json", {"rows": [1, 2]}, "python -m compbook.sae study")
    reg = results.read_registry(data)["artifacts"]
    assert reg["part/table"] == {"path": "part/table.json", "command": "python -m compbook.sae study",
                                 "files": {"part/table.json": results.sha256(path)}}
    got = results.load("part/table")
    assert got.data == {"made_by": "python -m compbook.sae study", "rows": [1, 2]}
    results.write_json(path, {"rows": [3]})       # re-running the command: the registry follows, loads work
    assert results.load("part/table").data["rows"] == [3]
    assert results.read_registry(data)["artifacts"]["part/table"]["command"] == "python -m compbook.sae study"
    assert upkeep.check(data) == []


def test_an_edited_file_is_refused_naming_it_and_what_differs(data):
    path = results.write_json(data / "t.json", {"x": 1}, "python -m compbook.cppn counting")
    path.write_text(path.read_text().replace('"x": 1', '"x": 2'))
    with pytest.raises(ValueError, match=r"t\.json: sha256 .* differs from the registry's .*refresh t\.json"):
        results.load("t")
    with pytest.raises(ValueError, match="differs from the registry"):
        from compbook import checks
        results.json_file(path)
    assert any("sha256 differs" in p for p in upkeep.check(data))
    changes, unregistered = upkeep.refresh(data)
    assert changes == ["t.json: new digest ('t')"] and unregistered == []
    assert results.load("t").data["x"] == 2


def test_an_unregistered_file_is_refused(data):
    (data / "stray.json").write_text('{"made_by": "python -m compbook.cppn counting"}')
    from compbook import checks
    with pytest.raises(ValueError, match=r"stray\.json: not in the registry .*python -m compbook.results add"):
        results.json_file(data / "stray.json")
    assert upkeep.check(data) == ["stray.json: not registered"]
    assert upkeep.refresh(data) == ([], ["stray.json"])
    assert upkeep.add(data, "stray.json") == "stray"        # the command: the file's own made_by
    assert results.load("stray").data["made_by"] == "python -m compbook.cppn counting"
    with pytest.raises(ValueError, match="already registered"):
        upkeep.add(data, "stray.json", "python -m compbook.cppn counting")


def test_checkpoints_record_and_verify(data):
    t = {"w": torch.arange(6.0).reshape(2, 3)}
    checkpoints.save(data / "sae" / "runs" / "m", t, {"config": {}}, format="x/1",
                     made_by="python -m compbook.sae runs")
    a = results.read_registry(data)["artifacts"]["sae/runs/m"]
    assert results.kind(a) == "checkpoint" and sorted(a["files"]) == ["sae/runs/m.json", "sae/runs/m.safetensors"]
    side = json.loads((data / "sae" / "runs" / "m.json").read_text())
    assert list(side)[:2] == ["format", "made_by"] and side["made_by"] == "python -m compbook.sae runs"
    assert torch.equal(checkpoints.load(data / "sae" / "runs" / "m", format="x/1")[0]["w"], t["w"])
    (data / "sae" / "runs" / "m.json").write_text(json.dumps(side | {"config": {"k": 1}}, indent=1))
    with pytest.raises(ValueError, match="differs from the registry"):      # the tensor digest still matches
        checkpoints.load(data / "sae" / "runs" / "m", format="x/1")


def test_a_folder_artifact_takes_new_files(data):
    (data / "runs").mkdir()
    (data / "runs" / "a.txt").write_text("a")
    assert upkeep.add(data, "runs", "python -m compbook.sae runs") == "runs"
    (data / "runs" / "b.txt").write_text("b")
    assert upkeep.check(data) == ["runs/b.txt: not registered"]
    assert upkeep.refresh(data, ["runs"]) == (["runs/b.txt: added to 'runs'"], [])
    (data / "runs" / "a.txt").unlink()
    assert upkeep.refresh(data)[0] == ["runs/a.txt: missing, dropped from 'runs'"]
    (data / "runs" / "c.txt").write_text("c")
    results.record(data / "runs" / "c.txt")               # a writer's new file joins its folder
    assert sorted(results.read_registry(data)["artifacts"]["runs"]["files"]) == ["runs/b.txt", "runs/c.txt"]
    assert results.load("runs").data == data / "runs"


def test_files_outside_a_registered_folder_load_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    results.write_json(tmp_path / "a.json", {"x": 1})
    assert not (tmp_path / results.REGISTRY).exists()
    assert results.load("a").data["x"] == 1 and "not registered" in results.load("a").provenance
    results.verify(tmp_path / "a.json")


class _Yes:
    identity = "test:always-yes"

    def __call__(self, images, concept, *, reference=None, questions=None):
        return torch.ones(len(images), dtype=torch.bool)


def test_judge_cache_reads_verify_and_fills_record(data, tmp_path):
    path = data / "judge_cache" / "yes.json"
    judge = CachedJudge(path, _Yes(), mode="fill")
    judge(torch.zeros(2, 8, 8, 3), "skull", questions=[{"q": 1}, {"q": 2}])
    assert results.read_registry(data)["artifacts"]["judge_cache/yes"]["files"]["judge_cache/yes.json"] == \
        results.sha256(path)
    assert json.loads(path.read_text())["made_by"]
    assert len(CachedJudge(path)) == 2
    identity, entries = read_cache(path)
    entries = {k: dict(e, verdict=False) for k, e in entries.items()}
    import unittest.mock as um
    with um.patch.object(results, "record", lambda *a, **k: None):   # re-sealed by hand, not recorded
        write_cache(path, identity, entries)
    with pytest.raises(ValueError, match="differs from the registry"):
        CachedJudge(path)
    elsewhere = tmp_path / "other.json"
    shutil.copy(path, elsewhere)
    assert len(CachedJudge(elsewhere)) == 2, "a cache outside the registered data folder loads as before"


def test_colab_downloads_are_verified(tmp_path, monkeypatch):
    """No checkout: the registry and the files are downloaded (here: from a file:// URL) and every file verified."""
    source = tmp_path / "repo"
    results.init(source)
    monkeypatch.setenv("COMPBOOK_DATA", str(source))
    results.write_json(source / "emc2" / "r.json", {"x": 1}, "python -m compbook.cppn reread")
    cache = tmp_path / "cache"
    monkeypatch.setenv("COMPBOOK_DATA", str(cache))
    monkeypatch.setattr(paths, "repository_root", lambda: None)
    monkeypatch.setenv(paths.DATA_URL_VARIABLE, source.as_uri())      # the repository's data/ (tests/test_paths.py)
    assert results.load("emc2/r").data["x"] == 1 and (cache / results.REGISTRY).is_file()
    (cache / "emc2" / "r.json").write_text('{"x": 2}')            # a stale or tampered download
    with pytest.raises(ValueError, match="differs from the registry"):
        results.load("emc2/r")


def test_the_command_line_adds_refreshes_checks_and_stamps(data, capsys):
    from compbook.results.__main__ import main
    (data / "k.json").write_text('{"items": [1]}')
    assert main(["check"]) == 1 and "k.json: not registered" in capsys.readouterr().out
    assert main(["add", str(data / "k.json"), "--command", "python -m compbook.cppn labelling sheets"]) == 0
    assert main(["check"]) == 0
    assert main(["stamp", "k.json"]) == 0 and json.loads((data / "k.json").read_text())["made_by"].endswith("sheets")
    (data / "k.json").write_text('{"made_by": "python -m compbook.cppn labelling sheets", "items": [2]}')
    assert main(["check"]) == 1 and main(["refresh", "k.json"]) == 0 and main(["check"]) == 0
    assert main(["show", "k"]) == 0 and "k: made by python -m compbook.cppn labelling sheets" in capsys.readouterr().out


@pytest.mark.parametrize("text, first", [
    ('{\n "format": "compbook-judge-cache/1",\n "identity": "x",\n "entries": {\n  "a": {"v": 1},\n'
     '  "b": {"v": 2}\n }\n}\n',
     "format"),
    ('{\n"note": "a key",\n"items": [\n{\n"item": 1\n}\n]\n}', "made_by"),
    ('{"rows": [1, 2]}\n', "made_by"),
])
def test_stamp_inserts_made_by_and_keeps_the_layout(data, text, first):
    path = data / "old.json"
    path.write_text(text)
    assert upkeep.stamp(path, "python -m compbook.cppn judges fill")
    new = path.read_text()
    d = json.loads(new)
    assert list(d)[0] == first and d["made_by"] == "python -m compbook.cppn judges fill"
    assert {k: v for k, v in d.items() if k != "made_by"} == json.loads(text)
    assert new.count("\n") == text.count("\n") + (1 if text.startswith("{\n") else 0), "one line added, no other"
    assert results.load("old").data == d
    assert not upkeep.stamp(path, "python -m compbook.cppn judges fill"), "stamping twice changes nothing"


def test_stamp_turns_an_old_command_key_into_made_by(data):
    path = data / "c.json"
    path.write_text(json.dumps({"rows": [1], "command": "python -m compbook.cppn counting"}, indent=1) + "\n")
    assert upkeep.stamp(path)
    d = json.loads(path.read_text())
    assert d == {"made_by": "python -m compbook.cppn counting", "rows": [1]} and path.read_text().startswith('{\n "')
    with pytest.raises(ValueError, match="give the command"):
        (data / "n.json").write_text("{}")
        upkeep.stamp(data / "n.json")
