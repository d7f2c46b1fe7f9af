"""MinHash signatures and LSH band keys, vectorised with numpy (plain functions, no state).

Why a module of its own: the signature must be bit-identical to datasketch's `MinHash` for the same
shingles and seed (so users can check us against the reference and mix sketches), yet one to two
orders of magnitude faster than datasketch's per-shingle `update` loop. We get both by hashing every
shingle once (the same sha1-32 datasketch uses) and applying all permutations to all shingles of a
batch of documents in one numpy expression, then taking per-document minima with `reduceat`.

Tokenisation (documented contract, like datatrove's `simplify_text` + word tokenizer):
NFC, lowercase, every character that is not a Unicode word character or whitespace (punctuation,
symbols, and `_`) becomes a space, then split on whitespace. Shingles are the distinct word n-grams
joined by one space, UTF-8 encoded. A document with fewer than n (but at least one) words has one
shingle, all its words; a document with no words has no shingles and no signature.

Two permutation schemes, both exactly as datasketch 2.x computes them:
- "affine32" (datasketch >= 2.0 default): h = fmix32(sha1_32(shingle)); a*h + b mod 2^32, a odd.
- "legacy" (datasketch < 2.0): (a*h + b) mod (2^61 - 1), truncated to 32 bits, with the uint64
  wrap-around of datasketch's numpy arithmetic reproduced.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Iterable, Literal, Sequence

import numpy as np
import xxhash

Scheme = Literal["affine32", "legacy"]

MERSENNE_PRIME = np.uint64((1 << 61) - 1)
MAX_HASH32 = np.uint64((1 << 32) - 1)
EMPTY = np.uint32(0xFFFFFFFF)  # datasketch's initial (empty-set) hash value

_NON_WORD = re.compile(r"[^\w\s]|_")
# The same rule for pure-ASCII text as a translate table (about 25% faster than the regex).
_ASCII_NON_WORD = str.maketrans({c: " " for c in range(128) if not (chr(c).isalnum() or chr(c).isspace())})
_CHUNK_SHINGLES = 1 << 13  # columns of the (num_perm x shingles) matrix computed at once (4 MiB at 128)


# -- tokens and shingles ---------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """Lowercased words with punctuation and symbols removed (see module docstring)."""
    if text.isascii():
        return text.lower().translate(_ASCII_NON_WORD).split()
    text = unicodedata.normalize("NFC", text).lower()
    return _NON_WORD.sub(" ", text).split()


def word_ngrams(text: str | None, n: int = 5) -> Iterable[str]:
    """The word n-grams of `text`, repeats included; a text of fewer than n words is one n-gram."""
    w = words(text) if text else []
    if len(w) < n:
        return [" ".join(w)] if w else []
    return map(" ".join, zip(*[w[i:] for i in range(n)]))  # C-level loop: ~30% faster than slicing


def shingles(text: str | None, n: int = 5) -> list[bytes]:
    """Distinct word n-grams of `text` as UTF-8 bytes (order of first occurrence)."""
    return list(map(str.encode, dict.fromkeys(word_ngrams(text, n))))


# Texts longer than this (characters) are tokenised piece by piece, cut at whitespace, so memory
# follows the piece (~45 bytes per character of a piece: its words, n-grams and their bytes), not
# the text: a 30 MB document's word and shingle lists at once take ~20-40 bytes of RSS per input
# byte. The pieces give the same words, shingles, signature and set.
STREAM_CHARS = 1 << 18
_SPACES = (" ", "\n", "\t", "\r")


def text_pieces(text: str, size: int | None = None) -> Iterable[str]:
    """`text` in consecutive pieces of about `size` characters, each cut just before a space,
    newline, tab or carriage return (a piece without one runs to the next). Every cut falls before
    a whitespace character, which ends a word, never composes under NFC and ends the context of
    a final sigma, so `words` of the pieces, joined, are `words(text)`."""
    size = size or STREAM_CHARS
    start, n = 0, len(text)
    while start < n:
        end = start + size
        if end >= n:
            yield text[start:]
            return
        cut = max(text.rfind(c, start + 1, end + 1) for c in _SPACES)
        if cut <= start:
            later = [x for x in (text.find(c, end) for c in _SPACES) if x > start]
            cut = min(later) if later else n
        yield text[start:cut]
        start = cut


def ngram_pieces(text: str | None, n: int = 5, size: int | None = None) -> Iterable[list[str]]:
    """`word_ngrams(text, n)` (repeats included) in lists of about one text piece each: the
    n - 1 last words of a piece carry over to the next, so every n-gram appears exactly as often."""
    if not text or len(text) <= (size or STREAM_CHARS):
        yield list(word_ngrams(text, n))
        return
    carry: list[str] = []
    produced = False
    for piece in text_pieces(text, size):
        w = carry + words(piece)
        if len(w) >= n:
            produced = True
            yield list(map(" ".join, zip(*[w[i:] for i in range(n)])))
            carry = w[len(w) - (n - 1):] if n > 1 else []
        else:
            carry = w
    if not produced and carry:  # fewer than n words in all: one shingle of them
        yield [" ".join(carry)]


def sha1_hash32(items: Sequence[bytes]) -> np.ndarray:
    """datasketch's `sha1_hash32` for many items: the first 4 bytes of sha1, little-endian."""
    if not items:
        return np.zeros(0, dtype=np.uint32)
    sha1 = hashlib.sha1
    digests = b"".join([sha1(s).digest() for s in items])  # 20 bytes each; keep the first 4
    return np.frombuffer(digests, dtype="<u4")[::5].astype(np.uint32)


