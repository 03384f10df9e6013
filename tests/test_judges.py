"""compbook.cppn.judges and compbook.cppn.judges.vlm: SSIM judge, cached verdicts, VLM code path, fill command."""

import importlib
import json
import sys
import types

import numpy as np
import pytest
import torch

import compbook.cppn
from compbook.cppn import judges, picbreeder
from compbook.cppn.__main__ import main as cli
from compbook.cppn.judges import vlm
from compbook.cppn.judges import CacheMiss, CachedJudge, SSIMJudge, entry_key
from compbook.cppn.judges.vlm import VLMJudge, final_answer, parse_yes_no, vlm_identity
from tiny_vlm import tiny_qwen3_vl

RES = 32


@pytest.fixture(scope="module")
def skull():
    return picbreeder.layerize(picbreeder.load_genome("skull"))


@pytest.fixture(scope="module")
def skull_ref(skull):
    with torch.no_grad():
        return skull.render(RES)


def question(**change):
    q = {"model": "0123456789abcdef", "weight": [3, 1, 2], "delta": 0.5, "policy": "plus", "res": RES}
    return {**q, **change}


class CountingJudge:
    """A fake judge: verdict = mean brightness > 0.5; records every call."""

    identity = "fake:brightness>0.5"

    def __init__(self):
        self.calls = []

    def __call__(self, images, concept, *, reference=None, questions=None):
        self.calls.append((images.clone(), concept, questions))
        self.last_details = [{"mean": round(float(m), 4)} for m in images.mean((1, 2, 3))]
        return images.mean((1, 2, 3)) > 0.5


def levels(*values):
    """Constant images (N, RES, RES, 3) with the given grey levels."""
    return torch.tensor(values, dtype=torch.float32)[:, None, None, None].expand(-1, RES, RES, 3).clone()


# -- input validation -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, what", [
    (np.zeros((1, 8, 8, 3)), "torch.Tensor"),
    (torch.zeros(1, 8, 8, 3, dtype=torch.uint8), "float"),
    (torch.zeros(8, 8, 3), "shape"),
    (torch.zeros(1, 8, 8, 4), "shape"),
    (torch.full((1, 8, 8, 3), 1.5), r"\[0, 1\]"),
    (torch.full((1, 8, 8, 3), -0.1), r"\[0, 1\]"),
    (torch.full((1, 8, 8, 3), float("nan")), r"\[0, 1\]"),
])
def test_images_validated_with_clear_errors(bad, what, tmp_path):
    canned = CannedVLM.from_model(None, None, model_id="canned")
    for judge in (SSIMJudge(), CachedJudge(tmp_path, CountingJudge(), mode="fill"), canned):
        with pytest.raises(ValueError, match=f"images.*{what}|{what}.*images"):
            judge(bad, "skull", reference=torch.zeros(8, 8, 3), questions=[question()])


def test_concept_reference_and_parameters_validated(skull_ref):
    imgs = skull_ref[None]
    with pytest.raises(ValueError, match="concept"):
        SSIMJudge()(imgs, "", reference=skull_ref)
    with pytest.raises(ValueError, match="reference is required"):
        SSIMJudge()(imgs, "skull")
    with pytest.raises(ValueError, match="reference has shape"):
        SSIMJudge()(imgs, "skull", reference=skull_ref[:-1])
    with pytest.raises(ValueError, match="threshold"):
        SSIMJudge(threshold=2)
    with pytest.raises(ValueError, match="color"):
        SSIMJudge(color="hsv")
    with pytest.raises(ValueError, match="SSIM needs at least 7x7"):
        SSIMJudge()(levels(0.5)[:, :5, :5], "skull", reference=torch.zeros(5, 5, 3))


# -- SSIM judge -------------------------------------------------------------------------------------------------
def test_ssim_accepts_identical_and_small_perturbation_rejects_noise_and_unrelated(skull, skull_ref):
    with torch.no_grad():
        butterfly = picbreeder.layerize(picbreeder.load_genome("butterfly")).render(RES)
        ws = skull.effective_weights()
        o, i = (ws[3] != 0).nonzero()[0].tolist()
        ws[3][o, i] += 0.01
        nudged = skull.render(RES, weights=ws, masks=skull.masks)
    noise = torch.rand(RES, RES, 3, generator=torch.Generator().manual_seed(0))
    images = torch.stack([skull_ref, nudged, noise, butterfly, torch.full_like(skull_ref, 0.5)])
    judge = SSIMJudge()
    verdicts = judge(images, "skull", reference=skull_ref)
    assert verdicts.dtype == torch.bool and verdicts.tolist() == [True, True, False, False, False]
    scores = judge.scores(images, skull_ref)
    assert scores[0] == pytest.approx(1.0) and scores[2:].max() < 0.3
    assert [d["ssim"] for d in judge.last_details] == pytest.approx(scores.tolist(), abs=1e-4)


