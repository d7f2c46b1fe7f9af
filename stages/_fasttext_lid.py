"""fastText's top-k prediction for a hierarchical-softmax model (lid.176), computed once per distinct token.

Why: language ID was the largest stage cost and nearly all of it was fastText's
`predict`, which recomputes every token's character n-grams (hash, pruning-index look-up, quantised
row decode) at every occurrence. A line's hidden vector is the mean of its features' input rows:
per whitespace token its word row (if in the vocabulary) and the rows of the character n-grams of
"<token>", then "</s>" (lid.176 has wordNgrams 1, so no word pairs). A token's (sum of rows, number
of rows) depends on the token alone, so it is computed once, vectorised over all new tokens of a
batch, and kept in a bounded memo (`MEMO_SIZE` tokens); a line costs a sparse sum of its tokens'
rows. The output layer is fastText's hierarchical softmax (src/loss.cc): the Huffman tree rebuilt
from the label counts in the dictionary (`buildTree`), each inner node's sigmoid, a leaf's score
the sum of log(p + 1e-5) along its path (fastText's `std_log`), the k best leaves whose path never
falls below log(threshold + 1e-5) (threshold 0, as `predict` is called), probability exp(score).

Exactness: the output layer is computed as fastText computes it in float32 (f = 1. / (1 + expf(-x))
with the sum in float32, since `1` is an int; std_log's argument and result in float32; scores
summed in float32 from the root), so scores differ only through the hidden vector, which fastText
sums in float32 in its own order and this in float64 (x = w . hidden differs by about
sqrt(features) * 2^-24, more on runs of one character; `KAPPA` and `REPEAT` bound it). Each
step is also evaluated at x -+ that bound, which gives how far fastText's score of every node can
be from this one (a float32 f near 1 can flip by one ulp, which moves a 1e-5 probability by 0.6%).
A line where that could change the answer (two of the k + 1 best within reach of each other, a
candidate's path within reach of fastText's floor log(1e-5), or a best leaf that fastText's
depth-first search could skip: it stops at an inner node scoring below the k-th best leaf found so
far, which can hide a leaf only when a step below gains score, log(p + 1e-5) > 0) is handed to
fastText itself: about 2% of crawl pages. So the labels and their order are fastText's and the
probabilities agree to float rounding (docs/langid.md has the sets and the maximum difference).
Lines fastText refuses (a newline; not valid Unicode) go to fastText, which raises as before.

Reproduced from fastText 0.9.2 for models with `supports`: supervised, hierarchical softmax,
wordNgrams 1, output matrix not quantised (input dense, product-quantised, pruned or not). The
hashes, the bounded n-gram pieces and the memo are stages/_fasttext_tokens.py's; the model reading
and the line preparation ("</s>") are stages/_scalar_fasttext.py's.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import stages._fasttext_tokens as fasttext_tokens
from stages._fasttext_tokens import _FNV_OFFSET, _FNV_PRIME, EOS, TokenMemo, _signed, _utf8, line_token_ids, ngram_sums
from stages._scalar_fasttext import LABEL_PREFIX, read_matrices

# out-of-vocabulary tokens remembered (17 float64 + 32 bytes each with the keys: ~34 MB); then it starts
# again. 200,000 rather than 100,000: about a fifth less CPU on the 58.8 MB crawl JSONL (300,000: no better)
MEMO_SIZE = 200_000
# Bound on fastText's float32 rounding of x = w . hidden, in 2^-24 * mean row magnitude * |w|_2:
# KAPPA * sqrt(features) (rounding errors that cancel, real text: measured at most 1.1 * sqrt) +
# REPEAT * features (a run of the same n-grams, "ééé…", whose errors add up: at most 0.2 * features
# measured; together the bound is at least 1.5x every measured error, benchmarks/langid_scorer.py)
KAPPA, REPEAT = 4.0, 0.3
_U32 = 2.0 ** -24


def _long_token_lines(lines: pa.Array) -> np.ndarray:
    """Positions of the lines holding a token (between ASCII whitespace) longer than the shared
    LONG_TOKEN bytes. Such a line goes to fastText: `ngram_sums` would bound its memory, but the
    token would still be hashed byte by byte in Python (about 7.5 s for a 64 MB word), which
    fastText does in C."""
    limit = fasttext_tokens.LONG_TOKEN
    long = np.flatnonzero(pc.greater(pc.binary_length(lines), limit).to_numpy(zero_copy_only=False))
    if not len(long):
        return long
    tokens = pc.ascii_split_whitespace(lines.take(pa.array(long)))
    per = pc.list_value_length(tokens).to_numpy(zero_copy_only=False).astype(np.int64)
    size = pc.binary_length(pc.list_flatten(tokens)).to_numpy(zero_copy_only=False)
    return long[np.unique(np.repeat(np.arange(len(long)), per)[size > limit])]


def supports(model) -> bool:
    """Whether `FastTextLID` reproduces this model (else fastText itself scores it)."""
    a = model.f.getArgs()
    return (a.model.name == "supervised" and a.loss.name == "hs" and a.wordNgrams == 1
            and not (model.f.isQuant() and a.qout) and model.get_word_id(EOS) >= 0
            and len(model.get_labels()) >= 2)


def huffman_tree(counts: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, parent) of fastText's Huffman tree over labels with these counts (sorted by
    count, descending, as fastText's dictionary holds them): `HierarchicalSoftmaxLoss::buildTree`.
    Nodes 0..n-1 are the labels, n..2n-2 the inner nodes, 2n-2 the root."""
    n = len(counts)
    count = [int(c) for c in counts] + [10**15] * (n - 1)
    left, right, parent = np.full(2 * n - 1, -1), np.full(2 * n - 1, -1), np.full(2 * n - 1, -1)
    leaf, node = n - 1, n
    for i in range(n, 2 * n - 1):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
        parent[mini[0]] = parent[mini[1]] = i
    return left, right, parent


