"""The interpretation pipeline's describer and synthesiser behind any OpenAI-compatible server (chapter 16, at
scale).

:class:`ServerDescriber` names each masked region with a served vision-language model (the paper's Qwen3-VL-8B),
:class:`ServerSynthesiser` turns a latent's descriptions and top words into one concept per modality and says
whether they agree (the paper's Qwen3-30B-A3B). They ask what :mod:`compbook.sae.servers.hf_interpret`'s in-process
models are asked (the same prompts, the region shown by :func:`~compbook.sae.servers.hf_interpret.masked_image`, the
answers read by :func:`~compbook.sae.servers.hf_interpret.first_line` and
:func:`~compbook.sae.servers.hf_interpret.parse_synthesis`), through :class:`compbook.runs.serving.ChatClient`: requests
``concurrency`` at a time, at temperature 0 with a seed, retried on 429 / 5xx / dropped connections, a clear
error naming the URL when the server is down. :func:`compbook.sae.interpret.interpret` asks about every latent
at once through ``describe_many`` / ``synthesise_many``.

With ``cache=path.json`` every answer is kept (:class:`compbook.results.journal.AnswerCache`: journaled as it arrives,
sealed when the call ends), keyed by ``identity`` (model, revision, prompt, settings; not the URL) and by the
request itself (the image sent included): a rerun asks only what it has no answer for. The rule-based
:class:`~compbook.sae.describe.PixelDescriber` and :class:`~compbook.sae.describe.MajoritySynthesiser` stay the
CPU default.
"""

from __future__ import annotations

import json

import numpy as np

from ... import checks
from ...results.journal import AnswerCache, answer_key
from ...runs.serving import DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT, ChatClient, user_message
from .hf_interpret import (
    DESCRIBE_PROMPT, SYNTHESIS_PROMPT, first_line, masked_image, parse_synthesis, synthesis_prompt
)
from ..interpret import Synthesis


def asker_identity(kind: str, model: str, revision: str | None, prompt: str, settings: dict) -> str:
    """``<kind>:<model>@<revision or unpinned>|prompt=...|settings=...``: what could change the answers."""
    return (f"{kind}:{model}@{revision or 'unpinned'}|prompt={json.dumps(prompt)}"
            f"|settings={json.dumps(settings, sort_keys=True, separators=(',', ':'))}")


class _ServerAsker:
    """What both askers share: the client, the request settings, the identity and the answer cache."""

    kind = ""

    def __init__(self, base_url, model, revision, prompt, concurrency, timeout, retries, api_key, max_tokens,
                 seed, template_kwargs, cache, **settings):
        self.client = ChatClient(base_url, model, concurrency=concurrency, timeout=timeout, retries=retries,
                                 api_key=api_key)
        if revision is not None:
            revision = checks.non_empty_str(revision, "revision")
        self.prompt = checks.non_empty_str(prompt, "prompt")
        self.max_tokens, self.seed = checks.integer(max_tokens, "max_tokens"), checks.seed(seed)
        if template_kwargs is not None:
            template_kwargs = checks.mapping(template_kwargs, "template_kwargs")
        self.template_kwargs = template_kwargs
        self.identity = asker_identity(self.kind, self.client.model, revision, self.prompt,
                                       {"max_tokens": self.max_tokens, "seed": self.seed, "temperature": 0,
                                        "chat_template_kwargs": template_kwargs, **settings})
        self.cache = None if cache is None else AnswerCache(cache, self.identity)

    def request(self, message: dict) -> dict:
        body = {"messages": [message], "temperature": 0, "seed": self.seed, "max_tokens": self.max_tokens}
        return body | ({"chat_template_kwargs": self.template_kwargs} if self.template_kwargs else {})

    def ask(self, requests: list) -> list:
        """The model's output (reasoning put back, :attr:`compbook.runs.serving.Reply.text`) for every request: stored
        answers from the cache, the others asked concurrently and each stored as it arrives."""
        keys = [answer_key(self.identity, r) for r in requests]
        known = {k: self.cache.get(k) for k in keys if self.cache is not None and k in self.cache}
        todo = {k: r for k, r in zip(keys, requests) if k not in known}
        order = list(todo)
        try:
            for i, reply in self.client.map([todo[k] for k in order]):
                known[order[i]] = reply.text
                if self.cache is not None:
                    self.cache.put(order[i], reply.text)
        finally:
            if self.cache is not None and todo:
                self.cache.seal()
        return [known[k] for k in keys]


