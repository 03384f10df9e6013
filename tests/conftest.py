"""Shared fixtures: the Picbreeder genomes (third-party data read from ../shared/picbreeder, never copied here)."""

import numpy as np
import pytest
from PIL import Image

from compbook.cppn import picbreeder

GENOME_NAMES = ("skull", "butterfly", "apple")


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


@pytest.fixture(scope="session")
def genomes():
    """All three genomes; fails (does not skip) when the data folder is missing: the suite needs it."""
    return {name: picbreeder.load_genome(name, download=False) for name in GENOME_NAMES}


@pytest.fixture(scope="session")
def reference_renders():
    """The reference implementation's 256x256 renders, RGB floats in [0, 1]."""
    out = {}
    for name in GENOME_NAMES:
        path = picbreeder.find_genome(name, download=False).with_suffix(".png")
        out[name] = np.asarray(Image.open(path).convert("RGB"), dtype=np.float64) / 255.0
    return out
