"""Pretrained encoders (CLIP, DINOv2 via transformers) through the same analysis functions (chapters 10-11).

For readers with downloaded weights and a GPU: :func:`load_clip` / :func:`load_dinov2` call
``from_pretrained`` (e.g. ``openai/clip-vit-base-patch32``, ``openai/clip-vit-large-patch14``,
``facebook/dinov2-base``); :func:`clip_image_embeddings`, :func:`clip_text_embeddings` and
:func:`dinov2_embeddings` return (N, D) matrices that go straight into ``compbook.binding.recognition`` and
``compbook.binding.decomposition``. Images are (N, H, W, 3) floats in [0, 1] from ``compbook.scenes``; they are
resized to the model's input size and normalised with the model's mean and std. The book's tests run these on
tiny random models built from configs, whose answers mean nothing.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .. import checks

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def load_clip(name: str = "openai/clip-vit-base-patch32", device: str = "cpu"):
    """(CLIPModel, tokenizer) from the Hugging Face hub or a local folder (needs the weights)."""
    from transformers import AutoTokenizer, CLIPModel
    return CLIPModel.from_pretrained(name).to(device).eval(), AutoTokenizer.from_pretrained(name)


def load_dinov2(name: str = "facebook/dinov2-base", device: str = "cpu"):
    """Dinov2Model from the hub or a local folder (needs the weights)."""
    from transformers import Dinov2Model
    return Dinov2Model.from_pretrained(name).to(device).eval()


def pixel_values(images, size: int, mean, std, device="cpu") -> torch.Tensor:
    """(N, H, W, 3) floats in [0, 1] -> (N, 3, size, size) resized (bicubic) and normalised. 8-bit images (0-255)
    are refused with a hint (:func:`compbook.checks.unit_image`), never normalised to values in the hundreds."""
    checks.unit_image(images, "images")
    x = torch.as_tensor(np.asarray(images), dtype=torch.float32)
    if x.ndim != 4 or x.shape[-1] != 3:
        raise ValueError(f"images: need (N, H, W, 3), got shape {tuple(x.shape)}")
    x = x.permute(0, 3, 1, 2).to(device)
    if x.shape[-1] != size or x.shape[-2] != size:
        x = F.interpolate(x, size=(size, size), mode="bicubic", align_corners=False).clamp(0, 1)
    m = torch.tensor(mean, device=device).view(1, 3, 1, 1)
    s = torch.tensor(std, device=device).view(1, 3, 1, 1)
    return (x - m) / s


def _features(out) -> torch.Tensor:
    """transformers 4.x returns a tensor from get_*_features, 5.x an output object with pooler_output."""
    return out if torch.is_tensor(out) else out.pooler_output


@torch.no_grad()
def clip_image_embeddings(model, images, batch: int = 64) -> np.ndarray:
    """CLIP image embeddings (N, projection_dim), one batch at a time."""
    size = model.config.vision_config.image_size
    dev = next(model.parameters()).device
    out = [_features(model.get_image_features(pixel_values=pixel_values(images[i:i + batch], size, CLIP_MEAN,
                                                                         CLIP_STD, dev)))
           for i in range(0, len(images), batch)]
    return torch.cat(out).float().cpu().numpy()


@torch.no_grad()
def clip_text_embeddings(model, input_ids, attention_mask=None) -> np.ndarray:
    """CLIP text embeddings (N, projection_dim) of token ids (N, L) (from the model's tokenizer)."""
    dev = next(model.parameters()).device
    ids = torch.as_tensor(input_ids).to(dev)
    mask = None if attention_mask is None else torch.as_tensor(attention_mask).to(dev)
    return _features(model.get_text_features(input_ids=ids, attention_mask=mask)).float().cpu().numpy()


def clip_texts(model, tokenizer, texts) -> np.ndarray:
    """CLIP text embeddings of strings (e.g. captions and queries from ``compbook.binding.data``)."""
    tok = tokenizer(list(texts), padding=True, return_tensors="pt")
    return clip_text_embeddings(model, tok["input_ids"], tok["attention_mask"])


@torch.no_grad()
def dinov2_embeddings(model, images, size: int = 224, batch: int = 64) -> np.ndarray:
    """DINOv2 image embeddings (N, hidden): the pooled [CLS] output."""
    dev = next(model.parameters()).device
    out = [model(pixel_values=pixel_values(images[i:i + batch], size, IMAGENET_MEAN, IMAGENET_STD, dev)).pooler_output
           for i in range(0, len(images), batch)]
    return torch.cat(out).float().cpu().numpy()
