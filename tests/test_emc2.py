"""Tests for compbook.cppn.emc2: the fast engine against the naive method, the score, policies and argument checks."""

import math
import random

import pytest
import torch

from compbook.cppn import emc2
from compbook.cppn.data.store import content_hash
from compbook.cppn.network import ACTIVATIONS, CPPN
from compbook.cppn.picbreeder import layerize

POLICIES = ("plus", "both", "noise")


pytestmark = pytest.mark.usefixtures("one_thread")


# -- networks ---------------------------------------------------------------------------------------------------
def random_layout(depth, width, seed):
    """Mixed per-neuron activations (every kind, shuffled), so the engine's activation runs are exercised."""
    rng = random.Random(seed)
    names = sorted(ACTIVATIONS)
    return [[rng.choice(names) for _ in range(width)] for _ in range(depth)]


def dense_net(seed=0, depth=3, width=5, color="hsv"):
    return CPPN(random_layout(depth, width, seed), color=color, seed=seed, init_scale=1.5)


def sparse_net(seed=0, depth=5, width=7, keep=0.3, color="hsv"):
    """Random masks keeping ~30% of weights: dead neurons, unreachable outputs and skip-free chains occur."""
    model = CPPN(random_layout(depth, width, seed), color=color, seed=seed, init_scale=2.0)
    g = torch.Generator().manual_seed(seed + 100)
    model.set_masks([(torch.rand(s, generator=g) < keep).float() for s in model.shapes])
    return model


def as_float64(model):
    return CPPN(model.activations, model.color, [w.detach().double() for w in model.weights],
                [m.double() for m in model.masks])


@pytest.fixture(scope="module")
def skull(genomes):
    return layerize(genomes["skull"])


@pytest.fixture(scope="module")
def butterfly(genomes):
    return layerize(genomes["butterfly"])


# -- judges for the tests ---------------------------------------------------------------------------------------
class MADJudge:
    """Preserved when the mean absolute difference to the reference is below ``threshold``; records its calls."""

    def __init__(self, threshold):
        self.threshold, self.identity, self.calls = threshold, f"mad<{threshold}", []

    def __call__(self, images, concept, *, reference=None, questions=None):
        self.calls.append((len(images), concept, questions))
        return (images - reference).abs().mean(dim=(1, 2, 3)) < self.threshold


def robust_threshold(model, res, delta=0.5, policy="plus", seed=0):
    """A MAD threshold in the middle of a wide gap between the renders' MADs (so float rounding, ~1e-5, cannot
    flip a verdict), near the median (so both verdicts occur)."""
    weights, deltas = emc2.perturbation_plan(model, delta, policy, seed)
    ref = model.render(res)
    mads = sorted(set((emc2.render_perturbations(model, weights, deltas, res) - ref)
                      .abs().mean(dim=(1, 2, 3)).tolist()))
    lo, hi = len(mads) // 4, max(len(mads) // 4 + 1, 3 * len(mads) // 4)
    j = max(range(lo, min(hi, len(mads) - 1)), key=lambda j: mads[j + 1] - mads[j])
    assert mads[j + 1] - mads[j] > 1e-4, "no usable gap between verdict classes"
    return (mads[j] + mads[j + 1]) / 2


# -- the engine against the naive method --------------------------------------------------------------------------
def exact_renders(model, weights, deltas, res):
    """The naive method's images computed exactly: a float64 copy of ``model`` with each perturbation's weights
    stacked ``(M, out, in)`` and rendered in one batched call (``perturbed`` + ``render``, without the copies)."""
    m64 = as_float64(model)
    stacked = [w.detach().expand(len(weights), -1, -1).clone() for w in m64.weights]
    for b, ((l, o, i), d) in enumerate(zip(weights, deltas.tolist())):
        stacked[l][b, o, i] += d
    with torch.no_grad():
        return m64.render(res, weights=stacked)


def test_exact_renders_are_the_naive_method(skull):
    weights, deltas = emc2.perturbation_plan(skull, 0.5, "noise")
    weights, deltas = weights[::10], deltas[::10]
    naive = emc2.render_perturbations(skull, weights, deltas, 16, engine="naive")
    assert float((naive.double() - exact_renders(skull, weights, deltas, 16)).abs().max()) < 1e-4


