"""One bounded, streaming pass over a run's Parquet outputs, collecting what the report needs.

Why one pass: the text column dominates a run's size, and every per-shard count, token count,
signal sample and audit example can be taken from the same batches. Memory is bounded by one
batch plus fixed-size reservoirs (seeded, so a report is reproducible): nothing grows with the run
except the per-shard counters and the language counts.

Where a document ends up tells how far it got: a document rejected at stage k was present after
every stage before k; a kept document was present after every stage. So per-shard counts after
each stage follow from counting rows per part file (part-NNNNN = shard NNNNN) and drop_stage.
"""
from __future__ import annotations

import logging
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from pipeline import storage
from pipeline.engine.ledger import Counts, Ledger
from pipeline.schema import BASE_NAMES, DECISION_FIELDS

log = logging.getLogger("refinery")

KEPT = "kept"
TOKENIZER = "cl100k_base"
_PART = re.compile(r"part-(\d+)(?:-[0-9a-f]{8})?\.parquet$")  # -<attempt>: see engine/state.py
_DECISION_NAMES = {f.name for f in DECISION_FIELDS}
LANG_COLUMNS = ("lang", "language")


SCORE_COLUMN = "quality_score"  # the ranking score a mixture buckets on: its distribution per language and source
SCORE_BINS = 100


def shard_of(path: str) -> int | None:
    m = _PART.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def signal_columns(schema: pa.Schema) -> list[str]:
    """Numeric columns that a stage added (not base or decision columns, not ids)."""
    out = []
    for f in schema:
        if f.name in BASE_NAMES or f.name in _DECISION_NAMES or f.name.endswith("_id"):
            continue
        if pa.types.is_integer(f.type) or pa.types.is_floating(f.type):
            out.append(f.name)
    return out


class Reservoir:
    """Keeps a uniform random sample of at most `k` items from a stream (smallest random keys)."""

    def __init__(self, k: int, rng: np.random.Generator):
        self.k = k
        self.rng = rng
        self.keys = np.empty(0)
        self.items: list[Any] = []

    def offer(self, n: int) -> np.ndarray:
        """Draw keys for `n` new rows; returns the row positions that may enter the sample (one key
        per item held: `keys` and the sample are cut together)."""
        keys = self.rng.random(n)
        cand = np.arange(n) if len(self.keys) < self.k else np.nonzero(keys < self.keys.max())[0]
        self._pending = keys
        return cand

    def add(self, positions: np.ndarray, items: list[Any]) -> None:
        keys = np.concatenate([self.keys, self._pending[positions]])
        self.items.extend(items)  # in place: a new list per batch made the scan quadratic in the sample
        if len(self.items) > self.k:
            order = np.argsort(keys, kind="stable")[: self.k]
            keys = keys[order]
            self.items = [self.items[i] for i in order]
        self.keys = keys


class ValueReservoir(Reservoir):
    """A Reservoir of (number, group) pairs, held in numpy arrays: a run's signals are hundreds of
    thousands of values, which as Python tuples, regrouped at the end, cost each report about a
    tenth of a CPU-second. The same draws and the same sample, in the same order, as Reservoir.
    A group is any hashable (the scan's: (kept or stage, drop reason or None))."""

    def __init__(self, k: int, rng: np.random.Generator):
        super().__init__(k, rng)
        self.values = np.empty(0)
        self.codes = np.empty(0, np.int32)
        self.groups: list[str] = []

    def add(self, positions: np.ndarray, values: np.ndarray, group: Any,  # type: ignore[override]
            row_groups: np.ndarray | None = None) -> None:
        """`values` (at `positions` of the last offer) all of `group`, or each of its own group
        in `row_groups` (one per value)."""
        if row_groups is None:
            row_codes = np.full(len(values), self._code(group), np.int32)
        else:
            row_codes = np.array([self._code(g) for g in row_groups], np.int32).reshape(len(values))
        keys = np.concatenate([self.keys, self._pending[positions]])
        vals = np.concatenate([self.values, values])
        codes = np.concatenate([self.codes, row_codes])
        if len(vals) > self.k:
            order = np.argsort(keys, kind="stable")[: self.k]
            keys, vals, codes = keys[order], vals[order], codes[order]
        self.keys, self.values, self.codes = keys, vals, codes

    def _code(self, group: Any) -> int:
        if group not in self.groups:
            self.groups.append(group)
        return self.groups.index(group)

    def by_group(self) -> dict[Any, np.ndarray]:
        """The sampled values of each group, groups in the order of their first sampled value."""
        present, first = np.unique(self.codes, return_index=True)
        return {self.groups[int(c)]: self.values[self.codes == c] for c in present[np.argsort(first)]}


