"""compbook.sae.interpret / describe / hf_interpret: references, the CPU describer on scenes with known answers,
the synthesiser's rule, the identification rate's bookkeeping, and the Qwen3-VL / Qwen3 paths on tiny *random*
models (those answers mean nothing: the tests check the code path, the prompts and the parsing)."""

import numpy as np
import pandas as pd
import pytest
import torch

from compbook.cppn.audit.agreement import wilson
from compbook.sae import describe as de
from compbook.sae import interpret as ip
from compbook.sae.data import make_scenes


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(40, seed=7)


def object_mask(sc, i, o):
    lab = sc.labels[i].numpy().reshape(sc.grid)
    return np.kron(lab == o, np.ones((sc.patch, sc.patch), bool))


# -- the CPU describer against scenes whose answers are known ------------------------------------------------------
def test_pixel_describer_names_every_object_of_known_scenes(scenes):
    acc = de.describer_accuracy(de.PixelDescriber(), scenes)
    assert acc["objects"] == sum(len(o) for o in scenes.objects) and acc["images"] == len(scenes)
    assert acc["object (both)"] >= 0.97 and acc["background"] >= 0.9, acc


def test_describer_accuracy_counts_mistakes(scenes):
    always_red = lambda images, masks: ["a red square"] * len(images)
    acc = de.describer_accuracy(always_red, scenes)
    space = scenes.vocab.space
    objs = [space.named(o) for s in scenes.objects for o in s]
    assert acc["colour"] == pytest.approx(np.mean([n["colour"] == "red" for n in objs]))
    assert acc["object (both)"] == pytest.approx(np.mean([(n["colour"], n["shape"]) == ("red", "square")
                                                          for n in objs]))
    assert acc["background"] == 0


def test_pixel_describer_background_and_whole_image(scenes):
    d, space = de.PixelDescriber(), scenes.vocab.space
    i = int(np.argmax([len(o) for o in scenes.objects]))
    bg = np.kron(scenes.labels[i].numpy().reshape(scenes.grid) < 0, np.ones((4, 4), bool))
    assert d.describe_one(scenes.images[i], bg) == "background"
    whole = d.describe_one(scenes.images[i], np.ones(bg.shape, bool))
    want = sorted(f"a {space.named(o)['colour']} {space.named(o)['shape']}" for o in scenes.objects[i])
    assert sorted(whole.split(" and ")) == want, "unmasked, the describer should name every object"


def test_shape_classifier_never_saw_the_chapters_resolution():
    assert all((res, layout) != (32, "grid2") for res, layout in de.TRAIN_DRAWINGS)


# -- the synthesiser's rule -----------------------------------------------------------------------------------------
def test_majority_rule():
    s = de.MajoritySynthesiser(threshold=0.6)
    assert s.image_concept(["a red square", "a red circle", "a red square"]) == "red"
    assert s.image_concept(["a red square"] * 3) == "red square"
    assert s.image_concept(["a red square", "a blue square", "a red square and a green square"]) == "square"
    assert s.image_concept(["background", "background", "a red square"]) == "background"
    assert s.image_concept(["a red square", "a blue circle", "a green triangle"]) == ip.UNCLEAR
    assert s.image_concept(["a red square and a blue circle"] * 2 + ["a red circle"]) == "red"
    assert s.text_concept(["red", "red", "a"]) == "red" and s.text_concept(["and"] * 4) == "'and'"
    assert s.text_concept(["red", "blue", "a"]) == ip.UNCLEAR and s.text_concept([]) == ip.UNCLEAR
    r = s(["a red square", "a red circle"], ["red", "red", "square"])
    assert (r.image, r.text, r.agree) == ("red", "red", True)
    assert not s(["a red square"] * 2, ["'and'"] * 3).agree
    assert de.agree("red square", "square") and not de.agree("red", "blue") and not de.agree("unclear", "unclear")
    with pytest.raises(ValueError, match="threshold"):
        de.MajoritySynthesiser(threshold=0)


# -- references, ground truth, identification ---------------------------------------------------------------------
def test_psi_weights_strength_against_region_iou():
    z = torch.zeros(2, 4, 1)
    z[0, [0, 2], 0] = 5.0             # image 0: strong, scattered over two regions
    z[1, [0, 1], 0] = 1.0             # image 1: weak, exactly region 0
    regions = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 1]])
    psi = ip.reference_scores(z, regions, [0], weight=0.5)
    assert torch.allclose(psi[:, 0], torch.tensor([0.5 * 1 + 0.5 * (1 / 3), 0.5 * 0.2 + 0.5 * 1]))
    assert ip.collect_references(z, regions, [0], top_k=1, weight=1.0).item() == 0
    assert ip.collect_references(z, regions, [0], top_k=1, weight=0.0).item() == 1
    z[1] = 0
    assert ip.collect_references(z, regions, [0], top_k=2).tolist() == [[0, -1]], "silent images are no reference"


