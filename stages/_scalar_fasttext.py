"""fastText's own prediction for a two-label model of dimension one, computed once per distinct word.

Why: with one dimension (the shipped toxicity model, pipeline/train/fasttext_linear.py) fastText's
P(label) is sigmoid(w * mean of the scalar input rows of a line's features), and the features are, per
whitespace token, its word row (if in the vocabulary) and the rows of the character n-grams of
"<token>"; then the end-of-line token "</s>"; then one hashed row per pair of neighbouring tokens
(wordNgrams 2). A token's (hash, sum of rows, number of rows) depends on the token alone, so it is
computed once per distinct token (vectorised over all new tokens of a batch, then kept in a bounded
memo), and a line costs a few array operations per token. fastText recomputes every out-of-vocabulary
token's character n-grams for every occurrence: that was most of the toxicity stage's time
(docs/filters.md). The result agrees with fastText's `predict` to float rounding (tested on 20,000 real
paragraphs in tests/test_scalar_fasttext.py) and reproduces its quirk of returning p + 1e-5 for the top
label (its log(p + 1e-5), exponentiated).

Reproduced from fastText 0.9.2 (src/dictionary.cc): tokens split on ASCII whitespace; a token starting
with "__label__" is no feature; 32-bit FNV-1a hashes over UTF-8 bytes taken as signed chars; character
n-grams of minn..maxn code points, id nwords + hash % bucket; word-pair id nwords + (h1 * 116049371 +
h2) % bucket over the hashes sign-extended to 64 bits. Models this does not cover (other losses,
wordNgrams > 2, more than two labels, a quantised output matrix) are scored by fastText itself
(`supports`).
A NUL separates tokens as a space does, and a token "</s>" ends the line (fastText stops reading
there), both as in fastText.

Models of more dimensions (the quality classifier's, 32, product-quantised and pruned) are the same
sum: for two labels P(label) = sigmoid((o_label - o_other) . h) and h is the mean of the feature rows,
so each row is projected once on o_label - o_other (in float64) and the model becomes
one-dimensional at load time, with no retraining and no new file. A quantised row is decoded as
fastText decodes it (norm times centroid, in float32); a pruned model's n-gram and word-pair ids go
through its pruning index, and an id it pruned is no feature (not counted in the mean), as in
fastText. fastText sums 32-dimensional rows in float32, this sums scalars in float64: the scores
differ by float rounding only (tests/test_scalar_fasttext.py, docs/quality.md state the maximum).
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EOS = "</s>"
LABEL_PREFIX = "__label__"
_FNV_OFFSET, _FNV_PRIME, _PAIR = 2166136261, 16777619, 116049371
_FNV64_OFFSET, _FNV64_PRIME = 14695981039346656037, 1099511628211
_ARGS_BYTES = 8 + 12 * 4 + 8  # magic + version, 12 int32 arguments, one double
_LONG = 256  # tokens longer than this (bytes) are hashed one by one, so the vectorised loop stays short
_LT, _GT, _NONE = (pa.scalar(c, pa.large_string()) for c in ("<", ">", ""))
# a token "</s>" and the rest of its line (the line's tokens are separated by ASCII whitespace)
_EOS_TOKEN_ON = r"(?s)(^|[ \t\n\v\f\r])</s>([ \t\n\v\f\r].*)?$"
MEMO_SIZE = 200_000  # out-of-vocabulary tokens remembered (48 bytes each, with the vocabulary's 16 MB); then it starts again
# A scorer's vectorised `_ngrams` needs ~140 bytes of work arrays per code point: new tokens go to it
# about CHUNK_BYTES of tokens at a time, and a token longer than LONG_TOKEN bytes (one 64 MB word
# would need ~9 GB at once) in windows of LONG_TOKEN code points (`ngram_sums`)
CHUNK_BYTES = 1 << 16
LONG_TOKEN = 1 << 14
STEP_LINES = 1 << 16  # lines per pass of `predict` (~120 bytes of arrays per line and per token)


def pruned(path: str | Path) -> bool:
    """Whether a fastText model file carries a pruning index (quantised with a cutoff)."""
    with open(path, "rb") as f:
        head = f.read(_ARGS_BYTES + 28)
    return struct.unpack_from("<q", head, _ARGS_BYTES + 20)[0] >= 0


def supports(model, path: str | Path, any_dimension: bool = False) -> bool:
    """Whether `ScalarFastText` reproduces this model (else fastText itself scores it). Without
    `any_dimension`: one-dimensional, not quantised, not pruned (the toxicity stage's models); with
    it, any two-label softmax model whose output matrix is dense (quantised with qout=False)."""
    a = model.f.getArgs()
    if not (len(model.get_labels()) == 2 and a.loss.name == "softmax" and a.wordNgrams in (1, 2)
            and model.get_word_id(EOS) >= 0):
        return False
    if any_dimension:
        return not (model.f.isQuant() and a.qout)
    return model.get_dimension() == 1 and not model.f.isQuant() and not pruned(path)


def read_matrices(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(input rows, output rows, pruning index) of a fastText model file, read as fastText 0.9.2's
    `loadModel` reads it: the input matrix dense or product-quantised (each row decoded as
    `QuantMatrix::addRowToVector` adds it to a zero vector: norm * centroid, float32), the output
    matrix dense (a quantised one is refused), and the pruning index as an int64 array over the
    bucket ids (row offset after the words, -1: pruned), or None."""
    buf = Path(path).read_bytes()
    bucket = struct.unpack_from("<i", buf, 8 + 8 * 4)[0]
    pos = _ARGS_BYTES
    size, _nwords, _nlabels, _ntokens, npruned = struct.unpack_from("<iiiqq", buf, pos)
    pos += 28
    for _ in range(size):
        pos = buf.index(b"\0", pos) + 1 + 8 + 1  # word, count (int64), type (int8)
    prune = None
    if npruned >= 0:
        pairs = np.frombuffer(buf, "<i4", 2 * npruned, pos).reshape(-1, 2).astype(np.int64)
        prune = np.full(bucket, -1, np.int64)
        prune[pairs[:, 0]] = pairs[:, 1]
        pos += 8 * npruned
    quant = buf[pos]
    pos += 1
    if quant:
        qnorm = buf[pos]
        m, _n = struct.unpack_from("<qq", buf, pos + 1)
        codesize = struct.unpack_from("<i", buf, pos + 17)[0]
        pos += 21
        codes = np.frombuffer(buf, np.uint8, codesize, pos)
        pos += codesize
        dim, nsubq, dsub, lastdsub = struct.unpack_from("<4i", buf, pos)
        pos += 16
        cent = np.frombuffer(buf, "<f4", dim * 256, pos)
        pos += 4 * dim * 256
        codes = codes.reshape(m, nsubq).astype(np.int64)
        rows = np.empty((m, dim), np.float32)
        for k in range(nsubq):  # ProductQuantizer::get_centroids
            d = lastdsub if k == nsubq - 1 else dsub
            start = k * 256 * dsub + codes[:, k] * (lastdsub if k == nsubq - 1 else dsub)
            for j in range(d):
                rows[:, k * dsub + j] = cent[start + j]
        if qnorm:
            ncodes = np.frombuffer(buf, np.uint8, m, pos)
            pos += m
            ndim = struct.unpack_from("<i", buf, pos)[0]
            pos += 16
            ncent = np.frombuffer(buf, "<f4", ndim * 256, pos)
            pos += 4 * ndim * 256
            rows *= ncent[ncodes.astype(np.int64)][:, None]  # float32 products, as fastText's alpha * c[j]
    else:
        m, n = struct.unpack_from("<qq", buf, pos)
        pos += 16
        rows = np.frombuffer(buf, "<f4", m * n, pos).reshape(m, n)
        pos += 4 * m * n
    if buf[pos]:
        raise ValueError(f"{path}: the output matrix is quantised (qout)")
    m, n = struct.unpack_from("<qq", buf, pos + 1)
    out = np.frombuffer(buf, "<f4", m * n, pos + 17).reshape(m, n)
    return rows, out, prune


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
    points plus the maxn - 1 that follow (every n-gram starting in window j lies in W_j); the n-grams
    W_j counts twice are those of its tail T_j = W_j[LONG_TOKEN:], the head of W_j+1, so the token's
    sum is sum(W_j) - sum(T_j) (also for fastText's rule on a lone "<" or ">": the first and last
    code points that a window or tail wrongly leaves out cancel)."""
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
        starts = range(0, len(marked), LONG_TOKEN)
        windows = [marked[j : j + LONG_TOKEN + maxn - 1] for j in starts]
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


def word_hashes(tokens: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fastText's 32-bit hash, 64-bit FNV-1a, length in bytes) of every token, vectorised: one step
    per byte position over the tokens at least that long (sorted by length, so they are a prefix);
    very long ones one by one."""
    raw, offsets = _utf8(tokens)
    lens = np.diff(offsets)
    out = np.full(len(lens), _FNV_OFFSET, np.uint32)
    out64 = np.full(len(lens), _FNV64_OFFSET, np.uint64)
    for i in np.flatnonzero(lens > _LONG):
        t = tokens[int(i)].as_py()
        out[i], out64[i] = fnv(t), fnv64(t)
    order = np.argsort(-np.minimum(lens, _LONG + 1), kind="stable")
    order = order[lens[order] <= _LONG]
    if not len(order) or not lens[order[0]]:
        return out, out64, lens
    padded = np.concatenate((raw, np.zeros(1, np.uint8)))
    sb, ub = _signed(padded), padded.astype(np.uint64)
    sl, starts = lens[order], offsets[order]
    h = np.full(len(order), _FNV_OFFSET, np.uint32)
    h64 = np.full(len(order), _FNV64_OFFSET, np.uint64)
    prime, prime64 = np.uint32(_FNV_PRIME), np.uint64(_FNV64_PRIME)
    alive = np.searchsorted(-sl, -np.arange(1, int(sl[0]) + 1), side="right")  # tokens longer than s
    for s in range(int(sl[0])):
        a = int(alive[s])
        at = starts[:a] + s
        h[:a] = (h[:a] ^ sb[at]) * prime
        h64[:a] = (h64[:a] ^ ub[at]) * prime64
    out[order] = h
    out64[order] = h64
    return out, out64, lens


class ScalarFastText:
    """P(`positive`) for lines, as fastText's `predict(line, k=1)` (or `k=-1`) gives it, memoised per token."""

    def __init__(self, model, positive: str, no_feature: frozenset[str] = frozenset(),
                 path: str | Path | None = None, all_labels: bool = False):
        """`no_feature`: tokens scored as if absent from the line (as "" is), e.g. identity terms.
        `path`: the model's file, read for its matrices (`read_matrices`): any dimension,
        quantised, pruned (`supports(..., any_dimension=True)`); without it the model must be
        one-dimensional, dense and unpruned (`supports`). `all_labels`: the probability as
        `predict(k=-1)` gives it (p + 1e-5 for either label) rather than `k=1`'s."""
        a = model.f.getArgs()
        self.no_feature = pa.array(sorted(no_feature), pa.large_string()) if no_feature else None
        self.minn, self.maxn, self.bucket, self.pairs = a.minn, a.maxn, a.bucket, a.wordNgrams >= 2
        self.all_labels = all_labels
        words = model.get_words()
        self.nwords = len(words)
        labels = list(model.get_labels())
        pos = labels.index(positive)
        self.prune = None  # bucket id -> input row (-1: pruned), for a pruned model
        if path is None:
            self.rows = model.get_input_matrix()[:, 0].astype(np.float64)
            out = model.get_output_matrix()[:, 0].astype(np.float64)
            self.weight = float(out[pos] - out[1 - pos])
        else:  # each row projected on o_pos - o_neg: P(pos) = sigmoid(mean of the projections)
            rows, out, prune = read_matrices(path)
            w = out[pos].astype(np.float64) - out[1 - pos].astype(np.float64)
            self.rows = rows.astype(np.float64) @ w
            self.weight = 1.0
            if prune is not None:
                self.prune = np.where(prune >= 0, prune + self.nwords, -1)
                # per bucket id: its row's value (0 when pruned) and whether it is a feature
                self.bucket_value = np.where(prune >= 0, self.rows[np.maximum(self.prune, 0)], 0.0)
                self.bucket_kept = (prune >= 0).astype(np.int64)
        n = self.nwords + MEMO_SIZE
        self.hash = np.zeros(n, np.int64)  # sign-extended 32-bit hash
        self.sum = np.zeros(n, np.float64)  # sum of the token's rows
        self.count = np.zeros(n, np.int64)  # number of rows; -1: no feature ("" or a label)
        self.length = np.zeros(n, np.int64)  # bytes, checked with the key
        vocab = pa.array(words, pa.large_string())
        h32, h64, self.length[:self.nwords] = word_hashes(vocab)
        self.hash[:self.nwords] = h32.view(np.int32).astype(np.int64)
        # A vocabulary word's sum and count are computed when a batch first holds it (`_lookup`):
        # a token's features depend on the token alone, so they are the same numbers as computed
        # up front, and a scorer that sees a few documents (`refinery retune`, a report) does not
        # pay for the n-grams of every word of the vocabulary (0.3 s of the 0.5 s set-up).
        self.ready = np.zeros(self.nwords, bool)
        order = np.argsort(h64, kind="stable")
        self.vocab_keys, self.vocab_at = h64[order], order.astype(np.int64)
        self.eos = words.index(EOS)
        self.sum[self.eos], self.count[self.eos] = self.rows[self.eos], 1  # "</s>" has no n-grams
        self.ready[self.eos] = True
        self.forget()

    def forget(self) -> None:
        """Drop the remembered out-of-vocabulary tokens (the vocabulary's stay)."""
        self.keys, self.at = self.vocab_keys, self.vocab_at  # sorted 64-bit keys, their index in hash, sum, ...
        self.size = self.nwords
        if len(self.hash) > self.nwords + MEMO_SIZE:  # grown for one huge batch: back to the bound
            for name in ("hash", "sum", "count", "length"):
                setattr(self, name, getattr(self, name)[:self.nwords + MEMO_SIZE].copy())

    # -- per distinct token --------------------------------------------------------------------
    def _features(self, tokens: pa.Array, wids: np.ndarray, h32: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(hash, sum of rows, number of rows) of each token; `wids`: vocabulary id or -1; `h32`:
        their fastText hashes."""
        h = h32.view(np.int32).astype(np.int64)
        total = np.where(wids >= 0, self.rows[np.maximum(wids, 0)], 0.0)
        count = (wids >= 0).astype(np.int64)
        if self.maxn > 0 and len(tokens):
            s, c = ngram_sums(self._ngrams, tokens, self.maxn)
            total += s
            count += c
        skip = pc.or_(pc.equal(pc.binary_length(tokens), 0), pc.starts_with(tokens, LABEL_PREFIX))
        if self.no_feature is not None:
            skip = pc.or_(skip, pc.is_in(tokens, value_set=self.no_feature))
        count[skip.to_numpy(zero_copy_only=False)] = -1
        return h, total, count

    def _ngrams(self, marked: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Sum and number of the character n-gram rows of every "<token>", vectorised over all
        n-grams: one step per n-gram length (and byte of the code point it adds), over the start
        code points whose token is long enough (sorted by what remains, so they are a prefix)."""
        raw, offsets = _utf8(marked)
        nt = len(offsets) - 1
        total, count = np.zeros(nt), np.zeros(nt, np.int64)
        if not len(raw):
            return total, count
        ascii_only = bool(raw.max() < 128)
        lead = np.arange(len(raw)) if ascii_only else np.flatnonzero((raw & 0xC0) != 0x80)  # byte of each code point
        ncp = np.diff(np.searchsorted(lead, offsets))  # code points per token
        first = np.repeat(np.cumsum(ncp) - ncp, ncp)  # first code point of each code point's token
        remaining = np.repeat(np.cumsum(ncp), ncp) - np.arange(len(lead))  # code points from it to the end
        order = np.argsort((self.maxn - np.minimum(remaining, self.maxn)).astype(np.int8), kind="stable")  # radix
        k = order  # start code points, those with the most code points left first
        rem = np.minimum(remaining[order], self.maxn)
        alive = np.searchsorted(-rem, -np.arange(1, self.maxn + 1), side="right")  # starts with >= n left
        sb = _signed(np.concatenate((raw, np.zeros(4, np.uint8))))
        cp_len = None if ascii_only else np.diff(np.concatenate((lead, [len(raw)])))
        owner = np.repeat(np.arange(nt), ncp)[k]
        h = np.full(len(k), _FNV_OFFSET, np.uint32)
        weight = np.zeros(len(k))  # the rows of the n-grams starting at each start code point
        kept = None if self.prune is None else np.zeros(len(k), np.int64)  # and how many are not pruned
        prime = np.uint32(_FNV_PRIME)
        for n in range(1, self.maxn + 1):
            a = int(alive[n - 1])
            c = k[:a] + (n - 1)  # the code point added
            at = lead[c]
            hh = (h[:a] ^ sb[at]) * prime
            if not ascii_only:  # its further bytes, where it has them
                bl = cp_len[c]
                for j in range(1, int(bl.max(initial=0))):
                    m = np.flatnonzero(bl > j)
                    hh[m] = (hh[m] ^ sb[at[m] + j]) * prime
            h[:a] = hh
            if n >= self.minn and kept is not None:  # pruned model: per bucket id, value and kept
                ids = (hh % np.uint32(self.bucket)).astype(np.int64)
                if n == 1:  # fastText skips a lone "<" or ">"
                    lone = (k[:a] == first[k[:a]]) | (remaining[k[:a]] == 1)
                    weight[:a] += np.where(lone, 0.0, self.bucket_value[ids])
                    kept[:a] += np.where(lone, 0, self.bucket_kept[ids])
                else:
                    weight[:a] += self.bucket_value[ids]
                    kept[:a] += self.bucket_kept[ids]
            elif n >= self.minn:
                ids = (hh % np.uint32(self.bucket)).astype(np.int64) + self.nwords
                if n == 1:  # fastText skips a lone "<" or ">"
                    ids[(k[:a] == first[k[:a]]) | (remaining[k[:a]] == 1)] = -1
                weight[:a] += np.where(ids >= 0, self.rows[ids], 0.0) if n == 1 else self.rows[ids]
        total = np.bincount(owner, weights=weight, minlength=nt)
        if kept is not None:  # pruned ids are no features: count what is left
            return total, np.bincount(owner, weights=kept, minlength=nt).astype(np.int64)
        count = sum(np.maximum(ncp - n + 1, 0) for n in range(max(self.minn, 1), self.maxn + 1))
        if self.minn <= 1:
            count -= np.minimum(ncp, 2)  # the lone "<" and ">" not counted
        return total, count.astype(np.int64)

    def _lookup(self, distinct: pa.Array) -> np.ndarray:
        """Memo index of every distinct token, computing the new ones. Tokens are found by their
        64-bit FNV-1a hash and byte length (binary search in the sorted keys), all in numpy: a dict
        of Python strings cost 0.4 us a token, a fifth of the stage cold; two different tokens of
        the same length sharing a 64-bit hash (about 1 in 10^13 per look-up against a full memo) is
        the one way this could mix two tokens up."""
        h32, h64, lens = word_hashes(distinct)
        keys = self.keys
        i = np.minimum(np.searchsorted(keys, h64), len(keys) - 1)
        idx = self.at[i]
        idx[(keys[i] != h64) | (self.length[idx] != lens)] = -1
        words = np.flatnonzero((idx >= 0) & (idx < self.nwords))
        words = words[~self.ready[idx[words]]]
        if len(words):  # vocabulary words met for the first time
            wid = idx[words]
            _, self.sum[wid], self.count[wid] = self._features(distinct.take(pa.array(words)), wid, h32[words])
            self.ready[wid] = True
        new = np.flatnonzero(idx < 0)
        if len(new):
            if self.size + len(new) > self.nwords + MEMO_SIZE and self.size > self.nwords:
                self.forget()
                return self._lookup(distinct)
            if self.size + len(new) > len(self.hash):  # one batch with more new tokens than the memo holds
                self._grow(self.size + len(new) - len(self.hash))
            at = np.arange(self.size, self.size + len(new))
            self.hash[at], self.sum[at], self.count[at] = self._features(
                distinct.take(pa.array(new)), np.full(len(new), -1), h32[new])
            self.length[at] = lens[new]
            order = np.argsort(h64[new], kind="stable")
            where = np.searchsorted(self.keys, h64[new][order])
            self.keys = np.insert(self.keys, where, h64[new][order])
            self.at = np.insert(self.at, where, at[order])
            self.size += len(new)
            idx[new] = at
        return idx

    def _grow(self, extra: int) -> None:
        for name in ("hash", "sum", "count", "length"):
            a = getattr(self, name)
            setattr(self, name, np.concatenate((a, np.zeros(extra, a.dtype))))

    # -- per line ------------------------------------------------------------------------------
    def predict(self, lines: "Sequence[str] | pa.Array", first: "Sequence[str] | pa.Array | None" = None
                ) -> np.ndarray:
        """P(positive) per line as `fastText.predict(line, k=1)` returns it (the top label's
        probability + 1e-5, so the positive's is p + 1e-5 or p - 1e-5), clipped to [0, 1].
        `first`: a token to put before each line ("" for none), without copying the lines."""
        if not len(lines):
            return np.zeros(0)
        arr = lines.cast(pa.large_string()) if isinstance(lines, pa.Array) else pa.array(lines, pa.large_string())
        if len(arr) > STEP_LINES:  # millions of tiny lines: the per-line arrays a slice of lines at a time
            if first is not None and not isinstance(first, pa.Array):
                first = pa.array(first, pa.large_string())
            return np.concatenate([self.predict(arr.slice(s, STEP_LINES), None if first is None else
                                                first.slice(s, STEP_LINES)) for s in range(0, len(arr), STEP_LINES)])
        if pc.any(pc.match_substring(arr, "\0")).as_py():  # fastText splits tokens on NUL too
            arr = pc.replace_substring(arr, "\0", " ")
        if pc.any(pc.match_substring(arr, EOS)).as_py():  # fastText stops reading at a token "</s>"
            arr = pc.replace_substring_regex(arr, _EOS_TOKEN_ON, r"\1", max_replacements=1)
        tokens = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(arr))
        per_line = pc.list_value_length(tokens).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = tokens.flatten()
        if first is not None:  # one look-up for both: a second one could start the memo again
            head = first if isinstance(first, pa.Array) else pa.array(first, pa.large_string())
            flat = pa.concat_arrays([flat, head.cast(pa.large_string())])
        enc = pc.dictionary_encode(flat)
        idx = self._lookup(enc.dictionary)  # memo index per distinct token of the batch
        tok = enc.indices.to_numpy(zero_copy_only=False)  # per token: its distinct token
        if first is not None:
            tok, at = tok[:len(flat) - len(head)], tok[len(flat) - len(head):]
            has = self.count[idx[at]] >= 0
            tok = np.insert(tok, (np.cumsum(per_line) - per_line)[has], at[has])
            per_line = per_line + has
        # the batch's distinct tokens' values: small arrays, gathered per token from the cache
        d_count = self.count[idx]
        if (d_count < 0).any() and len(tok):  # "" (an empty line) and "__label__…" are no features
            keep = d_count[tok] >= 0
            if not keep.all():
                line_of = np.repeat(np.arange(len(per_line)), per_line)
                tok, per_line = tok[keep], np.bincount(line_of[keep], minlength=len(per_line))
        n = len(per_line)
        line_of = np.repeat(np.arange(n), per_line)
        total = np.bincount(line_of, weights=self.sum[idx][tok], minlength=n) + self.sum[self.eos]
        count = np.bincount(line_of, weights=d_count[tok], minlength=n) + 1  # + "</s>"
        if self.pairs:  # each token with the next one, the line's last with "</s>"
            h = self.hash[idx].astype(np.uint64)[tok]
            nxt = np.empty_like(h)
            nxt[:-1] = h[1:]
            ends = np.cumsum(per_line)
            nxt[ends[per_line > 0] - 1] = self.hash[[self.eos]].astype(np.uint64)[0]
            pair = ((h * np.uint64(_PAIR) + nxt) % np.uint64(self.bucket)).astype(np.int64)
            if self.prune is None:
                total += np.bincount(line_of, weights=self.rows[self.nwords + pair], minlength=n)
                count += per_line
            else:  # a pruned pair is no feature
                total += np.bincount(line_of, weights=self.bucket_value[pair], minlength=n)
                count += np.bincount(line_of, weights=self.bucket_kept[pair], minlength=n)
        p = 1.0 / (1.0 + np.exp(-self.weight * total / count))
        if self.all_labels:  # predict(k=-1): every label's probability + 1e-5
            return np.minimum(p + 1e-5, 1.0)
        return np.clip(np.where(p >= 0.5, p + 1e-5, p - 1e-5), 0.0, 1.0)