def shingle_set64(text: str | None, n: int = 5) -> np.ndarray:
    """Sorted distinct 64-bit hashes of the shingles: the exact set used for true Jaccard.

    64 bits make a collision between two different shingles of a pair of documents negligible
    (about k^2 / 2^64 for k shingles), so Jaccard on these sets equals Jaccard on the shingles.
    The hashes are those of `shingles`' UTF-8 bytes (xxh3 hashes a str as its UTF-8), taken from
    the n-grams directly: np.unique removes the repeats that `shingles` removes first, so the
    set is the same without building the distinct list and its bytes (a fifth of the time, which
    is most of a MinHash global step's: every candidate document's set is computed there).
    """
    if text and len(text) > STREAM_CHARS:  # piece by piece: the union of the pieces' sets
        # the pieces' distinct hashes joined, sorted in place, then compacted in place (slice by
        # slice) and the buffer shrunk: at most twice the pieces' hashes at once, never three times
        pieces = [np.unique(np.fromiter(map(xxhash.xxh3_64_intdigest, g), dtype=np.uint64, count=len(g)))
                  for g in ngram_pieces(text, n)]
        flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.uint64)
        del pieces
        flat.sort()
        w = 0
        for s in range(0, flat.size, _SLICE):
            part = flat[s : s + _SLICE]
            keep = np.ones(part.size, dtype=bool)
            np.not_equal(part[1:], part[:-1], out=keep[1:])
            if s and part.size:
                keep[0] = part[0] != flat[s - 1]
            vals = part[keep]
            flat[w : w + vals.size] = vals  # w <= s: never overwrites what is still to be read
            w += vals.size
        flat.resize(w, refcheck=False)  # shrinks in place (the buffer is this function's own)
        return flat
    return np.unique(np.fromiter(map(xxhash.xxh3_64_intdigest, word_ngrams(text, n)), dtype=np.uint64))


def text_signatures(texts: Sequence[str | None], n: int, a: np.ndarray, b: np.ndarray,
                    scheme: Scheme = "affine32") -> np.ndarray:
    """`signatures([shingles(t, n) for t in texts], ...)`, with texts longer than STREAM_CHARS
    signed piece by piece: the minimum over all shingles is the minimum over the pieces' minima
    (a shingle repeated in two pieces changes no minimum), so the values are identical."""
    small = [i for i, t in enumerate(texts) if not t or len(t) <= STREAM_CHARS]
    out = np.full((len(texts), a.size), EMPTY, dtype=np.uint32)
    if small:
        out[small] = signatures([shingles(texts[i], n) for i in small], a, b, scheme)
    for i in range(len(texts)):
        t = texts[i]
        if t and len(t) > STREAM_CHARS:
            for grams in ngram_pieces(t, n):
                part = signatures_from_hashes([sha1_hash32(list(map(str.encode, dict.fromkeys(grams))))], a, b, scheme)
                out[i] = np.minimum(out[i], part[0])
    return out


