"""Image utilities shared by the chapters and modules: checking, 8-bit rounding, PSNR, loading, cropping and
resizing (images are arrays ``(H, W, 3)`` of floats in [0, 1])."""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image

from .. import checks


def psnr(a, b) -> float:
    """Peak signal-to-noise ratio in dB between two images in [0, 1] of the same shape (inf when equal)."""
    a, b = as_array(a), as_array(b)
    if a.shape != b.shape:
        raise ValueError(f"psnr: shapes {a.shape} and {b.shape} differ")
    check_values(a, "psnr: a")
    check_values(b, "psnr: b")
    a, b = a.astype(np.float64), b.astype(np.float64)
    mse = float(np.mean((a - b) ** 2))
    return float("inf") if mse == 0 else 10.0 * np.log10(1.0 / mse)


def load_image(path, res: int | None = None) -> np.ndarray:
    """An image file as RGB floats ``(H, W, 3)`` in [0, 1], optionally resized to ``res x res``."""
    path = checks.file_path(path, "image file")
    if res is not None:
        res = checks.check_render_size(res, 3 * 3, 8, f"a {res} px image")
    try:
        img = Image.open(path).convert("RGB")
    except (OSError, SyntaxError) as e:
        raise ValueError(f"image file {path}: not a readable image ({e})") from None
    return to_square(np.asarray(img), res) if res is not None else np.asarray(img) / 255.0


def to_square(image, res: int) -> np.ndarray:
    """Centre-crop an ``(H, W, 3)`` (or ``(H, W)`` grey) image to a square and resize it to ``res x res``.

    The dtype says the scale: integers (``uint8``, as image files and ``skimage.data`` give them) are 8-bit
    values in [0, 255]; floats must be in [0, 1] (:func:`compbook.checks.unit_image`: float data in [0, 255] is
    refused, never divided by a guess)."""
    res = checks.integer(res, "res")
    img = as_array(image)
    if not (np.issubdtype(img.dtype, np.number) and not np.iscomplexobj(img)) or img.dtype == bool:
        raise ValueError(f"image: dtype {img.dtype} is not real numbers")
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, -1)
    if img.ndim != 3 or img.shape[-1] != 3 or 0 in img.shape:
        raise ValueError(f"image: shape {img.shape} is not (H, W, 3) or (H, W) with H, W >= 1")
    checks.check_render_size(max(img.shape[:2]), 3 * 3, 8, f"an image of {img.shape[0]} x {img.shape[1]} px")
    checks.check_render_size(res, 3 * 3, 8, f"a {res} px square")
    if img.dtype.kind in "iu":
        checks.value_range(img, "image (integer dtype: 8-bit values)", 0, 255)
        img = img.astype(np.float64) / 255.0
    else:
        checks.unit_image(img, "image")
        img = img.astype(np.float64)
    h, w, _ = img.shape
    s = min(h, w)
    img = img[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    pil = Image.fromarray(to_uint8(img)).resize((res, res), Image.LANCZOS)
    return np.asarray(pil, dtype=np.float64) / 255.0


def check_image(image, name: str = "image") -> np.ndarray:
    """Check an ``(H, W, 3)`` float image in [0, 1] (numpy or torch) and return it as float64 numpy."""
    a = as_array(image)
    if a.ndim != 3 or a.shape[-1] != 3 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name}: shape {a.shape} is not an RGB image (H, W, 3)")
    check_values(a, name)
    return a.astype(np.float64)


def as_array(image) -> np.ndarray:
    """A numpy view (or copy) of a numpy array, torch tensor or nested list."""
    return image.detach().cpu().numpy() if isinstance(image, torch.Tensor) else np.asarray(image)


def check_values(a: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``a`` holds finite floats in [0, 1] (we refuse to guess that
    8-bit values need dividing by 255): the rule of :func:`compbook.checks.unit_image`, worded ``name: ...``."""
    try:
        checks.unit_image(a, name)
    except ValueError as e:
        text = str(e).removeprefix(name).lstrip(": ")
        if "dtype" in text:
            text = f"dtype {a.dtype} is not floating point; pass floats in [0, 1] (e.g. uint8 / 255)"
        elif "NaN" in text:
            text = f"contains NaN or inf ({text.split('(', 1)[-1]}"
        else:
            text = text.replace("must lie in [0, 1], got values in", "values span").replace(
                " (values up", ", expected [0, 1] (values up") if "(values up" in text else \
                text.replace("must lie in [0, 1], got values in", "values span") + ", expected [0, 1]"
        raise ValueError(f"{name}: {text}") from None


def to_uint8(image) -> np.ndarray:
    """``(H, W, 3)`` floats in [0, 1] -> ``(H, W, 3)`` uint8, rounding to the nearest of 256 levels."""
    return np.round(check_image(image) * 255.0).astype(np.uint8)


def resize(image, res: int) -> np.ndarray:
    """``image`` ``(H, W, 3)`` in [0, 1] resized to ``(res, res, 3)`` (PIL bicubic on 8 bits; no crop: a
    non-square image is squashed, so crop first if that matters). Returns floats in [0, 1]."""
    res = checks.check_render_size(res, 3 * 3, 8, f"a {res} px image")
    out = Image.fromarray(to_uint8(image)).resize((res, res), Image.BICUBIC)
    return np.asarray(out, dtype=np.float64) / 255.0


def as_target(target, name: str = "target") -> torch.Tensor:
    """Check and convert a target image: ``(H, W, 3)`` (or ``(B, H, W, 3)``) floats in [0, 1] -> float32 tensor.

    Raises ``ValueError`` naming ``name`` for a shape that is not square RGB, a non-float dtype, NaNs or values
    outside [0, 1] (:func:`check_values`).
    """
    a = as_array(target)
    if a.ndim not in (3, 4) or a.shape[-1] != 3 or a.shape[-2] != a.shape[-3] or 0 in a.shape:
        raise ValueError(f"{name}: shape {tuple(a.shape)} is not a square RGB image (H, W, 3) or "
                         f"(B, H, W, 3) with H = W >= 1")
    checks.allocation(a.shape, f"{name} of shape {tuple(a.shape)}", 8)
    check_values(a, name)
    return torch.as_tensor(a).float()
