"""fastText's tokens as numbers, shared by the memoised scorers (stages/_scalar_fasttext.py for
two-label models, stages/_fasttext_lid.py for lid.176): a line's tokens, their hashes, character
n-gram sums in bounded pieces, and the bounded per-token memo.

Tokens and hashes as fastText 0.9.2's src/dictionary.cc makes them: tokens split on ASCII whitespace
and NUL, a token "</s>" ending the line (`line_token_ids`); 32-bit FNV-1a over UTF-8 bytes taken as
signed chars (`fnv`, vectorised in `word_hashes`); the memo's key is a plain 64-bit FNV-1a (`fnv64`).

Bounded work: a scorer's vectorised `_ngrams` needs ~140 bytes of arrays per code point, so new
tokens go to it about CHUNK_BYTES of tokens at a time, and a token longer than LONG_TOKEN bytes
(one 64 MB word would need ~9 GB at once) in windows of LONG_TOKEN code points (`ngram_sums`).

The memo (`TokenMemo`): a token's features (the sum and number of its input rows, its hash) depend
on the token alone, so a batch looks its distinct tokens up and computes only the new ones. Tokens
are found by their 64-bit FNV-1a hash and byte length, binary search in sorted keys, all in numpy:
a dict of Python strings cost 0.4 us a token, a fifth of the toxicity stage cold; two different
tokens of the same length sharing a 64-bit hash (about 1 in 10^13 per look-up against a full memo)
is the one way this could mix two tokens up. The vocabulary's words hold the first rows, each
computed in the first batch that holds it (a scorer that sees a few documents, `refinery retune` or
a report, does not pay for the n-grams of the whole vocabulary); other tokens take up to
`memo_size` more rows, then the memo starts again; a batch with more new tokens than that grows the
arrays for that batch.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_FNV_OFFSET, _FNV_PRIME = 2166136261, 16777619
_FNV64_OFFSET, _FNV64_PRIME = 14695981039346656037, 1099511628211
_LONG = 256  # tokens longer than this (bytes) are hashed one by one, so the vectorised loop stays short
_LT, _GT, _NONE = (pa.scalar(c, pa.large_string()) for c in ("<", ">", ""))
CHUNK_BYTES = 1 << 16
LONG_TOKEN = 1 << 14
EOS = "</s>"
# a token "</s>" and the rest of its line (the line's tokens are separated by ASCII whitespace)
_EOS_TOKEN_ON = r"(?s)(^|[ \t\n\v\f\r])</s>([ \t\n\v\f\r].*)?$"


# fastText's separators (its readWord; Arrow's ascii_split_whitespace splits on the same); NUL is made a space first
_WHITESPACE = np.zeros(256, bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True


def line_token_ids(lines: pa.Array, scope=None) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """fastText's tokens of each line: (the distinct tokens, each token's index among them, in order,
    and the number of tokens per line). Split on ASCII whitespace, and on NUL as fastText does; a
    token "</s>" ends the line (fastText stops reading there).

    The tokens are cut out of the lines' own bytes in numpy, each with the whitespace after it (an
    Arrow string array has no gaps between its strings), Arrow dictionary-encodes them so, and the
    distinct ones are trimmed and encoded again: 5 ms against Arrow's ascii_split_whitespace's 21 for
    970,000 tokens (1,000 documents), whose output was then encoded the same way. `scope`: a function
    of (distinct tokens with the whitespace after them, each token's index among them, distinct
    tokens, each token's index among them, tokens per line) returning new distinct tokens and
    indices (the toxicity stage's negation scope, stages/_negation.py)."""
    lines = lines.cast(pa.large_string())
    if has_byte(lines, 0):
        lines = pc.replace_substring(lines, "\0", " ")
    if has_byte(lines, ord("<")) and pc.any(pc.match_substring(lines, EOS)).as_py():
        lines = pc.replace_substring_regex(lines, _EOS_TOKEN_ON, r"\1", max_replacements=1)
    lines = pa.concat_arrays([lines]) if lines.offset else lines
    raw, offsets = _utf8(lines)
    # bytes below 33 other than the space are rare (normalised text has none): one comparison then
    space = _WHITESPACE[raw] if (raw < 32).any() else raw == 32
    begins = ~space  # a token begins at a non-space byte after a space or at a line's start
    begins[1:] &= space[:-1]
    heads = offsets[:-1][offsets[:-1] < len(raw)]
    begins[heads] = ~space[heads]
    begins[:offsets[0]] = False
    at = np.flatnonzero(begins)
    per_line = np.diff(np.searchsorted(at, offsets))
    if not len(at):
        return pa.array([], pa.large_string()), np.zeros(0, np.int32), per_line
    # each token up to the next one's start (or the last line's end): the word and whitespace after it
    ends = np.concatenate((at, offsets[-1:])).astype(np.int64)
    spaced = pa.LargeStringArray.from_buffers(len(at), pa.py_buffer(ends), lines.buffers()[2])
    enc = pc.dictionary_encode(spaced)
    words = pc.dictionary_encode(pc.ascii_rtrim_whitespace(enc.dictionary))
    spaced_idx = enc.indices.to_numpy(zero_copy_only=False)
    tok = words.indices.to_numpy(zero_copy_only=False)[spaced_idx]
    if scope is not None:
        return (*scope(enc.dictionary, spaced_idx, words.dictionary, tok, per_line), per_line)
    return words.dictionary, tok, per_line


def has_byte(arr: pa.Array, value: int) -> bool:
    """Whether any string of `arr` holds the byte `value`: one SIMD comparison over its bytes, without
    copying them (Arrow's match_substring took 13 ms for 7 MB of lines, a fifth of their tokenising)."""
    t = arr.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not (large or pa.types.is_string(t) or pa.types.is_binary(t)):
        return True  # another layout: the caller's exact (Arrow) check decides
    _, off, data = arr.buffers()[:3]
    if data is None or not len(arr):
        return False
    ends = np.frombuffer(off, np.int64 if large else np.int32, len(arr) + 1 + arr.offset)[[arr.offset, -1]]
    return bool((np.frombuffer(data, np.uint8, int(ends[1]))[int(ends[0]):] == value).any())


def _signed(b: np.ndarray) -> np.ndarray:
    """UTF-8 bytes as fastText adds them to a hash: int8, sign-extended to uint32."""
    s = b.astype(np.uint32)
    s[b >= 128] |= np.uint32(0xFFFFFF00)
    return s


def fnv(token: str) -> int:
    """fastText's 32-bit hash of a string (FNV-1a over its UTF-8 bytes taken as signed chars)."""
    h = _FNV_OFFSET
    for b in token.encode("utf-8"):
        h = ((h ^ (b | 0xFFFFFF00 if b >= 128 else b)) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def _utf8(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) of a large_string array: token i is bytes[offsets[i]:offsets[i + 1]]."""
    arr = pa.concat_arrays([arr]) if arr.offset else arr
    n = len(arr)
    _, off, data = arr.buffers()
    offsets = np.frombuffer(off, np.int64, n + 1)
    raw = np.frombuffer(data, np.uint8, int(offsets[-1])) if data is not None else np.zeros(0, np.uint8)
    return raw, offsets


def fnv64(token: str) -> int:
    """64-bit FNV-1a of a string's UTF-8 bytes: the memo's key for a token."""
    h = _FNV64_OFFSET
    for b in token.encode("utf-8"):
        h = ((h ^ b) * _FNV64_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def ngram_sums(ngrams, tokens: pa.Array, maxn: int, width: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """(sum, number) of the character n-gram rows of every token's "<token>", `ngrams(marked)`
    (a scorer's vectorised n-grams of marked tokens; sums of shape `width` each) called on at most
    about CHUNK_BYTES of tokens at a time (at least one), so its work arrays stay small whatever
    the batch. A token longer than LONG_TOKEN bytes is cut into windows W_j of LONG_TOKEN code
    points plus the max(maxn - 1, 2) that follow (every n-gram starting in window j lies in W_j); the
    n-grams W_j counts twice are those of its tail T_j = W_j[LONG_TOKEN:], the head of W_j+1, so the
    token's sum is sum(W_j) - sum(T_j) (also for fastText's rule on a lone "<" or ">": the first and
    last code points that a window or tail wrongly leaves out cancel, given tails of 2 or more)."""
    n = len(tokens)
    total, count = np.zeros((n, *width)), np.zeros(n, np.int64)
    lens = pc.binary_length(tokens).to_numpy(zero_copy_only=False).astype(np.int64)
    long = lens > LONG_TOKEN
    short = np.flatnonzero(~long)
    if len(short):
        part = tokens if len(short) == n else tokens.take(pa.array(short))
        s, c = _in_chunks(ngrams, pc.binary_join_element_wise(_LT, part, _GT, _NONE), lens[short] + 2, width)
        total[short], count[short] = s, c
    for i in np.flatnonzero(long):
        marked = "<" + tokens[int(i)].as_py() + ">"
        overlap = max(maxn - 1, 2)  # at least 2: a window's last code point is then not the next one's first
        windows = [marked[j : j + LONG_TOKEN + overlap] for j in range(0, len(marked), LONG_TOKEN)]
        tails = [w[LONG_TOKEN:] for w in windows[:-1]]
        arr = pa.array(windows + tails, pa.large_string())
        s, c = _in_chunks(ngrams, arr, pc.binary_length(arr).to_numpy(zero_copy_only=False).astype(np.int64), width)
        k = len(windows)
        total[i], count[i] = s[:k].sum(axis=0) - s[k:].sum(axis=0), c[:k].sum() - c[k:].sum()
    return total, count


def _in_chunks(ngrams, marked: pa.Array, lens: np.ndarray, width: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """`ngrams` of marked tokens (of `lens` bytes), about CHUNK_BYTES of them at a time."""
    total, count = np.zeros((len(marked), *width)), np.zeros(len(marked), np.int64)
    ends = np.cumsum(lens)
    start = 0
    while start < len(marked):
        stop = max(int(np.searchsorted(ends, (ends[start - 1] if start else 0) + CHUNK_BYTES, "right")), start + 1)
        total[start:stop], count[start:stop] = ngrams(marked.slice(start, stop - start))
        start = stop
    return total, count


def mod(x: np.ndarray, b) -> np.ndarray:
    """`x % b` for an array of unsigned integers and one divisor: numpy divides by a scalar with
    libdivide (a multiply and a shift) but computes `%` with a division per element; this is 3-4x
    faster (2M uint64: 1.7 against 4.6 ms), the same numbers."""
    b = x.dtype.type(b)
    q = x // b
    q *= b
    return np.subtract(x, q, out=q)


def word_hashes(tokens: pa.Array, fasttext: bool = True, key: bool = True
                ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray]:
    """(fastText's 32-bit hash, 64-bit FNV-1a, length in bytes) of every token, vectorised: one step
    per byte position over the tokens at least that long (sorted by length, so they are a prefix);
    very long ones one by one. `fasttext`, `key`: whether to compute each hash (None if not)."""
    raw, offsets = _utf8(tokens)
    lens = np.diff(offsets)
    out = np.full(len(lens), _FNV_OFFSET, np.uint32) if fasttext else None
    out64 = np.full(len(lens), _FNV64_OFFSET, np.uint64) if key else None
    for i in np.flatnonzero(lens > _LONG):
        t = tokens[int(i)].as_py()
        if fasttext:
            out[i] = fnv(t)
        if key:
            out64[i] = fnv64(t)
    order = np.argsort((-np.minimum(lens, _LONG + 1)).astype(np.int16), kind="stable")  # 16 bits: a radix sort
    order = order[lens[order] <= _LONG]
    if not len(order) or not lens[order[0]]:
        return out, out64, lens
    padded = np.concatenate((raw, np.zeros(1, np.uint8)))
    sb = _signed(padded) if fasttext else None
    ub = padded.astype(np.uint64) if key else None
    sl, starts = lens[order], offsets[order]
    h = np.full(len(order), _FNV_OFFSET, np.uint32)
    h64 = np.full(len(order), _FNV64_OFFSET, np.uint64)
    prime, prime64 = np.uint32(_FNV_PRIME), np.uint64(_FNV64_PRIME)
    alive = np.searchsorted(-sl, -np.arange(1, int(sl[0]) + 1), side="right")  # tokens longer than s
    for s in range(int(sl[0])):
        a = int(alive[s])
        at = starts[:a] + s
        if fasttext:
            h[:a] = (h[:a] ^ sb[at]) * prime
        if key:
            h64[:a] = (h64[:a] ^ ub[at]) * prime64
    if fasttext:
        out[order] = h
    if key:
        out64[order] = h64
    return out, out64, lens


class TokenMemo:
    """Per-token arrays: `length` (bytes, checked with the key) and the scorer's `FIELDS`, which its
    `_features(tokens, wids, h32)` returns in that order for tokens (`wids`: vocabulary id or -1;
    `h32`: their fastText hashes). Rows 0..nwords-1 are the vocabulary's words (`ready` once
    computed), then up to `memo_size` other tokens."""

    FIELDS: tuple[str, ...] = ()

    def _start_memo(self, words: pa.Array, memo_size: int, shapes: dict[str, tuple]) -> np.ndarray:
        """Allocate the arrays (`shapes`: field -> (dtype, row shape)) for the vocabulary `words`
        and `memo_size` more tokens; the words' fastText hashes."""
        self.nwords, self.memo_size = len(words), memo_size
        for name in self.FIELDS:
            dtype, row = shapes[name]
            setattr(self, name, np.zeros((self.nwords + memo_size, *row), dtype))
        self.length = np.zeros(self.nwords + memo_size, np.int64)
        h32, h64, self.length[: self.nwords] = word_hashes(words)
        self.ready = np.zeros(self.nwords, bool)  # vocabulary words are computed when first met
        order = np.argsort(h64, kind="stable")
        self.vocab_keys, self.vocab_at = h64[order], order.astype(np.int64)
        self.forget()
        return h32

    def forget(self) -> None:
        """Drop the remembered out-of-vocabulary tokens (the vocabulary's stay)."""
        self.keys, self.at = self.vocab_keys, self.vocab_at  # sorted 64-bit keys, their row
        self.size = self.nwords
        if len(self.length) > self.nwords + self.memo_size:  # grown for one huge batch: back to the bound
            for name in (*self.FIELDS, "length"):
                setattr(self, name, getattr(self, name)[: self.nwords + self.memo_size].copy())

    def _lookup(self, distinct: pa.Array) -> np.ndarray:
        """Memo row of every distinct token, computing the new ones."""
        _, h64, lens = word_hashes(distinct, fasttext=False)  # fastText's hashes only for tokens computed below
        keys = self.keys
        # the keys in order: each search then starts where the last ended (69,000 tokens in a
        # 200,000-key memo: 1.4 ms and 0.6 to sort them, against 8.2 in the tokens' order)
        order = np.argsort(h64)
        i = np.empty(len(h64), np.int64)
        i[order] = np.minimum(np.searchsorted(keys, h64[order]), len(keys) - 1)
        idx = self.at[i]
        idx[(keys[i] != h64) | (self.length[idx] != lens)] = -1
        words = np.flatnonzero((idx >= 0) & (idx < self.nwords))
        words = words[~self.ready[idx[words]]]
        if len(words):  # vocabulary words met for the first time
            met = distinct.take(pa.array(words))
            self._store(idx[words], self._features(met, idx[words], word_hashes(met, key=False)[0]))
            self.ready[idx[words]] = True
        new = np.flatnonzero(idx < 0)
        if len(new):
            if self.size + len(new) > self.nwords + self.memo_size and self.size > self.nwords:
                self.forget()
                return self._lookup(distinct)
            if self.size + len(new) > len(self.length):  # one batch with more new tokens than the memo holds
                extra = self.size + len(new) - len(self.length)
                for name in (*self.FIELDS, "length"):
                    a = getattr(self, name)
                    setattr(self, name, np.concatenate((a, np.zeros((extra, *a.shape[1:]), a.dtype))))
            at = np.arange(self.size, self.size + len(new))
            fresh = distinct.take(pa.array(new))
            self._store(at, self._features(fresh, np.full(len(new), -1), word_hashes(fresh, key=False)[0]))
            self.length[at] = lens[new]
            order = np.argsort(h64[new], kind="stable")
            where = np.searchsorted(self.keys, h64[new][order])
            self.keys = np.insert(self.keys, where, h64[new][order])
            self.at = np.insert(self.at, where, at[order])
            self.size += len(new)
            idx[new] = at
        return idx

    def _store(self, rows: np.ndarray, values: tuple) -> None:
        for name, v in zip(self.FIELDS, values):
            getattr(self, name)[rows] = v

    def _features(self, tokens: pa.Array, wids: np.ndarray, h32: np.ndarray) -> tuple:
        raise NotImplementedError
