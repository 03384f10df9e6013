"""The paper's judge at scale: a vision-language model behind any OpenAI-compatible server (chapter 5).

:class:`ServerJudge` asks the same question as :class:`~compbook.cppn.judges.vlm.VLMJudge` ("does this image
still clearly show a skull?"), one chat-completions request per image, to a server that batches the requests
itself: vLLM or SGLang on GPUs (data parallel across them, a Ray cluster for several nodes), ``transformers
serve``, or a hosted endpoint. Each image goes as a PNG ``image_url`` part (resized to ``image_size`` first, as
``VLMJudge`` resizes it), at temperature 0 with a fixed ``seed``; the answer is read by the parser ``VLMJudge``
uses (:func:`~compbook.cppn.judges.vlm.parse_yes_no`: a thinking model's reasoning skipped, an unreadable answer
counted as not preserved and kept in ``judge.unparsed`` and the details). Unreadable answers are reported: a
batch with some gives an :class:`UnreadableAnswers` warning saying how many, and a batch where more than
``max_unreadable`` of the answers are unreadable (a server that answers "Maybe, hard to say." to everything) is
refused with a ``ValueError``, none of its unreadable answers counted. Requests run ``concurrency`` at a time,
with the retries and deadlines of :class:`compbook.runs.serving.ChatClient`.

:meth:`ServerJudge.stream` gives each verdict as it arrives; :class:`~compbook.cppn.judges.cache.CachedJudge`
journals each one at once, so ``python -m compbook.cppn judges fill --server URL --model ID`` killed halfway
loses nothing and, rerun, asks only what is missing. Each image's PNG is encoded by the request's worker thread,
overlapping the requests in flight, and :meth:`ServerJudge.stream_batches` takes EMC2's batches as they are
rendered, so the server is never left idle at a batch's end while a thinking model finishes its slowest answers.

``identity`` names the served model id, its revision, the prompt and the request's settings, and not the URL:
the same model behind another address asks the same question. It differs from ``VLMJudge``'s identity (a server
batches, resizes and decodes with its own code, so its answers may differ from in-process ``generate``'s).
"""

from __future__ import annotations

import json
import warnings
from typing import Callable, Iterator

import torch

from ... import checks
from ...runs.serving import (
    DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT, ChatClient, ServerError, user_message
)
from .base import check_concept, check_images, check_questions, consecutive_batches
from .vlm import (DEFAULT_IMAGE_SIZE, DEFAULT_MAX_NEW_TOKENS, DEFAULT_MODEL, DEFAULT_PROMPT, format_prompt,
                  parse_yes_no, read_answer, to_pil)


def server_identity(model: str = DEFAULT_MODEL, revision: str | None = None, prompt: str = DEFAULT_PROMPT,
                    max_tokens: int = DEFAULT_MAX_NEW_TOKENS, image_size: int | None = DEFAULT_IMAGE_SIZE,
                    seed: int = 0, parser: str = "parse_yes_no") -> str:
    """The identity of a :class:`ServerJudge` with these settings (computable without a server).

    ``revision=None`` is written "unpinned": the server's weights are whatever it loaded; give the commit hash
    it serves (``vllm serve MODEL --revision HASH``) for a cache that names its weights.
    """
    sampling = json.dumps({"temperature": 0, "seed": seed}, sort_keys=True, separators=(",", ":"))
    return (f"server:{model}@{revision or 'unpinned'}|prompt={json.dumps(prompt)}|max_tokens={max_tokens}"
            f"|image_size={image_size}|parser={parser}|sampling={sampling}")


#: The largest share of one batch's answers that may be unreadable before the batch is refused (our choice: a
#: judge that cannot read most of its answers is not judging).
MAX_UNREADABLE = 0.5


class UnreadableAnswers(UserWarning):
    """Some answers of a batch could not be read as yes or no (each counted as not preserved)."""