def column_signatures(texts, n: int, a: np.ndarray, b: np.ndarray, scheme: Scheme = "affine32") -> np.ndarray:
    """`text_signatures` of an Arrow string column (Array or ChunkedArray) without converting the
    whole column to Python strings at once: the texts of at most STREAM_CHARS bytes go as one list,
    each bigger one is converted (and signed piece by piece) alone, so a batch holding a few huge
    documents costs one Python copy of one of them, not of all (`to_pylist` of a 90 MB column is
    90 MB more at once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):  # chunk by chunk: combining them would copy the column
        parts = [column_signatures(ch, n, a, b, scheme) for ch in texts.chunks]
        return np.concatenate(parts) if parts else np.zeros((0, a.size), dtype=np.uint32)
    nbytes = np.asarray(pc.fill_null(pc.binary_length(texts), 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    big = np.flatnonzero(nbytes > STREAM_CHARS)  # more characters than STREAM_CHARS means more bytes too
    if big.size == 0:
        return text_signatures(texts.to_pylist(), n, a, b, scheme)
    out = np.full((len(texts), a.size), EMPTY, dtype=np.uint32)
    small = np.flatnonzero(nbytes <= STREAM_CHARS)
    if small.size:
        out[small] = text_signatures(texts.take(pa.array(small)).to_pylist(), n, a, b, scheme)
    for i in big.tolist():
        text = texts[i].as_py()
        out[i] = text_signatures([text], n, a, b, scheme)[0]
        del text
    return out


def jaccard_sorted(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted arrays of distinct values (two empty sets: 0)."""
    if a.size == 0 and b.size == 0:
        return 0.0
    if a.size + b.size <= _BIG_SET:
        inter = np.intersect1d(a, b, assume_unique=True).size
    else:  # big sets: count b's values found in a, a slice of b at a time (intersect1d copies both)
        if a.size < b.size:
            a, b = b, a
        inter = 0
        for s in range(0, b.size, _SLICE):
            part = b[s : s + _SLICE]
            at = np.searchsorted(a, part)
            at[at == a.size] = 0
            inter += int(np.count_nonzero(a[at] == part))
    return inter / (a.size + b.size - inter)


_BIG_SET = 1 << 20  # sets bigger than this together are intersected slice by slice (jaccard_sorted)
_SLICE = 1 << 16  # values per slice of those loops (and of shingle_set64's in-place compaction)


# -- permutations and signatures -------------------------------------------------------------------
def permutations(num_perm: int, seed: int = 1, scheme: Scheme = "affine32") -> tuple[np.ndarray, np.ndarray]:
    """(a, b) exactly as datasketch.MinHash(num_perm, seed, scheme=scheme).permutations."""
    gen = np.random.RandomState(seed)
    if scheme == "legacy":
        ab = np.array(
            [
                (gen.randint(1, MERSENNE_PRIME, dtype=np.uint64), gen.randint(0, MERSENNE_PRIME, dtype=np.uint64))
                for _ in range(num_perm)
            ],
            dtype=np.uint64,
        ).T
        return ab[0].copy(), ab[1].copy()
    if scheme != "affine32":
        raise ValueError(f"unknown MinHash scheme {scheme!r}")
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer (datasketch pre-mixes with it in the affine schemes)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _permuted_t(hv: np.ndarray, a: np.ndarray, b: np.ndarray, scheme: Scheme) -> np.ndarray:
    """(num_perm, len(hv)) uint32 matrix of permuted hash values.

    Permutations on the first axis: the per-document minimum is then a `reduceat` along
    contiguous memory, about 10x faster than the (shingles, num_perm) layout.
    """
    if scheme == "legacy":
        x = a[:, None] * hv.astype(np.uint64)[None, :]  # wraps mod 2^64, exactly as datasketch
        x += b[:, None]
        y = x >> np.uint64(61)
        x &= MERSENNE_PRIME
        x += y  # x mod (2^61 - 1) without a division: 2^61 = 1 (mod p); at most one subtraction left
        x[x >= MERSENNE_PRIME] -= MERSENNE_PRIME
        x &= MAX_HASH32
        return x.astype(np.uint32)
    x = a[:, None] * _fmix32(hv)[None, :]  # uint32 wrap-around is the mod 2^32
    x += b[:, None]
    return x


def signatures(
    shingle_lists: Sequence[Sequence[bytes]], a: np.ndarray, b: np.ndarray, scheme: Scheme = "affine32"
) -> np.ndarray:
    """(n_docs, num_perm) uint32 MinHash signatures; a document without shingles gets all EMPTY."""
    return signatures_from_hashes([sha1_hash32(s) for s in shingle_lists], a, b, scheme)


