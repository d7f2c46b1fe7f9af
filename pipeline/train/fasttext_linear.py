"""Rewrite a two-label fastText classifier as the same model with one dimension.

Why: for two labels fastText's P(toxic) is softmax(B h)[toxic] = sigmoid((b_toxic - b_clean) . h),
and h is the mean of the input rows of the line's features (words, word bigrams, character n-grams).
So P(toxic) = sigmoid(mean over features of s_r) with one scalar per row, s_r = row_r . (b_toxic -
b_clean). Written as a fastText model with dim 1 (input rows s_r, output rows 1 for the toxic label
and 0 for the other), fastText predicts the same probabilities (to float rounding, tested), but adds
one float per feature instead of decoding a 16-dimensional product-quantised row: 1.6-2x faster
prediction (docs/measurements/2026-11-28-toxicity.md, "Speed"), and the file stays small (4 bytes per row). The toxicity trainer
quantises first and rewrites the quantised model, so every measured number of the quantised model
holds for the shipped one (quantisation happened to regularise: the unquantised model of the same
data rejected more neutral French sentences about groups, 14.1% against 10.9%).

The file layout is fastText's own (.bin): magic, version, arguments (dim is the first), dictionary,
then the input and output matrices; only `dim` and the two matrices change.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

_ARGS = 8 + 12 * 4 + 8  # magic + version, 12 int32 arguments, one double


def dictionary_end(buf: bytes) -> int:
    """Byte offset just after the dictionary (and its pruning index) of a fastText model file."""
    off = _ARGS
    size, _nwords, _nlabels = struct.unpack_from("<iii", buf, off)
    off += 12
    _ntokens, prune = struct.unpack_from("<qq", buf, off)
    off += 16
    for _ in range(size):
        off = buf.index(b"\0", off) + 1 + 8 + 1  # word, count (int64), type (int8)
    return off + max(prune, 0) * 8


def to_linear(src: Path, dst: Path, positive: str = "__label__toxic") -> int:
    """Write `src` (a two-label fastText model, quantised or not) as the equivalent dim-1 model at
    `dst`. A quantised input matrix is decoded row by row, so the result predicts what the quantised
    model predicts. Returns the number of input rows."""
    from stages._fasttext import load_model

    model = load_model(src)
    labels = list(model.get_labels())
    if len(labels) != 2 or positive not in labels:
        raise ValueError(f"{src}: needs exactly two labels including {positive}, has {labels}")
    pos, neg = labels.index(positive), 1 - labels.index(positive)
    buf = Path(src).read_bytes()
    dim = model.get_dimension()
    if model.f.isQuant():
        # The output matrix is stored last and dense unless the model was quantised with qout.
        tail = len(buf) - 2 * dim * 4
        if buf[tail - 17] != 0 or struct.unpack_from("<qq", buf, tail - 16) != (2, dim):
            raise ValueError(f"{src}: output matrix is quantised (qout); not supported")
        out = np.frombuffer(buf, "<f4", 2 * dim, tail).reshape(2, dim)
        nrows = len(model.get_words()) + model.f.getArgs().bucket
        inp = np.array([model.get_input_vector(i) for i in range(nrows)], dtype=np.float32)
    else:
        inp = model.get_input_matrix()
        out = model.get_output_matrix()
    s = (inp.astype(np.float64) @ (out[pos].astype(np.float64) - out[neg].astype(np.float64))).astype("<f4")
    head = bytearray(buf[:dictionary_end(buf)])
    struct.pack_into("<i", head, 8, 1)  # args.dim
    new_out = np.zeros((2, 1), "<f4")
    new_out[pos, 0] = 1.0
    return _write_linear(dst, bytes(head), s, new_out)


def _write_linear(dst: Path, head: bytes, rows: np.ndarray, out: np.ndarray) -> int:
    """A one-dimensional model file: `head` (arguments with dim 1, dictionary), the input rows and
    the 2 x 1 output matrix, neither quantised. Returns the rows."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "wb") as f:
        f.write(head)
        f.write(b"\0" + struct.pack("<qq", len(rows), 1) + rows.astype("<f4").tobytes())
        f.write(b"\0" + struct.pack("<qq", 2, 1) + out.astype("<f4").tobytes())
    return len(rows)


def average_linear(srcs: list[Path], dst: Path) -> int:
    """Write the mean of one-dimensional models (to_linear's output) trained on the same examples with
    different seeds as one model at `dst`: P = sigmoid(mean over models of the mean over features of
    s_r) = sigmoid(mean over features of the rows' means), so one model of the same size and speed
    predicts exactly what the models' mean logit does. Why: on text unlike any training line (a
    web page's one-word menu item, a name) a single run's score is mostly its random initialisation
    and the order it saw the lines in (one seed rejected 8.9% of clean crawl pages, another 4.8%);
    the mean of several runs keeps what they agree on. Rows are matched by word (a dictionary's order
    of equally frequent words can differ between runs); bucket rows by index. Returns the rows."""
    from stages._fasttext import load_model

    ref = load_model(srcs[0])
    words = list(ref.get_words())
    nwords = len(words)
    total = np.zeros(ref.get_input_matrix().shape[0], dtype=np.float64)
    for src in srcs:
        m = load_model(src)
        if list(m.get_labels()) != list(ref.get_labels()) or m.get_dimension() != 1:
            raise ValueError(f"{src}: not a one-dimensional model with the labels of {srcs[0]}")
        inp = m.get_input_matrix()[:, 0].astype(np.float64)
        if inp.shape[0] != total.shape[0] or sorted(m.get_words()) != sorted(words):
            raise ValueError(f"{src}: another dictionary than {srcs[0]}")
        at = {w: i for i, w in enumerate(m.get_words())}
        order = np.fromiter((at[w] for w in words), dtype=np.int64, count=nwords)
        total[:nwords] += inp[order]
        total[nwords:] += inp[nwords:]
    buf = Path(srcs[0]).read_bytes()
    out = np.frombuffer(buf, "<f4", 2, len(buf) - 8).reshape(2, 1)  # the 2 x 1 output matrix, stored last
    return _write_linear(dst, buf[:dictionary_end(buf)], total / len(srcs), out)