def test_ssim_batched_equals_naive_skimage(skull_ref):
    from skimage.color import rgb2gray
    from skimage.metrics import structural_similarity

    g = torch.Generator().manual_seed(1)
    images = (skull_ref + 0.2 * torch.randn(4, RES, RES, 3, generator=g)).clamp(0, 1)
    naive = [structural_similarity(rgb2gray(im.double().numpy()), rgb2gray(skull_ref.double().numpy()),
                                   data_range=1.0) for im in images]
    assert judges.ssim_scores(images, skull_ref).tolist() == pytest.approx(naive, abs=1e-10)
    rgb = judges.ssim_scores(images, skull_ref, color="rgb")
    assert rgb.tolist() != pytest.approx(naive, abs=1e-6)  # a different measure, not silently grey


def test_threshold_is_the_decision_boundary(skull_ref):
    images = (skull_ref + 0.3 * torch.randn(6, RES, RES, 3, generator=torch.Generator().manual_seed(2))).clamp(0, 1)
    s = judges.ssim_scores(images, skull_ref)
    t = float(s.median())
    assert SSIMJudge(threshold=t)(images, "skull", reference=skull_ref).tolist() == (s >= t).tolist()


# -- identities -------------------------------------------------------------------------------------------------
def test_identities_differ_when_anything_that_changes_answers_differs():
    base = vlm_identity()
    variants = [vlm_identity(model_id="Qwen/Qwen2.5-VL-3B-Instruct"), vlm_identity(revision="0123abc"),
                vlm_identity(prompt="Is this a {concept}? yes/no"), vlm_identity(max_new_tokens=64),
                vlm_identity(image_size=448), vlm_identity(parser="strict_parser"),
                vlm_identity(generate_kwargs={"do_sample": True, "temperature": 0.6})]
    assert len({base, *variants}) == len(variants) + 1
    assert "Qwen/Qwen3-VL-4B-Thinking" in base and "{concept}" in base
    ssims = {SSIMJudge(0.5).identity, SSIMJudge(0.6).identity, SSIMJudge(0.5, color="rgb").identity,
             SSIMJudge(0.5, win_size=5).identity}
    assert len(ssims) == 4 and not ssims & {base}
    names = {judges.cache_file_name(i) for i in [base, *variants, *ssims]}
    assert len(names) == len(variants) + 5
    assert judges.cache_file_name(base).startswith("vlm-qwen-qwen3-vl-4b-thinking-main-")


# -- cache keys -------------------------------------------------------------------------------------------------
def test_cache_key_changes_with_every_part():
    ident, key = "fake:a", entry_key("fake:a", "skull", question())
    changed = [entry_key("fake:b", "skull", question()), entry_key(ident, "apple", question()),
               entry_key(ident, "skull", question(model="fedcba9876543210")),
               entry_key(ident, "skull", question(weight=[3, 2, 1])), entry_key(ident, "skull", question(delta=-0.5)),
               entry_key(ident, "skull", question(policy="both")), entry_key(ident, "skull", question(res=64)),
               entry_key(ident, "skull", {**question(), "seed": 1})]
    assert key not in changed and len(set(changed)) == len(changed)
    # the same question written differently is the same key: key order, tuple vs list
    reordered = dict(reversed(list(question(weight=(3, 1, 2)).items())))
    assert entry_key(ident, "skull", reordered) == key


def test_questions_must_be_json_able_dicts(tmp_path):
    cache = CachedJudge(tmp_path, CountingJudge(), mode="fill")
    imgs = levels(0.2)
    for bad, match in [([question(delta=torch.tensor(0.5))], r"questions\[0\] is not JSON-able"),
                       ([question(delta=float("nan"))], r"questions\[0\] is not JSON-able"),
                       (["weight 3"], r"questions\[0\] must be a dict"),
                       ([question(), question()], "2 entries for 1 images"),
                       (None, "questions is required")]:
        with pytest.raises(ValueError, match=match):
            cache(imgs, "skull", questions=bad)
    assert cache.misses == 0 and not list(tmp_path.iterdir())