def signatures_from_hashes(
    hash_lists: Sequence[np.ndarray], a: np.ndarray, b: np.ndarray, scheme: Scheme = "affine32"
) -> np.ndarray:
    """Signatures from per-document sha1-32 shingle hashes (lets benchmarks time the two halves)."""
    n = len(hash_lists)
    out = np.full((n, a.size), EMPTY, dtype=np.uint32)
    lens = np.fromiter((h.size for h in hash_lists), dtype=np.int64, count=n)
    i = 0
    while i < n:
        # Group consecutive documents until the group has about _CHUNK_SHINGLES shingles.
        j, total = i, 0
        while j < n and (total == 0 or total + lens[j] <= _CHUNK_SHINGLES):
            total += lens[j]
            j += 1
        idx = [k for k in range(i, j) if lens[k] > 0]
        if len(idx) == 1 and total > _CHUNK_SHINGLES:  # one huge document: min over slices
            hv, acc = hash_lists[idx[0]], out[idx[0]]
            for s in range(0, hv.size, _CHUNK_SHINGLES):
                acc = np.minimum(acc, _permuted_t(hv[s : s + _CHUNK_SHINGLES], a, b, scheme).min(axis=1))
            out[idx[0]] = acc
        elif idx:
            hv = np.concatenate([hash_lists[k] for k in idx])
            starts = np.concatenate([[0], np.cumsum(lens[idx])[:-1]])
            out[idx] = np.minimum.reduceat(_permuted_t(hv, a, b, scheme), starts, axis=1).T
        i = j
    return out


# -- LSH -------------------------------------------------------------------------------------------
def optimal_bands(threshold: float, num_perm: int, false_negative_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) minimising the weighted FP + FN probability mass at `threshold`: datasketch's
    `_optimal_param` (same search order, same strict `<`), with the two integrals computed by
    Gauss-Legendre quadrature instead of scipy's `quad`. The integrands are polynomials of degree
    bands x rows <= num_perm, which num_perm // 2 + 1 nodes integrate exactly; importing
    datasketch.lsh costs 0.6 CPU-s of start-up (it imports scipy). Same answer as datasketch on
    every threshold tested (tests/test_minhash.py)."""
    fpw, fnw = 1.0 - false_negative_weight, false_negative_weight
    x, w = np.polynomial.legendre.leggauss(num_perm // 2 + 1)
    lo, wlo = (x + 1) * (threshold / 2), w * (threshold / 2)
    hi, whi = threshold + (x + 1) * ((1 - threshold) / 2), w * ((1 - threshold) / 2)
    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = float(np.dot(wlo, 1 - (1 - lo ** float(r)) ** float(b)))
            fn = float(np.dot(whi, (1 - hi ** float(r)) ** float(b)))
            error = fp * fpw + fn * fnw
            if error < best:
                best, opt = error, (b, r)
    return opt


def candidate_probability(jaccard: float, bands: int, rows: int) -> float:
    """P(two documents with this Jaccard share at least one band): 1 - (1 - J^rows)^bands."""
    return 1.0 - (1.0 - jaccard**rows) ** bands


def _fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def band_keys(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n_docs, bands) uint64 keys; two documents share key j iff (up to 2^-64) band j is equal.

    The band index is mixed in, so keys of different bands never need to be told apart: one flat
    key space is partitioned across workers. Documents without shingles get key 0 in every band,
    which the global step ignores.
    """
    if bands * rows > sigs.shape[1]:
        raise ValueError(f"bands*rows = {bands * rows} exceeds num_perm = {sigs.shape[1]}")
    n = sigs.shape[0]
    v = sigs[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    h = np.broadcast_to(_fmix64(np.arange(1, bands + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)), (n, bands))
    for r in range(rows):
        h = _fmix64(h * np.uint64(0x100000001B3) + v[:, :, r])
    h = np.where(h == 0, np.uint64(1), h)  # 0 is reserved for "no signature"
    empty = (sigs == EMPTY).all(axis=1)
    h[empty] = 0
    return h


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Fraction of equal signature positions (datasketch's MinHash.jaccard)."""
    return float(np.count_nonzero(sig_a == sig_b)) / sig_a.size
