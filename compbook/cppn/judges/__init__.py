"""EMC2-Bench's judges (chapter 5): "does this perturbed render still show its object?".

Modules, in import order (each imports only those before it):

* :mod:`.base`: the :class:`~.base.Judge` protocol, the checks every judge shares, :class:`~.base.SSIMJudge` and
  its threshold :data:`~.base.SSIM_THRESHOLD`;
* :mod:`.cache`: :class:`~.cache.CachedJudge`, verdicts stored in ``data/judge_cache/``;
* :mod:`.augment`: declared transformations of the reference renders (training data of the CNN judge);
* :mod:`.semantic`: CPU judges of "is this still a <concept>?" and the default one (:func:`~.semantic.default_judge`);
* :mod:`.vlm`: :class:`~.vlm.VLMJudge`, the paper's kind of judge (transformers, imported when a model loads);
* :mod:`.registry`: every judge by name (:data:`~.registry.JUDGES`, :func:`~.registry.make_judge`).
* :mod:`.server`: :class:`~.server.ServerJudge`, the same question to any OpenAI-compatible server (at scale).

The names below are importable from this package (``from compbook.cppn.judges import make_judge``); each is
looked up in its module on first use, so importing the package loads nothing else.
"""

from __future__ import annotations

_EXPORTS = {
    "base": ("Judge", "check_images", "check_reference", "check_concept", "canonical_json", "check_questions",
             "luminance", "ssim_scores", "SSIM_THRESHOLD", "SSIMJudge"),
    "cache": ("CACHE_FORMAT", "CACHE_FOLDER", "CacheMiss", "entry_key", "cache_file_name", "cache_folder",
              "cache_path", "cache_digest", "read_cache", "write_cache", "CachedJudge", "stored_judge",
              "score_or_fall_back", "is_cache_file", "RENAMED_IDENTITIES", "current_identity", "former_identities"),
    "vlm": ("VLMJudge", "vlm_identity", "parse_yes_no", "final_answer", "read_answer", "DEFAULT_MODEL",
            "DEFAULT_PROMPT"),
    "registry": ("JUDGES", "JUDGE_LABELS", "make_judge", "make_judges", "chapter_judge", "JUDGE_SERVER_VARIABLE"),
    "server": ("ServerJudge", "server_identity"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name):
    where = _WHERE.get(name)
    if where == "base":
        from . import base as module
    elif where == "cache":
        from . import cache as module
    elif where == "vlm":
        from . import vlm as module
    elif where == "registry":
        from . import registry as module
    elif where == "server":
        from . import server as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
