"""Per-document text statistics, each computed at most once and shared by every quality rule.

datatrove's Gopher, C4 and FineWeb filters each re-split the same document into words, lines and
paragraphs. Here a `DocStats` computes each view lazily (functools.cached_property) the first time
a rule asks for it; every later rule reuses it. The views reproduce datatrove's exact splitting:

- `words`: datatrove's `split_into_words` (spaCy English tokens, empty ones dropped), with counts;
- `splitlines`: `str.splitlines()` (Gopher quality, C4);
- `nl_lines`: `re.split("\\n+", text)` (Gopher repetition); `para`: `re.split("\\n{2,}", text.strip())`;
- `fw_lines`: non-blank `text.split("\\n")` lines (FineWeb);
- n-gram statistics over word ids with numpy (top n-gram and duplicated n-gram character counts).
"""
from __future__ import annotations

import re
from collections import Counter
from functools import cached_property

import numpy as np

from stages.quality.word_tokenizer import ChunkTokenizer

_PARAGRAPH = re.compile(r"\n{2,}")
_LINES = re.compile("\n+")
_MULT = np.uint64(0x9E3779B97F4A7C15)
SMALL = 96  # below this many words, plain Python n-gram counting beats numpy's per-call overhead  # odd 64-bit multiplier: n-gram keys of distinct id sequences differ


