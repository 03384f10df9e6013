"""The book's API appendix (``appendix/``): one block that lists a group of compbook's modules for autodoc.

A block ``{compbook-api} shared`` (or ``part-a``, ``part-b``, ``part-c``; written as a fenced directive) is
replaced, when its page is read, by one section per public
module of that group: a line linking the chapters that teach it, then ``automodule`` with the module's documented
functions, classes and data, generated from the docstrings by ``sphinx.ext.autodoc``. Modules are found from the
files (``pkgutil``, nothing imported to list them); ``__main__`` modules (command lines) are left out, since importing
one runs it.

The chapters that teach a module are those its docstring names ("chapter 5", "chapters 10-11", "chapters 2 and 4",
``notes_part_a_claims``); a module whose docstring names none gets the chapters whose code imports it, else its
part's first chapter (the landing page for the shared modules).

The build fails on any warning from these pages or from compbook's docstrings (a broken cross-reference included:
``nitpicky`` is on for them, off for the rest of the book), so the reference never ships with a dead link.
"""

from __future__ import annotations

import json
import logging
import pkgutil
import re
import sys
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.logging import get_node_location

PACKAGE = "compbook"
#: group -> (title, packages whose modules it holds, top-level modules only)
GROUPS = {
    "shared": ("Shared", [PACKAGE, f"{PACKAGE}.book", f"{PACKAGE}.results", f"{PACKAGE}.runs",
                          f"{PACKAGE}.runs.sweeps"]),
    "part-a": ("Part A", [f"{PACKAGE}.cppn"]),
    "part-b": ("Part B", [f"{PACKAGE}.binding"]),
    "part-c": ("Part C", [f"{PACKAGE}.sae"]),
}
API_FOLDER = "appendix"
#: targets outside compbook (torch, numpy, the standard library, ...): not documented here, never a broken link
OWN_TARGET = re.compile(rf"^(~?\.|~?{PACKAGE}\b)")
NUMBER = r"\d+(?:\s*(?:-|–|,|and|or)\s*\d+)*"
CHAPTER_WORDS = re.compile(rf"\b[Cc]hapters?\s+({NUMBER})")
NOTES_NAME = re.compile(r"\bnotes_part_[abc]_\w+")


def _source_root(app) -> Path:
    return Path(app.srcdir)


def _package_dir(app, package: str) -> Path:
    return _source_root(app).joinpath(*package.split("."))


def group_modules(app, group: str) -> list[str]:
    """The public modules of a group, in file order: each package itself, then its modules (subpackages recursed,
    except a group's own subpackages that another group lists)."""
    listed = {p for _, packages in GROUPS.values() for p in packages}
    out = []

    def walk(package: str, top: bool):
        out.append(package)
        for info in sorted(pkgutil.iter_modules([str(_package_dir(app, package))]), key=lambda m: m.name):
            name = f"{package}.{info.name}"
            if info.name.startswith("_") or name in listed:
                continue
            if info.ispkg:
                if not top or group != "shared":
                    walk(name, False)
            else:
                out.append(name)

    for package in GROUPS[group][1]:
        walk(package, True)
    return out


def _module_file(app, module: str) -> Path:
    path = _package_dir(app, module)
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _docstring(app, module: str) -> str:
    import ast
    return ast.get_docstring(ast.parse(_module_file(app, module).read_text())) or ""


def _expand(numbers: str) -> list[int]:
    out = []
    for a, b in re.findall(r"(\d+)(?:\s*[-–]\s*(\d+))?", numbers):
        out.extend(range(int(a), int(b or a) + 1))
    return out


def chapter_pages(app) -> tuple[dict, list]:
    """Chapter number -> page (``chapters/05_emc2_bench``), and every page of the table of contents in order."""
    toc = yaml.safe_load((_source_root(app) / "_toc.yml").read_text())
    pages = [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    numbered = {int(Path(p).name[:2]): p for p in pages if Path(p).name[:2].isdigit()}
    return numbered, pages


def _importers(app, module: str, pages: list) -> list[str]:
    """Chapters whose code imports ``module`` (``import compbook.x``, ``from compbook import x``, ``from compbook.x
    import ...``)."""
    parent, _, leaf = module.rpartition(".")
    pattern = re.compile(rf"(import\s+{re.escape(module)}\b|from\s+{re.escape(module)}\s+import"
                         rf"|from\s+{re.escape(parent)}\s+import\s+[^\n]*\b{re.escape(leaf)}\b)")
    found = []
    for page in pages:
        path = _source_root(app) / f"{page}.ipynb"
        if not path.is_file():
            continue
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "code")
        if pattern.search(code):
            found.append(page)
    return found


