"""The interpretation pipeline with real models through transformers: Qwen3-VL describes, Qwen3 synthesises
(chapter 16, for readers with weights and a GPU).

The paper uses Qwen3-VL-8B to describe each masked region and Qwen3-30B(-A3B) to synthesise. Load them yourself
(never here: this project loads no weights)::

    from transformers import AutoProcessor, AutoTokenizer, AutoModelForCausalLM, Qwen3VLForConditionalGeneration
    vlm = Qwen3VLForConditionalGeneration.from_pretrained("Qwen/Qwen3-VL-8B-Instruct", device_map="auto")
    describer = VLMDescriber(vlm, AutoProcessor.from_pretrained("Qwen/Qwen3-VL-8B-Instruct"))
    llm = AutoModelForCausalLM.from_pretrained("Qwen/Qwen3-30B-A3B", device_map="auto")   # or a smaller Qwen3
    synthesiser = LLMSynthesiser(llm, AutoTokenizer.from_pretrained("Qwen/Qwen3-30B-A3B"))

They plug into :func:`compbook.sae.interpret.interpret` in place of the CPU stand-ins. Our choices (parameters):
the region is shown by dimming the pixels outside the mask (``dim``) on an image upscaled to ``size``; greedy
decoding; the prompts below; the synthesiser's answer format ``IMAGE: ... / TEXT: ... / AGREE: yes|no``, parsed
by :func:`parse_synthesis` onto the book's concept names.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from ... import checks, scenes as sc
from ..describe import agree
from ..interpret import UNCLEAR, Synthesis

DESCRIBE_PROMPT = ("The highlighted region of this image shows part of a simple scene of flat coloured shapes. "
                   "In a few words, name the colour and the shape of the object in the highlighted region, or say "
                   "'background' if it shows no object.")
SYNTHESIS_PROMPT = (
    "A feature of a vision-language model was inspected.\n"
    "Descriptions of the image regions where it fires most:\n{descriptions}\n"
    "Words of the captions where it fires most: {words}\n"
    "Summarise the concept it encodes in each modality in one or two words (a colour, a shape, a colour and a "
    "shape, 'background', or a word), and say whether the two agree. Answer exactly in three lines:\n"
    "IMAGE: <concept>\nTEXT: <concept>\nAGREE: <yes or no>")


def masked_image(image: np.ndarray, mask: np.ndarray, size: int = 224, dim: float = 0.7):
    """A PIL image (size x size): ``image`` (H, W, 3) in [0, 1] with the pixels outside ``mask`` (H, W) faded
    towards white by ``dim`` (nearest-neighbour upscaling keeps the patches sharp)."""
    from PIL import Image

    image = checks.unit_image(checks.tensor(image, "image", (None, None, 3), floating=False), "image").numpy()
    mask = checks.tensor(mask, "mask", tuple(image.shape[:2]), floating=False, finite=False).numpy()
    size, dim = checks.integer(size, "size"), checks.real(dim, "dim", 0, 1)
    # PIL's upscaled image (4 bytes a pixel: RGB is stored as RGBX), and the image's float64 and uint8 copies
    checks.check_budget(4.0 * size * size + 3 * (3 * 8 + 1) * float(image.shape[0] * image.shape[1]),
                        f"size={size} (the upscaled image)")
    img = np.where(np.asarray(mask, bool)[..., None], image, (1 - dim) * image + dim)
    pil = Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8))
    return pil.resize((size, size), Image.NEAREST)


def _text(text, name: str = "text") -> str:
    """``text`` if it is a string (a model's answer, a prompt), else ValueError naming ``name``."""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a string, got {type(text).__name__} {text!r:.60}")
    return text


def describe_messages(image, prompt: str = DESCRIBE_PROMPT) -> list:
    """The chat of one describer request: a user turn with the (masked) image and the prompt."""
    return [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": prompt}]}]


@torch.no_grad()
def _generate(model, batch: dict, max_new_tokens: int) -> torch.Tensor:
    """Greedy continuation tokens only (B, new)."""
    batch = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in batch.items()}
    out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False)
    return out[:, batch["input_ids"].shape[1]:]


def first_line(text: str) -> str:
    """The answer's first non-empty line, without a thinking block (Qwen3's ``<think>...</think>``)."""
    _text(text)
    text = re.sub(r"<think>.*?(</think>|$)", "", text, flags=re.DOTALL)
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