def planted_codes(sc, concept):
    """A latent (index 1 of 3) that fires exactly on ``concept``'s patches."""
    masks, names = ip.concept_masks(sc)
    z = torch.zeros(len(sc), masks.shape[2], 3)
    z[..., 1] = masks[:, names.index(concept)].float() * (1 + torch.arange(len(sc)))[:, None]
    return z


def test_ground_truth_of_a_planted_latent(scenes):
    for concept in ("red", "square", "background"):
        truth = ip.ground_truth(planted_codes(scenes, concept), scenes, [1])
        assert truth.truth.item() == concept and truth["truth IoU"].item() == pytest.approx(1)


def test_pipeline_identifies_a_planted_latent(scenes):
    space = scenes.vocab.space
    counts = {}
    for objs in scenes.objects:
        for o in objs:
            n = space.named(o)
            counts[f"{n['colour']} {n['shape']}"] = counts.get(f"{n['colour']} {n['shape']}", 0) + 1
    concept = max(counts, key=counts.get)
    z_img = planted_codes(scenes, concept)
    z_txt = torch.zeros(len(scenes), scenes.tokens.shape[1], 3)
    word = concept.split()[0]
    z_txt[..., 1] = (scenes.tokens == scenes.vocab.index[word]).float()
    regions = torch.zeros(len(scenes), z_img.shape[1], dtype=torch.long)
    out = ip.interpret(z_img, z_txt, scenes, regions, [1], de.PixelDescriber(), de.MajoritySynthesiser(), top_k=3)
    row = out.iloc[0]
    assert row["image concept"] == concept == row["truth"] and row["correct"]
    assert row["text concept"] == word and row["agree"]
    assert len(row["descriptions"]) == 3 and all(d == f"a {concept}" for d in row["descriptions"])


def test_identification_rate_bookkeeping():
    r = ip.identification_rate(["red", "unclear", "square", "blue"], ["red", "unclear", "circle", "blue"])
    assert (r["identified"], r["latents"], r["rate"]) == (2, 4, 0.5), "'unclear' must never count as identified"
    assert (r["low"], r["high"]) == pytest.approx(wilson(2, 4))
    with pytest.raises(ValueError, match="truth: empty"):
        ip.identification_rate([], [])
    with pytest.raises(ValueError, match="predicted: 1 concepts for 2 latents"):
        ip.identification_rate(["red"], ["red", "blue"])


# -- bad input -----------------------------------------------------------------------------------------------------
def test_bad_inputs_name_the_argument(scenes):
    z = planted_codes(scenes, "red")
    regions = torch.zeros(len(scenes), z.shape[1], dtype=torch.long)
    with pytest.raises(ValueError, match="latents: .*empty"):
        ip.collect_references(z, regions, [])
    with pytest.raises(ValueError, match="top_k=41: .*number of samples"):
        ip.collect_references(z, regions, [1], top_k=41)
    with pytest.raises(ValueError, match="describer: returned 1 descriptions for 2 regions"):
        ip.describe_checked(lambda im, m: ["a red square"], scenes.images[:2], np.ones((2, 32, 32), bool))
    with pytest.raises(ValueError, match="masks: shape"):
        ip.describe_checked(de.PixelDescriber(), scenes.images[:2], np.ones((2, 8, 8), bool))
    with pytest.raises(ValueError, match="regions: shape"):
        ip.reference_scores(z, regions[:, :3], [1])
    with pytest.raises(ValueError, match="weight"):
        ip.reference_scores(z, regions, [1], weight=2)


# -- the transformers paths on tiny random models (answers mean nothing) -------------------------------------------
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
WORDS = (["<pad>", "<unk>"] + SPECIAL + "user assistant a red blue square circle triangle background and the of "
         "image text agree yes no : - in".split())
TEMPLATE = ("{% for m in messages %}<|im_start|> {{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|> <|image_pad|> "
            "<|vision_end|> {% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %} <|im_end|> {% endfor %}"
            "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}")