def teaching_pages(app, module: str, group: str) -> list[str]:
    """The pages that teach ``module`` (see the module docstring's rule), at most six, in book order."""
    numbered, pages = chapter_pages(app)
    doc = _docstring(app, module)
    named = {numbered[n] for m in CHAPTER_WORDS.findall(doc) for n in _expand(m) if n in numbered}
    named |= {f"chapters/{n}" for n in NOTES_NAME.findall(doc) if f"chapters/{n}" in pages}
    found = [p for p in pages if p in named]
    if not found or len(found) > 6:
        found = _importers(app, module, pages) or found
    if not found:
        first = {"part-a": 1, "part-b": 10, "part-c": 14}.get(group)
        return [numbered[first]] if first else ["intro"]
    return found[:6]


def _title(app, page: str) -> str:
    if page == "intro":
        return "the book's introduction"
    name = Path(page).name
    return f"chapter {int(name[:2])}" if name[:2].isdigit() else name.replace("_", " ")


BLOCK = re.compile(r"^```\{compbook-api\}[ \t]+(\S+)[ \t]*\n```[ \t]*$", re.M)


def group_markdown(app, group: str) -> str:
    """The group's modules as MyST markdown: per module a heading, its chapters, and ``automodule``."""
    if group not in GROUPS:
        raise ExtensionError(f"compbook-api: unknown group {group!r} (one of {', '.join(GROUPS)})")
    out = []
    for module in group_modules(app, group):
        links = ", ".join(f"{{doc}}`{_title(app, p)} </{p}>`" for p in teaching_pages(app, module, group))
        out += [f"## `{module}`", "", f"*Taught in* {links}.", "",
                "```{eval-rst}", f".. automodule:: {module}", "   :members:", "   :undoc-members:", "   :ignore-module-all:", "```", ""]
    return "\n".join(out)


def _expand_blocks(app, docname, source):
    """``source-read``: each ``{compbook-api} GROUP`` block of an appendix page becomes the group's markdown."""
    if docname.startswith(f"{API_FOLDER}/"):
        source[0] = BLOCK.sub(lambda m: group_markdown(app, m.group(1)), source[0])


