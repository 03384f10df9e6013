"""compbook.cppn.judges.semantic and compbook.cppn.judges.augment: the semantic CPU judges."""

import numpy as np
import pytest
import torch
from skimage.metrics import structural_similarity

from compbook.cppn.judges import augment, semantic
from compbook.cppn import judges


def _refs():
    return torch.stack([semantic.reference(c) for c in semantic.CONCEPTS]).permute(0, 2, 3, 1)


def test_batched_ssim_equals_skimage_per_channel():
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(2, 3, 32, 32, generator=g), torch.rand(2, 3, 32, 32, generator=g)
    y = 0.5 * x + 0.5 * y
    ours = semantic.ssim_batched(x, y)
    for b in range(2):
        ref = structural_similarity(x[b].permute(1, 2, 0).double().numpy(), y[b].permute(1, 2, 0).double().numpy(),
                                    win_size=7, data_range=1.0, channel_axis=-1)
        assert abs(float(ours[b]) - ref) < 1e-4, "batched SSIM drifts from skimage's (covariance factor?)"


def test_reference_judge_knows_each_reference_and_rejects_the_others():
    refs = _refs()
    for j, c in enumerate(semantic.CONCEPTS):
        s = semantic.reference_scores(refs, c)
        assert s[j] > 0.99, f"the {c} reference does not match itself"
        assert s.max() == s[j] and (s[torch.arange(3) != j] < 0.5).all()


def test_reference_judge_tolerates_a_small_shift_more_than_plain_ssim():
    skull = _refs()[:1]
    shifted = torch.roll(skull, 2, dims=2)
    ms = float(semantic.reference_scores(shifted, "skull"))
    plain = float(judges.ssim_scores(shifted, skull[0], color="rgb")[0])
    assert ms > plain + 0.1, (ms, plain)


def test_other_sizes_are_resized_and_no_reference_is_needed():
    skull256 = torch.from_numpy(np.ascontiguousarray(
        __import__("compbook.cppn.picbreeder", fromlist=["x"]).reference_render("skull"))).float()[None]
    j = semantic.ReferenceJudge(0.5)
    assert j(skull256, "skull").tolist() == [True]
    assert semantic.prepare(torch.rand(2, 40, 40, 3)).shape == (2, 3, 64, 64)


@pytest.mark.parametrize("bad, what", [
    (torch.rand(2, 64, 64), "shape"), (torch.rand(2, 64, 64, 3) * 2, "range"),
    (torch.randint(0, 2, (1, 64, 64, 3)), "float"), (np.zeros((1, 64, 64, 3)), "Tensor")])
def test_bad_images_raise_value_error_naming_images(bad, what):
    with pytest.raises(ValueError, match="images"):
        semantic.ReferenceJudge()(bad, "skull")


def test_unknown_concept_raises_value_error_naming_concept():
    with pytest.raises(ValueError, match="concept"):
        semantic.ReferenceJudge()(torch.rand(1, 64, 64, 3), "cat")
    with pytest.raises(ValueError, match="concept"):
        semantic.reference_scores(torch.rand(1, 64, 64, 3), "Skull")


def test_identity_names_kind_and_threshold():
    a, b = semantic.ReferenceJudge(0.4), semantic.ReferenceJudge(0.5)
    assert a.identity != b.identity and "threshold=0.4" in a.identity


def test_augmentation_batch_shapes_labels_and_determinism():
    refs = _refs().permute(0, 3, 1, 2)
    pool = torch.rand(8, 3, 64, 64)
    x1, y1 = augment.batch(refs, pool, 24, torch.Generator().manual_seed(3))
    x2, y2 = augment.batch(refs, pool, 24, torch.Generator().manual_seed(3))
    assert x1.shape == (24, 3, 64, 64) and y1.shape == (24, 3)
    assert torch.equal(x1, x2) and torch.equal(y1, y2), "augmentation is not seeded"
    assert x1.min() >= 0 and x1.max() <= 1
    assert y1[:12].sum(1).eq(1).all() and y1[12:].sum() == 0, "half positives (one concept), half negatives"


def test_stored_classifier_recognises_the_references_and_rejects_noise():
    if not semantic.weights_path().is_file():
        pytest.fail("data/semantic/concept_cnn.safetensors is missing: python -m compbook.cppn semantic train")
    j = semantic.ClassifierJudge()
    refs = _refs()
    for k, c in enumerate(semantic.CONCEPTS):
        p = j.scores(refs, c)
        assert p[k] > 0.5 and p[k] == p.max(), f"the classifier does not pick the {c} reference"
    noise = torch.rand(4, 64, 64, 3, generator=torch.Generator().manual_seed(0))
    assert (j.scores(noise, "skull") < 0.5).all()


def test_default_judge_needs_no_reference_and_loads_fast():
    import time
    if not semantic.choice_path().is_file():
        pytest.fail("data/semantic/choice.json is missing: python -m compbook.cppn semantic choose")
    t0 = time.process_time()          # this process's CPU: a busy neighbour does not count
    judge = semantic.default_judge()
    assert time.process_time() - t0 < 5
    v = judge(_refs(), "butterfly")
    assert v.dtype == torch.bool and v.tolist()[1] is True


def _naive_reference_scores(images, concept, scales=(64, 32, 16), shift=2):
    """The definition, one ssim_batched call per shift (the fast form must equal it)."""
    import torch.nn.functional as F
    x, ref = semantic.prepare(images), semantic.reference(concept)
    total = torch.zeros(len(x))
    for s in scales:
        xs = F.interpolate(x, size=(s, s), mode="area") if s != 64 else x
        rs = F.interpolate(ref[None], size=(s, s), mode="area")[0] if s != 64 else ref
        win = 7 if s >= 32 else 5
        total += torch.stack([semantic.ssim_batched(xs, r.expand_as(xs), win)
                              for r in semantic._shifted(rs, shift)]).amax(0)
    return total / len(scales)


def test_fast_reference_scores_equal_the_naive_definition():
    g = torch.Generator().manual_seed(0)
    refs = _refs()
    imgs = torch.cat([refs, (0.7 * refs + 0.3 * torch.rand(refs.shape, generator=g)).clamp(0, 1),
                      torch.roll(refs, 3, dims=1), torch.rand(2, 64, 64, 3, generator=g)])
    for c in semantic.CONCEPTS:
        fast, naive = semantic.reference_scores(imgs, c), _naive_reference_scores(imgs, c)
        assert torch.allclose(fast, naive, atol=1e-5), f"{c}: box filter or shift loop differs"
    chunked = semantic.image_reference_scores(imgs, semantic.reference("skull"), chunk=3)
    assert torch.allclose(chunked, semantic.reference_scores(imgs, "skull"), atol=1e-6)


def test_image_reference_judge_bad_inputs():
    with pytest.raises(ValueError, match="target"):
        semantic.ImageReferenceJudge(torch.rand(2, 8, 8, 3))
    with pytest.raises(ValueError, match="threshold"):
        semantic.ImageReferenceJudge(torch.rand(8, 8, 3), threshold=2)
    with pytest.raises(ValueError, match="ref"):
        semantic.image_reference_scores(torch.rand(1, 8, 8, 3), torch.rand(3, 32, 32))
    with pytest.raises(ValueError, match="concept"):
        semantic.ImageReferenceJudge(torch.rand(8, 8, 3))(torch.rand(1, 8, 8, 3), "")
