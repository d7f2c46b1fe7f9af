"""Whole-document sampling: proportions, epoch caps, shortfall errors, rescaling, determinism."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.mixture.sampling import BudgetError, plan_mixture, select_documents


def lengths(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "web": rng.integers(20, 3000, 4000),
        "code": rng.integers(50, 800, 600),
        "papers": rng.integers(500, 8000, 300),
    }


W = {"web": 0.67, "code": 0.2, "papers": 0.13}
CAPS = {"web": 1.0, "code": 4.0, "papers": 3.0}


def test_proportions_within_half_a_point():
    L = lengths()
    plan = plan_mixture(L, W, CAPS, 2_000_000, seed=1)
    for name, sp in plan.sources.items():
        assert abs(plan.achieved(name) - W[name]) < 0.005
        assert sp.tokens_taken == int(L[name][sp.picks].sum())
        assert sp.epochs <= CAPS[name] + 1e-9
    assert abs(plan.total_tokens - 2_000_000) < 10_000


def test_upsampling_takes_full_epochs_then_a_subset():
    L = lengths()
    plan = plan_mixture(L, W, CAPS, 2_000_000, seed=1)
    code = plan.sources["code"]
    counts = np.bincount(code.picks, minlength=L["code"].size)
    full = int(np.floor(code.target_tokens / L["code"].sum()))
    assert full >= 1 and set(np.unique(counts)) <= {full, full + 1}  # every doc full times, some once more


def test_deterministic_for_seed_and_varies_with_seed():
    L = lengths()
    a = plan_mixture(L, W, CAPS, 1_000_000, seed=5)
    b = plan_mixture(L, W, CAPS, 1_000_000, seed=5)
    c = plan_mixture(L, W, CAPS, 1_000_000, seed=6)
    assert all(np.array_equal(a.sources[n].picks, b.sources[n].picks) for n in W)
    assert not np.array_equal(np.sort(a.sources["web"].picks), np.sort(c.sources["web"].picks))


def test_short_source_error_names_source_and_shortfall():
    L = lengths()
    caps = dict(CAPS, papers=1.0)
    unique = int(L["papers"].sum())
    budget = 10_000_000
    with pytest.raises(BudgetError) as e:
        plan_mixture(L, W, caps, budget, seed=0)
    msg = str(e.value)
    short = int(np.ceil(0.13 * budget - unique))
    assert f"source 'papers' is short by {short:,} tokens" in msg
    assert "rescale: true" in msg and "\n" not in msg


def test_rescale_shrinks_budget_and_says_so():
    L = lengths()
    caps = dict(CAPS, papers=1.0)
    limits = {n: L[n].sum() * caps[n] / W[n] for n in W}
    limiter = min(limits, key=limits.get)
    plan = plan_mixture(L, W, caps, 10_000_000, seed=0, rescale=True)
    assert plan.rescaled and "budget rescaled from 10,000,000" in plan.note and f"'{limiter}'" in plan.note
    assert plan.budget == int(limits[limiter])
    for n in W:
        assert abs(plan.achieved(n) - W[n]) < 0.005
        assert plan.sources[n].tokens_taken <= L[n].sum() * caps[n]


def test_all_budget_is_limited_by_tightest_cap():
    L = lengths()
    plan = plan_mixture(L, W, CAPS, None, seed=0)
    limits = {n: L[n].sum() * CAPS[n] / W[n] for n in W}
    assert plan.budget == int(min(limits.values()))
    assert plan.max_deviation() < 0.005


def test_tolerance_error_when_documents_too_large():
    L = {"a": np.array([1000, 1000]), "b": np.array([10] * 200)}
    with pytest.raises(BudgetError, match="achieved proportion of source '[ab]' is 0.[45]"):
        plan_mixture(L, {"a": 0.5, "b": 0.5}, {"a": 1, "b": 1}, 1500, seed=0)


def test_zero_weight_source_takes_nothing():
    L = lengths()
    plan = plan_mixture(L, {"web": 0.8, "code": 0.2, "papers": 0.0}, CAPS, 500_000, seed=0)
    assert plan.sources["papers"].picks.size == 0


def test_select_documents_hits_target_within_one_document():
    rng = np.random.default_rng(2)
    ls = rng.integers(1, 500, 1000)
    for target in (1, 499, 12345, int(ls.sum()), int(ls.sum()) * 2 + 777):
        picks = select_documents(ls, target, np.random.default_rng(0))
        got = int(ls[picks].sum())
        assert abs(got - target) <= ls.max() // 2 + 1
    assert select_documents(ls, 0, np.random.default_rng(0)).size == 0


def test_few_large_documents_still_hit_the_target():
    """17 'papers' of 5k-30k tokens at 10%: one permutation misses, seeded retries get close."""
    rng = np.random.default_rng(11)
    L = {"papers": rng.integers(5_000, 30_000, 17), "web": rng.integers(200, 4_000, 3_000)}
    plan = plan_mixture(L, {"papers": 0.1, "web": 0.9}, {"papers": 1, "web": 1}, 400_000, seed=0)
    assert abs(plan.achieved("papers") - 0.1) < 0.005
    again = plan_mixture(L, {"papers": 0.1, "web": 0.9}, {"papers": 1, "web": 1}, 400_000, seed=0)
    assert np.array_equal(plan.sources["papers"].picks, again.sources["papers"].picks)
    one = select_documents(L["papers"], 40_000, np.random.default_rng(0), attempts=1)
    many = select_documents(L["papers"], 40_000, np.random.default_rng(0), attempts=32)
    assert abs(int(L["papers"][many].sum()) - 40_000) <= abs(int(L["papers"][one].sum()) - 40_000)