# -- cache behaviour --------------------------------------------------------------------------------------------
def test_fill_then_strict_serves_the_stored_verdicts(tmp_path):
    fake = CountingJudge()
    qs = [question(weight=[0, 0, k]) for k in range(4)]
    imgs = levels(0.1, 0.9, 0.4, 0.6)
    filler = CachedJudge(tmp_path, fake, mode="fill")
    assert filler(imgs, "skull", questions=qs).tolist() == [False, True, False, True]
    assert (filler.hits, filler.misses, len(fake.calls)) == (0, 4, 1)
    assert filler.path.parent == tmp_path and filler.path.name == judges.cache_file_name(fake.identity)
    assert not [p for p in tmp_path.iterdir() if p != filler.path]  # the temporary file is gone

    data = json.loads(filler.path.read_text())  # human-readable JSON with questions in clear
    assert data["format"] == "compbook-judge-cache/1" and data["identity"] == fake.identity
    entry = data["entries"][entry_key(fake.identity, "skull", qs[1])]
    assert entry == {"concept": "skull", "question": qs[1], "verdict": True, "detail": {"mean": 0.9}}

    strict = CachedJudge(filler.path)  # no judge: the identity comes from the file
    assert strict.identity == fake.identity
    wrong_images = levels(0.9, 0.1, 0.9, 0.1)  # a hit never looks at the images: the question says what they are
    assert strict(wrong_images, "skull", questions=qs).tolist() == [False, True, False, True]
    assert (strict.hits, strict.misses) == (4, 0)

    # fill again with two new questions: only those reach the judge, with their own images
    more = CachedJudge(tmp_path, fake, mode="fill")
    qs2 = [qs[0], question(weight=[9, 9, 9]), qs[3], question(weight=[8, 8, 8])]
    assert more(levels(0.1, 0.7, 0.6, 0.3), "skull", questions=qs2).tolist() == [False, True, True, False]
    images, concept, asked = fake.calls[-1]
    assert (more.hits, more.misses, concept, asked) == (2, 2, "skull", [qs2[1], qs2[3]])
    assert images[:, 0, 0, 0].tolist() == pytest.approx([0.7, 0.3])
    assert len(CachedJudge(tmp_path / filler.path.name)) == 6


def test_strict_miss_raises_lookup_error_naming_the_question(tmp_path):
    CachedJudge(tmp_path, CountingJudge(), mode="fill")(levels(0.9), "skull", questions=[question()])
    strict = CachedJudge(tmp_path, identity=CountingJudge.identity)
    assert strict(levels(0.9), "skull", questions=[question()]).tolist() == [True]
    for concept, q in [("apple", question()), ("skull", question(delta=0.25)), ("skull", question(res=64)),
                       ("skull", question(model="ffffffffffffffff")), ("skull", question(weight=[3, 1, 3])),
                       ("skull", question(policy="minus"))]:
        with pytest.raises(CacheMiss, match="no stored verdict") as e:
            strict(levels(0.9), concept, questions=[q])
        assert isinstance(e.value, LookupError) and json.dumps(q["weight"]).replace(" ", "") in str(e.value)
    assert strict.misses == 6
    with pytest.raises(FileNotFoundError, match="does not exist"):
        CachedJudge(tmp_path, identity="fake:other")


