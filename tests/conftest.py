"""Shared fixtures: the Picbreeder genomes (third-party data read from ../shared/picbreeder, never copied here)."""

import numpy as np
import pytest
from PIL import Image

from compbook.cppn import picbreeder

GENOME_NAMES = ("skull", "butterfly", "apple")


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
