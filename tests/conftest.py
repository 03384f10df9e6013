"""Shared fixtures: the Picbreeder genomes (third-party data: FER's files, from ../shared/fer or downloaded from FER's
repository at a pinned commit and checked by digest; never copied here)."""

import os

import numpy as np
import pytest
from PIL import Image

from compbook.cppn import picbreeder
from xdist_groups import pytest_collection_modifyitems  # noqa: F401  (a hook: the groups of `make test`'s workers)

GENOME_NAMES = ("skull", "butterfly", "apple")

# The memory budget defaults to the machine's free memory; the tests pin it to the smallest default, so that a
# refusal they expect is the same on every machine (tests/test_config.py checks the machine's default itself).
os.environ.setdefault("COMPBOOK_MEMORY_BUDGET_MB", "1024")


@pytest.fixture(scope="module")
def one_thread():
    """Small tensors: one torch thread is much faster than two fighting over a shared CPU, and is how the
    command lines run (restored after the module). A module asks for it with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session", autouse=True)
def fers_files():
    """Every file the book reads from FER's repository, checked by digest once per session: from ../shared/fer
    where it is there, else downloaded into the cache (so tests that ask for them with ``download=False`` find
    them). Where one cannot be had (offline, no ../shared/fer), this warns once and stops trying: the tests that
    read FER's files then fail by themselves, naming what is missing (none skips); the others still run."""
    import warnings
    from compbook.cppn.data import fer_files
    try:
        return {rel: fer_files.fetch(rel) for rel in fer_files.SHA256}
    except (OSError, ValueError) as e:
        warnings.warn(f"FER's files are not all here: {e}", stacklevel=1)
        return None


@pytest.fixture(scope="session")
def genomes():
    """All three genomes; fails (does not skip) when they are neither local nor downloadable: the suite needs them."""
    return {name: picbreeder.load_genome(name) for name in GENOME_NAMES}


@pytest.fixture(scope="session")
def reference_renders():
    """The reference implementation's 256x256 renders, RGB floats in [0, 1]."""
    out = {}
    for name in GENOME_NAMES:
        path = picbreeder.fer_files.fetch(f"data/picbreeder_{name}/img.png")
        out[name] = np.asarray(Image.open(path).convert("RGB"), dtype=np.float64) / 255.0
    return out


@pytest.fixture(scope="session")
def tiny_server(tmp_path_factory):
    """``transformers serve`` with the tiny random Qwen3-VL (tests/tiny_vlm.py) on a free localhost port, started
    once for the session, with a spare launched beside it (a test that kills it restarts it with
    ``tiny_server.take_over(tiny_server.spare)``); fails, never skips, without the serving extra."""
    from servers import TransformersServe
    from tiny_vlm import save_servable, tiny_qwen3_vl

    folder = save_servable(*tiny_qwen3_vl(), tmp_path_factory.mktemp("served") / "tiny-qwen3-vl")
    server = TransformersServe(folder).start()
    server.spare = TransformersServe(folder, log=folder.parent / "spare.log").launch()   # for a restart
    yield server
    server.kill()
    server.spare.kill()