def tiny_tokenizer():
    """A word-level tokenizer built in memory, with Qwen's special tokens and a minimal chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>",
                                  additional_special_tokens=SPECIAL)
    tok.chat_template = TEMPLATE
    return tok


class TinyQwenVLProcessor:
    """What Qwen3VLProcessor does for still images (chat template, image tokens expanded to the merged grid,
    batch_decode), built from transformers' Qwen2-VL image processor and the in-memory tokenizer: the real
    Qwen3VLProcessor needs torchvision (its video processor), which this machine does not install."""

    def __init__(self, merge=2):
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

        self.tokenizer, self.merge = tiny_tokenizer(), merge
        self.image_processor = Qwen2VLImageProcessorPil(patch_size=16, merge_size=merge, temporal_patch_size=2,
                                                        min_pixels=32 * 32, max_pixels=64 * 64)
        self.seen = []

    def apply_chat_template(self, chats, tokenize, add_generation_prompt, return_dict, return_tensors, padding):
        self.seen = chats
        images = [c["image"] for chat in chats for c in chat[0]["content"] if c["type"] == "image"]
        pix = self.image_processor(images=images, return_tensors="pt")
        n_img = int(pix["image_grid_thw"][0].prod()) // self.merge ** 2
        texts = [self.tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=add_generation_prompt)
                 .replace("<|image_pad|>", " ".join(["<|image_pad|>"] * n_img)) for c in chats]
        return {**self.tokenizer(texts, return_tensors="pt", padding=True), **pix}

    def batch_decode(self, ids, skip_special_tokens=True):
        return self.tokenizer.batch_decode(ids, skip_special_tokens=skip_special_tokens)


def tiny_qwen3_vl():
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    ix = {w: i for i, w in enumerate(WORDS)}
    cfg = Qwen3VLConfig(
        text_config=dict(vocab_size=len(WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=512,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2],
                                          "mrope_interleaved": True}),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32,
                           patch_size=16, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16,
                           deepstack_visual_indexes=[0]),
        image_token_id=ix["<|image_pad|>"], video_token_id=ix["<|video_pad|>"],
        vision_start_token_id=ix["<|vision_start|>"], vision_end_token_id=ix["<|vision_end|>"])
    torch.manual_seed(0)
    return Qwen3VLForConditionalGeneration(cfg).eval()


def test_vlm_describer_on_a_tiny_random_qwen3_vl(scenes):
    from compbook.sae.servers import hf_interpret as hf

    proc = TinyQwenVLProcessor()
    d = hf.VLMDescriber(tiny_qwen3_vl(), proc, prompt="describe the red square", max_new_tokens=4, size=64)
    masks = np.stack([object_mask(scenes, 0, 0), np.ones((32, 32), bool)])
    out = ip.describe_checked(d, scenes.images[:2], masks)
    assert len(out) == 2 and all(isinstance(t, str) for t in out)      # random model: the words mean nothing
    content = proc.seen[0][0]["content"]
    assert content[1] == {"type": "text", "text": "describe the red square"}, "the prompt is a parameter"
    shown = np.asarray(content[0]["image"]) / 255.0
    assert shown.shape == (64, 64, 3)
    inside, outside = np.kron(masks[0], np.ones((2, 2), bool)), ~np.kron(masks[0], np.ones((2, 2), bool))
    assert np.allclose(shown[inside], np.kron(scenes.images[0], np.ones((2, 2, 1)))[inside], atol=1 / 255)
    assert (shown[outside] >= np.kron(scenes.images[0], np.ones((2, 2, 1)))[outside] - 1e-6).all(), \
        "outside the region the image must be faded (towards white)"


def test_llm_synthesiser_on_a_tiny_random_qwen3():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from compbook.sae.servers import hf_interpret as hf

    cfg = Qwen3Config(vocab_size=len(WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=256)
    torch.manual_seed(0)
    tok = tiny_tokenizer()
    syn = hf.LLMSynthesiser(Qwen3ForCausalLM(cfg).eval(), tok, max_new_tokens=6)
    prompt = hf.synthesis_prompt(["a red square", "a red circle"], ["red", "red"])
    assert "- a red square\n- a red circle" in prompt and "red, red" in prompt and "IMAGE:" in prompt
    out = syn(["a red square", "a red circle"], ["red", "red"])   # random model: the answer means nothing
    assert isinstance(out, ip.Synthesis) and isinstance(out.agree, bool)


def test_parse_synthesis():
    from compbook.sae.servers import hf_interpret as hf

    r = hf.parse_synthesis("<think>hmm</think>\nIMAGE: Red squares.\nTEXT: the word 'red'\nAGREE: yes")
    assert (r.image, r.text, r.agree) == ("red square", "red", True)
    r = hf.parse_synthesis("image: background\ntext: 'and'\nagree: no")
    assert (r.image, r.text, r.agree) == ("background", "'and'", False)
    r = hf.parse_synthesis("TEXT: blue\nIMAGE: a blue circle")               # no AGREE: decided by the rule
    assert (r.image, r.text, r.agree) == ("blue circle", "blue", True)
    r = hf.parse_synthesis("gibberish")
    assert (r.image, r.text, r.agree) == (ip.UNCLEAR, ip.UNCLEAR, False)
    assert hf.first_line("\n  a red square \nmore") == "a red square"


def test_majority_rule_breaks_ties_by_value_order_not_hash_order():
    s = de.MajoritySynthesiser(threshold=0.5)
    descriptions = ["a blue circle and a red square", "a red triangle and a blue triangle"]
    assert s.image_concept(descriptions) == "red", "red and blue tie at 1.0: the palette's first (red) wins"


def test_pooled_identification_counts_every_latent_once():
    t = lambda pred, truth: pd.DataFrame({"image concept": pred, "truth": truth})
    tables = {("vanilla", 0, "direct"): t(["red", "blue"], ["red", "red"]),
              ("vanilla", 1, "direct"): t(["square"], ["square"])}
    out = ip.pooled_identification(tables)
    lo, hi = wilson(2, 3)
    assert out.loc["vanilla, direct", "latents"] == 3
    assert out.loc["vanilla, direct", "identified"] == f"{2 / 3:.3f} [{lo:.3f}, {hi:.3f}]"
