"""fastText's own prediction for a two-label model of dimension one, computed once per distinct word.

Why: with one dimension (the shipped toxicity model, pipeline/train/fasttext_linear.py) fastText's
P(label) is sigmoid(w * mean of the scalar input rows of a line's features), and the features are, per
whitespace token, its word row (if in the vocabulary) and the rows of the character n-grams of
"<token>"; then the end-of-line token "</s>"; then one hashed row per pair of neighbouring tokens
(wordNgrams 2). A token's (hash, sum of rows, number of rows) depends on the token alone, so it is
computed once per distinct token (vectorised over all new tokens of a batch, then kept in a bounded
memo), and a line costs a few array operations per token. fastText recomputes every out-of-vocabulary
token's character n-grams for every occurrence: that was most of the toxicity stage's time
(docs/measurements/2026-11-28-toxicity.md, "Speed"). The result agrees with fastText's `predict` to float rounding (tested on 20,000 real
paragraphs in tests/test_scalar_fasttext.py) and reproduces its quirk of returning p + 1e-5 for the top
label (its log(p + 1e-5), exponentiated).

Reproduced from fastText 0.9.2 (src/dictionary.cc): tokens split on ASCII whitespace; a token starting
with "__label__" is no feature; 32-bit FNV-1a hashes over UTF-8 bytes taken as signed chars; character
n-grams of minn..maxn code points, id nwords + hash % bucket; word-pair id nwords + (h1 * 116049371 +
h2) % bucket over the hashes sign-extended to 64 bits. Models this does not cover (other losses,
wordNgrams > 2, more than two labels, a quantised output matrix) are scored by fastText itself
(`supports`).
A NUL separates tokens as a space does, and a token "</s>" ends the line (fastText stops reading
there), both as in fastText. The hashes, the n-grams' bounded pieces and the memo are
stages/_fasttext_tokens.py's (shared with the langid scorer).

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

from stages._fasttext_tokens import (
    _FNV_OFFSET, _FNV_PRIME, EOS, TokenMemo, _signed, _utf8, line_token_ids, mod, ngram_sums,
)

LABEL_PREFIX = "__label__"
_PAIR = 116049371
_ARGS_BYTES = 8 + 12 * 4 + 8  # magic + version, 12 int32 arguments, one double
MEMO_SIZE = 200_000  # out-of-vocabulary tokens remembered (48 bytes each, with the vocabulary's 16 MB); then it starts again
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


def _per_line(values: np.ndarray, per_line: np.ndarray) -> np.ndarray:
    """Sum of integer (or boolean) `values` over each line's tokens (`per_line` tokens each, in
    order): differences of one running sum, exact for integers, and a third of `np.bincount`'s time
    (which adds float weights one by one)."""
    ends = np.zeros(len(per_line) + 1, np.int64)
    np.cumsum(per_line, out=ends[1:])
    run = np.zeros(len(values) + 1, np.int64)
    np.cumsum(values, out=run[1:])
    return np.diff(run[ends])


class ScalarFastText(TokenMemo):
    """P(`positive`) for lines, as fastText's `predict(line, k=1)` (or `k=-1`) gives it, memoised per token."""

    FIELDS = ("hash", "sum", "count")

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
        # hash: sign-extended 32-bit; sum of the token's rows; count: their number (-1: no feature, "" or a label)
        h32 = self._start_memo(pa.array(words, pa.large_string()), MEMO_SIZE,
                               {"hash": (np.int64, ()), "sum": (np.float64, ()), "count": (np.int64, ())})
        self.hash[:self.nwords] = h32.view(np.int32).astype(np.int64)
        self.eos = words.index(EOS)
        self.sum[self.eos], self.count[self.eos] = self.rows[self.eos], 1  # "</s>" has no n-grams
        self.ready[self.eos] = True

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
        n-grams: one step per n-gram length (and byte of the code point it adds), over every start
        code point at once. A start too near its token's end for the step's length computes a hash
        that is not used: cheaper than picking the starts out, and the step's bytes are then one
        slice (ASCII) or one gather (15.8 against 31.9 ms for the speed benchmark's 70,000 new
        tokens, sorting the starts by what remains and taking a prefix)."""
        raw, offsets = _utf8(marked)
        nt = len(offsets) - 1
        total, count = np.zeros(nt), np.zeros(nt, np.int64)
        if not len(raw):
            return total, count
        ascii_only = bool(raw.max() < 128)
        sb = _signed(np.concatenate((raw, np.zeros(self.maxn + 4, np.uint8))))
        if ascii_only:
            ncp, nc = np.diff(offsets), len(raw)
        else:
            lead = np.flatnonzero((raw & 0xC0) != 0x80)  # byte of each code point
            ncp, nc = np.diff(np.searchsorted(lead, offsets)), len(lead)  # code points per token, in all
            cp_len = np.diff(np.concatenate((lead, [len(raw)])))
            # padded for the last starts' unused steps: code points of one byte, after the end
            lead = np.concatenate((lead, np.full(self.maxn, len(raw))))
            cp_len = np.concatenate((cp_len, np.ones(self.maxn, cp_len.dtype)))
        ends = np.cumsum(ncp)
        remaining = np.repeat(ends, ncp) - np.arange(nc)  # code points from each start to its token's end
        owner = np.repeat(np.arange(nt), ncp)
        h = np.full(nc, _FNV_OFFSET, np.uint32)
        weight = np.zeros(nc)  # the rows of the n-grams starting at each start code point
        kept = None if self.prune is None else np.zeros(nc, np.int64)  # and how many are not pruned
        values = self.rows[self.nwords:] if self.prune is None else self.bucket_value  # per bucket id
        prime = np.uint32(_FNV_PRIME)
        for n in range(1, self.maxn + 1):
            if ascii_only:  # the byte of code point start + n - 1
                h ^= sb[n - 1:n - 1 + nc]
                h *= prime
            else:
                at = lead[n - 1:n - 1 + nc]
                h ^= sb[at]
                h *= prime
                bl = cp_len[n - 1:n - 1 + nc]
                for j in range(1, int(bl.max(initial=0))):  # its further bytes, where it has them
                    m = np.flatnonzero(bl > j)
                    h[m] = (h[m] ^ sb[at[m] + j]) * prime
            if n < self.minn:
                continue
            use = remaining >= n
            if n == 1:  # fastText skips a lone "<" or ">"
                use &= (np.arange(nc) != np.repeat(ends - ncp, ncp)) & (remaining != 1)
            ids = mod(h, self.bucket)
            weight += np.where(use, values[ids], 0.0)  # + 0.0 changes no sum (none is -0.0)
            if kept is not None:
                kept += np.where(use, self.bucket_kept[ids], 0)
        total = np.bincount(owner, weights=weight, minlength=nt)
        if kept is not None:  # pruned ids are no features: count what is left
            return total, np.bincount(owner, weights=kept, minlength=nt).astype(np.int64)
        count = sum(np.maximum(ncp - n + 1, 0) for n in range(max(self.minn, 1), self.maxn + 1))
        if self.minn <= 1:
            count -= np.minimum(ncp, 2)  # the lone "<" and ">" not counted
        return total, count.astype(np.int64)

    # -- per line ------------------------------------------------------------------------------
    def predict(self, lines: "Sequence[str] | pa.Array", first: "Sequence[str] | pa.Array | None" = None,
                scope=None) -> np.ndarray:
        """P(positive) per line as `fastText.predict(line, k=1)` returns it (the top label's
        probability + 1e-5, so the positive's is p + 1e-5 or p - 1e-5), clipped to [0, 1].
        `first`: a token to put before each line ("" for none), without copying the lines. `scope`:
        rewrites the batch's tokens before scoring (`line_token_ids`)."""
        if not len(lines):
            return np.zeros(0)
        arr = lines.cast(pa.large_string()) if isinstance(lines, pa.Array) else pa.array(lines, pa.large_string())
        if len(arr) > STEP_LINES:  # millions of tiny lines: the per-line arrays a slice of lines at a time
            if first is not None and not isinstance(first, pa.Array):
                first = pa.array(first, pa.large_string())
            return np.concatenate([self.predict(arr.slice(s, STEP_LINES), None if first is None else
                                                first.slice(s, STEP_LINES), scope) for s in range(0, len(arr), STEP_LINES)])
        words, tok, per_line = line_token_ids(arr, scope)  # per token: its distinct token (of `words`)
        distinct = words
        if first is not None:  # one look-up for both: a second one could start the memo again
            head = first if isinstance(first, pa.Array) else pa.array(first, pa.large_string())
            heads = pc.dictionary_encode(head.cast(pa.large_string()))
            distinct = pa.concat_arrays([distinct, heads.dictionary])
        idx = self._lookup(distinct)  # memo index per distinct token of the batch
        lead = None  # memo row of each line's first token, where it is a feature
        if first is not None:
            lead = idx[len(words) + heads.indices.to_numpy(zero_copy_only=False)]
            has = self.count[lead] >= 0
            lead = lead if has.any() else None
        # the batch's distinct tokens' values: small arrays, gathered per token from the cache
        d_count = self.count[idx]
        if (d_count < 0).any() and len(tok):  # "" (an empty line) and "__label__…" are no features
            keep = d_count[tok] >= 0
            if not keep.all():
                tok, per_line = tok[keep], _per_line(keep, per_line)
        n = len(per_line)
        line_of = np.repeat(np.arange(n), per_line)
        # Sums over a line's features in their order, as np.bincount adds them (0 + the first + the
        # next ...; np.add.at adds in the same order, as fast): a first token starts its line's sum
        # (not inserted into the per-token arrays: a copy of them all per batch)
        total = np.zeros(n)
        if lead is not None:
            total[has] += self.sum[lead[has]]
        np.add.at(total, line_of, self.sum[idx][tok])
        total += self.sum[self.eos]
        count = _per_line(d_count[tok], per_line) + 1.0  # + "</s>"
        if lead is not None:
            count[has] += self.count[lead[has]]
        if self.pairs:  # each token with the next one, the line's last with "</s>"
            hashes = self.hash[idx].astype(np.uint64)
            h = hashes[tok]
            eos = self.hash[[self.eos]].astype(np.uint64)[0]
            nxt = np.empty_like(h)
            nxt[:-1] = h[1:]
            ends = np.cumsum(per_line)
            nxt[ends[per_line > 0] - 1] = eos
            values = self.rows[self.nwords:] if self.prune is None else self.bucket_value  # per bucket id
            pair = mod(h * np.uint64(_PAIR) + nxt, self.bucket)
            pairs = np.zeros(n)
            if lead is not None:  # the first token with the line's next one, or "</s>"
                after = np.where(per_line > 0, h[np.minimum(ends - per_line, len(h) - 1)], eos) if len(h) else eos
                first_pair = mod(self.hash[lead].astype(np.uint64) * np.uint64(_PAIR) + after, self.bucket)[has]
                pairs[has] += values[first_pair]
            np.add.at(pairs, line_of, values[pair])
            total += pairs
            if self.prune is None:
                count += per_line
                if lead is not None:
                    count += has
            else:  # a pruned pair is no feature
                count += np.bincount(line_of, weights=self.bucket_kept[pair], minlength=n)
                if lead is not None:
                    count[has] += self.bucket_kept[first_pair]
        p = 1.0 / (1.0 + np.exp(-self.weight * total / count))
        if self.all_labels:  # predict(k=-1): every label's probability + 1e-5
            return np.minimum(p + 1e-5, 1.0)
        return np.clip(np.where(p >= 0.5, p + 1e-5, p - 1e-5), 0.0, 1.0)