class ByteSampler:
    """Tokens per byte of a group of documents, from windows around byte positions drawn as a
    systematic sample: one position every `period` bytes of each document, starting at an offset
    in [0, period) that a seeded hash of the document's id gives. Every byte is equally likely
    (1 / period), so documents weigh by their length, no whole document is tokenized, and the
    positions of a document depend only on the document, not on the others around it or their
    order: a run retuned from another gives its unchanged documents the same windows, whose token
    counts its report reuses (`report/token_windows.parquet`). The period is the power of two
    that gives at most `k` windows for the group's bytes the ledger records (under 2 MB of text,
    windows overlap: a small group is still measured); at most 4 `k` windows are kept."""

    def __init__(self, k: int, expected_bytes: float, seed: int = 0, window: int = 2048):
        self.k = k
        self.window = window
        self.seed = seed
        need = max(float(expected_bytes) / max(k, 1), 1.0)
        self.period = 1 << int(math.ceil(math.log2(need)))
        self.windows: list[str] = []

    def offer(self, ids: list[str | None], lengths: np.ndarray) -> list[tuple[int, int]]:
        """(row, byte offset in the row) of every position drawn in this batch."""
        if self.k == 0 or len(self.windows) >= 4 * self.k:
            return []
        out = []
        p = self.period
        for row, (doc, n) in enumerate(zip(ids, lengths.tolist())):
            if not n:
                continue
            at = xxhash.xxh3_64_intdigest((doc or "").encode("utf-8"), seed=self.seed) % p
            while at < n:
                out.append((row, at))
                at += p
        return out

    def add(self, text: str | bytes, at: int) -> None:
        """Keep the window of `text`'s UTF-8 bytes around byte `at`. An edge inside the
        document moves to the nearest whitespace inward, so no word is cut in two (a cut word costs
        an extra token); text without whitespace (e.g. Chinese), or a window inside one long word,
        keeps its cut."""
        if len(self.windows) >= 4 * self.k:
            return
        self.windows.append(window_at(text, at, self.window))