def check_images(model, res, policy, seed=0, every=1):
    """Fast engine vs the exact images: float32 within float32 rounding, float64 to ~1e-15."""
    weights, deltas = emc2.perturbation_plan(model, 0.5, policy, seed)
    weights, deltas = weights[::every], deltas[::every]
    exact = exact_renders(model, weights, deltas, res)
    fast = emc2.render_perturbations(model, weights, deltas, res)
    fast64 = emc2.render_perturbations(as_float64(model), weights, deltas, res)
    assert float((fast.double() - exact).abs().max()) < 1e-4   # float32 rounding (the naive render's own ~1e-5)
    assert float((fast64 - exact).abs().max()) < 1e-10         # the same function
    return fast, exact


@pytest.mark.parametrize("make", [dense_net, sparse_net], ids=["dense", "sparse"])
@pytest.mark.parametrize("policy", POLICIES)
def test_fast_images_equal_naive_random(make, policy):
    for seed in (0, 1):
        check_images(make(seed), 12, policy, seed)


@pytest.mark.parametrize("name", ["skull", "butterfly"])
def test_fast_images_equal_naive_picbreeder(name, request):
    check_images(request.getfixturevalue(name), 16, "plus")


def test_fast_images_equal_naive_apple(genomes):
    check_images(layerize(genomes["apple"]), 12, "noise", seed=3, every=3)  # 33 layers x 29


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("which", ["dense", "sparse", "skull"])
def test_fast_verdicts_equal_naive(policy, which, skull):
    model = {"dense": dense_net(2), "sparse": sparse_net(2), "skull": skull}[which]
    res = 8
    judge = MADJudge(robust_threshold(model, res, policy=policy))
    fast = emc2.compositional_score(model, judge, "skull", res=res, policy=policy, progress=False)
    naive = emc2.compositional_score(model, judge, "skull", res=res, policy=policy, progress=False,
                                     engine="naive")
    assert torch.equal(fast.verdicts, naive.verdicts)
    assert 0 < fast.score < 1  # the threshold splits them: the comparison is not vacuous
    assert fast.weights == naive.weights and torch.equal(fast.deltas, naive.deltas)
    # both engines call the judge identically: same batches, same questions, same order
    assert len(judge.calls) % 2 == 0
    half = len(judge.calls) // 2
    assert judge.calls[:half] == judge.calls[half:]


def test_batch_size_does_not_change_verdicts():
    model = sparse_net(4)
    judge = MADJudge(robust_threshold(model, 12))
    results = [emc2.compositional_score(model, judge, "x", res=12, batch_size=b, progress=False)
               for b in (1, 7, 500)]
    for r in results[1:]:
        assert torch.equal(r.verdicts, results[0].verdicts)
    assert max(n for n, _, _ in judge.calls) <= 500 and judge.calls[0][0] == 1


def test_dead_neurons_and_output_weights():
    """A perturbation that reaches no output leaves the image exactly the reference; output weights count."""
    model = sparse_net(5, keep=0.25)
    weights, deltas = emc2.perturbation_plan(model, 0.5)
    assert any(l == model.depth for l, _, _ in weights)
    fast = emc2.render_perturbations(model, weights, deltas, 10)
    ref = model.render(10).detach()
    base = emc2._base_pass(model, 10)
    dead = [j for j, (l, o, _) in enumerate(weights) if l < model.depth and not base.live[l][o]]
    assert dead, "the fixture should have dead neurons"
    for j in dead:  # the engine's base pass (neurons-major matmuls) rounds like render, to ~1e-7
        assert torch.allclose(fast[j], ref, atol=1e-6)
    naive = emc2.render_perturbations(model, [weights[j] for j in dead], deltas[dead], 10, engine="naive")
    assert torch.equal(naive, ref.expand_as(naive))


# -- the score --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
def test_score_bounds_and_mean_of_verdicts(policy, skull):
    judge = MADJudge(0.05)
    r = emc2.compositional_score(skull, judge, "skull", res=16, policy=policy, progress=False)
    assert 0.0 <= r.score <= 1.0
    assert r.verdicts.dtype == torch.bool and len(r.verdicts) == len(r.weights) == len(r.deltas)
    assert math.isclose(r.score, r.verdicts.float().mean().item())
    assert r.reference.shape == (16, 16, 3) and torch.equal(r.reference, skull.render(16))
    assert "mad<0.05" in r.source
    assert emc2.compositional_score(skull, MADJudge(2.0), "skull", res=8, progress=False).score == 1.0
    assert emc2.compositional_score(skull, MADJudge(-1.0), "skull", res=8, progress=False).score == 0.0


