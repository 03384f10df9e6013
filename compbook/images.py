"""Image utilities shared by the chapters: PSNR, loading and resizing targets (arrays ``(H, W, 3)`` in [0, 1])."""

from __future__ import annotations

import numpy as np
from PIL import Image


def psnr(a, b) -> float:
    """Peak signal-to-noise ratio in dB between two images in [0, 1] of the same shape (inf when equal)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"psnr: shapes {a.shape} and {b.shape} differ")
    mse = float(np.mean((a - b) ** 2))
    return float("inf") if mse == 0 else 10.0 * np.log10(1.0 / mse)


def load_image(path, res: int | None = None) -> np.ndarray:
    """An image file as RGB floats ``(H, W, 3)`` in [0, 1], optionally resized to ``res x res``."""
    img = Image.open(path).convert("RGB")
    return to_square(np.asarray(img, dtype=np.float64) / 255.0, res) if res else np.asarray(img) / 255.0


def to_square(image, res: int) -> np.ndarray:
    """Centre-crop an ``(H, W, 3)`` (or ``(H, W)`` grey) image to a square and resize it to ``res x res``."""
    img = np.asarray(image, dtype=np.float64)
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, -1)
    if img.ndim != 3 or img.shape[-1] != 3:
        raise ValueError(f"image: shape {img.shape} is not (H, W, 3) or (H, W)")
    if img.max() > 1.0:
        img = img / 255.0
    h, w, _ = img.shape
    s = min(h, w)
    img = img[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    pil = Image.fromarray(np.round(img * 255).astype(np.uint8)).resize((res, res), Image.LANCZOS)
    return np.asarray(pil, dtype=np.float64) / 255.0
