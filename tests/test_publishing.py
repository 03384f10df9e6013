"""One setting publishes the book: the repository URL and branch of ``_config.yml`` and everything that names them.

``_config.yml`` (``repository.url``, ``repository.branch``) is the one source. Jupyter Book reads it for the repository,
Colab and Binder buttons; ``compbook.results.paths`` (data downloads), each chapter's first cell (Colab's install), the
publishing workflow and README.md's "Publish the book" (push, enable Pages, open the URL) are checked against it
here, so changing the repository is one edit plus the places a failure names.
"""

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from compbook.results import paths

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
URL, BRANCH = CONFIG["repository"]["url"], CONFIG["repository"]["branch"]
OWNER, NAME = urlsplit(URL).path.strip("/").split("/")
PAGES_URL = f"https://{OWNER.lower()}.github.io/{NAME}/"
README = (ROOT / "README.md").read_text()
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_the_setting_is_a_github_repository_and_branch():
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", URL), URL
    assert re.fullmatch(r"[\w./-]+", BRANCH), BRANCH


def test_compbook_paths_agree():
    assert (paths.REPOSITORY_URL, paths.BRANCH) == (URL, BRANCH), \
        "compbook/results/paths.py's REPOSITORY_URL / BRANCH differ from _config.yml's repository"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_chapters_first_cell_installs_from_the_setting(nb_path):
    first = "".join(json.loads(nb_path.read_text())["cells"][0]["source"])
    assert re.search(rf'"compbook @ git\+{re.escape(URL)}(@{re.escape(BRANCH)})?"', first), \
        f"{nb_path.name}'s first cell does not install from {URL}"


def test_launch_buttons_colab_and_binder():
    buttons = CONFIG["launch_buttons"]
    assert buttons["colab_url"] == "https://colab.research.google.com"
    # Binder for CPU mode, built from binder/ (tests/test_binder.py)
    assert buttons["binderhub_url"] == "https://mybinder.org"
    assert (ROOT / "binder" / "requirements.txt").is_file() and (ROOT / "binder" / "postBuild").is_file()
    assert CONFIG["html"]["use_repository_button"] is True


def test_the_workflow_publishes_the_branch():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    assert flow.get("on", flow.get(True))["push"]["branches"] == [BRANCH]


def test_readme_says_the_three_steps_for_this_repository():
    section = _section(README, "Publish the book")
    steps = re.findall(r"^(\d)\. \*\*(\w[\w ]*)\*\*", section, re.M)
    assert steps == [("1", "Push"), ("2", "Enable Pages"), ("3", "Open")], steps
    assert f"git remote add origin {URL}" in section and f"git push -u origin {BRANCH}" in section
    assert "Source: **GitHub Actions**" in section
    assert PAGES_URL in section, f"README's step 3 should open {PAGES_URL}"
    assert f"{URL}, `{BRANCH}`" in section