def test_bad_cache_files_raise_clear_errors(tmp_path):
    good = CachedJudge(tmp_path, CountingJudge(), mode="fill")
    good(levels(0.9), "skull", questions=[question()])
    text = good.path.read_text()
    cases = {
        "corrupt": (text[: len(text) // 2], "not valid JSON"),
        "version": (text.replace("compbook-judge-cache/1", "compbook-judge-cache/99"), "format"),
        "notcache": ('{"hello": 1}', "not a judge cache"),
        "edited": (text.replace('"res": 32', '"res": 64'), "does not match its key"),
    }
    for name, (content, match) in cases.items():
        p = tmp_path / f"{name}.json"
        p.write_text(content)
        with pytest.raises(ValueError, match=match):
            CachedJudge(p)
    with pytest.raises(ValueError, match="holds verdicts of judge 'fake:brightness>0.5', not of 'ssim"):
        CachedJudge(good.path, SSIMJudge(), mode="fill")  # a file written by another judge identity
    with pytest.raises(ValueError, match="differs from the judge's identity"):
        CachedJudge(tmp_path, SSIMJudge(), identity="fake:brightness>0.5")
    with pytest.raises(ValueError, match="needs a judge"):
        CachedJudge(tmp_path, identity="x", mode="fill")
    with pytest.raises(ValueError, match="folder"):
        CachedJudge(tmp_path)
    with pytest.raises(ValueError, match="mode"):
        CachedJudge(good.path, mode="lenient")


def test_cached_ssim_judge_stores_scores(tmp_path, skull_ref):
    images = torch.stack([skull_ref, torch.full_like(skull_ref, 0.5)])
    qs = [question(weight=[0, 0, 0]), question(weight=[0, 0, 1])]
    cache = CachedJudge(tmp_path, SSIMJudge(), mode="fill")
    assert cache(images, "skull", reference=skull_ref, questions=qs).tolist() == [True, False]
    assert cache.records()[0]["detail"] == {"ssim": 1.0}


# -- VLM judge: parsing, prompts, images ------------------------------------------------------------------------
@pytest.mark.parametrize("text, verdict", [
    ("<think>The jaw is gone... no wait, it is fine.</think> Yes.", True),
    ("<think>Looks like a skull. Yes.</think>\n\nNo", False),
    ("The eye sockets are there.</think>\n**Yes**", True),  # the chat template opened <think>
    ("a</think>b</think> no", False),  # only the part after the last </think>
    ("Yes", True), ("no.", False), ("YES, it still shows a skull.", True),
    ("Yes, no doubt.", None),
    ("Final answer: no", False), ("</think>\\boxed{yes}", True),
    ("<think>Let me look at the eye sockets, the", None),  # reasoning cut off by max_new_tokens
    ("</think> I cannot tell.", None), ("</think>", None), ("Yes or no? Hard to say, no idea, yes", None),
])
def test_parse_yes_no(text, verdict):
    assert parse_yes_no(text) is verdict


def test_final_answer_and_prompt():
    assert final_answer("<think>hm</think> Yes") == " Yes" and final_answer("<think>hm") is None
    assert vlm.format_prompt("Is it a {concept}? {not a field}", "skull") == "Is it a skull? {not a field}"
    with pytest.raises(ValueError, match="prompt"):
        vlm.format_prompt("Is it a skull?", "skull")
    with pytest.raises(ValueError, match="prompt"):
        VLMJudge.from_model(None, None, prompt="no placeholder")
    with pytest.raises(ValueError, match="max_new_tokens"):
        VLMJudge.from_model(None, None, max_new_tokens=0)
    (msg,) = vlm.build_messages(vlm.DEFAULT_PROMPT, "skull")
    assert msg["role"] == "user" and [c["type"] for c in msg["content"]] == ["image", "text"]
    assert "skull" in msg["content"][1]["text"] and "{concept}" not in msg["content"][1]["text"]


def test_to_pil():
    img = torch.zeros(4, 6, 3)
    img[0, 0] = torch.tensor([1.0, 0.5, 0.0])
    pil = vlm.to_pil(img, None)
    assert pil.size == (6, 4) and pil.mode == "RGB" and pil.getpixel((0, 0)) == (255, 128, 0)
    assert vlm.to_pil(img, 32).size == (32, 32)


class CannedVLM(VLMJudge):
    """VLMJudge with generate() replaced by canned texts: tests batching, parsing and the unparsed policy."""

    def generate(self, images, concept):
        self.batches.append(len(images))
        return [self.answers.pop(0) for _ in images]


def test_vlm_judge_batches_parses_and_records_unparsed():
    judge = CannedVLM.from_model(None, None, model_id="canned", batch_size=2, image_size=8)
    judge.batches, judge.answers = [], ["<think>no</think> Yes.", "No", "<think>still thinking", "yes", "maybe"]
    qs = [question(weight=[0, 0, k]) for k in range(5)]
    verdicts = judge(levels(0.1, 0.2, 0.3, 0.4, 0.5), "skull", questions=qs)
    assert verdicts.tolist() == [True, False, False, True, False] and judge.batches == [2, 2, 1]
    assert [(u["index"], u["question"]) for u in judge.unparsed] == [(2, qs[2]), (4, qs[4])]
    assert judge.last_details[0] == {"answer": " Yes."} and judge.last_details[2]["unparsed"]
    assert judge.identity.startswith("vlm:canned@main|")


# -- VLM judge on a tiny random Qwen3-VL (offline) --------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_vlm():
    return tiny_qwen3_vl()


def test_vlm_judge_code_path_on_tiny_random_qwen3_vl(tiny_vlm):
    """The whole VLMJudge path on a real (tiny, random) Qwen3-VL: chat template with the image, processor,
    batched left-padded generate, decoding, parsing. The tiny model's answers mean nothing (random weights);
    only the mechanics are checked."""
    model, processor = tiny_vlm
    judge = VLMJudge.from_model(model, processor, model_id="tiny-random-qwen3-vl", batch_size=2,
                                max_new_tokens=3, image_size=64)
    (text, _) = judge.texts("skull", 2)
    assert text.count("<|vision_start|><|image_pad|><|vision_end|>") == 1
    assert "clearly show a skull?" in text and text.endswith("<|im_start|>assistant\n<think>\n")

    pils = [vlm.to_pil(im, 64) for im in levels(0.2, 0.8)]
    inputs = processor(text=judge.texts("skull", 2), images=pils, return_tensors="pt", padding=True,
                       padding_side="left")
    per_image = (64 // 16) ** 2 // 2 ** 2  # 4x4 patches, merged 2x2: 4 image tokens per image
    assert (inputs["input_ids"] == processor.image_token_id).sum(1).tolist() == [per_image, per_image]
    assert inputs["image_grid_thw"].tolist() == [[1, 4, 4], [1, 4, 4]]

    outputs = judge.generate(pils, "skull")
    assert len(outputs) == 2 and all(isinstance(o, str) for o in outputs)

    images = torch.rand(3, RES, RES, 3, generator=torch.Generator().manual_seed(0))
    verdicts = judge(images, "skull", questions=[question(weight=[0, 0, k]) for k in range(3)])
    assert verdicts.dtype == torch.bool and verdicts.shape == (3,) and len(judge.last_details) == 3
    assert sum(d.get("unparsed", False) for d in judge.last_details) == len(judge.unparsed)
    assert "tiny-random-qwen3-vl" in judge.identity and "max_new_tokens=3" in judge.identity


def test_vlm_judge_loads_with_from_pretrained(tiny_vlm, tmp_path, monkeypatch):
    """VLMJudge(model_id, revision) goes through AutoModelForImageTextToText.from_pretrained (a saved tiny model)
    and AutoProcessor.from_pretrained (stubbed: saving a processor without its video part is not possible here)."""
    import transformers

    model, processor = tiny_vlm
    model.save_pretrained(tmp_path)
    asked = []
    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained",
                        lambda model_id, revision=None, **kw: asked.append((model_id, revision)) or processor)
    judge = VLMJudge(model_id=str(tmp_path), revision=None, device="cpu", max_new_tokens=2, image_size=64)
    assert asked == [(str(tmp_path), None)]
    assert type(judge.model).__name__ == "Qwen3VLForConditionalGeneration" and judge.model.device.type == "cpu"
    assert judge.identity == vlm_identity(str(tmp_path), None, max_new_tokens=2, image_size=64)
    assert judge(levels(0.5), "skull").shape == (1,)


# -- the fill command -------------------------------------------------------------------------------------------
def fake_emc2():
    """A stand-in for compbook.cppn.emc2 that asks about 3 weights, the way the contract says the engine does."""
    from compbook.cppn.data.store import content_hash

    def compositional_score(model, judge, concept, delta=0.5, res=RES, policy="plus", seed=0, batch_size=64,
                            progress=True, engine="fast"):
        with torch.no_grad():
            ws = model.effective_weights()
            weights = [(l, o, i) for l, w in enumerate(ws) for o, i in (w != 0).nonzero().tolist()][:3]
            images = []
            for l, o, i in weights:
                new = [w.clone() for w in ws]
                new[l][o, i] += delta
                images.append(model.render(res, weights=new, masks=model.masks))
            qs = [{"model": content_hash(model), "weight": list(w), "delta": delta, "policy": policy, "res": res}
                  for w in weights]
            v = judge(torch.stack(images), concept, reference=model.render(res), questions=qs)
        return types.SimpleNamespace(score=float(v.float().mean()), verdicts=v, weights=weights)

    return types.SimpleNamespace(compositional_score=compositional_score)


def test_fill_command_with_ssim_judge(tmp_path, monkeypatch, capsys):
    fake = fake_emc2()
    importlib.import_module("compbook.cppn.emc2")     # the real module first, so that monkeypatch restores it
    monkeypatch.setattr(compbook.cppn, "emc2", fake)  # (run alone, the package has no emc2 attribute yet)
    monkeypatch.setitem(sys.modules, "compbook.cppn.emc2", fake)
    argv = ["fill", "--genome", "skull", "--judge", "ssim", "--res", str(RES), "--delta", "0.5",
            "--cache", str(tmp_path)]
    assert cli(["judges", *argv]) == 0
    out = capsys.readouterr().out
    assert "0 stored, 3 new verdicts" in out and "ssim:grey,threshold=0.5" in out
    (path,) = tmp_path.glob("*.json")
    assert len(CachedJudge(path)) == 3
    assert cli(["judges", *argv]) == 0 and "3 stored, 0 new verdicts" in capsys.readouterr().out
    assert cli(["judges", "show", str(tmp_path)]) == 0
    assert "skull: 3 verdicts" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli(["judges", "fill", "--checkpoint", "x", "--judge", "ssim"])  # a checkpoint needs --concept


def test_fill_command_with_the_real_engine(tmp_path, skull):
    """The cache the command fills serves compositional_score in strict mode."""
    from compbook.cppn import emc2
    argv = ["fill", "--genome", "skull", "--judge", "ssim", "--res", str(RES), "--cache", str(tmp_path)]
    assert cli(["judges", *argv]) == 0
    (path,) = tmp_path.glob("*.json")
    strict = CachedJudge(path)
    result = emc2.compositional_score(skull, strict, "skull", res=RES, progress=False)
    direct = emc2.compositional_score(skull, SSIMJudge(), "skull", res=RES, progress=False)
    assert strict.misses == 0 and strict.hits == len(result.verdicts) == len(direct.verdicts)
    assert torch.equal(result.verdicts, direct.verdicts) and result.score == direct.score


def test_fill_command_sample_matches_compositional_score_sample(tmp_path, skull):
    from compbook.cppn import emc2
    argv = ["fill", "--genome", "skull", "--judge", "ssim", "--res", str(RES), "--sample", "20",
            "--cache", str(tmp_path)]
    assert cli(["judges", *argv]) == 0
    (path,) = tmp_path.glob("*.json")
    strict = CachedJudge(path)
    assert len(strict) == 20
    result = emc2.compositional_score(skull, strict, "skull", res=RES, sample=20, progress=False)
    assert strict.misses == 0 and strict.hits == 20 == len(result.verdicts)


def test_stored_judge_reads_a_cache_or_says_none(tmp_path):
    assert judges.stored_judge("no such judge", folder=tmp_path) is None
    ssim = judges.SSIMJudge()
    judges.write_cache(judges.cache_path(ssim.identity, tmp_path), ssim.identity, {})
    found = judges.stored_judge(ssim.identity, folder=tmp_path)
    assert isinstance(found, judges.CachedJudge) and found.mode == "strict" and found.identity == ssim.identity


def test_score_or_fall_back_uses_the_fallback_only_on_a_cache_miss(tmp_path):
    ssim = judges.SSIMJudge()
    path = judges.write_cache(judges.cache_path(ssim.identity, tmp_path), ssim.identity, {})
    cache = judges.CachedJudge(path)

    def score(judge):
        if judge is cache:
            raise judges.CacheMiss("nothing stored")
        return judge

    assert judges.score_or_fall_back(score, cache, "fallback") == "fallback"
    assert judges.score_or_fall_back(lambda j: j, cache, "fallback") is cache

    def broken(judge):
        raise ValueError("a real error")

    with pytest.raises(ValueError, match="a real error"):
        judges.score_or_fall_back(broken, cache, "fallback")
# -- cache integrity -------------------------------------------------------------------------------------------
def _filled(tmp_path, n=2):
    cache = CachedJudge(tmp_path, CountingJudge(), mode="fill")
    cache(levels(*[0.9, 0.1][:n]), "skull", questions=[question(weight=[0, 0, k]) for k in range(n)])
    return cache


@pytest.mark.parametrize("verdict,match", [("false", "conflicting verdicts True and False"),
                                           ("true", "twice, with the same verdict")])
def test_duplicate_keys_in_a_cache_file_are_refused(tmp_path, verdict, match):
    """What a bad merge produces: the same key twice. It used to load silently, the last entry winning."""
    cache = _filled(tmp_path, 1)
    lines = cache.path.read_text().splitlines()
    entry = next(i for i, l in enumerate(lines) if '"verdict": true' in l)
    twin = lines[entry].replace('"verdict": true', f'"verdict": {verdict}')
    lines[entry:entry + 1] = [lines[entry] + ",", twin]
    cache.path.write_text("\n".join(lines))
    with pytest.raises(ValueError, match=match):
        CachedJudge(cache.path)


def test_a_hand_edited_verdict_is_detected_by_the_digest(tmp_path):
    cache = _filled(tmp_path)
    text = cache.path.read_text()
    cache.path.write_text(text.replace('"verdict": false', '"verdict": true'))   # keys still match
    with pytest.raises(ValueError, match="digest does not match"):
        CachedJudge(cache.path)
    data = json.loads(text)                                                     # an entry removed
    data["entries"].pop(next(iter(data["entries"])))
    cache.path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="digest does not match"):
        CachedJudge(cache.path)
    del data["digest"]                                                          # the seal removed
    cache.path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="no 'digest'"):
        CachedJudge(cache.path)
    judges.write_cache(cache.path, *judges.read_cache(cache.path, verify_digest=False))   # re-sealed by hand
    assert len(CachedJudge(cache.path)) == 1