def window_at(text: str | bytes, at: int, window: int) -> str:
    """The `window` bytes of `text` around byte `at` (ByteSampler.add)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    lo = max(0, min(at - window // 2, len(data) - window))
    hi = min(len(data), lo + window)
    win = whole = data[lo:hi]
    if lo > 0 and not (data[lo - 1:lo].isspace() or data[lo:lo + 1].isspace()):
        m = _SPACE.search(win)
        win = win[m.start():] if m else win
    if hi < len(data) and not (data[hi - 1:hi].isspace() or data[hi:hi + 1].isspace()):
        m = _SPACE.search(win[::-1][:512])  # the last space, within 512 bytes of the end
        win = win[:len(win) - m.start() - 1] if m else win
    return (win if win.strip() else whole).decode("utf-8", "ignore")


_SPACE = re.compile(rb"\s")


@dataclass
class Group:
    """Rows of one shard that ended in one place (kept, or rejected at one stage)."""

    docs: int = 0
    bytes: int = 0
    tokens: int = 0  # exact token count, when counting exactly


@dataclass
class Example:
    id: str
    source: str
    url: str | None
    text: str  # cut to the scan's example_chars, around the flagged span when there is one
    detail: str | None
    span_at: int | None = None  # where the flagged span starts in `text` (None: no span known)
    span_of: tuple[int, int] | None = None  # the span in the whole text, in characters
    span_end_at: int | None = None  # where it ends in `text` (None: past the cut)
    row: dict | None = None  # while sampling: the whole text and the row's columns (Stage.flagged_span)


@dataclass
class RunScan:
    stages: list[str]
    shards: dict[int, dict[str, Group]] = field(default_factory=dict)  # shard -> group -> counts
    shard_source: dict[int, str] = field(default_factory=dict)
    exact_tokens: bool = True
    token_ratio: dict[tuple[str, str], float] = field(default_factory=dict)  # (group, source) -> bytes/token
    signals: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # col -> group -> sampled values
    # col -> (stage, drop reason) -> the sampled values of signals[col][stage] rejected for that reason
    signal_reasons: dict[str, dict[tuple[str, str], np.ndarray]] = field(default_factory=dict)
    signal_rows: dict[str, int] = field(default_factory=dict)  # col -> non-null rows seen
    langs: dict[str, Counter] = field(default_factory=lambda: {"examined": Counter(), KEPT: Counter()})  # -> lang -> docs
    # ("language"|"source", value) -> counts of kept documents' SCORE_COLUMN in SCORE_BINS bins of [0, 1]
    score_bins: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    examples: dict[tuple[str, str], list[Example]] = field(default_factory=dict)  # (stage, reason) -> docs
    # rejects part file -> each row's text length in UTF-8 bytes, for the yield section (PartReader)
    text_bytes: dict[str, np.ndarray] = field(default_factory=dict)

    scanned_shards: int = 0
    total_shards: int = 0  # shards with part files; more than scanned_shards when a subset was scanned

    @property
    def subset(self) -> bool:
        return self.scanned_shards < self.total_shards

    def ratio(self, group: str, source: str) -> float | None:
        """Bytes per token of a group and source; else of the source; else of the run."""
        if (group, source) in self.token_ratio:
            return self.token_ratio[(group, source)]
        same = [r for (g, src), r in self.token_ratio.items() if src == source]
        pool = same or list(self.token_ratio.values())
        return float(np.mean(pool)) if pool else None

    def group_tokens(self, shard: int, group: str) -> float:
        g = self.shards[shard][group]
        if self.exact_tokens:
            return float(g.tokens)
        ratio = self.ratio(group, self.shard_source.get(shard, ""))
        return g.bytes / ratio if ratio else 0.0

    def tokens_after(self, ledger: Ledger, k: int, source: str | None = None) -> float:
        """Tokens left after stage number k, for the whole run: counted over the shards when exact,
        else the ledger's bytes of each later group and source over its bytes per token."""
        later = self.stages[k + 1:] + [KEPT]
        if self.exact_tokens:
            return sum(self.group_tokens(sh, g) for sh, groups in self.shards.items() for g in groups
                       if g in later and (source is None or self.shard_source.get(sh) == source))
        total = 0.0
        sources = [source] if source is not None else sorted({s for st in ledger.stages.values() for s in st})
        for src in sources:
            for g in later:
                nbytes = _group_bytes(ledger, g, src)
                ratio = self.ratio(g, src)
                total += nbytes / ratio if nbytes and ratio else 0.0
        return total

    def after_stage(self, shard: int, k: int) -> tuple[int, int, float]:
        """(docs, bytes, tokens) of `shard` still present after stage number k."""
        later = set(self.stages[k + 1:]) | {KEPT}
        docs = bytes_ = 0
        tokens = 0.0
        for name, g in self.shards.get(shard, {}).items():
            if name in later:
                docs += g.docs
                bytes_ += g.bytes
                tokens += self.group_tokens(shard, name)
        return docs, bytes_, tokens

    def read_in(self, shard: int) -> tuple[int, int]:
        """(docs, text bytes) the shard gave the read stage."""
        gs = self.shards.get(shard, {}).values()
        return sum(g.docs for g in gs), sum(g.bytes for g in gs)


