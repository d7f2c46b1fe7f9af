"""Big documents are tokenised piece by piece (stages/dedup/minhash.py STREAM_CHARS): the same
words, n-grams, signatures and shingle sets as the whole text at once, and memory that follows
the piece."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.dedup import minhash as mh

ALPHABET = st.sampled_from(list("ab cΣσςdé\u0301\n\t\r.,_-") + ["ΟΔΟΣ ", "x" * 7, " ", "İ", "ﬁ", "\u00a0", "\u2003"])


@settings(max_examples=300, deadline=None)
@given(text=st.lists(ALPHABET, max_size=80).map("".join), size=st.integers(1, 12), n=st.integers(1, 5))
def test_pieces_give_the_same_words_and_ngrams(text, size, n):
    pieces = list(mh.text_pieces(text, size))
    assert "".join(pieces) == text
    assert [w for p in pieces for w in mh.words(p)] == mh.words(text)
    grams = [g for part in mh.ngram_pieces(text, n, size) for g in part]
    want = list(mh.word_ngrams(text, n))
    if len(text) > size:
        assert sorted(set(grams)) == sorted(set(want)) and len(grams) == len(want)
    else:
        assert grams == want


@settings(max_examples=60, deadline=None)
@given(text=st.lists(ALPHABET, max_size=200).map("".join), size=st.integers(1, 30), n=st.integers(1, 5))
def test_streamed_signature_and_set_equal_the_whole_text(text, size, n):
    a, b = mh.permutations(16)
    whole_sig = mh.signatures([mh.shingles(text, n)], a, b)
    whole_set = mh.shingle_set64(text, n)
    old = mh.STREAM_CHARS
    mh.STREAM_CHARS = size
    try:
        assert np.array_equal(mh.text_signatures([text, "x y", None], n, a, b)[0], whole_sig[0])
        assert np.array_equal(mh.shingle_set64(text, n), whole_set)
    finally:
        mh.STREAM_CHARS = old


MEASURE = """
import sys, numpy as np
from stages.dedup import minhash as mh
def hwm(f):
    for line in open("/proc/self/status"):
        if line.startswith(f + ":"):
            return int(line.split()[1]) * 1024
rng = np.random.default_rng(0)
vocab = [f"w{k}" for k in range(50_000)]
text = " ".join(vocab[k] for k in rng.integers(0, 50_000, 1_200_000))
a, b = mh.permutations(112)
for what in ("sig", "set"):
    open("/proc/self/clear_refs", "w").write("5")
    base = hwm("VmRSS")
    mh.text_signatures([text], 5, a, b) if what == "sig" else mh.shingle_set64(text, 5)
    print(what, (hwm("VmHWM") - base) / len(text))
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc peak-RSS reset")
def test_a_big_document_signs_and_sets_within_a_few_bytes_per_byte():
    """An 8 MB document in a fresh process: peak RSS above the text, per input byte, for its
    signature (the whole-text path: ~38) and its verification set (~17)."""
    out = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, check=True,
                         env=dict(os.environ)).stdout.split()
    got = dict(zip(out[::2], map(float, out[1::2])))
    assert got["sig"] < 4 and got["set"] < 6, got


@settings(max_examples=60, deadline=None)
@given(text=st.lists(ALPHABET, max_size=300).map("".join), size=st.integers(1, 30), n=st.integers(1, 3),
       slice_=st.integers(1, 9))
def test_set_compaction_in_slices_equals_np_unique(text, size, n, slice_):
    """shingle_set64 of a big text compacts its sorted hashes in place, slice by slice (a repeat
    may straddle two slices)."""
    want = np.unique(np.fromiter(map(mh.xxhash.xxh3_64_intdigest, mh.word_ngrams(text, n)), dtype=np.uint64))
    old = mh.STREAM_CHARS, mh._SLICE
    mh.STREAM_CHARS, mh._SLICE = size, slice_
    try:
        assert np.array_equal(mh.shingle_set64(text, n), want)
    finally:
        mh.STREAM_CHARS, mh._SLICE = old


@settings(max_examples=100, deadline=None)
@given(a=st.sets(st.integers(0, 60)), b=st.sets(st.integers(0, 60)), slice_=st.integers(1, 7))
def test_jaccard_of_big_sets_in_slices_equals_intersect1d(a, b, slice_):
    x, y = np.array(sorted(a), dtype=np.uint64), np.array(sorted(b), dtype=np.uint64)
    want = mh.jaccard_sorted(x, y)
    old = mh._BIG_SET, mh._SLICE
    mh._BIG_SET, mh._SLICE = 0, slice_
    try:
        assert mh.jaccard_sorted(x, y) == want
    finally:
        mh._BIG_SET, mh._SLICE = old


# near_duplicates (annotate, spill, the whole global step with the sweep) on three texts of about
# 8 MB, two of them near-copies, in a fresh process: peak RSS above the texts per input byte.
WHOLE_PATH = """
import numpy as np
from stages.dedup.near import near_duplicates
def kb(f):
    for line in open("/proc/self/status"):
        if line.startswith(f + ":"):
            return int(line.split()[1]) * 1024
rng = np.random.default_rng(0)
vocab = [f"w{k}" for k in range(50_000)]
words = [vocab[k] for k in rng.integers(0, 50_000, 1_150_000)]
copy = list(words)
for j in rng.choice(len(copy), len(copy) // 100, replace=False):
    copy[j] = "zz"
texts = [" ".join(words), " ".join(copy), " ".join(vocab[k] for k in rng.integers(0, 50_000, 1_150_000))]
del words, copy
open("/proc/self/clear_refs", "w").write("5")
base = kb("VmRSS")
res = near_duplicates(texts)
print(res.kept, (kb("VmHWM") - base) / sum(map(len, texts)))
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc peak-RSS reset")
def test_near_duplicates_of_big_documents_within_a_few_bytes_per_byte():
    """The whole in-process path on 24 MB of big documents: ~14.9 bytes of RSS per input byte
    before (whole text columns read and converted at once, sets concatenated and re-encoded by
    Parquet, allocators keeping freed memory between waves), ~5.6 now (docs/dedup.md)."""
    out = subprocess.run([sys.executable, "-c", WHOLE_PATH], capture_output=True, text=True, check=True,
                         env=dict(os.environ)).stdout.strip()
    kept, per_byte = out.rsplit(" ", 1)
    assert kept == "[0, 2]"
    assert float(per_byte) < 8, out
