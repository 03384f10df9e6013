"""EMC2-Bench's judges (chapter 5): "does this perturbed render still show its object?".

Modules, in import order (each imports only those before it):

* :mod:`.base`: the :class:`~.base.Judge` protocol, the checks every judge shares, :class:`~.base.SSIMJudge`;
* :mod:`.cache`: :class:`~.cache.CachedJudge`, verdicts stored in ``data/judge_cache/``;
* :mod:`.augment`: declared transformations of the reference renders (training data of the CNN judge);
* :mod:`.semantic`: CPU judges of "is this still a <concept>?" and :func:`default_cpu_judge`;
* :mod:`.vlm`: :class:`~.vlm.VLMJudge`, the paper's kind of judge (transformers, imported when a model loads);
* :mod:`.server`: :class:`~.server.ServerJudge`, the same question to any OpenAI-compatible server (at scale).

The names below are importable from this package (``from compbook.cppn.judges import SSIMJudge``); each is
looked up in its module on first use, so importing the package loads nothing else.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "base": ("Judge", "check_images", "check_reference", "check_concept", "canonical_json", "check_questions",
             "luminance", "ssim_scores", "SSIMJudge"),
    "cache": ("CACHE_FORMAT", "CACHE_FOLDER", "CacheMiss", "entry_key", "cache_file_name", "cache_folder",
              "cache_path", "cache_digest", "read_cache", "write_cache", "CachedJudge", "stored_judge",
              "score_or_fall_back"),
    "semantic": ("default_cpu_judge",),
    "vlm": ("VLMJudge", "vlm_identity", "parse_yes_no", "final_answer", "read_answer", "DEFAULT_MODEL",
            "DEFAULT_PROMPT"),
    "server": ("ServerJudge", "server_identity"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
