"""The n-gram hashes of benchmark test items, and finding them in a document.

Built once per worker from the benchmark files (memory proportional to the benchmarks: one
vocabulary entry per distinct token and 12 bytes per distinct (n-gram, item) pair; GSM8K's test
split and HumanEval together are about 200,000 n-grams, a few MB), then read-only.

Tokens become vocabulary ids (a token no item has is 0: no n-gram holding it can match), ids
become random 64-bit values, and an n-gram's hash is the polynomial v[i]*P^(k-1) + ... + v[i+k-1]
modulo 2^64, computed for every window of the document at once with numpy (k vector operations
for k-grams). Items shorter than the n-gram length but at least `min_tokens` long are matched
whole: they are one window of their own length, found the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_SEED = 0x5EED_DEC0
_P = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplication by it is a bijection modulo 2^64


@dataclass
class Found:
    """An index's matches in one document: per item, the distinct n-grams of it found; and the
    windows (start token, length) that matched, for removing them."""

    per_item: dict[int, int] = field(default_factory=dict)
    windows: list[tuple[int, int]] = field(default_factory=list)


class NgramIndex:
    """The test items of the benchmarks that share one tokenizer."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self._pending: list[tuple[int, list[int], int]] = []  # (item, ids, window length)
        self.tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # k -> hashes, offsets, items
        self.item_ngrams: dict[int, int] = {}
        self._values: np.ndarray | None = None

    def add(self, item: int, toks: list[str], n: int, min_tokens: int) -> int:
        """Index item number `item` (its normalised tokens) by its n-grams; returns how many
        distinct windows it has (0: shorter than `min_tokens`, not used)."""
        if not toks or len(toks) < min_tokens:
            return 0
        k = min(n, len(toks))
        vocab = self.vocab
        ids = [vocab.setdefault(t, len(vocab) + 1) for t in toks]
        self._pending.append((item, ids, k))
        return len(toks) - k + 1

    def freeze(self) -> None:
        rng = np.random.default_rng(_SEED)
        values = rng.integers(1, np.iinfo(np.int64).max, size=len(self.vocab) + 1, dtype=np.int64).astype(np.uint64)
        values[0] = 0
        self._values = values
        pairs: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for item, ids, k in self._pending:
            hashes = _rolling(values[np.asarray(ids, dtype=np.int64)], [k])[k]
            hashes = np.unique(hashes)
            self.item_ngrams[item] = len(hashes)
            pairs.setdefault(k, []).append((hashes, np.full(len(hashes), item, dtype=np.int32)))
        for k, parts in pairs.items():
            h = np.concatenate([p[0] for p in parts])
            it = np.concatenate([p[1] for p in parts])
            order = np.lexsort((it, h))
            h, it = h[order], it[order]
            uniq, starts = np.unique(h, return_index=True)
            offsets = np.append(starts, len(h)).astype(np.int64)
            self.tables[k] = (uniq, offsets, it)
        self._pending = []

    @property
    def lengths(self) -> list[int]:
        return sorted(self.tables)

    def nbytes(self) -> int:
        return sum(a.nbytes for t in self.tables.values() for a in t) + (self._values.nbytes if self._values is not None else 0)

    def find(self, toks: list[str], want_windows: bool = False) -> Found:
        """The items whose n-grams occur in the document with normalised tokens `toks`."""
        found = Found()
        if not self.tables or len(toks) < self.lengths[0]:
            return found
        get = self.vocab.get
        ids = np.fromiter((get(t, 0) for t in toks), dtype=np.int64, count=len(toks))
        known = ids != 0
        if not known.any():
            return found
        unknown = np.concatenate(([0], np.cumsum(~known)))
        windows = _rolling(self._values[ids], self.lengths)
        seen: dict[int, set[int]] = {}
        for k, hashes in windows.items():
            table, offsets, items = self.tables[k]
            cand = np.flatnonzero(unknown[k:] == unknown[:-k])  # no token outside the vocabulary in the window
            if not len(cand):
                continue
            pos = np.searchsorted(table, hashes[cand])
            pos[pos == len(table)] = 0
            hit = table[pos] == hashes[cand]
            for start, j in zip(cand[hit].tolist(), pos[hit].tolist()):
                for item in items[offsets[j]:offsets[j + 1]].tolist():
                    seen.setdefault(item, set()).add(j)
                if want_windows:
                    found.windows.append((start, k))
        found.per_item = {item: len(js) for item, js in seen.items()}
        return found


def _rolling(values: np.ndarray, lengths: list[int]) -> dict[int, np.ndarray]:
    """For each k in `lengths`, the hash of every window of k values (len(values) - k + 1 of them)."""
    out: dict[int, np.ndarray] = {}
    top = max(lengths)
    want = set(lengths)
    acc = values.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        for k in range(1, min(top, len(values)) + 1):
            if k > 1:
                acc = acc[:-1]  # a view: windows of k values start at 0..len-k
                acc *= _P
                acc += values[k - 1:]
            if k in want:
                out[k] = acc.copy() if k < top else acc
    return out