class ServerJudge:
    """A judge that asks a served vision-language model about each image (see the module docstring).

    Args:
        base_url: the server, e.g. ``http://localhost:8000/v1`` (a malformed URL: ``ValueError``).
        model: the model id the server serves (``Qwen/Qwen3-VL-4B-Thinking``).
        revision: the weights' commit hash the server loaded (part of ``identity``; None: "unpinned").
        prompt: the question, with ``{concept}`` (default: ``VLMJudge``'s).
        concurrency, timeout, retries, api_key: see :class:`compbook.runs.serving.ChatClient`.
        max_tokens: the generation budget per answer (a thinking model needs room to finish reasoning).
        image_size: images are resized to ``image_size x image_size`` before sending (None: as rendered).
        seed: the request's sampling seed (decoding is greedy, temperature 0).
        parse: ``text -> True | False | None`` (default :func:`~compbook.cppn.judges.vlm.parse_yes_no`).
        progress: show a progress bar of the answers received, in images per second.
        max_unreadable: the largest share (in [0, 1]) of a batch's answers that may be unreadable; more: the
            batch is refused (``ValueError``) as soon as that many arrive.

    Calling it: ``judge(images (N, H, W, 3) in [0, 1], concept) -> BoolTensor (N,)``; ``last_details[i] =
    {"answer": ...}`` as for ``VLMJudge``; ``last_unreadable`` how many of its answers were unreadable.
    ``judge.client.requests`` counts the HTTP attempts sent.
    """

    def __init__(self, base_url: str, model: str = DEFAULT_MODEL, *, revision: str | None = None,
                 prompt: str = DEFAULT_PROMPT, concurrency: int = DEFAULT_CONCURRENCY,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES, api_key: str | None = None,
                 max_tokens: int = DEFAULT_MAX_NEW_TOKENS, image_size: int | None = DEFAULT_IMAGE_SIZE,
                 seed: int = 0, parse: Callable[[str], bool | None] = parse_yes_no, progress: bool = False,
                 max_unreadable: float = MAX_UNREADABLE):
        format_prompt(prompt, "concept")                   # validates the template
        if revision is not None:
            revision = checks.non_empty_str(revision, "revision")
        if not callable(parse):
            raise ValueError(f"parse must be callable text -> bool | None, got {parse!r}")
        self.client = ChatClient(base_url, model, concurrency=concurrency, timeout=timeout, retries=retries,
                                 api_key=api_key)
        self.model, self.revision, self.prompt, self.parse = self.client.model, revision, prompt, parse
        self.max_tokens = checks.integer(max_tokens, "max_tokens")
        self.image_size = checks.optional_integer(image_size, "image_size")
        self.seed = checks.seed(seed)
        self.progress = checks.boolean(progress, "progress")
        self.max_unreadable = checks.real(max_unreadable, "max_unreadable", 0, 1)
        self.identity = server_identity(self.model, revision, prompt, self.max_tokens, self.image_size, self.seed,
                                        getattr(parse, "__name__", repr(parse)))
        self.unparsed: list[dict] = []
        self.last_details: list[dict] = []
        self.last_unreadable = 0
        self._bar = None

    def payload(self, image: torch.Tensor, concept: str) -> dict:
        """The request for one image ``(H, W, 3)`` in [0, 1] (without ``model``, which the client adds)."""
        message = user_message(format_prompt(self.prompt, concept), [to_pil(image, self.image_size)])
        return {"messages": [message], "temperature": 0, "seed": self.seed, "max_tokens": self.max_tokens}

    def stream(self, images, concept, *, reference=None, questions=None) -> Iterator[tuple[int, bool, dict]]:
        """``(index, verdict, detail)`` for each image, in the order the answers arrive (the unreadable ones last,
        once the batch is known to be within ``max_unreadable``). The inputs are checked here, before any
        request; a request that fails for good raises :class:`compbook.runs.serving.ServerError` after the answers
        already in flight are given; too many unreadable answers raise ``ValueError``."""
        images, concept = check_images(images), check_concept(concept)
        questions = check_questions(questions, len(images)) if questions is not None else None
        return self._answers([self._build(img, concept) for img in images], concept, questions)

    def stream_batches(self, batches, concept, *, reference=None, questions=None) -> Iterator[tuple[int, bool, dict]]:
        """``(index, verdict, detail)`` for the images of every batch, in the order the answers arrive, with no
        barrier between batches (chapter 5's EMC2 scoring at scale: the next batch's requests start while the
        last ones of this batch are answered).

        ``batches`` is an iterable of ``(start, images (B, H, W, 3) in [0, 1])``, read lazily (as requests finish,
        at most ``2 * concurrency`` images waiting), its batches consecutive (``start`` = the number of images
        before it; ``index = start + i``). ``questions`` (optional) is a list indexed like the images; it may grow
        while the batches are read (its entries for a batch are checked when the batch is read). A bad batch
        raises ``ValueError`` when it is read: no request of it is sent, the answers in flight are given first.
        """
        concept = check_concept(concept)
        if questions is not None and (isinstance(questions, (str, bytes, dict)) or not isinstance(questions, list)):
            raise ValueError(f"questions must be a list of dicts indexed like the images, got "
                             f"{type(questions).__name__}")
        return self._answers(self._batch_payloads(batches, concept, questions), concept, questions)

    def _batch_payloads(self, batches, concept, questions) -> Iterator[Callable[[], dict]]:
        """The request builders of every image of ``batches`` (checked batch by batch, see :meth:`stream_batches`)."""
        for start, images in consecutive_batches(batches):
            if questions is not None:
                check_questions(questions[start:start + len(images)], len(images))
            yield from (self._build(img, concept) for img in images)

    def _build(self, image, concept) -> Callable[[], dict]:
        """The request for ``image``, built when called (by the client's worker thread: the PNG is encoded there)."""
        return lambda: self.payload(image, concept)

    def _answers(self, payloads, concept, questions):
        # a list of payloads is one batch (refused as soon as too many are unreadable); a stream of batches
        # (stream_batches) has no known size, and is refused at its end by the same share of all its answers
        n = len(payloads) if isinstance(payloads, list) else None
        held, received, text = [], 0, ""
        try:
            for i, reply in self.client.map(payloads):
                received += 1
                verdict, detail = read_answer(reply.text, self.parse)
                self._tick()
                if verdict is not None:
                    yield i, bool(verdict), detail
                    continue
                self.unparsed.append({"concept": concept, "index": i, "text": reply.text[-2000:],
                                      "question": questions[i] if questions else None})
                held.append((i, False, detail))
                text = reply.text
                if n is not None:
                    self._refuse_unreadable(len(held), n, text)
        except ServerError:                    # the server failed for good: what it answered is not lost
            yield from held
            raise
        if n is None:
            n = received
            self._refuse_unreadable(len(held), n, text)
        self.last_unreadable = len(held)
        if held:
            warnings.warn(f"{self.model}: {len(held)} of {n} answers unreadable, each counted as not preserved "
                          f"('no'); judge.unparsed holds them", UnreadableAnswers, stacklevel=3)
        yield from held

    def _refuse_unreadable(self, k: int, n: int, text: str) -> None:
        """Refuse a batch of ``n`` answers of which ``k``, more than ``max_unreadable`` of them, are unreadable."""
        if k > self.max_unreadable * n:
            raise ValueError(f"{self.model} at {self.client.base_url}: {k} of {n} answers unreadable, more than "
                             f"max_unreadable={self.max_unreadable:g} of the batch (e.g. {text[-120:]!r}): the "
                             f"parser cannot read this server's answers (a model that does not answer yes or no, "
                             f"or max_tokens={self.max_tokens} too few for its reasoning?); none of them is "
                             f"counted, judge.unparsed holds them")

    def _tick(self) -> None:
        if not self.progress:
            return
        if self._bar is None:
            from tqdm.auto import tqdm
            self._bar = tqdm(desc=f"{self.model} answers", unit=" images", smoothing=0.1)
        self._bar.update(1)

    def close(self) -> None:
        """Close the progress bar (if shown)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __call__(self, images, concept, *, reference=None, questions=None) -> torch.Tensor:
        n = len(check_images(images))
        verdicts, details = [False] * n, [None] * n
        for i, v, d in self.stream(images, concept, reference=reference, questions=questions):
            verdicts[i], details[i] = v, d
        self.last_details = details
        return torch.tensor(verdicts, dtype=torch.bool)

    def __repr__(self) -> str:
        return f"ServerJudge({self.client.base_url!r}, {self.identity})"
