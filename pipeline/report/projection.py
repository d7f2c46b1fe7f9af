"""What a run means at full scale: expected documents, bytes and tokens after each stage for a raw
input of a given size, with a bootstrap interval over input shards.

Why a ratio estimator over shards: the funnel of one shard is the unit the run measured
independently (one input file, one set of part files), so shards are the natural resampling unit.
For each stage, projected = target_raw_bytes * sum(after-stage quantity) / sum(raw bytes) over the
shards; the interval comes from resampling shards with replacement, within each source, so the
resampled runs keep the run's mix of sources.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field

import numpy as np

from pipeline import storage
from pipeline.engine.ledger import Ledger
from pipeline.report.scan import KEPT

QUANTITIES = ("docs", "bytes", "tokens")

_UNITS = {
    "": 1, "b": 1,
    "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12, "p": 1e15, "pb": 1e15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_size(text: str) -> float:
    """Bytes in a size such as "4.3TB", "800 GB", "1.2e12", "2TiB" (KB/MB/GB/TB are powers of 1000)."""
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (expected e.g. 4.3TB, 800GB, 1.2e12, 2TiB)")
    value = float(m.group(1)) * _UNITS[unit]
    if not 0 < value < math.inf:  # 1e400TB overflows to inf
        raise ValueError(f"size must be positive and finite: {text!r}")
    return value


def human_bytes(n: float) -> str:
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def human_count(n: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


@dataclass
class ShardFunnel:
    """One input shard's raw size and what is left of it after each stage (in stage order)."""

    index: int
    source: str
    raw_bytes: float
    docs: list[float]
    bytes: list[float]
    tokens: list[float]


@dataclass
class Estimate:
    point: float
    lo: float
    hi: float


@dataclass
class Projection:
    raw_bytes: float
    stages: list[str]
    estimates: dict[str, list[Estimate]]  # quantity -> one Estimate per stage
    shards: int
    resamples: int
    confidence: float
    assumptions: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # e.g. tokenizer and how tokens were counted

    def final(self, quantity: str) -> Estimate:
        return self.estimates[quantity][-1]

    def to_dict(self) -> dict:
        tok = self.final("tokens")
        return {
            "projected_clean_tokens": tok.point,
            "interval": [tok.lo, tok.hi],
            "confidence": self.confidence,
            "raw_bytes": self.raw_bytes,
            "projected_clean_bytes": self.final("bytes").point,
            "projected_clean_docs": self.final("docs").point,
            "shards": self.shards,
            "resamples": self.resamples,
            "stages": [
                {"stage": s, **{q: asdict(self.estimates[q][k]) for q in QUANTITIES}}
                for k, s in enumerate(self.stages)
            ],
            "assumptions": self.assumptions,
            **self.meta,
        }


def project(shards: list[ShardFunnel], stages: list[str], raw_bytes: float, *, resamples: int = 2000,
            confidence: float = 0.9, seed: int = 0) -> Projection:
    """Ratio estimate per stage and quantity, with a percentile bootstrap interval over shards
    (stratified by source)."""
    usable = [s for s in shards if s.raw_bytes > 0]
    if not usable:
        raise ValueError("no shard with a known raw size: nothing to project from")
    raw = np.array([s.raw_bytes for s in usable], dtype=float)
    values = {q: np.array([getattr(s, q) for s in usable], dtype=float).reshape(len(usable), len(stages))
              for q in QUANTITIES}
    rng = np.random.default_rng(seed)
    # resample indices: for each source, draw its shards with replacement
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(usable):
        groups.setdefault(s.source, []).append(i)
    idx = np.concatenate(
        [rng.choice(np.array(members), size=(resamples, len(members)), replace=True)
         for members in groups.values()], axis=1)
    raw_b = raw[idx].sum(axis=1)  # (resamples,)
    alpha = (1 - confidence) / 2
    estimates: dict[str, list[Estimate]] = {}
    for q, v in values.items():
        point = raw_bytes * v.sum(axis=0) / raw.sum()  # (stages,)
        boot = raw_bytes * v[idx].sum(axis=1) / raw_b[:, None]  # (resamples, stages)
        lo = np.quantile(boot, alpha, axis=0)
        hi = np.quantile(boot, 1 - alpha, axis=0)
        estimates[q] = [Estimate(float(p), float(a), float(b)) for p, a, b in zip(point, lo, hi)]
    return Projection(raw_bytes, list(stages), estimates, len(usable), resamples, confidence)


