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
_SPACE = re.compile(r"\s")  # the same characters as str.isspace (checked over every code point)
SEGMENT = 1 << 20
_BLOCK = 1 << 18  # words are split a segment at a time: no list of every chunk of a long text
_LINES = re.compile("\n+")
_MULT = np.uint64(0x9E3779B97F4A7C15)
SMALL = 96  # below this many words, plain Python n-gram counting beats numpy's per-call overhead  # odd 64-bit multiplier: n-gram keys of distinct id sequences differ


def segments(text: str, size: int = SEGMENT):
    """`text` in pieces of about `size` characters, each cut at a whitespace character, so
    `str.split()` of the whole is the concatenation of the pieces' splits."""
    start, n = 0, len(text)
    while start < n:
        m = _SPACE.search(text, start + size) if start + size < n else None
        end = m.start() if m else n
        yield text[start:end]
        start = end


def collapse_whitespace(text: str) -> str:
    """`" ".join(text.split())` a segment at a time: never a list of every word of a long text."""
    if len(text) <= SEGMENT:
        return " ".join(text.split())
    return " ".join(p for p in (" ".join(seg.split()) for seg in segments(text)) if p)


class DocStats:
    def __init__(self, text: str, tokenizer: ChunkTokenizer):
        self.text = text
        self._tok = tokenizer

    # -- words -------------------------------------------------------------------------------
    @cached_property
    def needs_whole(self) -> bool:
        """spaCy's special-case matcher could join across chunks here (rare): tokenize whole."""
        self._tokens  # learns the chunks and sets this
        return self.__dict__["needs_whole"]

    @cached_property
    def _tokens(self) -> tuple[list[str], tuple[int, int, int]]:
        text = self.text
        if len(text) <= SEGMENT:
            chunks = text.split()
            out = self._tok.words(chunks, len(text))
            whole = self._tok.needs_whole(chunks)
        else:
            # A long text is split at whitespace into segments: str.split() of the whole is the
            # concatenation of the segments' splits, and only one segment's chunks exist at a time.
            words: list[str] = []
            a = b = c = 0
            whole = False
            for seg in segments(text):
                chunks = seg.split()
                w, (x, y, z) = self._tok.words(chunks, len(seg))
                whole = whole or self._tok.needs_whole(chunks)
                words += w
                a, b, c = a + x, b + y, c + z
            del chunks
            out = (words, (a, b, c))
        self.__dict__["needs_whole"] = whole
        if whole:
            out = words = None  # noqa: F841 - not held while spaCy's words are built
            return self._tok.whole_words(text)
        return out

    @property
    def words(self) -> list[str]:
        return self._tokens[0]

    @cached_property
    def n_words(self) -> int:
        return len(self.words)

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
        wide = len(self.text) >= 1 << 31  # offsets fit 32 bits below 2 GiB of text: half the memory
        cum = np.zeros(self.n_words + 1, np.int64 if wide else np.int32)
        np.cumsum(np.fromiter(map(len, self.words), cum.dtype, self.n_words), out=cum[1:])
        return ids, cum

    def _ngram_keys(self, n: int) -> np.ndarray:
        """64-bit key of each n-gram (equal word sequences, equal keys), built incrementally."""
        cache = self.__dict__.setdefault("_keys", {})
        if n not in cache:
            ids = self._ids_and_lengths[0]
            if n == 1:
                cache[1] = ids * _MULT + np.uint64(1)
            else:
                prev = self._ngram_keys(n - 1)[:-1]
                key = prev >> np.uint64(29)  # (prev ^ prev >> 29) * MULT + ids, in one array
                key ^= prev
                with np.errstate(over="ignore"):
                    key *= _MULT
                    key += ids[n - 1 :]
                cache[n] = key
            for k in [k for k in cache if k < n]:  # 8 bytes per word each: keep the last size only
                del cache[k]
        return cache[n]

    def _chars_at(self, n: int, pos: int) -> int:
        """Characters of the words of the n-gram at `pos` (without separators)."""
        cum = self._ids_and_lengths[1]
        return int(cum[pos + n]) - int(cum[pos])

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
            del srt
            if dup.size == 0:
                cache[n] = np.empty(0, dtype=np.int64)
            else:
                hit = np.flatnonzero(_member(sub, dup))
                if hit.size and hit[-1] < 1 << 31:
                    hit = hit.astype(np.int32)  # positions fit 32 bits: half the memory
                cache[n] = hit if pos is None else pos[hit]
            for k in [k for k in cache if k < n - 1]:
                del cache[k]
        return cache[n]

    def forget(self, *views: str) -> None:
        """Drop cached views no later rule reads (a long text's lines, its n-gram arrays at 8
        bytes per word each), so they are not all held at once; asked again, they are recomputed."""
        for k in views:
            self.__dict__.pop(k, None)

    NGRAM_VIEWS = ("_keys", "_repeated", "_ids_and_lengths")

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
            return self._chars_at(n, 0) + n - 1
        keys = self._ngram_keys(n)
        srt = keys[cand]
        srt.sort()
        starts = np.flatnonzero(np.concatenate(([True], srt[1:] != srt[:-1])))
        counts = np.diff(starts, append=srt.size)
        best = int(counts.max())
        top = srt[starts[counts == best]]
        del srt, starts, counts  # 8 bytes per candidate each; the lookup below needs only `top`
        pos = int(cand[np.flatnonzero(_member(keys[cand], top))[0]])
        return (self._chars_at(n, pos) + n - 1) * best

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
        cum = self._ids_and_lengths[1]
        seen: set[int] = set()
        repeated = 0
        idx = 0
        for b in range(0, candidates.size, _BLOCK):  # Python ints for one block at a time
            block = candidates[b : b + _BLOCK]
            chars = cum[block + n] - cum[block]
            for i, k, ch in zip(block.tolist(), keys[block].tolist(), chars.tolist()):
                if i < idx:
                    continue
                if k in seen:
                    repeated += ch
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
    """values in sorted_set (sorted ascending), without np.isin's extra sort; in blocks, so the
    index arrays are a constant, not 16 bytes per word."""
    out = np.empty(values.size, dtype=bool)
    for i in range(0, values.size, _BLOCK):
        v = values[i : i + _BLOCK]
        idx = np.searchsorted(sorted_set, v)
        idx[idx == sorted_set.size] = 0
        out[i : i + _BLOCK] = sorted_set[idx] == v
    return out


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