@pytest.mark.parametrize("policy", POLICIES)
def test_only_nonzero_weights_evaluated(policy, skull):
    r = emc2.compositional_score(skull, MADJudge(0.1), "skull", res=8, policy=policy, progress=False)
    nonzero = {(l, o, i) for l, w in enumerate(skull.effective_weights()) for o, i in (w != 0).nonzero().tolist()}
    assert set(r.weights) == nonzero
    assert len(r.weights) == (2 if policy == "both" else 1) * skull.n_weights() == (2 if policy == "both" else 1) * 144
    eff = skull.effective_weights()
    assert all(eff[l][o, i] != 0 for l, o, i in r.weights)
    assert any(l == skull.depth for l, _, _ in r.weights)  # the output layer's weights count too (our choice)


def test_questions_distinct_and_carry_model_hash(skull):
    for policy in POLICIES:
        judge = MADJudge(0.1)
        r = emc2.compositional_score(skull, judge, "skull", delta=0.25, res=8, policy=policy, batch_size=50,
                                     progress=False)
        questions = [q for _, _, qs in judge.calls for q in qs]
        assert len(questions) == len(r.weights)
        assert len({str(sorted(q.items())) for q in questions}) == len(questions)  # distinct
        h = content_hash(skull)
        assert r.model_hash == h
        for q, w, d in zip(questions, r.weights, r.deltas.tolist()):
            assert q == {"model": h, "weight": list(w), "delta": d, "policy": policy, "res": 8}
        assert all(c == "skull" for _, c, _ in judge.calls)
    other = skull.clone_with(weights=[w * 1.01 for w in skull.weights])
    judge = MADJudge(0.1)
    emc2.compositional_score(other, judge, "skull", res=8, progress=False)
    assert judge.calls[0][2][0]["model"] == content_hash(other) != content_hash(skull)


def test_policy_determinism(skull):
    w1, d1 = emc2.perturbation_plan(skull, 0.5, "noise", seed=7)
    w2, d2 = emc2.perturbation_plan(skull, 0.5, "noise", seed=7)
    _, d3 = emc2.perturbation_plan(skull, 0.5, "noise", seed=8)
    assert w1 == w2 and torch.equal(d1, d2) and not torch.equal(d1, d3)
    assert 0.3 < float(d1.std() / 0.5) < 1.7  # delta * N(0, 1)
    wp, dp = emc2.perturbation_plan(skull, 0.5, "plus")
    assert wp == w1 and torch.all(dp == 0.5)
    wb, db = emc2.perturbation_plan(skull, 0.5, "both")
    assert wb[0::2] == wb[1::2] == wp and torch.all(db[0::2] == 0.5) and torch.all(db[1::2] == -0.5)
    judge = MADJudge(0.05)
    a = emc2.compositional_score(skull, judge, "skull", res=8, policy="noise", seed=7, progress=False)
    b = emc2.compositional_score(skull, judge, "skull", res=8, policy="noise", seed=7, progress=False)
    assert torch.equal(a.verdicts, b.verdicts) and torch.equal(a.deltas, d1)


@pytest.mark.parametrize("policy", POLICIES)
def test_sample_is_a_seeded_subset_of_the_full_plan(policy, skull):
    fw, fd = emc2.perturbation_plan(skull, 0.5, policy, seed=3)
    sw, sd = emc2.perturbation_plan(skull, 0.5, policy, seed=3, sample=20)
    assert len(set(sw)) == 20 and len(sw) == (40 if policy == "both" else 20)
    pairs = list(zip(fw, fd.tolist()))
    assert all(p in pairs for p in zip(sw, sd.tolist()))              # same weights with the same deltas
    assert sw == sorted(sw, key=fw.index)                               # in the full plan's order
    again = emc2.perturbation_plan(skull, 0.5, policy, seed=3, sample=20)
    assert again[0] == sw and torch.equal(again[1], sd)
    assert emc2.perturbation_plan(skull, 0.5, policy, seed=4, sample=20)[0] != sw
    assert emc2.perturbation_plan(skull, 0.5, policy, seed=3, sample=10_000)[0] == fw
    r = emc2.compositional_score(skull, MADJudge(0.05), "skull", res=8, policy=policy, seed=3, sample=20,
                                 progress=False)
    assert r.weights == sw and r.n_nonzero == 144 and "of 144 weights" in repr(r)
    assert 0 <= r.stderr <= 0.5 / math.sqrt(len(sw)) + 1e-12
    with pytest.raises(ValueError, match="sample"):
        emc2.perturbation_plan(skull, 0.5, policy, sample=0)


