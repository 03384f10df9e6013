"""Judges for EMC2-Bench: does a perturbed render still show the same thing? (chapter on EMC2-Bench).

Every judge is a callable ``judge(images, concept, *, reference=None, questions=None) -> BoolTensor (N,)``:

- ``images``: a float tensor ``(N, H, W, 3)`` in [0, 1] (the perturbed renders);
- ``concept``: what the image should show, e.g. ``"skull"``;
- ``reference``: the unperturbed render ``(H, W, 3)`` (needed by :class:`SSIMJudge`);
- ``questions``: N JSON-able dicts saying what each image is (checkpoint hash, weight, delta, policy, res):
  plain judges ignore them, :class:`CachedJudge` keys its verdicts by them.

and has ``judge.identity``, a string naming everything that could change its answers (kind, model id, revision,
prompt, thresholds), so two judges that could answer differently never share an identity. A judge may also set
``judge.last_details``: one short JSON-able dict per image of its last call (an SSIM value, a VLM's answer), which
:class:`CachedJudge` stores beside the verdict.

Judges here: :class:`SSIMJudge` (CPU, no weights), :class:`~compbook.vlm.VLMJudge` (the paper's kind of judge, a
vision-language model; in :mod:`compbook.vlm`, importable from here), and :class:`CachedJudge` (stored verdicts in
``data/judge_cache/``). ``python -m compbook.judges fill ...`` fills a cache (see :func:`main`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np
import torch

from . import checks

CACHE_FORMAT = "compbook-judge-cache/1"
CACHE_FOLDER = "judge_cache"


class Judge(Protocol):
    """What every judge is (see the module docstring)."""

    identity: str

    def __call__(self, images: torch.Tensor, concept: str, *, reference: torch.Tensor | None = None,
                 questions: Sequence[dict] | None = None) -> torch.Tensor: ...


# -- input validation ----------------------------------------------------------------------------------------------
def check_images(images, name: str = "images") -> torch.Tensor:
    """``images`` as a float tensor ``(N, H, W, 3)`` with values in [0, 1]; else ``ValueError`` naming ``name``."""
    if not isinstance(images, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor (N, H, W, 3), got {type(images).__name__}")
    if not images.is_floating_point():
        raise ValueError(f"{name} must be a float tensor in [0, 1], got dtype {images.dtype}")
    if images.ndim != 4 or images.shape[-1] != 3 or images.shape[1] < 1 or images.shape[2] < 1:
        raise ValueError(f"{name} must have shape (N, H, W, 3), got {tuple(images.shape)}")
    if images.numel() and not (torch.isfinite(images).all() and images.min() >= 0 and images.max() <= 1):
        raise ValueError(f"{name} must hold finite values in [0, 1], got range "
                         f"[{images.min().item():.4g}, {images.max().item():.4g}]")
    return images


def check_reference(reference, images: torch.Tensor) -> torch.Tensor:
    """``reference`` as one image ``(H, W, 3)`` in [0, 1] of the same size as ``images``."""
    if reference is None:
        raise ValueError("reference is required: this judge compares each image with the unperturbed render")
    if not isinstance(reference, torch.Tensor) or reference.ndim != 3:
        shape = tuple(reference.shape) if isinstance(reference, torch.Tensor) else type(reference).__name__
        raise ValueError(f"reference must be a tensor (H, W, 3), got {shape}")
    check_images(reference[None], "reference")
    if reference.shape != images.shape[1:]:
        raise ValueError(f"reference has shape {tuple(reference.shape)}, images are {tuple(images.shape[1:])}")
    return reference


def check_concept(concept) -> str:
    """``concept`` as a non-empty string (``"skull"``)."""
    if not isinstance(concept, str) or not concept.strip():
        raise ValueError(f"concept must be a non-empty str such as 'skull', got {concept!r}")
    return concept


def canonical_json(obj, where: str = "question") -> str:
    """The canonical JSON text of ``obj`` (sorted keys, no spaces, no NaN): equal objects give equal text.

    Tuples become lists, so ``(3, 1, 2)`` and ``[3, 1, 2]`` are the same question. Raises ``ValueError``
    naming ``where`` for anything JSON cannot hold exactly (tensors, NaN, sets, ...).
    """
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where} is not JSON-able ({e}): {obj!r:.200}") from e


def check_questions(questions, n: int) -> list[dict]:
    """``questions`` as a list of ``n`` JSON-able dicts."""
    if isinstance(questions, (str, bytes, dict)) or not isinstance(questions, Sequence):
        raise ValueError(f"questions must be a list of {n} dicts, got {type(questions).__name__}")
    if len(questions) != n:
        raise ValueError(f"questions has {len(questions)} entries for {n} images")
    for i, q in enumerate(questions):
        if not isinstance(q, dict):
            raise ValueError(f"questions[{i}] must be a dict, got {type(q).__name__}")
        canonical_json(q, f"questions[{i}]")
    return list(questions)


# -- SSIM: a CPU judge with no weights -----------------------------------------------------------------------------
def luminance(images: torch.Tensor) -> np.ndarray:
    """Grey level ``(..., H, W)`` float64 of RGB ``(..., H, W, 3)``: Rec. 709 weights (scikit-image's rgb2gray)."""
    return images.detach().cpu().double().numpy() @ np.array([0.2125, 0.7154, 0.0721])


def ssim_scores(images: torch.Tensor, reference: torch.Tensor, color: str = "grey", win_size: int = 7) -> torch.Tensor:
    """SSIM of each image ``(N, H, W, 3)`` against ``reference`` ``(H, W, 3)``: a float64 tensor ``(N,)`` in [-1, 1].

    scikit-image's ``structural_similarity`` (uniform ``win_size`` window, data_range 1) on the grey level
    (``color="grey"``, :func:`luminance`) or on the three RGB channels averaged (``color="rgb"``).
    """
    from skimage.metrics import structural_similarity

    images = check_images(images)
    reference = check_reference(reference, images)
    if color not in ("grey", "rgb"):
        raise ValueError(f"color must be 'grey' or 'rgb', got {color!r}")
    if min(images.shape[1:3]) < win_size:
        raise ValueError(f"images are {tuple(images.shape[1:3])}: SSIM needs at least {win_size}x{win_size}")
    if color == "grey":
        imgs, ref, axis = luminance(images), luminance(reference), None
    else:
        imgs, ref, axis = images.detach().cpu().double().numpy(), reference.detach().cpu().double().numpy(), -1
    return torch.tensor([structural_similarity(img, ref, win_size=win_size, data_range=1.0, channel_axis=axis)
                         for img in imgs], dtype=torch.float64)


class SSIMJudge:
    """A CPU judge with no weights: an image is preserved when SSIM(image, reference) >= ``threshold``.

    SSIM (structural similarity) compares local means, contrasts and correlations; it sees "the same picture,
    slightly changed", not "still a skull": a skull shifted by 4 pixels scores 0.13 and is rejected. It stands in
    for the paper's VLM judge where no VLM verdicts are stored, and the book says so wherever it is used.

    Our choices: grey-level SSIM (colour shifts that keep the shape are tolerated; ``color="rgb"`` for all
    channels), scikit-image's default 7x7 window, and ``threshold=0.5``, picked from this evidence (computed for
    this docstring on the layerized Picbreeder skull at 64x64, 144 non-zero weights, each perturbed by +delta):

    - unrelated images never come close: butterfly 0.05, apple 0.13, three random dense tanh CPPNs 12x22
      0.02-0.03, uniform noise 0.00, a constant grey image 0.05 (at 32x32: at most 0.16-0.20 for any target);
    - perturbed skulls spread over the whole range (delta 0.5: quartiles 0.29 / 0.61 / 0.91; delta 1.0:
      0.13 / 0.39 / 0.82; delta 0.1: median 0.97);
    - looking at 80 of them sorted by SSIM (our eyes, not a VLM's): every one at 0.5 or above is still clearly
      the skull (an eye or the jaw changed, a smear added); between 0.3 and 0.5 skulls and broken images
      (no eyes, a face melted into stripes) mix; below 0.3 most are broken.

    So 0.5 sits above everything unrelated with a wide margin and at the point where broken renders stop;
    it is conservative (some recognisable skulls in 0.35-0.5 are rejected). At 0.5 the skull keeps 60% of its
    weights' perturbations at delta 0.5 and 45% at delta 1.0. The threshold depends on resolution and target;
    it is a parameter, and part of ``identity``.
    """

    def __init__(self, threshold: float = 0.5, color: str = "grey", win_size: int = 7):
        threshold = checks.real(threshold, "threshold", -1, 1)
        color = checks.choice(color, "color", ("grey", "rgb"))
        if checks.integer(win_size, "win_size", 3) % 2 == 0:
            raise ValueError(f"win_size must be an odd integer >= 3, got {win_size!r}")
        win_size = int(win_size)
        self.threshold, self.color, self.win_size = float(threshold), color, win_size
        self.identity = f"ssim:{color},threshold={self.threshold!r}|win_size={win_size}|data_range=1"
        self.last_details: list[dict] = []

    def scores(self, images: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
        """SSIM of each image against ``reference``: ``(N,)`` float64 (see :func:`ssim_scores`)."""
        return ssim_scores(images, reference, self.color, self.win_size)

    def __call__(self, images, concept, *, reference=None, questions=None) -> torch.Tensor:
        images, _ = check_images(images), check_concept(concept)
        if questions is not None:
            check_questions(questions, len(images))
        s = self.scores(images, reference)
        self.last_details = [{"ssim": round(float(v), 4)} for v in s]
        return s >= self.threshold

    def __repr__(self) -> str:
        return f"SSIMJudge({self.identity})"



def default_cpu_judge():
    """The book's default CPU judge for "is this still a <concept>?": a semantic judge of
    :mod:`compbook.semantic`, chosen by agreement with held-out blind human verdicts (``data/semantic/
    choice.json``). Call it as ``judge(images (N, H, W, 3) in [0, 1], concept)``, no reference needed."""
    from . import semantic
    return semantic.default_judge()


# -- cached verdicts -----------------------------------------------------------------------------------------------
class CacheMiss(LookupError):
    """A strict :class:`CachedJudge` has no stored verdict for a question."""


def entry_key(identity: str, concept: str, question: dict) -> str:
    """The cache key: sha256 (hex) of the canonical JSON of ``[identity, concept, question]``."""
    return hashlib.sha256(canonical_json([identity, concept, question]).encode()).hexdigest()


def cache_file_name(identity: str) -> str:
    """``<readable slug>-<8 hex of sha256(identity)>.json``, e.g. ``vlm-qwen-qwen3-vl-4b-thinking-main-1a2b3c4d.json``."""
    slug = re.sub(r"[^a-z0-9.]+", "-", identity.split("|", 1)[0].lower()).strip("-.")[:60].rstrip("-.")
    return f"{slug or 'judge'}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}.json"


def cache_folder() -> Path:
    """The book's judge caches: ``data/judge_cache/`` (see :func:`compbook.paths.data_dir`)."""
    from .paths import data_dir
    return data_dir() / CACHE_FOLDER


def cache_path(identity: str, folder=None) -> Path:
    """Where the cache of ``identity`` lives: ``folder`` (default :func:`cache_folder`) / :func:`cache_file_name`."""
    return Path(folder if folder is not None else cache_folder()) / cache_file_name(identity)


def cache_digest(identity: str, entries: dict) -> str:
    """sha256 (hex) of the canonical JSON of ``[identity, entries]``: the file-level seal a cache file carries."""
    return hashlib.sha256(canonical_json([identity, entries], "cache entries").encode()).hexdigest()


def _refuse_duplicate_keys(path: Path):
    """A ``json.loads`` hook that refuses an object with a repeated key (what a bad merge of two caches makes;
    plain ``json`` would keep the last one silently)."""
    def hook(pairs):
        out = {}
        for k, v in pairs:
            if k in out:
                old = out[k]
                if isinstance(old, dict) and isinstance(v, dict) and "verdict" in old and "verdict" in v:
                    what = (f"with conflicting verdicts {old['verdict']!r} and {v['verdict']!r}"
                            if old["verdict"] != v["verdict"] else "twice, with the same verdict")
                else:
                    what = "twice"
                raise ValueError(f"{path}: key {k[:16]!r} appears {what} (a bad merge or a hand edit?); "
                                 f"restore the file (git) or delete it and fill it again")
            out[k] = v
        return out
    return hook


def read_cache(path, verify_digest: bool = True) -> tuple[str, dict]:
    """``(identity, entries)`` of a cache file.

    ``ValueError`` (naming the file) for: a folder; invalid JSON; a repeated key (duplicate or conflicting
    verdicts); another format version; an entry whose key does not match its identity, concept and question;
    and, with ``verify_digest``, a missing or wrong file digest (:func:`cache_digest`: a verdict edited by hand,
    an entry added or removed). ``FileNotFoundError`` when nothing is there.
    """
    path = checks.file_path(path, "judge cache")
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_refuse_duplicate_keys(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: judge cache is not valid JSON ({e}); restore it (git) or delete it") from e
    if not isinstance(data, dict) or "format" not in data:
        raise ValueError(f"{path}: not a judge cache (no 'format' field)")
    if data["format"] != CACHE_FORMAT:
        raise ValueError(f"{path}: judge cache format {data['format']!r} is not {CACHE_FORMAT!r} (this compbook)")
    identity, entries = data.get("identity"), data.get("entries")
    if not isinstance(identity, str) or not isinstance(entries, dict):
        raise ValueError(f"{path}: judge cache needs a str 'identity' and a dict 'entries'")
    for key, e in entries.items():
        ok = (isinstance(e, dict) and isinstance(e.get("concept"), str) and isinstance(e.get("question"), dict)
              and isinstance(e.get("verdict"), bool))
        if not ok or entry_key(identity, e["concept"], e["question"]) != key:
            raise ValueError(f"{path}: entry {key[:12]}... is malformed or does not match its key (edited by hand?)")
    if verify_digest:
        if "digest" not in data:
            raise ValueError(f"{path}: judge cache has no 'digest' (not written by compbook.judges.write_cache, or "
                             f"the field was removed); if you trust its verdicts, re-seal it: see "
                             f"data/judge_cache/README.md")
        if data["digest"] != cache_digest(identity, entries):
            raise ValueError(f"{path}: judge cache digest does not match its entries (a verdict edited by hand, "
                             f"or entries added or removed by a merge); restore the file (git) or fill it again")
    return identity, entries


def write_cache(path, identity: str, entries: dict) -> Path:
    """Write a cache file atomically (a temporary file in the same folder, then rename), one entry per line,
    sealed with its :func:`cache_digest` (checked by :func:`read_cache`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"  {json.dumps(k)}: {json.dumps(e, ensure_ascii=False)}" for k, e in entries.items()]
    text = (f'{{\n "format": {json.dumps(CACHE_FORMAT)},\n "identity": {json.dumps(identity, ensure_ascii=False)},\n'
            f' "key": "sha256 of canonical JSON [identity, concept, question]",\n'
            f' "digest": {json.dumps(cache_digest(identity, entries))},\n "entries": {{\n'
            + ",\n".join(lines) + "\n }\n}\n")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


class CachedJudge:
    """Stored verdicts of one judge, keyed by everything that determines the question.

    Args:
        path: a cache file (``*.json``), or a folder in which the file is named from the identity
            (:func:`cache_file_name`; the book's caches live in ``data/judge_cache/``).
        judge: the judge whose verdicts these are (required for ``mode="fill"``).
        identity: that judge's identity when no judge is given (e.g. :func:`~compbook.vlm.vlm_identity`, to read
            VLM verdicts on a CPU); with neither, the identity written in the file is used.
        mode: ``"strict"``: a question with no stored verdict raises :class:`CacheMiss` (a ``LookupError``)
            naming it; ``"fill"``: misses go to ``judge`` and are stored (the file is rewritten after each call).

    A verdict is keyed by :func:`entry_key` (judge identity, concept, question dict; the engine's question holds
    the checkpoint's content hash, the weight, delta, policy and resolution), so it is never served for another
    question or another judge. Images are not looked at on a hit: the question must say what the image is.
    ``hits`` and ``misses`` count images. Loading a corrupt file, another format version, a file written by
    another judge identity, a repeated key (duplicate or conflicting verdicts), a file whose digest does not match
    its entries (see :func:`read_cache`), or a ``path`` that is a folder named ``*.json`` raises ``ValueError``.
    """

    def __init__(self, path, judge: Judge | None = None, identity: str | None = None, mode: str = "strict"):
        if mode not in ("strict", "fill"):
            raise ValueError(f"mode must be 'strict' or 'fill', got {mode!r}")
        if judge is not None:
            if not callable(judge) or not isinstance(getattr(judge, "identity", None), str):
                raise ValueError(f"judge must be a callable with a str .identity, got {judge!r}")
            if identity is not None and identity != judge.identity:
                raise ValueError(f"identity {identity!r} differs from the judge's identity {judge.identity!r}")
            identity = judge.identity
        if mode == "fill" and judge is None:
            raise ValueError("mode='fill' needs a judge to ask on a miss")
        if not isinstance(path, (str, os.PathLike)) or str(path) == "":
            raise ValueError(f"path must be a cache file (*.json) or a folder, got {path!r}")
        path = Path(path)
        if path.suffix == ".json" and path.is_dir():
            raise ValueError(f"path {path} is a directory, not a cache file; give a *.json file, or a folder "
                             f"whose name does not end in .json")
        if path.suffix != ".json":
            if path.exists() and not path.is_dir():
                raise ValueError(f"path {path} is a file without the .json suffix, not a judge cache")
            if identity is None:
                raise ValueError(f"path {path} is a folder: give judge or identity to choose the cache file in it")
            path = path / cache_file_name(identity)
        self.path, self.judge, self.mode, self.hits, self.misses = path, judge, mode, 0, 0
        if path.exists():
            stored, self._entries = read_cache(path)
            if identity is not None and stored != identity:
                raise ValueError(f"{path} holds verdicts of judge {stored!r}, not of {identity!r}")
            identity = stored
        elif mode == "strict":
            raise FileNotFoundError(f"judge cache {path} does not exist (fill it: python -m compbook.judges fill)")
        else:
            self._entries = {}
        self.identity: str = identity

    def __len__(self) -> int:
        return len(self._entries)

    def records(self) -> list[dict]:
        """Every stored entry (``concept``, ``question``, ``verdict``, optional ``detail``), in file order."""
        return [dict(e) for e in self._entries.values()]

    def __call__(self, images, concept, *, reference=None, questions=None) -> torch.Tensor:
        images, concept = check_images(images), check_concept(concept)
        if questions is None:
            raise ValueError("questions is required: CachedJudge keys each verdict by its question dict")
        questions = check_questions(questions, len(images))
        keys = [entry_key(self.identity, concept, q) for q in questions]
        missing = [i for i, k in enumerate(keys) if k not in self._entries]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing and self.mode == "strict":
            raise CacheMiss(f"{len(missing)} of {len(keys)} questions have no stored verdict of judge "
                            f"{self.identity!r} in {self.path}; first: concept={concept!r}, question="
                            f"{canonical_json(questions[missing[0]])}. Fill the cache with this judge on a GPU "
                            f"(python -m compbook.judges fill ...), or use a CPU judge and say so.")
        if missing:
            self._fill(images[missing], concept, reference, [questions[i] for i in missing], [keys[i] for i in missing])
        return torch.tensor([self._entries[k]["verdict"] for k in keys], dtype=torch.bool)

    def _fill(self, images, concept, reference, questions, keys) -> None:
        verdicts = self.judge(images, concept, reference=reference, questions=questions)
        if not isinstance(verdicts, torch.Tensor) or verdicts.dtype != torch.bool or verdicts.shape != (len(keys),):
            raise ValueError(f"judge {self.identity!r} returned {verdicts!r:.100}, not a BoolTensor ({len(keys)},)")
        details = getattr(self.judge, "last_details", None)
        details = details if isinstance(details, list) and len(details) == len(keys) else [None] * len(keys)
        for k, q, v, d in zip(keys, questions, verdicts.tolist(), details):
            entry = {"concept": concept, "question": json.loads(canonical_json(q)), "verdict": bool(v)}
            if d is not None:
                canonical_json(d, "judge.last_details")
                entry["detail"] = d
            self._entries[k] = entry
        write_cache(self.path, self.identity, self._entries)

    def __repr__(self) -> str:
        return (f"CachedJudge({str(self.path)!r}, identity={self.identity!r}, mode={self.mode!r}, "
                f"{len(self)} entries, hits={self.hits}, misses={self.misses})")


def stored_judge(identity: str, folder=None) -> CachedJudge | None:
    """A strict :class:`CachedJudge` over the stored verdicts of judge ``identity`` (e.g. the VLM's, read on a
    CPU), or None when this project has no such file (chapter 5)."""
    if folder is not None:
        path = cache_path(identity, folder)
    else:
        from .paths import data_file
        try:   # outside a checkout (Colab) the file is fetched from the repository
            path = data_file(f"{CACHE_FOLDER}/{cache_file_name(identity)}")
        except FileNotFoundError:
            return None
    return CachedJudge(path, identity=identity) if path.exists() else None


def score_or_fall_back(score: Callable, judge, fallback):
    """``score(judge)``, or ``score(fallback)`` when ``judge`` is a cache without the verdict asked for
    (:class:`CacheMiss`); the result's ``source`` names the judge that answered (chapter 5)."""
    try:
        return score(judge)
    except CacheMiss:
        return score(fallback)


def __getattr__(name):
    # VLMJudge lives in compbook.vlm (transformers is imported only when a model loads); re-exported here.
    if name in ("VLMJudge", "vlm_identity", "parse_yes_no", "final_answer", "DEFAULT_MODEL", "DEFAULT_PROMPT"):
        from . import vlm
        return getattr(vlm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- command line: fill a cache ------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m compbook.judges",
                                description="Fill or inspect EMC2 judge caches (data/judge_cache/).")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fill", help="ask a judge about every perturbation compositional_score evaluates; store it")
    f.add_argument("--genome", action="append", default=[], help="a Picbreeder genome (skull, butterfly, apple)")
    f.add_argument("--checkpoint", action="append", default=[], help="a compbook checkpoint (save_cppn)")
    f.add_argument("--concept", help="what the images show (default: the genome's name; required for checkpoints)")
    f.add_argument("--judge", choices=("vlm", "ssim"), default="vlm")
    f.add_argument("--cache", help="cache file or folder (default: data/judge_cache/)")
    g = f.add_argument_group("VLM judge")
    g.add_argument("--model-id", default=None, help="default Qwen/Qwen3-VL-4B-Thinking")
    g.add_argument("--revision", default=None, help="a commit hash pins the weights (default: main)")
    g.add_argument("--prompt", default=None, help="with {concept}; default compbook.vlm.DEFAULT_PROMPT")
    g.add_argument("--max-new-tokens", type=int, default=None)
    g.add_argument("--image-size", type=int, default=None)
    g.add_argument("--batch-size", type=int, default=8, help="images per generate call")
    g.add_argument("--device", default=None)
    g.add_argument("--device-map", default=None, help="e.g. auto (needs accelerate)")
    s = f.add_argument_group("SSIM judge")
    s.add_argument("--threshold", type=float, default=0.5)
    e = f.add_argument_group("compositional_score (defaults: compbook.emc2's)")
    e.add_argument("--delta", type=float)
    e.add_argument("--res", type=int)
    e.add_argument("--policy")
    e.add_argument("--seed", type=int)
    e.add_argument("--engine")
    e.add_argument("--engine-batch-size", type=int, help="compositional_score's batch_size")
    e.add_argument("--sample", type=int, help="score a seeded sample of this many weights (default: all)")
    sh = sub.add_parser("show", help="summarise cache files")
    sh.add_argument("paths", nargs="*", help="cache files or folders (default: data/judge_cache/)")
    return p


def _make_judge(args) -> Judge:
    if args.judge == "ssim":
        return SSIMJudge(threshold=args.threshold)
    from . import vlm
    options = {k: v for k, v in (("model_id", args.model_id), ("prompt", args.prompt),
                                  ("max_new_tokens", args.max_new_tokens), ("image_size", args.image_size))
               if v is not None}
    return vlm.VLMJudge(revision=args.revision, batch_size=args.batch_size, device=args.device,
                        device_map=args.device_map, **options)


def _models(args) -> list[tuple[str, object, str]]:
    """``(name, CPPN, concept)`` for every ``--genome`` and ``--checkpoint``."""
    from . import checkpoints, picbreeder
    if not args.genome and not args.checkpoint:
        raise SystemExit("fill: give at least one --genome or --checkpoint")
    if args.checkpoint and not args.concept:
        raise SystemExit("fill: --concept is required with --checkpoint")
    out = [(g, picbreeder.layerize(picbreeder.load_genome(g)), args.concept or g) for g in args.genome]
    return out + [(c, checkpoints.load_cppn(c), args.concept) for c in args.checkpoint]


def fill(args) -> int:
    """``fill``: run ``compbook.emc2.compositional_score`` with a ``CachedJudge(mode="fill")`` for each model."""
    from . import emc2  # imported here: the engine is a separate module
    models = _models(args)
    judge = _make_judge(args)
    cached = CachedJudge(args.cache if args.cache else cache_path(judge.identity), judge, mode="fill")
    kwargs = {k: v for k, v in (("delta", args.delta), ("res", args.res), ("policy", args.policy),
                                ("seed", args.seed), ("engine", args.engine),
                                ("batch_size", args.engine_batch_size), ("sample", args.sample)) if v is not None}
    print(f"judge: {judge.identity}\ncache: {cached.path} ({len(cached)} entries)")
    for name, model, concept in models:
        before = (cached.hits, cached.misses)
        result = emc2.compositional_score(model, cached, concept, progress=True, **kwargs)
        print(f"{name} ({concept}): score {result.score:.3f} over {len(result.verdicts)} weights; "
              f"{cached.hits - before[0]} stored, {cached.misses - before[1]} new verdicts")
    unparsed = getattr(judge, "unparsed", [])
    if unparsed:
        print(f"warning: {len(unparsed)} answers could not be parsed and count as not preserved "
              f"(raise --max-new-tokens?); last: {unparsed[-1]['text'][-200:]!r}")
    print(f"wrote {cached.path} ({len(cached)} entries)")
    return 0


def show(args) -> int:
    """``show``: identity, entry count and fraction preserved per concept of each cache file."""
    paths = [Path(p) for p in args.paths] or [cache_folder()]
    files = [f for p in paths for f in (sorted(p.glob("*.json")) if p.is_dir() else [p])]
    for f in files:
        identity, entries = read_cache(f)
        print(f"{f}\n  judge: {identity}\n  {len(entries)} verdicts")
        for c in sorted({e["concept"] for e in entries.values()}):
            v = [e["verdict"] for e in entries.values() if e["concept"] == c]
            print(f"  {c}: {len(v)} verdicts, {sum(v) / len(v):.1%} preserved")
    if not files:
        print("no cache files")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``python -m compbook.judges fill ...`` / ``show ...`` (``--help`` for options)."""
    args = _parser().parse_args(argv)
    return {"fill": fill, "show": show}[args.command](args)


if __name__ == "__main__":
    from compbook.judges import main as _main  # the importable module, not a second copy named __main__
    sys.exit(_main())