class VLMDescriber:
    """``describer(images (K, H, W, 3), masks (K, H, W)) -> K descriptions`` from a transformers VLM (Qwen3-VL)
    and its processor; ``prompt`` is a parameter. Left padding, so a batch generates together."""

    def __init__(self, model, processor, prompt: str = DESCRIBE_PROMPT, max_new_tokens: int = 24, size: int = 224,
                 dim: float = 0.7):
        self.model, self.processor, self.prompt = model, processor, prompt
        self.max_new_tokens, self.size, self.dim = max_new_tokens, size, dim

    def messages(self, images, masks) -> list:
        """One chat per region (what is sent to the processor)."""
        return [describe_messages(masked_image(im, m, self.size, self.dim), self.prompt)
                for im, m in zip(images, masks)]

    def __call__(self, images, masks) -> list:
        tok = getattr(self.processor, "tokenizer", self.processor)
        tok.padding_side = "left"
        batch = self.processor.apply_chat_template(self.messages(images, masks), tokenize=True,
                                                   add_generation_prompt=True, return_dict=True,
                                                   return_tensors="pt", padding=True)
        new = _generate(self.model, dict(batch), self.max_new_tokens)
        return [first_line(t) for t in self.processor.batch_decode(new, skip_special_tokens=True)]


def synthesis_prompt(descriptions, words, template: str = SYNTHESIS_PROMPT) -> str:
    """The synthesiser's request: the region descriptions (one per line) and the latent's top caption words."""
    for name, v in (("descriptions", descriptions), ("words", words)):
        if isinstance(v, (str, bytes)) or not all(isinstance(t, str) for t in v):
            raise ValueError(f"{name} must be a list of strings, got {v!r:.80}")
    _text(template, "template")
    lines = "\n".join(f"- {d}" for d in descriptions) or "- (none)"
    return template.format(descriptions=lines, words=", ".join(words) or "(none)")


def normalise_concept(text: str, colours=tuple(sc.CLEVR_COLOURS), shapes=sc.SHAPES[:3]) -> str:
    """A free-text concept onto the book's names: "red square", "red", "square", "background", "'a'" (a quoted
    word) or "unclear"."""
    _text(text)
    t = text.strip().lower()
    quoted = re.fullmatch(r"['\"`](\S+)['\"`]", t)
    if quoted and quoted.group(1) not in colours + shapes:
        return f"'{quoted.group(1)}'"
    words = [w[:-1] if w.endswith("s") and w[:-1] in shapes else w for w in re.findall(r"[a-z]+", t)]
    col = next((w for w in words if w in colours), None)
    shp = next((w for w in words if w in shapes), None)
    if col or shp:
        return " ".join(w for w in (col, shp) if w)
    return "background" if "background" in words else UNCLEAR


def parse_synthesis(text: str, colours=tuple(sc.CLEVR_COLOURS), shapes=sc.SHAPES[:3]) -> Synthesis:
    """Parse ``IMAGE: ... / TEXT: ... / AGREE: yes|no`` (any case, any order); a missing field is "unclear"; a
    missing AGREE is decided by :func:`compbook.sae.describe.agree`."""
    _text(text)
    text = re.sub(r"<think>.*?(</think>|$)", "", text, flags=re.DOTALL)
    field = {k: re.search(rf"{k}\s*:\s*(.*)", text, flags=re.IGNORECASE) for k in ("image", "text", "agree")}
    image = normalise_concept(field["image"].group(1), colours, shapes) if field["image"] else UNCLEAR
    words = normalise_concept(field["text"].group(1), colours, shapes) if field["text"] else UNCLEAR
    said = field["agree"].group(1).strip().lower() if field["agree"] else ""
    ok = True if said.startswith("yes") else False if said.startswith("no") else agree(image, words)
    return Synthesis(image, words, bool(ok) and UNCLEAR not in (image, words))


class LLMSynthesiser:
    """``synthesiser(descriptions, words) -> Synthesis`` from a transformers causal LM (Qwen3) and its tokenizer:
    :func:`synthesis_prompt` in a chat turn (thinking off), greedy decoding, :func:`parse_synthesis`."""

    def __init__(self, model, tokenizer, template: str = SYNTHESIS_PROMPT, max_new_tokens: int = 48):
        self.model, self.tokenizer, self.template, self.max_new_tokens = model, tokenizer, template, max_new_tokens

    def prompt_ids(self, descriptions, words) -> dict:
        chat = [{"role": "user", "content": synthesis_prompt(descriptions, words, self.template)}]
        return self.tokenizer.apply_chat_template(chat, tokenize=True, add_generation_prompt=True,
                                                  enable_thinking=False, return_dict=True, return_tensors="pt")

    def __call__(self, descriptions, words) -> Synthesis:
        new = _generate(self.model, dict(self.prompt_ids(descriptions, words)), self.max_new_tokens)
        return parse_synthesis(self.tokenizer.decode(new[0], skip_special_tokens=True))