def test_works_with_the_ssim_and_cached_judges(skull, tmp_path):
    from compbook.cppn.judges import CachedJudge, SSIMJudge
    ssim = SSIMJudge()
    r = emc2.compositional_score(skull, ssim, "skull", res=16, progress=False)
    assert 0 < r.score < 1 and ssim.identity in r.source
    filled = CachedJudge(tmp_path, SSIMJudge(), mode="fill")
    emc2.compositional_score(skull, filled, "skull", res=16, progress=False)
    strict = CachedJudge(tmp_path, identity=ssim.identity)
    c = emc2.compositional_score(skull, strict, "skull", res=16, progress=False)
    assert torch.equal(c.verdicts, r.verdicts)
    assert f"{len(r.weights)} cache hits, 0 misses" in c.source and str(strict.path) in c.source


# -- sweeps and the naive method ----------------------------------------------------------------------------------
def test_perturbed_is_a_changed_copy(skull):
    l, o, i = emc2.nonzero_weights(skull)[5]
    before = [w.detach().clone() for w in skull.weights]
    p = emc2.perturbed(skull, (l, o, i), 0.5)
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, skull.weights))  # the original is untouched
    diff = p.weights[l].detach() - skull.weights[l].detach()
    assert torch.isclose(diff[o, i], torch.tensor(0.5)) and diff.count_nonzero() == 1


def test_weight_sweep(skull):
    w = emc2.important_weights(skull, k=3, res=16)
    assert len(set(w)) == 3 and all(x in emc2.nonzero_weights(skull) for x in w)
    l, o, i = w[0]
    value = float(skull.weights[l].detach()[o, i])
    values = [value - 2, value, value + 1.5]
    strip = emc2.weight_sweep(skull, w[0], values, res=16)
    assert strip.shape == (3, 16, 16, 3)
    assert float((strip[1] - skull.render(16).detach()).abs().max()) < 1e-6  # the weight's own value: the reference
    naive = torch.stack([emc2.perturbed(skull, w[0], v - value).render(16).detach() for v in values])
    assert float((strip - naive).abs().max()) < 1e-4
    assert (strip[0] - strip[1]).abs().mean() > 1e-3  # the most important weight does change the picture


# -- bad inputs -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, word", [
    (dict(delta=float("nan")), "delta"), (dict(delta=float("inf")), "delta"), (dict(delta="0.5"), "delta"),
    (dict(res=0), "res"), (dict(res=-3), "res"), (dict(res=2.5), "res"),
    (dict(policy="minus"), "policy"), (dict(engine="gpu"), "engine"), (dict(batch_size=0), "batch_size"),
    (dict(concept=""), "concept"),
])
def test_bad_inputs_raise(kwargs, word, skull):
    args = dict(concept="skull", progress=False)
    args.update(kwargs)
    with pytest.raises(ValueError, match=word):
        emc2.compositional_score(skull, MADJudge(0.1), **args)


def test_bad_weights_and_judges_raise(skull):
    masked = next((l, o, i) for l, m in enumerate(skull.masks) for o, i in (m == 0).nonzero().tolist())
    with pytest.raises(ValueError, match="masked"):
        emc2.perturbed(skull, masked, 0.5)
    with pytest.raises(ValueError, match="outside"):
        emc2.perturbed(skull, (99, 0, 0), 0.5)
    with pytest.raises(ValueError, match="delta"):
        emc2.perturbed(skull, emc2.nonzero_weights(skull)[0], float("nan"))
    with pytest.raises(ValueError, match="values"):
        emc2.weight_sweep(skull, emc2.nonzero_weights(skull)[0], [0.0, float("inf")])
    with pytest.raises(ValueError, match="judge"):
        emc2.compositional_score(skull, lambda imgs, c, **kw: torch.ones(len(imgs)), "skull", res=8,
                                 progress=False)  # floats, not bools


# -- chapter 5's plumbing ---------------------------------------------------------------------------------------
def test_compare_engines_counts_renders_and_agrees():
    model = sparse_net(seed=3)
    out = emc2.compare_engines(model, delta=0.5, res=16)
    assert out["renders"] == len(emc2.nonzero_weights(model))
    assert out["naive_s"] > 0 and out["fast_s"] > 0
    assert out["max_diff"] < 1e-4, "the two engines must draw the same perturbed images"
    assert emc2.compare_engines(model, res=16, sample=3)["renders"] == 3


