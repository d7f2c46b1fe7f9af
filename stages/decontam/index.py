"""The n-gram hashes of benchmark test items, and finding them in a document.

Built once per worker from the benchmark files (memory proportional to the benchmarks: one
vocabulary entry per distinct token and 12 bytes per distinct (n-gram, item) pair; GSM8K's test
split and HumanEval together are about 150,000 n-grams, 3 MB), then read-only.

An n-gram is `n` consecutive *words* (tokens that start with a letter, digit or underscore) and,
under the code tokenizer, the symbol tokens between them: with words the two are the same; with
code, `fib(n - 1) + fib(n - 2)` is 6 words long and its symbols must match too. So 13-grams cover
the same stretch of text whatever the tokenizer.

Tokens become vocabulary ids (a token no item has is 0: no n-gram holding it can match), ids
become random 64-bit values v, and the hash of tokens l..r-1 is the polynomial
v[l]*P^(r-1-l) + ... + v[r-1] modulo 2^64 = P^(r-1) * (C[r] - C[l]) with C the prefix sums of
v[j] * P^-j (P is odd, so it has an inverse modulo 2^64): every window of a document in a few
numpy operations, whatever its length in tokens. Items with fewer words than `n` but at least
`min_tokens` are matched whole: one window of their own length, found the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_SEED = 0x5EED_DEC0
_P = 0x9E3779B97F4A7C15  # odd: invertible modulo 2^64
_Q = pow(_P, -1, 1 << 64)


@dataclass
class Found:
    """An index's matches in one document: per item, the distinct n-grams of it found; and the
    windows (first token, end token exclusive) that matched, for removing them."""

    per_item: dict[int, int] = field(default_factory=dict)
    windows: list[tuple[int, int]] = field(default_factory=list)


def is_word(token: str) -> bool:
    c = token[0]
    return c.isalnum() or c == "_"


class NgramIndex:
    """The test items of the benchmarks that share one tokenizer."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self._pending: list[tuple[int, list[int], int]] = []  # (item, ids, window length in words)
        self.tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # k -> hashes, offsets, items
        self.item_ngrams: dict[int, int] = {}
        self._values = np.zeros(1, dtype=np.uint64)
        self._word = np.zeros(1, dtype=bool)
        self._ppow = np.ones(1, dtype=np.uint64)
        self._qpow = np.ones(1, dtype=np.uint64)

    def add(self, item: int, toks: list[str], n: int, min_tokens: int) -> int:
        """Index item number `item` (its normalised tokens) by its n-grams; returns how many
        distinct windows it has at most (0: fewer than `min_tokens` words, not used)."""
        words = sum(map(is_word, toks))
        if not words or words < min_tokens:
            return 0
        k = min(n, words)
        vocab = self.vocab
        ids = [vocab.setdefault(t, len(vocab) + 1) for t in toks]
        self._pending.append((item, ids, k))
        return words - k + 1

    def freeze(self) -> None:
        rng = np.random.default_rng(_SEED)
        values = rng.integers(1, np.iinfo(np.int64).max, size=len(self.vocab) + 1, dtype=np.int64).astype(np.uint64)
        values[0] = 0
        self._values = values
        word = np.zeros(len(self.vocab) + 1, dtype=bool)
        for t, i in self.vocab.items():
            word[i] = is_word(t)
        self._word = word
        pairs: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for item, ids, k in self._pending:
            hashes, _, _ = self._windows(np.asarray(ids, dtype=np.int64), k)
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
        return sum(a.nbytes for t in self.tables.values() for a in t) + self._values.nbytes + self._word.nbytes

    def _powers(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """P^j and P^-j modulo 2^64 for j < n (grown, never shrunk: the longest document so far)."""
        if len(self._ppow) < n:
            size = max(n, 2 * len(self._ppow))
            self._ppow, self._qpow = _cumprod(_P, size), _cumprod(_Q, size)
        return self._ppow, self._qpow

    def _windows(self, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Hashes of every window of k consecutive words of the token ids `ids` (the symbols between
        included) with their token bounds [l, r); windows holding a token outside the vocabulary are
        left out."""
        anchors = np.flatnonzero(self._word[ids])
        if len(anchors) < k:
            empty = np.zeros(0, dtype=np.int64)
            return np.zeros(0, dtype=np.uint64), empty, empty
        lo, hi = anchors[:len(anchors) - k + 1], anchors[k - 1:] + 1
        unknown = np.concatenate(([0], np.cumsum(ids == 0)))
        ok = unknown[hi] == unknown[lo]
        lo, hi = lo[ok], hi[ok]
        ppow, qpow = self._powers(len(ids) + 1)
        with np.errstate(over="ignore"):
            c = np.concatenate((np.zeros(1, dtype=np.uint64), np.cumsum(self._values[ids] * qpow[:len(ids)], dtype=np.uint64)))
            hashes = ppow[hi - 1] * (c[hi] - c[lo])
        return hashes, lo, hi

    def find(self, toks: list[str], want_windows: bool = False) -> Found:
        """The items whose n-grams occur in the document with normalised tokens `toks`."""
        found = Found()
        if not self.tables or not toks:
            return found
        get = self.vocab.get
        ids = np.fromiter((get(t, 0) for t in toks), dtype=np.int64, count=len(toks))
        if not ids.any():
            return found
        seen: dict[int, set[int]] = {}
        for k in self.lengths:
            hashes, lo, hi = self._windows(ids, k)
            if not len(hashes):
                continue
            table, offsets, items = self.tables[k]
            pos = np.searchsorted(table, hashes)
            pos[pos == len(table)] = 0
            hit = np.flatnonzero(table[pos] == hashes)
            # each distinct n-gram's items once, however often the page repeats it (items sharing
            # stock phrasing times a page repeating it was hits x items)
            for j in np.unique(pos[hit]).tolist():
                for item in items[offsets[j]:offsets[j + 1]].tolist():
                    seen.setdefault(item, set()).add(j)
            if want_windows:
                found.windows.extend(zip(lo[hit].tolist(), hi[hit].tolist()))
        found.per_item = {item: len(js) for item, js in seen.items()}
        return found


def _cumprod(base: int, size: int) -> np.ndarray:
    """base^0 .. base^(size-1) modulo 2^64."""
    out = np.empty(size, dtype=np.uint64)
    out[0] = 1
    if size > 1:
        with np.errstate(over="ignore"):
            out[1:] = np.cumprod(np.full(size - 1, base, dtype=np.uint64), dtype=np.uint64)
    return out
