"""A tiny random Qwen3-VL built here (no download), and the same model saved so that ``transformers serve`` can
serve it (tests of the VLM judge, the server judge and the server describer; ``benchmarks/bench_server.py``)."""

import json
from pathlib import Path

import torch

#: Qwen3-VL's processor without its video part (which needs torchvision, absent here), as a processor class the
#: saved folder ships (transformers loads it with ``trust_remote_code``).
PROCESSOR_CODE = '''
from transformers import Qwen3VLProcessor


class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3-VL's processor without its video part."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, None, chat_template, **kwargs)

    def check_argument_for_proper_class(self, name, arg):
        return None if arg is None else super().check_argument_for_proper_class(name, arg)
'''


def tiny_qwen3_vl():
    """A randomly initialised 1-layer Qwen3-VL and a processor built here: no download, no meaningful answers.

    Tokenizer: byte-level BPE with no merges (every text round-trips) plus Qwen's special tokens; the chat
    template is a short Qwen-style one (the real one is longer). The processor is transformers' own
    Qwen3VLProcessor without its video part (:data:`PROCESSOR_CODE`).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import (AutoModelForImageTextToText, PreTrainedTokenizerFast, Qwen2VLImageProcessorPil,
                              Qwen3VLConfig)

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
               "<|image_pad|>", "<|video_pad|>"]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ("<think>", "</think>")])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|endoftext|>", eos_token="<|im_end|>")
    chat = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}"
            "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
            "{% else %}{{ c['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}")

    namespace = {}
    exec(PROCESSOR_CODE, namespace)
    ImageOnlyProcessor = namespace["ImageOnlyQwen3VLProcessor"]

    images = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, temporal_patch_size=2,
                                      min_pixels=32 * 32, max_pixels=64 * 64)
    processor = ImageOnlyProcessor(image_processor=images, tokenizer=tokenizer, chat_template=chat)
    ids = {k: tokenizer.convert_tokens_to_ids(t) for k, t in
           [("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>")]}
    config = Qwen3VLConfig(
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=16, vocab_size=len(tokenizer), max_position_embeddings=1024,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "mrope_section": [2, 3, 3], "mrope_interleaved": True}),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32,
                           patch_size=16, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64,
                           deepstack_visual_indexes=[0]), **ids)
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(config).eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, processor


def save_servable(model, processor, folder) -> Path:
    """Save ``tiny_qwen3_vl()``'s model and processor in ``folder`` so that ``AutoProcessor`` and
    ``transformers serve --trust-remote-code`` load them (the processor class is :data:`PROCESSOR_CODE`)."""
    folder = Path(folder)
    model.save_pretrained(folder)
    processor.tokenizer.save_pretrained(folder)
    processor.image_processor.save_pretrained(folder)
    (folder / "processing_image_only.py").write_text(PROCESSOR_CODE)
    (folder / "chat_template.jinja").write_text(processor.chat_template)
    auto = {"AutoProcessor": "processing_image_only.ImageOnlyQwen3VLProcessor"}
    (folder / "processor_config.json").write_text(json.dumps({"processor_class": "ImageOnlyQwen3VLProcessor",
                                                              "auto_map": auto}))
    return folder
