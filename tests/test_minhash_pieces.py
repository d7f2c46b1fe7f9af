"""Big documents are tokenised piece by piece (stages/dedup/minhash.py STREAM_CHARS): the same
words, n-grams, signatures and shingle sets as the whole text at once, and memory that follows
the piece."""
from __future__ import annotations

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


@pytest.mark.slow
def test_a_big_document_signs_within_a_few_bytes_per_byte():
    """A 24 MB document: annotate's signature and the verification set identical to the
    unstreamed ones on a 2 MB prefix, and the peak of tracemalloc'd Python memory under 4 bytes per
    input byte (the whole-text path: ~20)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    vocab = [f"w{k}" for k in range(50_000)]
    text = " ".join(vocab[k] for k in rng.integers(0, 50_000, 4_000_000))
    a, b = mh.permutations(112)
    tracemalloc.start()
    mh.text_signatures([text], 5, a, b)
    mh.shingle_set64(text, 5)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 * len(text)