def part_files(run_dir: str, stages: list[str]) -> list[tuple[str, str]]:
    """(group, path) for every committed part file (the run's _SUCCESS manifest): kept, then
    rejects per stage in pipeline order."""
    def parts(sub: str) -> list[str]:
        return sorted((p for p in storage.committed_files(run_dir, sub) if shard_of(p) is not None), key=shard_of)

    out = [(KEPT, p) for p in parts("kept")]
    for stage in stages:
        out += [(stage, p) for p in parts(f"rejects/{stage}")]
    return out


def scan_run(run_dir: str, ledger: Ledger, *, exact_token_limit: int = 8_000_000, token_sample: int = 1000,
             max_shards: int | None = 128, signal_sample: int = 50_000, examples_per_reason: int = 5,
             example_chars: int = 400, batch_size: int = 2048, seed: int = 0,
             reuse: list[str] | None = None, flagged_span=None) -> RunScan:
    """Scan kept and rejects part files once. Tokens are counted exactly when the run read at most
    `exact_token_limit` text bytes; otherwise tokens per byte are measured around `token_sample`
    byte positions (ByteSampler) per group (kept, or rejected at a stage) and source: code,
    prose and other languages tokenize very differently. Window token counts stored by the reports
    of the runs in `reuse` (the run itself, the run it was retuned from) are reused, and this scan's
    are stored in the run's report/token_windows.parquet. A bigger run with more than `max_shards`
    shards (None: no limit) has a seeded random subset of that many shards scanned.
    `flagged_span(stage, row) -> (start, end) | None`: where a sampled rejected document's reason
    applies (Stage.flagged_span); its example is then cut around that span."""
    enc = _Encoding()  # loaded on first use: a report whose windows are all known tokenizes nothing
    stages = list(ledger.stage_order)
    scan = RunScan(stages)
    read_bytes = ledger.total(stages[0]).bytes_in if stages else 0
    scan.exact_tokens = read_bytes <= exact_token_limit
    rng = np.random.default_rng(seed)
    token_samplers: dict[tuple[str, str], ByteSampler] = {}
    signal_res: dict[str, ValueReservoir] = {}
    example_res: dict[tuple[str, str], Reservoir] = {}

    files = part_files(run_dir, stages)
    ids = sorted({shard_of(p) for _, p in files})
    chosen = set(ids)
    if not scan.exact_tokens and max_shards and len(ids) > max_shards:
        chosen = _choose_shards(files, max_shards, rng)
    scan.scanned_shards, scan.total_shards = len(chosen), len(ids)
    share = len(chosen) / len(ids) if ids else 1.0  # of the ledger's bytes, what the scan will see

    for group, path in files:
        shard = shard_of(path)
        if shard not in chosen:
            continue
        pf = storage.open_parquet(path)
        names = pf.schema_arrow.names
        sigs = signal_columns(pf.schema_arrow)
        lang_col = next((c for c in LANG_COLUMNS if c in names), None)
        cols = ["text", "source", "id"] + sigs + ([lang_col] if lang_col else [])
        if group != KEPT:
            cols += ["url", "drop_reason", "drop_detail"]
        g = scan.shards.setdefault(shard, {}).setdefault(group, Group())
        sizes: list[np.ndarray] = []
        for batch in pf.iter_batches(batch_size=batch_size, columns=[c for c in cols if c in names]):
            if batch.num_rows == 0:
                continue
            if shard not in scan.shard_source:
                scan.shard_source[shard] = batch.column("source")[0].as_py()
            text = batch.column("text")
            lengths = pc.fill_null(pc.binary_length(text), 0).to_numpy(zero_copy_only=False)
            sizes.append(lengths)
            g.docs += batch.num_rows
            g.bytes += int(lengths.sum())
            if scan.exact_tokens:
                texts = [t or "" for t in text.to_pylist()]
                g.tokens += sum(len(t) for t in enc.encode_ordinary_batch(texts))
            else:
                key = (group, scan.shard_source[shard])
                sampler = token_samplers.get(key)
                if sampler is None:
                    expected = _group_bytes(ledger, group, key[1]) * share
                    sampler = token_samplers[key] = ByteSampler(token_sample, expected, seed)
                encoded: dict[int, bytes] = {}  # each picked row converted once, however many windows it gives
                for row, at in sampler.offer(batch.column("id").to_pylist(), lengths):
                    if row not in encoded:
                        encoded[row] = (text[row].as_py() or "").encode("utf-8")
                    sampler.add(encoded[row], at)
            reasons = None if group == KEPT else batch.column("drop_reason").to_numpy(zero_copy_only=False)
            for col in sigs:
                _sample_signal(scan, signal_res, signal_sample, rng, col, batch.column(col), group, reasons)
            for item in pc.value_counts(batch.column(lang_col).drop_null()).to_pylist() if lang_col else ():
                scan.langs["examined"][item["values"]] += item["counts"]
                if group == KEPT:
                    scan.langs[KEPT][item["values"]] += item["counts"]
            if group == KEPT and SCORE_COLUMN in batch.schema.names:
                _bin_scores(scan, batch, lang_col)
            if group != KEPT:
                _sample_examples(example_res, examples_per_reason, rng, group, batch, lang_col)
        if group != KEPT and "text" in names:
            scan.text_bytes[path] = np.concatenate(sizes).astype(np.int64) if sizes else np.zeros(0, np.int64)

    if not scan.exact_tokens:
        counts = _load_window_tokens(reuse or [])
        for key, sampler in token_samplers.items():
            ratio = _bytes_per_token(enc, sampler, counts)
            if ratio:
                scan.token_ratio[key] = ratio
        if reuse is not None:  # the report's scan: kept for the next report
            _save_window_tokens(run_dir, counts, [w for s_ in token_samplers.values() for w in s_.windows])
    for col, res in signal_res.items():
        merged: dict[str, list[np.ndarray]] = {}
        for (grp, reason), values in res.by_group().items():
            merged.setdefault(grp, []).append(values)
            if reason is not None:
                scan.signal_reasons.setdefault(col, {})[(grp, reason)] = values
        scan.signals[col] = {grp: v[0] if len(v) == 1 else np.concatenate(v) for grp, v in merged.items()}
    for key, res in example_res.items():
        scan.examples[key] = [_cut_example(e, key[0], example_chars, flagged_span)
                              for e in sorted(res.items, key=lambda e: e.id)]
    return scan


