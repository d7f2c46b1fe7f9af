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