def test_verdict_examples_pick_kept_and_rejected_renders():
    model = dense_net(seed=1)
    calls = []

    def judge(images, concept, reference=None, questions=None):
        calls.append(len(images))
        return torch.arange(len(images)) % 2 == 0          # alternate verdicts

    result = emc2.compositional_score(model, judge, "x", res=16, progress=False)
    rows = emc2.verdict_examples(model, result, lambda imgs, ref: (imgs - ref).abs().mean((1, 2, 3)), k=2)
    assert [keep for keep, *_ in rows] == [True, False]
    for keep, weights, imgs, scores in rows:
        assert len(weights) == len(imgs) == len(scores) == 2
        for w in weights:
            assert bool(result.verdicts[result.weights.index(w)]) == keep, "a render shown under the wrong verdict"
        naive = torch.stack([emc2.perturbed(model, w, 0.5).render(16) for w in weights])
        assert (imgs - naive).abs().max() < 1e-4
    with pytest.raises(ValueError, match="k must be"):
        emc2.verdict_examples(model, result, lambda i, r: i, k=0)


def test_random_hidden_weights_are_seeded_non_zero_and_hidden():
    model = sparse_net(seed=2)
    picked = emc2.random_hidden_weights(model, k=4, seed=0)
    assert picked == emc2.random_hidden_weights(model, k=4, seed=0), "same seed, same weights"
    assert len(set(picked)) == 4
    nonzero = set(emc2.nonzero_weights(model))
    assert all(w in nonzero and w[0] < model.depth for w in picked), "only non-zero weights of hidden layers"
    assert picked != emc2.random_hidden_weights(model, k=4, seed=1)
# -- hardening -------------------------------------------------------------------------------------------------
class _Recorder:
    """A lenient judge (keeps everything) that records what it was shown."""
    identity = "recorder"

    def __init__(self, vandal=False):
        self.calls, self.references, self.vandal = 0, [], vandal

    def __call__(self, images, concept, *, reference=None, questions=None):
        self.calls += 1
        self.references.append(reference.clone())
        if self.vandal:                           # a judge that edits what it was given, in place
            reference.zero_()
            for q in questions:
                q["weight"][0] = -1
        return torch.ones(len(images), dtype=torch.bool)


@pytest.mark.parametrize("policy", POLICIES)
def test_delta_zero_is_refused(policy):
    """delta=0 changes nothing, so a lenient judge used to score a meaningless 1.0."""
    judge = _Recorder()
    with pytest.raises(ValueError, match="delta must be a finite non-zero number, got 0"):
        emc2.compositional_score(dense_net(), judge, "x", delta=0, policy=policy, res=8, progress=False)
    assert judge.calls == 0


@pytest.mark.parametrize("engine", emc2.ENGINES)
def test_overflowing_delta_never_reaches_the_judge(engine):
    """delta=1e308 used to send NaN images to the judge (a lenient judge then scored 1.0)."""
    judge = _Recorder()
    with pytest.raises(ValueError, match="overflow"):
        emc2.compositional_score(dense_net(), judge, "x", delta=1e308, res=8, engine=engine, progress=False)
    with pytest.raises(ValueError, match="overflow"):      # finite w + delta whose render overflows
        emc2.compositional_score(CPPN([["identity"] * 3] * 2, "gray"), judge, "x", delta=3e38, res=8,
                                 engine=engine, progress=False)
    assert judge.calls == 0


@pytest.mark.parametrize("weight", [(0.9, 1.7, 2.2), (0, 1.5, 1), ("0", 0, 0), (0, 0), 7])
def test_fractional_or_malformed_weight_index_is_refused(weight):
    """(0.9, 1.7, 2.2) used to be truncated to (0, 1, 2) silently."""
    model = dense_net()
    with pytest.raises(ValueError, match="weight"):
        emc2.perturbed(model, weight, 0.5)
    with pytest.raises(ValueError, match="weight"):
        emc2.render_perturbations(model, [weight], [0.5], res=8)


def test_a_judge_that_edits_reference_in_place_cannot_corrupt_later_batches():
    model = dense_net()
    judge = _Recorder(vandal=True)
    result = emc2.compositional_score(model, judge, "x", res=8, batch_size=4, progress=False)
    truth = model.render(8)
    assert judge.calls > 2
    assert all(torch.equal(r, truth) for r in judge.references)    # every batch saw the true reference
    assert torch.equal(result.reference, truth)
    assert [list(w) for w in result.weights] == [list(w) for w in emc2.nonzero_weights(model)]