def _choose_shards(files: list[tuple[str, str]], k: int, rng: np.random.Generator) -> set[int]:
    """About `k` shards at random, drawn within each source in proportion to its shards (at least
    one per source), so the subset keeps the run's mix of sources."""
    by_source: dict[str, list[int]] = {}
    seen: set[int] = set()
    for _, path in files:
        shard = shard_of(path)
        if shard in seen:
            continue
        seen.add(shard)
        pf = storage.open_parquet(path)
        src = pf.read_row_group(0, columns=["source"]).column(0)[0].as_py() if pf.metadata.num_rows else None
        if src is None:
            seen.discard(shard)  # an empty file: look at the shard's next one
            continue
        by_source.setdefault(src, []).append(shard)
    total = sum(len(v) for v in by_source.values())
    quota = {src: k * len(v) / total for src, v in by_source.items()}
    count = {src: min(len(by_source[src]), max(1, int(q))) for src, q in quota.items()}
    for src in sorted(quota, key=lambda x: (-(quota[x] - int(quota[x])), x)):  # largest remainders first
        if sum(count.values()) >= k:
            break
        if count[src] < len(by_source[src]):
            count[src] += 1
    chosen: set[int] = set()
    for src, shards in sorted(by_source.items()):
        chosen.update(rng.choice(np.array(sorted(shards)), size=count[src], replace=False).tolist())
    return chosen