# -- per-shard inputs, from a run's outputs ------------------------------------------------------
def shard_funnels(scan, ledger_inputs: dict[str, dict[str, int]], sizes: dict[int, tuple[str, float]] | None,
                  read_text: dict[str, int] | None = None) -> list[ShardFunnel]:
    """Per-shard funnels from a RunScan. With exact shard sizes, shards that gave no document
    count too (as zeros). Without them, each source's raw bytes are spread over its shards in
    proportion to the text bytes each gave the read stage, out of the source's total `read_text`
    (from the ledger: right even when only a subset of shards was scanned); evenly over the
    source's input files if it gave no text."""
    out = []
    # shards with no part file count (as zeros) unless only a subset of shards was scanned
    ids = set(scan.shard_source) if scan.subset else set(scan.shard_source) | set(sizes or {})
    for shard in sorted(ids):
        if sizes is not None:
            src, raw = sizes.get(shard, (scan.shard_source.get(shard, "?"), 0.0))
        else:
            src = scan.shard_source[shard]
            inputs = ledger_inputs.get(src, {})
            text = (read_text or {}).get(src, 0)
            share = scan.read_in(shard)[1] / text if text else 1 / max(1, inputs.get("files", 1))
            raw = inputs.get("bytes", 0) * share
        after = [scan.after_stage(shard, k) for k in range(len(scan.stages))]
        out.append(ShardFunnel(shard, src, raw, [a[0] for a in after], [a[1] for a in after], [a[2] for a in after]))
    return out


def shard_ledgers(run_dir: str, run_ledger: Ledger) -> dict[int, Ledger] | None:
    """Each shard's ledger over all phases, from the run's OUT/shards.jsonl, or None when it is
    absent or does not add up to the run's ledger."""
    path = storage.join(run_dir, "shards.jsonl")
    out: dict[int, Ledger] = {}
    try:
        for line in storage.read_text(path).splitlines():
            row = json.loads(line)
            out[int(row["shard"])] = Ledger.from_dict(row["ledger"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not out:
        return None
    total = Ledger()
    for led in out.values():
        total.merge(led)
    for stage in run_ledger.stage_order:
        a, b = total.total(stage), run_ledger.total(stage)
        if (a.docs_in, a.kept, a.bytes_in, a.kept_bytes) != (b.docs_in, b.kept, b.bytes_in, b.kept_bytes):
            return None
    return out


def funnels_from_ledgers(ledgers: dict, stages: list[str], scan) -> list[ShardFunnel]:
    """Per-shard funnels from per-shard ledgers: documents, bytes and raw input size as recorded;
    tokens counted by the scan (exact) or each later group's bytes over its bytes per token."""
    out = []
    for index, led in sorted(ledgers.items()):
        sources = sorted(led.inputs) or sorted({s for st in led.stages.values() for s in st})
        src = sources[0] if sources else "?"
        raw = float(sum(v.get("bytes", 0) for v in led.inputs.values()))
        docs, nbytes, tokens = [], [], []
        for k, stage in enumerate(stages):
            c = led.total(stage)
            docs.append(float(c.kept))
            nbytes.append(float(c.kept_bytes))
            if scan.exact_tokens:
                tokens.append(scan.after_stage(index, k)[2] if index in scan.shards else 0.0)
                continue
            t = 0.0
            for later in stages[k + 1:]:
                ratio = scan.ratio(later, src)
                rb = led.total(later).rejected_bytes
                t += rb / ratio if rb and ratio else 0.0
            ratio = scan.ratio(KEPT, src)
            last = led.total(stages[-1]).kept_bytes
            t += last / ratio if last and ratio else 0.0
            tokens.append(t)
        out.append(ShardFunnel(index, src, raw, docs, nbytes, tokens))
    return out
