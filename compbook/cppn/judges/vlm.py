"""A vision-language model as an EMC2 judge: "does this image still clearly show a skull?" (chapter on EMC2-Bench).

Paper A judges every perturbed render with Qwen3-VL-4B-Thinking. :class:`VLMJudge` does the same with any
transformers image-text-to-text model: each image becomes a chat message (the image, then the prompt with the
concept filled in), a batch is generated greedily, and :func:`parse_yes_no` reads the final yes/no after the
model's reasoning. It needs the model's weights (a GPU or Colab); CPU runs of the book use stored verdicts instead
(:class:`compbook.cppn.judges.CachedJudge`, filled by ``python -m compbook.cppn judges fill``).

Our choices (not the paper's, whose prompt and parsing are not public), all parameters and all part of
``identity``: the prompt wording (:data:`DEFAULT_PROMPT`), greedy decoding (deterministic, so a cache is
reproducible), ``max_new_tokens`` (a thinking model needs room to finish reasoning), the image size the render
is resized to, and the parser. An answer the parser cannot read counts as **not preserved** (False) and is
recorded in ``judge.unparsed``: a judge that cannot say "yes" has not said it.

transformers is imported only when a model is loaded, so ``import compbook.cppn.judges`` stays light.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Sequence

import numpy as np
import torch

from ... import checks
from ..paper import figure
from ...runs.serving import THINK_END, THINK_START
from .base import check_concept, check_images, check_questions

#: the paper's judge (:data:`compbook.cppn.paper.FIGURES`)
DEFAULT_MODEL = figure("judge_model")
#: Our choice of wording; ``{concept}`` is replaced by the concept ("skull").
DEFAULT_PROMPT = ("Look at this image. Does it still clearly show a {concept}? "
                  "Answer with one word: yes or no.")
DEFAULT_MAX_NEW_TOKENS = 1024
DEFAULT_IMAGE_SIZE = 256


# -- parsing a (thinking) model's answer ---------------------------------------------------------------------------
def final_answer(text: str) -> str | None:
    """The part of a generated ``text`` after the model's reasoning, or None if the reasoning never ended.

    A thinking model writes ``reasoning </think> answer`` (its chat template opens ``<think>`` in the prompt, so
    the output may lack the opening tag): the answer is what follows the *last* ``</think>``. An opened but
    unclosed ``<think>`` means generation stopped mid-reasoning (``max_new_tokens`` too small): no answer. Text
    without any think tag (a non-thinking model) is all answer.
    """
    if THINK_END in text:
        return text.rsplit(THINK_END, 1)[1]
    if THINK_START in text:
        return None
    return text


def parse_yes_no(text: str) -> bool | None:
    """Read a yes/no verdict from a model's output: True for yes, False for no, None if it cannot tell.

    Only the final answer counts (see :func:`final_answer`): "no" inside the reasoning is ignored. The answer
    is read as lower-case words; the verdict is the one of yes/no that occurs, if exactly one does ("Yes, it
    is." -> True, "Final answer: no" -> False); both or neither give None ("Yes, no doubt", "I cannot tell").
    Our choice: conservative, since the prompt asks for one word and an unreadable answer is recorded.
    """
    answer = final_answer(text)
    if answer is None:
        return None
    found = {w for w in re.findall(r"[a-z]+", answer.lower()) if w in ("yes", "no")}
    return found.pop() == "yes" if len(found) == 1 else None


def read_answer(text: str, parse: Callable[[str], bool | None] = parse_yes_no) -> tuple[bool | None, dict]:
    """``(verdict or None, detail)`` of one output ``text``: the detail a cache stores, ``{"answer": final
    answer}`` (its last 300 characters; ``"<unfinished reasoning>"`` when the reasoning never ended), with
    ``"unparsed": True`` when ``parse`` cannot read it (the verdict then counts as not preserved)."""
    verdict, answer = parse(text), final_answer(text)
    detail = {"answer": (answer if answer is not None else "<unfinished reasoning>")[-300:]}
    return verdict, detail if verdict is not None else {**detail, "unparsed": True}


# -- prompt and images ---------------------------------------------------------------------------------------------
def format_prompt(prompt: str, concept: str) -> str:
    """``prompt`` with every ``{concept}`` replaced (plain replacement: other braces are left alone)."""
    if not isinstance(prompt, str) or "{concept}" not in prompt:
        raise ValueError(f"prompt must be a str containing '{{concept}}', got {prompt!r}")
    return prompt.replace("{concept}", check_concept(concept))


def build_messages(prompt: str, concept: str) -> list[dict]:
    """One user turn in the transformers chat format: the image first, then the question about ``concept``."""
    return [{"role": "user", "content": [{"type": "image"},
                                         {"type": "text", "text": format_prompt(prompt, concept)}]}]


def to_pil(image: torch.Tensor, size: int | None = DEFAULT_IMAGE_SIZE):
    """An image ``(H, W, 3)`` in [0, 1] as an 8-bit RGB PIL image, resized (bilinear) to ``size x size`` if given."""
    from PIL import Image

    array = (image.detach().cpu().double().clamp(0, 1).numpy() * 255).round().astype(np.uint8)
    pil = Image.fromarray(array)
    if size is not None and pil.size != (size, size):
        pil = pil.resize((size, size), Image.Resampling.BILINEAR)
    return pil


def vlm_identity(model_id: str = DEFAULT_MODEL, revision: str | None = None, prompt: str = DEFAULT_PROMPT,
                 max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, image_size: int | None = DEFAULT_IMAGE_SIZE,
                 parser: str = "parse_yes_no", generate_kwargs: dict | None = None) -> str:
    """The identity string of a :class:`VLMJudge` with these settings (computable without loading the model).

    ``revision=None`` is the hub's default branch, written "main"; pin a commit hash for a reproducible cache.
    """
    gen = json.dumps({"do_sample": False, **(generate_kwargs or {})}, sort_keys=True, separators=(",", ":"))
    return (f"vlm:{model_id}@{revision or 'main'}|prompt={json.dumps(prompt)}|max_new_tokens={max_new_tokens}"
            f"|image_size={image_size}|parser={parser}|generate={gen}")


def default_device() -> torch.device:
    """``cuda`` when a GPU is present, else ``cpu`` (a VLM on a CPU works but is very slow)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_hf_vlm(model_id: str = DEFAULT_MODEL, revision: str | None = None, device=None, dtype="auto",
             device_map=None):
    """``(model, processor)`` from the hub (or a local folder): ``AutoProcessor`` + ``AutoModelForImageTextToText``.

    ``dtype="auto"`` keeps the checkpoint's dtype (bf16 for Qwen3-VL). With ``device_map`` (e.g. "auto", needs
    the ``accelerate`` package) transformers places the weights; otherwise the model is moved to ``device``
    (default: cuda if available).
    """
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(model_id, revision=revision)
    kwargs = {"revision": revision, "dtype": dtype}
    if device_map is not None:
        kwargs["device_map"] = device_map
    model = AutoModelForImageTextToText.from_pretrained(model_id, **kwargs)
    if device_map is None:
        model = model.to(device if device is not None else default_device())
    return model.eval(), processor


# -- the judge -----------------------------------------------------------------------------------------------------
class VLMJudge:
    """A judge that asks a vision-language model whether each image still shows ``concept``.

    ``VLMJudge()`` downloads and loads ``model_id`` at ``revision`` (GPU/Colab); ``VLMJudge.from_model(model,
    processor)`` wraps an already-built pair (how the tests run a tiny random model offline).

    Args:
        model_id, revision: the hub model and its revision (a commit hash pins the weights; None is "main").
        prompt: the question, with ``{concept}``; our choice of wording, :data:`DEFAULT_PROMPT`.
        parse: ``text -> True | False | None`` (None: unreadable, counted as False and kept in ``.unparsed``).
        batch_size: images per ``generate`` call.
        device, dtype, device_map: where and how to load (see :func:`load_hf_vlm`).
        max_new_tokens: generation budget; a thinking model that runs out mid-reasoning gives no answer.
        image_size: renders are resized to ``image_size x image_size`` pixels (None: as rendered).
        generate_kwargs: extra ``model.generate`` arguments (default greedy: ``do_sample=False``).

    Calling it: ``judge(images (N, H, W, 3) in [0, 1], concept) -> BoolTensor (N,)``; ``reference`` and
    ``questions`` are accepted and ignored (questions are kept with unparsed answers). After a call,
    ``last_details[i] = {"answer": final answer text}`` (what :class:`~compbook.cppn.judges.CachedJudge` stores).
    """

    def __init__(self, model_id: str = DEFAULT_MODEL, revision: str | None = None, prompt: str = DEFAULT_PROMPT,
                 parse: Callable[[str], bool | None] = parse_yes_no, batch_size: int = 8, device=None,
                 dtype="auto", device_map=None, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 image_size: int | None = DEFAULT_IMAGE_SIZE, generate_kwargs: dict | None = None):
        self._configure(model_id, revision, prompt, parse, batch_size, max_new_tokens, image_size, generate_kwargs)
        self.model, self.processor = load_hf_vlm(model_id, revision, device, dtype, device_map)

    @classmethod
    def from_model(cls, model, processor, *, model_id: str | None = None, revision: str | None = None,
                   prompt: str = DEFAULT_PROMPT, parse: Callable[[str], bool | None] = parse_yes_no,
                   batch_size: int = 8, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                   image_size: int | None = DEFAULT_IMAGE_SIZE, generate_kwargs: dict | None = None) -> "VLMJudge":
        """Wrap a built ``model`` (with ``.generate`` and ``.device``) and ``processor`` (chat template, images).

        ``model_id`` names the model in ``identity`` (default: ``model.config._name_or_path``).
        """
        judge = cls.__new__(cls)
        name = model_id or getattr(getattr(model, "config", None), "_name_or_path", "") or "unnamed-model"
        judge._configure(name, revision, prompt, parse, batch_size, max_new_tokens, image_size, generate_kwargs)
        judge.model, judge.processor = model, processor
        return judge

    def _configure(self, model_id, revision, prompt, parse, batch_size, max_new_tokens, image_size,
                   generate_kwargs):
        format_prompt(prompt, "concept")  # validates the template
        if not callable(parse):
            raise ValueError(f"parse must be callable text -> bool | None, got {parse!r}")
        batch_size = checks.integer(batch_size, "batch_size")
        max_new_tokens = checks.integer(max_new_tokens, "max_new_tokens")
        image_size = checks.optional_integer(image_size, "image_size")
        self.model_id, self.revision, self.prompt, self.parse = model_id, revision, prompt, parse
        self.batch_size, self.max_new_tokens, self.image_size = batch_size, max_new_tokens, image_size
        self.generate_kwargs = {"do_sample": False, **(generate_kwargs or {})}
        self.identity = vlm_identity(model_id, revision, prompt, max_new_tokens, image_size,
                                     getattr(parse, "__name__", repr(parse)), generate_kwargs)
        self.unparsed: list[dict] = []
        self.last_details: list[dict] = []

    def texts(self, concept: str, n: int) -> list[str]:
        """The chat-formatted prompt (with the generation prompt) for ``n`` images, one string each."""
        text = self.processor.apply_chat_template(build_messages(self.prompt, concept), tokenize=False,
                                                  add_generation_prompt=True)
        return [text] * n

    @torch.inference_mode()
    def generate(self, images: Sequence, concept: str) -> list[str]:
        """The model's decoded outputs (reasoning included) for PIL ``images``, one ``generate`` call."""
        inputs = self.processor(text=self.texts(concept, len(images)), images=list(images), return_tensors="pt",
                                padding=True, padding_side="left")  # left: new tokens start at one column
        inputs = inputs.to(self.model.device)
        out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, **self.generate_kwargs)
        return self.processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    def __call__(self, images, concept, *, reference=None, questions=None) -> torch.Tensor:
        images, concept = check_images(images), check_concept(concept)
        questions = check_questions(questions, len(images)) if questions is not None else None
        verdicts, details = [], []
        for start in range(0, len(images), self.batch_size):
            batch = [to_pil(img, self.image_size) for img in images[start:start + self.batch_size]]
            for j, text in enumerate(self.generate(batch, concept)):
                verdict, detail = read_answer(text, self.parse)
                if verdict is None:
                    i = start + j
                    self.unparsed.append({"concept": concept, "index": i, "text": text[-2000:],
                                          "question": questions[i] if questions else None})
                verdicts.append(bool(verdict))
                details.append(detail)
        self.last_details = details
        return torch.tensor(verdicts, dtype=torch.bool)

    def __repr__(self) -> str:
        return f"VLMJudge({self.identity})"