def _group_bytes(ledger: Ledger, group: str, source: str) -> int:
    """Text bytes the ledger records for a group: kept after the last stage, or rejected at a stage."""
    if group == KEPT:
        return ledger.stages[ledger.stage_order[-1]].get(source, Counts()).kept_bytes
    return ledger.stages.get(group, {}).get(source, Counts()).rejected_bytes


class _Encoding:
    """tiktoken's encoding, loaded (about 0.3 s) only when something is tokenized."""

    _enc = None

    def encode_ordinary_batch(self, texts: list[str], **kw) -> list[list[int]]:
        if not texts:
            return []
        if self._enc is None:
            import tiktoken

            self._enc = tiktoken.get_encoding(TOKENIZER + "_offline")
        return self._enc.encode_ordinary_batch(texts, **kw)


def _bytes_per_token(enc, sampler: ByteSampler, counts: dict[bytes, int] | None = None) -> float | None:
    """1 / the mean over the windows of their tokens per byte. `counts`: window hash -> tokens,
    known counts (read and added to)."""
    windows = [w for w in sampler.windows if w]
    if not windows:
        return None
    counts = {} if counts is None else counts
    keys = [_window_key(w) for w in windows]
    todo = [i for i, k in enumerate(keys) if k not in counts]
    for i, c in zip(todo, enc.encode_ordinary_batch([windows[i] for i in todo], num_threads=1)):
        counts[keys[i]] = len(c)
    mean = float(np.mean([counts[k] / len(w.encode("utf-8")) for w, k in zip(windows, keys)]))
    return 1 / mean if mean else None


WINDOW_TOKENS = "token_windows.parquet"  # in report/: window hash -> tokens, for the next report


def _window_key(window: str) -> bytes:
    return xxhash.xxh3_128_digest(f"{TOKENIZER}\x1f{window}".encode("utf-8", "surrogatepass"))


def _load_window_tokens(runs: list[str]) -> dict[bytes, int]:
    """Window token counts earlier reports stored; a missing or unreadable file is only a miss."""
    counts: dict[bytes, int] = {}
    for run in runs:
        path = storage.join(run, "report", WINDOW_TOKENS)
        try:
            if storage.exists(path):
                t = storage.read_parquet(path)
                counts.update(zip(t.column("window").to_pylist(), t.column("tokens").to_pylist()))
        except Exception:  # a cache: never a reason to fail the report
            continue
    return counts


def _save_window_tokens(run_dir: str, counts: dict[bytes, int], windows: list[str]) -> None:
    """The counts of this scan's windows (only those: the file stays the size of one sample)."""
    keys = sorted({_window_key(w) for w in windows if w})
    storage.write_parquet(storage.join(run_dir, "report", WINDOW_TOKENS), pa.table({
        "window": pa.array(keys, pa.binary()), "tokens": pa.array([counts[k] for k in keys], pa.int32())}))


def _sample_signal(scan: RunScan, reservoirs: dict, k: int, rng, col: str, arr: pa.Array, group: str,
                   reasons: np.ndarray | None = None) -> None:
    """Sample the batch's finite values of `col`, each in group (group, its drop reason or None)."""
    keep = pc.is_valid(arr).to_numpy(zero_copy_only=False)
    if not keep.any():
        return
    values = arr.to_numpy(zero_copy_only=False).astype(float)
    with np.errstate(invalid="ignore"):
        keep &= np.isfinite(values)
    values = values[keep]
    scan.signal_rows[col] = scan.signal_rows.get(col, 0) + len(values)
    res = reservoirs.get(col)
    if res is None:
        res = reservoirs[col] = ValueReservoir(k, rng)
    pos = res.offer(len(values))
    if reasons is None:
        res.add(pos, values[pos], (group, None))
    else:
        res.add(pos, values[pos], None, [(group, r) for r in reasons[keep][pos]])