class ServerDescriber(_ServerAsker):
    """``describer(images (K, H, W, 3) in [0, 1], masks (K, H, W)) -> K descriptions`` from a served VLM.

    Args:
        base_url, model, revision: the server, the served model id, its weights' commit (part of ``identity``).
        prompt: :data:`~compbook.sae.servers.hf_interpret.DESCRIBE_PROMPT` by default.
        concurrency, timeout, retries, api_key: see :class:`compbook.runs.serving.ChatClient`.
        max_tokens, seed: the request's budget and sampling seed (decoding is greedy).
        size, dim: how the region is shown (:func:`~compbook.sae.servers.hf_interpret.masked_image`).
        template_kwargs: sent as ``chat_template_kwargs`` (vLLM, SGLang, transformers serve), e.g.
            ``{"enable_thinking": False}`` for a Qwen3 thinking switch; None sends nothing.
        cache: a ``*.json`` file keeping every answer (None: nothing kept).
    """

    kind = "server-describer"

    def __init__(self, base_url: str, model: str, *, revision: str | None = None, prompt: str = DESCRIBE_PROMPT,
                 concurrency: int = DEFAULT_CONCURRENCY, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, api_key: str | None = None, max_tokens: int = 24, seed: int = 0,
                 size: int = 224, dim: float = 0.7, template_kwargs: dict | None = None, cache=None):
        self.size, self.dim = checks.integer(size, "size"), checks.real(dim, "dim", 0, 1)
        super().__init__(base_url, model, revision, prompt, concurrency, timeout, retries, api_key, max_tokens,
                         seed, template_kwargs, cache, size=self.size, dim=self.dim)

    def requests(self, images, masks) -> list:
        """One request per region: the masked image, then the prompt."""
        images = checks.tensor(images, "images", (None, None, None, 3), low=0, high=1).numpy()
        masks = np.asarray(masks, bool)
        if masks.shape != images.shape[:3]:
            raise ValueError(f"masks: shape {masks.shape} does not match the images' {images.shape[:3]} (K, H, W)")
        return [self.request(user_message(self.prompt, [masked_image(im, m, self.size, self.dim)]))
                for im, m in zip(images, masks)]

    def describe_many(self, regions: list) -> list:
        """Descriptions for every ``(images, masks)`` of ``regions``, all asked at once: a list per item."""
        asks = [self.requests(im, m) for im, m in regions]
        texts = iter(first_line(t) for t in self.ask([r for a in asks for r in a]))
        return [[next(texts) for _ in a] for a in asks]

    def __call__(self, images, masks) -> list:
        return self.describe_many([(images, masks)])[0]


class ServerSynthesiser(_ServerAsker):
    """``synthesiser(descriptions, words) -> Synthesis`` from a served LLM: the request is
    :func:`~compbook.sae.servers.hf_interpret.synthesis_prompt` (``template`` a parameter), the answer read by
    :func:`~compbook.sae.servers.hf_interpret.parse_synthesis`. Arguments as :class:`ServerDescriber`'s."""

    kind = "server-synthesiser"

    def __init__(self, base_url: str, model: str, *, revision: str | None = None, template: str = SYNTHESIS_PROMPT,
                 concurrency: int = DEFAULT_CONCURRENCY, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, api_key: str | None = None, max_tokens: int = 48, seed: int = 0,
                 template_kwargs: dict | None = None, cache=None):
        super().__init__(base_url, model, revision, template, concurrency, timeout, retries, api_key, max_tokens,
                         seed, template_kwargs, cache)

    def synthesise_many(self, asks: list) -> list:
        """A :class:`~compbook.sae.interpret.Synthesis` for every ``(descriptions, words)`` of ``asks``."""
        for descriptions, words in asks:
            for name, v in (("descriptions", descriptions), ("words", words)):
                if isinstance(v, str) or not all(isinstance(t, str) for t in v):
                    raise ValueError(f"{name} must be a list of strings, got {v!r:.80}")
        requests = [self.request(user_message(synthesis_prompt(d, w, self.prompt))) for d, w in asks]
        return [parse_synthesis(t) for t in self.ask(requests)]

    def __call__(self, descriptions, words) -> Synthesis:
        return self.synthesise_many([(descriptions, words)])[0]
