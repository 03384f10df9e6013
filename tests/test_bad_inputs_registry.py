"""A hostile registry of stored results: ``data/registry.json`` is input (downloaded from the network in Colab), so
every path in it must stay inside the data folder and every entry must have the registry's shape.

Each case writes a registry with one bad entry (beside a secret file just outside the data folder) and loads the
entry: it must raise ``ValueError`` quickly, naming the entry and the field, never return the secret, and leave the
data folder's files byte-identical. The likely bug: a path joined to the data folder unchecked (``../``, an
absolute path, a link), or an entry's fields read without checking their type (``AttributeError`` on a list).
"""

import hashlib
import json

import pytest
from refusal import assert_refused

from compbook import results

SECRET = '{"secret": "outside the data folder"}'
DIGEST = hashlib.sha256(SECRET.encode()).hexdigest()


def entry(path, files=None, **fields):
    return {"path": path, "command": "python -m compbook.cppn counting",
            "files": {path: DIGEST} if files is None else files} | fields


#: name -> (entry name, entry, field the message must name)
HOSTILE = {
    "path ../ out of the folder": ("../outside_secret", entry("../outside_secret.json"), "'path'"),
    "file ../ out of the folder": ("emc2/r", entry("emc2/r.json", {"emc2/r.json": DIGEST,
                                                                   "../outside_secret.json": DIGEST}), "'files'"),
    "path .. in the middle": ("emc2/../../outside_secret", entry("emc2/../../outside_secret.json"), "'path'"),
    "absolute path": ("/etc/passwd", entry("/etc/passwd"), "'path'"),
    "absolute file under a good path": ("emc2", entry("emc2/", {"/etc/passwd": DIGEST}), "'files'"),
    "backslash path": ("..\\outside_secret", entry("..\\outside_secret.json"), "'path'"),
    "files a list": ("emc2/r", entry("emc2/r.json", ["emc2/r.json"]), "'files'"),
    "files a string": ("emc2/r", entry("emc2/r.json", "emc2/r.json"), "'files'"),
    "entry a list": ("emc2/r", ["emc2/r.json"], "must be an object"),
    "entry a string": ("emc2/r", "emc2/r.json", "must be an object"),
    "command missing": ("emc2/r", {"path": "emc2/r.json", "files": {"emc2/r.json": DIGEST}}, "'command'"),
    "command a number": ("emc2/r", entry("emc2/r.json", command=3), "'command'"),
    "path a number": ("emc2/r", entry(3, {"emc2/r.json": DIGEST}), "'path'"),
    "note a list": ("emc2/r", entry("emc2/r.json", note=["x"]), "'note'"),
    "unknown field": ("emc2/r", entry("emc2/r.json", url="http://example.com/r.json"), "'url'"),
    "digest not hex": ("emc2/r", entry("emc2/r.json", {"emc2/r.json": "not a digest"}), "'files'"),
    "digest a number": ("emc2/r", entry("emc2/r.json", {"emc2/r.json": 7}), "'files'"),
    "file of another artifact": ("emc2/r", entry("emc2/r.json", {"emc2/r.json": DIGEST, "sae/x.json": DIGEST}),
                                 "'files'"),
    "name not its path's": ("emc2/r", entry("emc2/other.json"), "'path'"),
    "hidden file": ("emc2/.r", entry("emc2/.r.json"), "'path'"),
}


@pytest.fixture
def data(tmp_path, monkeypatch):
    """A data folder as ``$COMPBOOK_DATA`` with a good artifact ``emc2/r``, a secret file just outside it."""
    folder = tmp_path / "data"
    results.init(folder)
    monkeypatch.setenv("COMPBOOK_DATA", str(folder))
    (tmp_path / "outside_secret.json").write_text(SECRET)
    (folder / "emc2").mkdir()
    (folder / "emc2" / "r.json").write_text(SECRET)
    return folder


def write_registry(folder, artifacts):
    (folder / results.REGISTRY).write_text(json.dumps({"format": results.FORMAT, "artifacts": artifacts}))


@pytest.mark.parametrize("name, bad, field", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_registry_entry_is_refused_naming_the_entry_and_the_field(data, name, bad, field):
    write_registry(data, {name: bad})
    e = assert_refused(lambda: results.load(name), [data])
    assert repr(name) in str(e) and field in str(e), f"the message names neither the entry nor the field: {e}"
    assert "outside the data folder" not in str(e), "the secret's content was read"
    e = assert_refused(lambda: results.verify(data / "emc2" / "r.json"), [data])   # every reader checks it
    assert repr(name) in str(e)


def test_a_good_registry_still_loads(data):
    write_registry(data, {"emc2/r": entry("emc2/r.json")})
    assert results.load("emc2/r").data == json.loads(SECRET)


def test_a_link_out_of_the_data_folder_is_refused(data):
    """The registered file is a link to the secret outside (its digest matches: the digest alone lets it in)."""
    (data / "link.json").symlink_to(data.parent / "outside_secret.json")
    write_registry(data, {"link": entry("link.json")})
    e = assert_refused(lambda: results.load("link"), [data])
    assert "'link'" in str(e) and "leaves its folder" in str(e)


def test_a_linked_folder_out_of_the_data_folder_is_refused(data):
    (data / "sub").symlink_to(data.parent, target_is_directory=True)
    write_registry(data, {"sub/outside_secret": entry("sub/outside_secret.json")})
    e = assert_refused(lambda: results.load("sub/outside_secret"), [data])
    assert "'sub/outside_secret'" in str(e) and "leaves its folder" in str(e)


def test_a_link_made_after_the_registry_was_read_is_refused(data):
    write_registry(data, {"emc2/r": entry("emc2/r.json")})
    assert results.load("emc2/r").data == json.loads(SECRET)            # read and cached
    (data / "emc2" / "r.json").unlink()
    (data / "emc2" / "r.json").symlink_to(data.parent / "outside_secret.json")
    e = assert_refused(lambda: results.load("emc2/r"), [data])
    assert "leaves its folder" in str(e)


def test_an_unregistered_data_folder_refuses_a_link_out_too(tmp_path, monkeypatch):
    folder = tmp_path / "scratch"
    folder.mkdir()
    (tmp_path / "outside_secret.json").write_text(SECRET)
    (folder / "link.json").symlink_to(tmp_path / "outside_secret.json")
    monkeypatch.setenv("COMPBOOK_DATA", str(folder))
    for name in ("link", "../outside_secret", "/etc/passwd"):
        e = assert_refused(lambda: results.load(name), [folder])
        assert "name" in str(e)