class _APIWarnings(logging.Handler):
    """Collects the warnings of the API pages and of compbook's docstrings."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.found: list[str] = []

    def emit(self, record):
        location = getattr(record, "location", None)
        if isinstance(location, nodes.Node):
            location = get_node_location(location)
        elif isinstance(location, tuple):
            location = ":".join(str(x) for x in location if x is not None)
        where = str(location or "")
        if f"{API_FOLDER}/" in where or f"docstring of {PACKAGE}." in where or "compbook-api" in where:
            self.found.append(f"{where}: {record.getMessage()}")


def _missing_reference(app, domain, node):
    """Nitpicky only on the API pages: elsewhere (and for targets outside compbook) the warning is dropped."""
    if not str(node.get("refdoc", "")).startswith(f"{API_FOLDER}/"):
        # elsewhere only what warned before nitpicky was turned on (a broken {doc} link, ...) still warns
        return None if node.get("refwarn") else True
    if node.get("refdomain") == "py" and not OWN_TARGET.match(str(node.get("reftarget", ""))):
        context = node.get("py:module") or ""
        if not context.startswith(PACKAGE) or "." in str(node.get("reftarget", "")):
            return True
    return None


def _finish(app, exception):
    handler = app.compbook_api_warnings
    logging.getLogger("sphinx").removeHandler(handler)
    if exception is None and handler.found:
        raise ExtensionError("the API reference has warnings (a broken cross-reference, a docstring that does not "
                             "parse, ...):\n  " + "\n  ".join(handler.found))


DATA = object()   # what _canonical returns for a module's constant
LITERAL = re.compile(r"(``.+?``|`[^`]+`_?)")


def _escape_bars(app, what, name, obj, options, lines):
    """``autodoc-process-docstring``: a bar in prose is an absolute value or a norm (``|w|``, ``|<f_i, f_j>|``),
    never an RST substitution; literals and roles are left as they are."""
    for i, line in enumerate(lines):
        if "|" in line:
            lines[i] = "".join(part if k % 2 else part.replace("|", "\\|")
                               for k, part in enumerate(LITERAL.split(line)))


def _google_sections(app, what, name, obj, options, lines):
    if what in ("function", "method", "class", "exception"):
        from sphinx.ext import napoleon
        napoleon._process_docstring(app, what, name, obj, options, lines)


def _canonical(name: str, context: str):
    """The object a dotted name reaches, imported (a re-export like ``compbook.cppn.CPPN``, a name imported into the
    context module like ``CPPN`` in ``compbook.cppn.fer``), and its defining name, or None."""
    import importlib
    candidates = [name] if name.startswith(PACKAGE) else [f"{context}.{name}", name]
    if name.startswith("."):
        candidates = [f"{context.rsplit('.', name.count('.', 0, len(name) - len(name.lstrip('.'))) - 1)[0]}."
                      f"{name.lstrip('.')}", f"{context}.{name.lstrip('.')}"]
    for dotted in candidates:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module_name = ".".join(parts[:cut])
            if module_name.split(".")[-1] == "__main__":
                break
            try:
                obj = importlib.import_module(module_name)
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                break
            if isinstance(obj, type(importlib)):
                return obj.__name__
            module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
            if module and qualname and module.startswith(PACKAGE):
                return f"{module}.{qualname}"
            if cut < len(parts) and module_name.startswith(PACKAGE):
                # a constant of a compbook module: it exists, but autodoc lists only documented data
                return DATA
            break
    return None


def _resolve(app, env, node, contnode):
    """``missing-reference``: a name compbook re-exports or imports resolves to where it is defined; a command
    line module (``__main__``, not imported here) is named without a link."""
    if node.get("refdomain") != "py":
        return None
    target, context = str(node.get("reftarget", "")), node.get("py:module") or PACKAGE
    if target.split(".")[-1] == "__main__":
        return contnode
    canonical = _canonical(target, context)
    if canonical is DATA:
        return contnode
    if not canonical or canonical == target:
        return None
    domain = env.get_domain("py")
    for role in ("class", "func", "data", "attr", "meth", "mod", "obj"):
        found = domain.resolve_xref(env, node["refdoc"], app.builder, role, canonical, node, contnode)
        if found is not None:
            return found
    return None


def _config(app, config):
    config.nitpicky = True
    config.autodoc_inherit_docstrings = False


def setup(app):
    # the compbook of this book's sources (a checkout, or make test's copy linking it), not another installed one
    sys.path.insert(0, str(app.srcdir))
    app.connect("source-read", _expand_blocks)
    app.setup_extension("sphinx.ext.autodoc")
    # the docstrings' "Args:" / "Returns:" sections (Google style) as field lists, for functions and classes only:
    # a constant's docstring ("Our choice (...): ...") is prose, not napoleon's "type: description"
    app.setup_extension("sphinx.ext.napoleon")
    from sphinx.ext import napoleon
    listeners = app.events.listeners["autodoc-process-docstring"]
    listeners[:] = [x for x in listeners if x.handler is not napoleon._process_docstring]
    app.connect("autodoc-process-docstring", _google_sections)
    app.connect("config-inited", _config)
    # MathJax on every page: the sidebar's chapter titles hold math, and the API pages have none of their own
    app.set_html_assets_policy("always")
    app.connect("autodoc-process-docstring", _escape_bars)
    app.connect("missing-reference", _resolve)
    app.connect("warn-missing-reference", _missing_reference)
    app.connect("build-finished", _finish)
    app.compbook_api_warnings = _APIWarnings()
    logging.getLogger("sphinx").addHandler(app.compbook_api_warnings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
