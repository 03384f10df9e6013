"""The API appendix (``appendix/``, built by ``_ext/compbook_api.py`` with Sphinx autodoc): every public module of
compbook in one group, each linked to chapters that exist, placed after Part C, and a broken cross-reference in it
fails the build (a small Sphinx build here; `make test` builds the whole book, appendix included)."""

import importlib.util
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
APP = types.SimpleNamespace(srcdir=str(ROOT))


def _extension():
    spec = importlib.util.spec_from_file_location("compbook_api", ROOT / "_ext" / "compbook_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


API = _extension()


def _public_modules() -> set[str]:
    out = set()
    for path in (ROOT / "compbook").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts):
            out.add(".".join(parts))
    return out


def test_every_public_module_is_in_exactly_one_group():
    listed = [m for group in API.GROUPS for m in API.group_modules(APP, group)]
    assert len(listed) == len(set(listed)), "a module listed twice"
    assert set(listed) == _public_modules()
    assert not [m for m in listed if m.endswith("__main__")], "command lines are never imported by the build"


def test_groups_follow_the_package():
    assert set(API.group_modules(APP, "part-a")) == {m for m in _public_modules() if m.startswith("compbook.cppn")}
    assert set(API.group_modules(APP, "part-b")) == {m for m in _public_modules()
                                                     if m.startswith("compbook.binding")}
    assert set(API.group_modules(APP, "part-c")) == {m for m in _public_modules() if m.startswith("compbook.sae")}


@pytest.mark.parametrize("group", list(API.GROUPS))
def test_each_module_links_to_chapters_of_its_part(group):
    numbered, pages = API.chapter_pages(APP)
    part_pages = {"part-a": range(1, 10), "part-b": range(10, 14), "part-c": range(14, 17)}.get(group)
    for module in API.group_modules(APP, group):
        taught = API.teaching_pages(APP, module, group)
        assert taught and all(p in pages or p == "intro" for p in taught), (module, taught)
        if part_pages is not None:
            notes = {"part-a": "notes_part_a", "part-b": "notes_part_b", "part-c": "notes_part_c"}[group]
            assert all(p in {numbered[n] for n in part_pages} or notes in p for p in taught), (module, taught)


def test_teaching_pages_read_the_docstring():
    assert API.teaching_pages(APP, "compbook.cppn.optim", "part-a") == ["chapters/08_optimizer"]
    assert API.teaching_pages(APP, "compbook.binding.decomposition", "part-b") == ["chapters/11_scenes_are_sums"]
    assert API._expand("2 and 4") == [2, 4] and API._expand("10-13") == [10, 11, 12, 13]


def test_appendix_comes_after_part_c_with_a_page_per_group():
    captions = [part["caption"] for part in TOC["parts"]]
    assert captions.index("Appendix") == len(captions) - 1 and captions[-2].startswith("Part C")
    appendix = TOC["parts"][-1]["chapters"][0]
    pages = [appendix["file"]] + [s["file"] for s in appendix["sections"]]
    blocks = []
    for page in pages:
        text = (ROOT / f"{page}.md").read_text()
        blocks += API.BLOCK.findall(text)
    assert sorted(blocks) == sorted(API.GROUPS)


def _mini_build(tmp_path, body: str) -> tuple[int, str]:
    """A two-page Sphinx project with the extension, an API page holding ``body``; (exit status, log)."""
    import io
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    (src / API.API_FOLDER).mkdir(parents=True)
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT / '_ext')!r})\n"
                                 "extensions = ['myst_parser', 'compbook_api']\n")
    (src / "index.md").write_text(f"# Index\n\n```{{toctree}}\n{API.API_FOLDER}/page\n```\n")
    (src / API.API_FOLDER / "page.md").write_text(f"# API\n\n```{{eval-rst}}\n{body}\n```\n")
    log = io.StringIO()
    try:
        Sphinx(str(src), str(src), str(tmp_path / "out"), str(tmp_path / "doctrees"), "html", status=log,
               warning=log, freshenv=True).build()
        return 0, log.getvalue()
    except Exception as e:   # the extension's ExtensionError at build-finished
        return 1, log.getvalue() + str(e)


def test_a_broken_cross_reference_fails_the_build(tmp_path):
    code, log = _mini_build(tmp_path, ".. py:function:: compbook.stats.wilson(k, n)\n\n"
                                      "See :func:`compbook.stats.wilson` and :func:`compbook.stats.no_such_function`.")
    assert code == 1 and "no_such_function" in log, log[-2000:]


def test_a_reexported_name_resolves_and_passes(tmp_path):
    code, log = _mini_build(tmp_path, ".. py:class:: compbook.cppn.network.CPPN\n\n"
                                      "See :class:`compbook.cppn.CPPN` (defined in ``compbook.cppn.network``) and "
                                      ":class:`torch.Tensor` (outside compbook).")
    assert 'href="#compbook.cppn.network.CPPN"' in (tmp_path / "out" / API.API_FOLDER / "page.html").read_text()
    assert code == 0, log[-2000:]