def _csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]):
    """scipy's CSR matrix. scipy is imported here, on first use, not with the module: every
    process that lists the stages imports this module (`refinery run`'s driver, `refinery
    report`, `refinery stages`), and scipy.sparse costs about 0.07-0.09 CPU-s that only a process
    that scores languages needs."""
    from scipy.sparse import csr_matrix

    return csr_matrix((data, indices, indptr), shape=shape)


class FastTextLID(TokenMemo):
    """fastText's `predict(lines, k)` for a hierarchical-softmax model, memoised per token."""

    FIELDS = ("sum", "count")

    def __init__(self, model, path: str | Path):
        a = model.f.getArgs()
        self.model = model
        self.minn, self.maxn, self.bucket = a.minn, a.maxn, a.bucket
        words = model.get_words()
        self.nwords = len(words)
        labels, counts = model.get_labels(include_freq=True)
        self.labels = list(labels)
        rows, out, prune = read_matrices(path)  # quantised rows decoded as fastText decodes them
        self.dim = rows.shape[1]
        # each row and, last, its largest magnitude: summed alongside, it bounds fastText's float32 rounding
        self.rows = np.hstack((rows, np.abs(rows).max(axis=1, keepdims=True))).astype(np.float64)
        # bucket id -> input row (-1: pruned, no feature)
        self.bucket_row = None if prune is None else np.where(prune >= 0, prune + self.nwords, -1)
        n = len(self.labels)
        self.left, self.right, parent = huffman_tree(counts)
        self.inner = out[: n - 1].astype(np.float64)  # inner node i's row is i - n (fastText's node - osz_)
        self.inner_l1 = np.abs(self.inner).sum(axis=1)
        self.inner_l2 = np.sqrt((self.inner ** 2).sum(axis=1))
        self.order = np.arange(2 * n - 2, n - 1, -1)  # inner nodes, root first (parents are numbered higher)
        self.leaf_parent = parent[:n]
        self.depth = np.zeros(2 * n - 1, np.int64)
        for node in self.order:
            self.depth[self.left[node]] = self.depth[self.right[node]] = self.depth[node] + 1
        # sum of the token's rows (and of their magnitudes); count: their number (-1: no feature, "" or a label)
        self._start_memo(pa.array(words, pa.large_string()), MEMO_SIZE,
                         {"sum": (np.float64, (self.dim + 1,)), "count": (np.int64, ())})
        self.eos = words.index(EOS)
        self.sum[self.eos], self.count[self.eos], self.ready[self.eos] = self.rows[self.eos], 1, True  # no n-grams
        self.fallbacks = 0  # lines handed to fastText (ties, invalid Unicode)

    # -- per distinct token --------------------------------------------------------------------
    def _features(self, tokens: pa.Array, wids: np.ndarray, h32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sum of rows, number of rows) of each token; `wids`: vocabulary id or -1 (`h32` unused)."""
        total = np.zeros((len(tokens), self.dim + 1))
        known = wids >= 0
        total[known] = self.rows[wids[known]]
        count = known.astype(np.int64)
        if self.maxn > 0 and len(tokens):
            s, c = ngram_sums(self._ngrams, tokens, self.maxn, (self.dim + 1,))
            total += s
            count += c
        skip = pc.or_(pc.equal(pc.binary_length(tokens), 0), pc.starts_with(tokens, LABEL_PREFIX))
        count[skip.to_numpy(zero_copy_only=False)] = -1
        return total, count

    def _ngrams(self, marked: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Sum and number of the character n-gram rows of every "<token>" (`computeSubwords`):
        for each start code point, n = 1..maxn code points, those of length >= minn, not a lone
        "<" or ">"; id = hash % bucket, through the pruning index if any (pruned: no feature)."""
        raw, offsets = _utf8(marked)
        nt = len(offsets) - 1
        ascii_only = bool(raw.max() < 128)
        lead = np.arange(len(raw)) if ascii_only else np.flatnonzero((raw & 0xC0) != 0x80)
        first_cp = np.searchsorted(lead, offsets)  # token i's code points: first_cp[i]..first_cp[i + 1]
        ncp = np.diff(first_cp)
        end = np.repeat(first_cp[1:], ncp)  # per code point: one past its token's last
        cps = np.arange(len(lead))
        remaining = end - cps
        is_first = cps == np.repeat(first_cp[:-1], ncp)
        sb = _signed(np.concatenate((raw, np.zeros(4, np.uint8))))
        cp_len = None if ascii_only else np.diff(np.concatenate((lead, [len(raw)])))
        h = np.full(len(lead), _FNV_OFFSET, np.uint32)
        owner = np.repeat(np.arange(nt), ncp)  # per code point: its token
        total, count = np.zeros((nt, self.dim + 1)), np.zeros(nt, np.int64)
        prime, bucket = np.uint32(_FNV_PRIME), np.uint32(self.bucket)
        for n in range(1, self.maxn + 1):
            act = np.flatnonzero(remaining >= n)  # start code points with an n-th code point
            if not len(act):
                break
            at = lead[act + (n - 1)]
            hh = (h[act] ^ sb[at]) * prime
            if not ascii_only:  # the added code point's further bytes
                bl = cp_len[act + (n - 1)]
                for j in range(1, int(bl.max(initial=0))):
                    m = np.flatnonzero(bl > j)
                    hh[m] = (hh[m] ^ sb[at[m] + j]) * prime
            h[act] = hh
            if n < self.minn:
                continue
            ids = (hh % bucket).astype(np.int64)
            row = ids + self.nwords if self.bucket_row is None else self.bucket_row[ids]
            ok = row >= 0
            if n == 1:  # fastText skips a lone "<" or ">"
                ok &= ~(is_first[act] | (remaining[act] == 1))
            tok = owner[act[ok]]  # ascending: a CSR matrix (token x row) without sorting
            per = np.bincount(tok, minlength=nt)
            count += per
            indptr = np.concatenate(([0], np.cumsum(per)))
            total += _csr(np.ones(len(tok)), row[ok], indptr, (nt, len(self.rows))) @ self.rows
        return total, count

    # -- per line ------------------------------------------------------------------------------
    def hidden(self, lines: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """fastText's hidden vector per line (the mean of its features' input rows, "</s>" included),
        the number of features and the mean of their rows' largest magnitudes."""
        words, tok, per_line = line_token_ids(lines)
        n = len(per_line)
        idx = self._lookup(words)
        tok = tok.astype(np.int64)
        d_count = self.count[idx]
        line_of = np.repeat(np.arange(n), per_line)
        keep = d_count[tok] >= 0  # "" and "__label__..." are no features
        indptr = np.concatenate(([0], np.cumsum(np.bincount(line_of[keep], minlength=n))))
        m = _csr(np.ones(len(indptr) and int(indptr[-1])), tok[keep], indptr, (n, len(idx)))
        total = m @ self.sum[idx] + self.sum[self.eos]
        count = m @ d_count.astype(np.float64) + 1  # + "</s>"
        mean = total / count[:, None]
        return mean[:, : self.dim], count, mean[:, self.dim]

    def predict(self, lines: Sequence[str], k: int = 1) -> tuple[list[list[str]], list[np.ndarray]]:
        """(labels, probabilities) per line, best first, as fastText's `predict(lines, k)` returns them."""
        if not len(lines):
            return [], []
        try:
            arr = pa.array(lines, pa.large_string())
        except (UnicodeEncodeError, pa.ArrowException):  # not valid Unicode: fastText raises, as before
            arr = None
        if arr is None or pc.any(pc.match_substring(arr, "\n")).as_py():  # fastText refuses a newline
            self.fallbacks += len(lines)
            return self.model.predict(list(lines), k=k)
        k = min(k, len(self.labels))
        labels_out, probs_out = [], []
        step = 4096  # lines per pass: bounds the per-line arrays
        for s in range(0, len(arr), step):
            sub = arr.slice(s, step)
            huge = _long_token_lines(sub)
            if len(huge):  # scored by fastText below; blanked here so their tokens are never vectorised
                mask = np.zeros(len(sub), bool)
                mask[huge] = True
                sub = pc.if_else(pa.array(mask), pa.scalar("", pa.large_string()), sub)
            lab, pr = self._top_k(*self.hidden(sub), k)
            for i in huge:
                lab[i] = None
            bad = [i for i, x in enumerate(lab) if x is None]
            if bad:
                self.fallbacks += len(bad)
                fl, fp = self.model.predict([lines[s + i] for i in bad], k=k)
                for i, a, b in zip(bad, fl, fp):
                    lab[i], pr[i] = a, b
            labels_out += lab
            probs_out += pr
        return labels_out, probs_out

    def _top_k(self, hidden: np.ndarray, nfeat: np.ndarray, mag: np.ndarray, k: int) -> tuple[list, list]:
        """`HierarchicalSoftmaxLoss::predict` per line; None where fastText's float32 rounding could
        give another answer. `nfeat`, `mag`: number of features and mean largest row magnitude."""
        n, lines = len(self.labels), len(hidden)
        # fastText sums the rows in float32, so its x = w . hidden of an inner node differs from this
        # one by at most dh * |w|_2 (KAPPA, REPEAT), plus its dot product's and expf's rounding
        x = hidden @ self.inner.T  # (lines, inner nodes), column node - n
        dh = (KAPPA * np.sqrt(nfeat) + REPEAT * nfeat) * _U32 * mag
        dx = (dh[:, None] * self.inner_l2[None, :] + 32 * _U32 * np.abs(hidden).max(axis=1)[:, None]
              * self.inner_l1[None, :] + 4 * _U32 * (1.0 + np.abs(x)))

        def steps(z):  # as fastText: f = 1. / (1 + expf(-z)), the sum in float32 (`1` is an int), the
            # quotient in double, f stored as float32; std_log(p) = log(float32(p) + 1e-5) as float32
            with np.errstate(over="ignore"):
                e = np.exp(-z).astype(np.float32)
            f = (1.0 / (np.float32(1.0) + e).astype(np.float64)).astype(np.float32).astype(np.float64)
            left = np.log((1.0 - f).astype(np.float32).astype(np.float64) + 1e-5).astype(np.float32)
            return left, np.log(f + 1e-5).astype(np.float32)

        left, right = steps(x)
        (l_lo, r_lo), (l_hi, r_hi) = steps(x - dx), steps(x + dx)
        # how far fastText's step may be from this one (its x anywhere in x +- dx)
        u_left = np.maximum(np.abs(l_lo - left), np.abs(l_hi - left)).astype(np.float64).T
        u_right = np.maximum(np.abs(r_lo - right), np.abs(r_hi - right)).astype(np.float64).T
        up_left, up_right = np.maximum(l_lo, l_hi).T > 0, np.maximum(r_lo, r_hi).T > 0
        left, right = left.T, right.T
        score = np.empty((2 * n - 1, lines), np.float32)  # per node, as fastText's float32 sums from the root
        low = np.empty_like(score)  # lowest score on the path from the root to the node, inclusive
        unc = np.empty((2 * n - 1, lines))  # how far fastText's score of the node may be from this one
        gain = np.zeros((2 * n - 1, lines), bool)  # a step on the path may add score (log(p + 1e-5) > 0)
        root = 2 * n - 2
        score[root] = low[root] = unc[root] = 0.0
        for node in self.order:
            c = node - n
            for child, step, u, up in ((self.left[node], left[c], u_left[c], up_left[c]),
                                       (self.right[node], right[c], u_right[c], up_right[c])):
                score[child] = score[node] + step
                low[child] = np.minimum(low[node], score[child])
                unc[child] = unc[node] + u
                gain[child] = gain[node] | up
        # where a step differs, each float32 sum below it may round the other way: one ulp per level
        unc += np.where(unc > 0, self.depth[:, None] * np.spacing(np.abs(score) + np.float32(1.0)), 0.0)
        floor = np.float32(np.log(1e-5))  # std_log(threshold 0): fastText never goes below it
        leaf, leaf_low, leaf_unc = score[:n].T, low[:n].T, unc[:n].T
        ranked = np.where(leaf_low >= floor, leaf, -np.inf)
        top = np.argsort(-ranked, axis=1, kind="stable")[:, : k + 1]
        at = np.arange(lines)[:, None]
        best = ranked[at, top]
        best_unc = leaf_unc[at, top]
        if best.shape[1] <= k:  # k = every label: no (k + 1)-th
            best = np.concatenate((best, np.full((lines, 1), -np.inf, np.float32)), axis=1)
            best_unc = np.concatenate((best_unc, np.zeros((lines, 1))), axis=1)
        kk = np.minimum(np.isfinite(best[:, :k]).sum(axis=1), k)  # fastText returns fewer above the floor
        last = np.maximum(kk - 1, 0)
        kth = np.where(kk > 0, best[np.arange(lines), last], floor).astype(np.float64)
        kth_unc = np.where(kk > 0, best_unc[np.arange(lines), last], 0.0)
        j = np.arange(k)[None, :]
        b64 = best.astype(np.float64)
        with np.errstate(invalid="ignore"):
            gaps = b64[:, :k] - b64[:, 1:]  # -inf - -inf: nan, never a tie
        tie = ((gaps <= best_unc[:, :k] + best_unc[:, 1:]) & (j < kk[:, None])).any(axis=1)
        # fastText's search skips an inner node scoring below the k-th best leaf found so far; a best
        # leaf x is lost that way only if an ancestor of x scores below the (k + 1)-th best leaf
        # (the k leaves in the heap then are not x) and a step below it adds score
        nxt = best[:, k].astype(np.float64)
        nxt_unc = best_unc[:, k]
        parents = self.leaf_parent[top[:, :k]]
        pruned = ((low[parents, at] < nxt[:, None] + unc[parents, at] + nxt_unc[:, None])
                  & gain[top[:, :k], at] & (j < kk[:, None])).any(axis=1)
        near_floor = ((np.abs(leaf_low.astype(np.float64) - floor) <= leaf_unc)
                      & ((kk < k)[:, None] | (leaf + leaf_unc >= kth[:, None] - kth_unc[:, None])))
        doubtful = tie | pruned | near_floor.any(axis=1)
        probs = np.exp(best[:, :k].astype(np.float64))
        labels_out: list = []
        probs_out: list = []
        for i in range(lines):
            if doubtful[i]:
                labels_out.append(None)
                probs_out.append(None)
            else:
                labels_out.append([self.labels[x] for x in top[i, : kk[i]]])
                probs_out.append(probs[i, : kk[i]])
        return labels_out, probs_out