class DocStats:
    def __init__(self, text: str, tokenizer: ChunkTokenizer):
        self.text = text
        self._tok = tokenizer

    # -- words -------------------------------------------------------------------------------
    @cached_property
    def chunks(self) -> list[str]:
        return self.text.split()

    @cached_property
    def needs_whole(self) -> bool:
        """spaCy's special-case matcher could join across chunks here (rare): tokenize whole."""
        self._tokens  # learns the chunks
        return self._tok.needs_whole(self.chunks)

    @cached_property
    def _tokens(self) -> tuple[list[str], tuple[int, int, int]]:
        out = self._tok.words(self.chunks, len(self.text))
        if self._tok.needs_whole(self.chunks):
            return self._tok.whole_words(self.text)
        return out

    @property
    def words(self) -> list[str]:
        return self._tokens[0]

    @cached_property
    def n_words(self) -> int:
        return len(self.words)

    @cached_property
    def _lengths(self) -> np.ndarray:
        return np.fromiter(map(len, self.words), np.int64, self.n_words)

    @property
    def n_non_symbol_words(self) -> int:
        """Words with a char outside datatrove's PUNCTUATION_SET (Gopher's word count)."""
        return self._tokens[1][0]

    @property
    def non_symbol_chars(self) -> int:
        return self._tokens[1][1]

    @property
    def n_alpha_words(self) -> int:
        """Words with a letter."""
        return self._tokens[1][2]

    @cached_property
    def word_set(self) -> set[str]:
        return set(self.words)

    # -- lines and paragraphs ----------------------------------------------------------------
    @cached_property
    def splitlines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def nl_lines(self) -> list[str]:
        return _LINES.split(self.text)

    @cached_property
    def paragraphs(self) -> list[str]:
        return _PARAGRAPH.split(self.text.strip())

    @cached_property
    def fw_lines(self) -> list[str]:
        return [line for line in self.text.split("\n") if line.strip() != ""]

    # -- n-grams -----------------------------------------------------------------------------
    @cached_property
    def _ids_and_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        # a word's id is its str hash (equal words, equal ids; a collision needs 2^64 luck)
        ids = np.fromiter(map(hash, self.words), np.int64, self.n_words).view(np.uint64)
        return ids, np.concatenate(([0], np.cumsum(self._lengths)))

    def _ngram_keys(self, n: int) -> np.ndarray:
        """64-bit key of each n-gram (equal word sequences, equal keys), built incrementally."""
        cache = self.__dict__.setdefault("_keys", {})
        if n not in cache:
            ids = self._ids_and_lengths[0]
            if n == 1:
                cache[1] = ids * _MULT + np.uint64(1)
            else:
                prev = self._ngram_keys(n - 1)[:-1]
                with np.errstate(over="ignore"):
                    cache[n] = (prev ^ (prev >> np.uint64(29))) * _MULT + ids[n - 1 :]
        return cache[n]

    def _chars(self, n: int) -> np.ndarray:
        """Characters of each n-gram's words (without separators)."""
        cum = self._ids_and_lengths[1]
        return cum[n:] - cum[:-n]

    def _repeated_positions(self, n: int) -> np.ndarray:
        """Sorted start positions of n-grams that occur more than once. A repeated n-gram starts
        with a repeated (n-1)-gram, so after the first size only those positions are sorted."""
        cache = self.__dict__.setdefault("_repeated", {})
        if n not in cache:
            keys = self._ngram_keys(n)
            if (n - 1) in cache:
                pos = cache[n - 1]
                pos = pos[pos < keys.size]
                sub = keys[pos]
            else:
                pos, sub = None, keys
            srt = np.sort(sub)
            dup = srt[1:][srt[1:] == srt[:-1]]
            if dup.size == 0:
                cache[n] = np.empty(0, dtype=np.int64)
            else:
                hit = np.flatnonzero(_member(sub, dup))
                cache[n] = hit if pos is None else pos[hit]
        return cache[n]

    @cached_property
    def _small_bigrams_unique(self) -> bool:
        """A short document without a repeated 2-gram repeats no longer n-gram either."""
        w = self.words
        return len(set(zip(w, w[1:]))) == len(w) - 1

    def top_ngram_chars(self, n: int) -> int:
        """datatrove's find_top_duplicate: len(" ".join(g)) * count of the most common n-gram g
        (ties go to the n-gram seen first, as Counter.most_common does); 0 if there is none."""
        if self.n_words < n:
            return 0
        if self.n_words < SMALL:
            if n >= 2 and self._small_bigrams_unique:  # every n-gram occurs once: the first wins
                return sum(map(len, self.words[:n])) + n - 1
            gram, count = Counter(zip(*(self.words[i:] for i in range(n)))).most_common(1)[0]
            return (sum(map(len, gram)) + n - 1) * count
        cand = self._repeated_positions(n)
        if cand.size == 0:  # every n-gram occurs once: the first one wins
            return int(self._chars(n)[0]) + n - 1
        sub = self._ngram_keys(n)[cand]
        srt = np.sort(sub)
        starts = np.flatnonzero(np.concatenate(([True], srt[1:] != srt[:-1])))
        counts = np.diff(np.append(starts, srt.size))
        best = int(counts.max())
        pos = int(cand[np.flatnonzero(_member(sub, srt[starts[counts == best]]))[0]])
        return (int(self._chars(n)[pos]) + n - 1) * best

    def dup_ngram_chars(self, n: int) -> int:
        """datatrove's find_all_duplicate: scan left to right; an n-gram already seen adds its
        characters and the scan jumps past it, otherwise it is remembered and the scan moves one
        word. Only n-grams occurring at least twice can count, so only those positions are visited."""
        if self.n_words < n:
            return 0
        if self.n_words < SMALL:
            if n >= 2 and self._small_bigrams_unique:
                return 0
            return _dup_ngram_chars_small(self.words, n)
        candidates = self._repeated_positions(n)
        if candidates.size == 0:
            return 0
        keys = self._ngram_keys(n)
        chars = self._chars(n)
        seen: set[int] = set()
        repeated = 0
        idx = 0
        keys_l = keys.tolist()
        for i in candidates.tolist():
            if i < idx:
                continue
            k = keys_l[i]
            if k in seen:
                repeated += int(chars[i])
                idx = i + n
            else:
                seen.add(k)
                idx = i + 1
        return repeated


def _dup_ngram_chars_small(words: list[str], n: int) -> int:
    """datatrove's find_all_duplicate on word tuples (for short documents)."""
    grams = list(zip(*(words[i:] for i in range(n))))
    if len(set(grams)) == len(grams):
        return 0
    seen: set[tuple[str, ...]] = set()
    repeated = idx = 0
    while idx < len(grams):
        g = grams[idx]
        if g in seen:
            repeated += sum(map(len, g))
            idx += n
        else:
            seen.add(g)
            idx += 1
    return repeated


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """values in sorted_set (sorted ascending), without np.isin's extra sort."""
    idx = np.searchsorted(sorted_set, values)
    idx[idx == sorted_set.size] = 0
    return sorted_set[idx] == values


def find_duplicates(items: list[str]) -> tuple[int, int]:
    """datatrove's find_duplicates: (number of repeated items, characters in repeated items)."""
    counts = Counter(items)
    if len(counts) == len(items):
        return 0, 0
    elems = chars = 0
    for item, c in counts.items():
        if c > 1:
            elems += c - 1
            chars += (c - 1) * len(item)
    return elems, chars