def test_cache_path_that_is_a_directory(tmp_path):
    """A directory named like a cache file used to raise IsADirectoryError."""
    folder = tmp_path / "verdicts.json"
    folder.mkdir()
    with pytest.raises(ValueError, match="is a directory, not a cache file"):
        CachedJudge(folder, CountingJudge(), mode="fill")
    with pytest.raises(ValueError, match="is a directory, not a file"):
        judges.read_cache(folder)
    plain = tmp_path / "verdicts"
    plain.write_text("{}")
    with pytest.raises(ValueError, match="file without the .json suffix"):
        CachedJudge(plain, CountingJudge(), mode="fill")


def test_show_skips_json_files_that_are_not_caches(tmp_path, capsys):
    """``judges show`` on a folder lists its caches and says which other JSON files it skipped (the labelling keys
    and self-agreement records live beside the caches); a named file that is not a cache exits with status 2; a
    damaged cache still stops it (never summarised as if it were sound)."""
    from compbook.cppn.judges.cache import write_cache
    identity = "ssim:grey,threshold=0.5"
    question = {"model": "abc", "weight": [0, 0, 0], "delta": 0.5, "policy": "fixed", "res": 16}
    write_cache(tmp_path / "ssim.json", identity, {entry_key(identity, "skull", question): {
        "concept": "skull", "question": question, "verdict": True}})
    (tmp_path / "labeller_key.json").write_text(json.dumps([{"number": 1, "concept": "skull"}]))
    (tmp_path / "self_agreement.json").write_text(json.dumps({"kappa": 0.8}))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert cli(["judges", "show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "skull: 1 verdicts, 100.0% preserved" in out and identity in out
    for name in ("labeller_key.json", "self_agreement.json"):
        assert f"{name}\n  skipped: not a judge cache" in out
    assert cli(["judges", "show", str(tmp_path / "labeller_key.json")]) == 2
    assert "not a judge cache" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, "show must not write"
    edited = json.loads((tmp_path / "ssim.json").read_text())
    next(iter(edited["entries"].values()))["verdict"] = False
    (tmp_path / "ssim.json").write_text(json.dumps(edited))
    with pytest.raises(ValueError, match="digest"):
        cli(["judges", "show", str(tmp_path)])


def test_show_reads_the_books_cache_folder(capsys):
    """The book's ``data/judge_cache/`` holds caches and labelling keys side by side: ``show`` summarises the first
    and skips the second (it used to stop at ``labeller_key.json``)."""
    assert cli(["judges", "show"]) == 0
    out = capsys.readouterr().out
    assert "labeller_key.json\n  skipped: not a judge cache" in out and "verdicts" in out