def _bin_scores(scan: RunScan, batch: pa.RecordBatch, lang_col: str | None) -> None:
    """Kept documents' SCORE_COLUMN, binned per language and per source (all of them, not a sample)."""
    score = pc.cast(batch.column(SCORE_COLUMN), pa.float64()).to_numpy(zero_copy_only=False)
    ok = ~np.isnan(score)
    bins = np.clip((score[ok] * SCORE_BINS).astype(np.int64), 0, SCORE_BINS - 1)
    keys = [("source", batch.column("source").to_pylist())]
    if lang_col:
        keys.append(("language", [x or "-" for x in batch.column(lang_col).to_pylist()]))
    for kind, values in keys:
        values = np.array(values, dtype=object)[ok]
        for v in set(values.tolist()):
            counts = scan.score_bins.setdefault((kind, str(v)), np.zeros(SCORE_BINS, np.int64))
            counts += np.bincount(bins[values == v], minlength=SCORE_BINS)


def _sample_examples(reservoirs: dict, k: int, rng, stage: str, batch: pa.RecordBatch, lang_col: str | None) -> None:
    """Offer the batch's rejected rows to each reason's reservoir. A candidate keeps its whole text
    and its row (for `flagged_span`) until the scan ends and cuts the ones sampled (_cut_example)."""
    reasons = batch.column("drop_reason").to_pylist()
    by_reason: dict[str, list[int]] = {}
    for i, r in enumerate(reasons):
        by_reason.setdefault(r or "(none)", []).append(i)
    for reason, rows in by_reason.items():
        res = reservoirs.setdefault((stage, reason), Reservoir(k, rng))
        pos = res.offer(len(rows))
        items = []
        for p in pos:
            i = rows[int(p)]
            row = {c: batch.column(c)[i].as_py() for c in batch.schema.names}  # signals, text, drop_reason, ...
            row["text"] = row["text"] or ""
            if lang_col:
                row["lang"] = row[lang_col]
            items.append(Example(id=row["id"], source=row["source"], url=row["url"], text=row["text"],
                                 detail=row["drop_detail"], row=row))
        res.add(pos, items)


def _cut_example(e: Example, stage: str, chars: int, flagged_span) -> Example:
    """The example's text cut to about `chars` characters: centred on the span its stage flags
    (`flagged_span`), the span's start kept in view, else the first `chars`."""
    text, row = e.text, e.row or {}
    e.row = None
    span = None
    if flagged_span is not None and text:
        try:
            span = flagged_span(stage, row)
        except Exception:  # an audit aid: never a reason to fail the report
            log.warning("flagged_span of %s failed for %s", stage, e.id, exc_info=True)
        if span is not None and not (0 <= span[0] <= span[1] <= len(text)):
            span = None
    if span is None:
        e.text = text[:chars] + ("…" if len(text) > chars else "")
        return e
    start, end = span
    if end - start <= chars:
        lo = max(0, (start + end) // 2 - chars // 2)
    else:
        lo = max(0, start - chars // 10)
    lo = max(0, min(lo, len(text) - chars))
    hi = min(len(text), lo + chars)
    e.text = ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")
    shift = (1 if lo else 0) - lo
    e.span_at, e.span_of = start + shift, (start, end)
    e.span_end_at = end + shift if end <= hi else None
    return e


def load_recipe_json(run_dir: str) -> dict[str, Any]:
    data = storage.read_json(storage.join(run_dir, "recipe.json"))
    return data if isinstance(data, dict) else {}


def recipe_stages(recipe: dict[str, Any]) -> dict[str, Any]:
    """Label -> the Stage the run's recipe (recipe.json) configured, for what the report asks of a
    stage's contract (reason_signals, flagged_span); a stage that is unknown here or whose config no
    longer validates is left out (the report then treats its rejects as one group)."""
    from stages import registry

    out: dict[str, Any] = {}
    for spec in recipe.get("stages") or []:
        if not isinstance(spec, dict):
            continue
        cls = registry.available().get(spec.get("stage"))
        if cls is None:
            continue
        try:
            out[spec.get("label") or spec.get("stage")] = cls(cls.Config.model_validate(
                {k: v for k, v in spec.items() if k not in ("stage", "label")}))
        except Exception:
            continue
    return out
