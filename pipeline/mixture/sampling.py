"""Which documents, how many times: whole-document sampling to target token proportions.

For each source with weight w and a budget B, the target is T = w*B tokens (EOD included).
With U unique tokens available and an epoch cap M, T must be <= U*M; otherwise the budget is
short (an error naming the source and the shortfall) or, with `rescale`, the budget shrinks to
the largest one every source can meet.

Selection for one source (deterministic for a seed):
  1. floor(T/U) full epochs: every document that many times;
  2. the remainder r = T - full*U from a seeded permutation of the documents: take documents in
     permutation order while they fit under r (greedy by token count, skipping ones that would
     overshoot), then add the first skipped document if overshooting by it lands closer to r.
     When that misses r by more than a quarter of the tolerance (a source of few, large
     documents), further seeded permutations are tried (up to 32) and the closest is kept.
So a source's take is within one document of its target, and the same seed, inputs and weights
give the same documents. The permutation is seeded by (seed, crc32(source name)), so adding a
source does not reshuffle the others.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from pipeline.errors import ConfigError


class BudgetError(ConfigError):
    """The budget cannot be met under the epoch caps (or proportions cannot be hit)."""


@dataclass
class SourcePlan:
    name: str
    weight: float
    max_epochs: float
    unique_tokens: int
    unique_documents: int
    target_tokens: int
    picks: np.ndarray  # document indices, repeated once per epoch they are taken
    tokens_taken: int = 0

    @property
    def epochs(self) -> float:
        return self.tokens_taken / self.unique_tokens if self.unique_tokens else 0.0


@dataclass
class MixturePlan:
    budget: int
    requested_budget: int | None  # None for "all"
    rescaled: bool
    note: str
    sources: dict[str, SourcePlan] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(s.tokens_taken for s in self.sources.values())

    def achieved(self, name: str) -> float:
        total = self.total_tokens
        return self.sources[name].tokens_taken / total if total else 0.0

    def max_deviation(self) -> float:
        return max((abs(self.achieved(n) - s.weight) for n, s in self.sources.items()), default=0.0)


def source_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def _fill(lengths: np.ndarray, rem: int, perm: np.ndarray) -> np.ndarray:
    """Documents in `perm` order while they fit under `rem`, then the closest overshoot if better."""
    cs = np.cumsum(lengths[perm])
    k = int(np.searchsorted(cs, rem, side="right"))  # perm[:k] fits under rem
    gap = rem - (int(cs[k - 1]) if k else 0)
    first_skipped = None
    extra: list[int] = []
    for j in perm[k:]:
        if gap == 0:
            break
        length = int(lengths[j])
        if length <= gap:
            extra.append(int(j))
            gap -= length
        elif first_skipped is None:
            first_skipped = int(j)
    if gap and first_skipped is not None and int(lengths[first_skipped]) - gap < gap:
        extra.append(first_skipped)
    return np.concatenate([perm[:k], np.asarray(extra, dtype=np.int64)]).astype(np.int64)


def select_documents(
    lengths: np.ndarray, target: int, rng: np.random.Generator, slack: int = 0, attempts: int = 32
) -> np.ndarray:
    """Document indices (with repeats for full epochs) whose lengths sum to about `target`.

    The fractional epoch is filled from a seeded permutation; if that misses the target by more
    than `slack` tokens (few, large documents), up to `attempts` further seeded permutations are
    tried and the closest kept. Large sources stop after the first.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = lengths.size
    unique = int(lengths.sum())
    if target <= 0 or n == 0 or unique == 0:
        return np.zeros(0, dtype=np.int64)
    full, rem = divmod(int(target), unique)
    parts = [np.arange(n, dtype=np.int64)] * full
    if rem:
        best, best_err = None, None
        for _ in range(max(1, attempts)):
            chosen = _fill(lengths, rem, rng.permutation(n))
            err = abs(int(lengths[chosen].sum()) - rem)
            if best_err is None or err < best_err:
                best, best_err = chosen, err
            if best_err <= slack:
                break
        parts.append(best)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def plan_mixture(
    lengths: dict[str, np.ndarray],
    weights: dict[str, float],
    max_epochs: dict[str, float],
    budget: int | None,
    seed: int,
    rescale: bool = False,
    tolerance: float = 0.005,
) -> MixturePlan:
    """Plan every source's documents. `budget=None` means "all": the largest budget the caps allow."""
    caps = {n: int(lengths[n].sum()) * max_epochs[n] for n in weights}
    active = [n for n, w in weights.items() if w > 0]
    if not active:
        raise BudgetError("mixture.sources: every weight is 0")
    # The budget each source could support alone at its weight; the smallest one limits the mix.
    limits = {n: math.floor(caps[n] / weights[n]) for n in active}
    limiter = min(active, key=lambda n: (limits[n], n))
    note = ""
    rescaled = False
    if budget is None:
        effective = limits[limiter]
        note = (
            f"budget 'all' = {effective:,} tokens, limited by source {limiter!r} "
            f"({int(lengths[limiter].sum()):,} unique tokens x max_epochs {max_epochs[limiter]:g} "
            f"at weight {weights[limiter]:g})"
        )
    else:
        effective = int(budget)
        short = [
            (n, math.ceil(weights[n] * effective - caps[n]))
            for n in active
            if weights[n] * effective > caps[n]
        ]
        if short:
            if not rescale:
                detail = "; ".join(
                    f"source {n!r} is short by {s:,} tokens (needs {math.ceil(weights[n] * effective):,} "
                    f"= {weights[n]:g} x budget, has {int(lengths[n].sum()):,} unique tokens x "
                    f"max_epochs {max_epochs[n]:g})"
                    for n, s in sorted(short, key=lambda x: -x[1])
                )
                raise BudgetError(
                    f"budget {effective:,} tokens cannot be met under the epoch caps: {detail}; "
                    f"raise max_epochs, lower the budget, or set rescale: true"
                )
            effective = limits[limiter]
            rescaled = True
            note = (
                f"budget rescaled from {int(budget):,} to {effective:,} tokens: source {limiter!r} has "
                f"{int(lengths[limiter].sum()):,} unique tokens x max_epochs {max_epochs[limiter]:g} "
                f"at weight {weights[limiter]:g}"
            )
    plan = MixturePlan(budget=effective, requested_budget=budget, rescaled=rescaled, note=note)
    for name, w in weights.items():
        ls = np.asarray(lengths[name], dtype=np.int64)
        target = int(round(w * effective))
        target = min(target, int(caps[name]))
        slack = int(tolerance * effective / 4)  # leaves room for the other sources' misses
        picks = select_documents(ls, target, source_rng(seed, name), slack=slack)
        sp = SourcePlan(
            name=name,
            weight=w,
            max_epochs=max_epochs[name],
            unique_tokens=int(ls.sum()),
            unique_documents=int(ls.size),
            target_tokens=target,
            picks=picks,
            tokens_taken=int(ls[picks].sum()) if picks.size else 0,
        )
        plan.sources[name] = sp
    if plan.total_tokens == 0:
        raise BudgetError("mixture: the plan selects no tokens (budget 0 or no documents)")
    worst = max(plan.sources, key=lambda n: abs(plan.achieved(n) - plan.sources[n].weight))
    dev = abs(plan.achieved(worst) - plan.sources[worst].weight)
    if dev > tolerance + 1e-12:
        raise BudgetError(
            f"achieved proportion of source {worst!r} is {plan.achieved(worst):.4f} against target "
            f"{plan.sources[worst].weight:.4f} ({dev * 100:.2f} pp > {tolerance * 100:g} pp): its documents "
            f"are too large for a budget of {effective:,} tokens; raise the budget or the tolerance"
        )
    return plan
