"""MinHash signatures: bit-identical to datasketch; tokenisation, band keys and Jaccard helpers."""
from __future__ import annotations

import random

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH

from stages.dedup import minhash as mh
def reference(shingles, num_perm, seed, scheme):
    m = MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
    for s in shingles:
        m.update(s)
    return m.hashvalues.astype(np.uint64)


def test_ascii_fast_path_equals_regex_rule():
    every_ascii = "".join(chr(c) for c in range(128)) * 2 + " Mixed_case-Words, 42x!"
    assert mh.words(every_ascii) == mh._NON_WORD.sub(" ", every_ascii.lower()).split()
    assert mh.words("a\x00b\x7fc_d") == ["a", "b", "c", "d"]


def test_words_and_shingles():
    assert mh.words("Hello, World! It's  e\u0301t\u00e9_time.") == ["hello", "world", "it", "s", "\u00e9t\u00e9", "time"]
    assert mh.shingles(None) == [] and mh.shingles("") == [] and mh.shingles(" ,;- ") == []
    assert mh.shingles("Just three words", 5) == [b"just three words"]  # shorter than n: one shingle
    sh = mh.shingles("a b c a b c a b", 3)
    assert sh == [b"a b c", b"b c a", b"c a b"]  # distinct, in order of first occurrence
    assert mh.shingles("Der Bär, der Bär!", 2) == ["der bär".encode(), "bär der".encode()]


@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
def test_identical_to_datasketch_handwritten(scheme):
    docs = ["the quick brown fox jumps over the lazy dog again and again", "", "one two", "x " * 3]
    a, b = mh.permutations(64, 42, scheme)
    ref_a, ref_b = MinHash(num_perm=64, seed=42, scheme=scheme).permutations
    assert (a.astype(np.uint64) == ref_a.astype(np.uint64)).all() and (b.astype(np.uint64) == ref_b.astype(np.uint64)).all()
    sigs = mh.signatures([mh.shingles(d, 3) for d in docs], a, b, scheme)
    for d, sig in zip(docs, sigs):
        assert (sig.astype(np.uint64) == reference(mh.shingles(d, 3), 64, 42, scheme)).all()
    assert (sigs[1] == mh.EMPTY).all()


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
def test_identical_to_datasketch_on_real_text(corpora, scheme):
    text = (corpora / "quality" / "wikitext2_valid.tokens.txt").read_text(encoding="utf-8")
    paras = [p for p in text.split("\n") if len(p.split()) > 20][:60]
    paras.append(text[:400_000])  # one document larger than a signature chunk (sliced path)
    shingle_lists = [mh.shingles(p) for p in paras]
    assert len(shingle_lists[-1]) > mh._CHUNK_SHINGLES
    a, b = mh.permutations(128, 1, scheme)
    sigs = mh.signatures(shingle_lists, a, b, scheme)
    for sh, sig in zip(shingle_lists[:-1], sigs):
        assert (sig.astype(np.uint64) == reference(sh, 128, 1, scheme)).all()
    m = MinHash(num_perm=128, seed=1, scheme=scheme)
    m.update_batch(shingle_lists[-1])
    assert (sigs[-1].astype(np.uint64) == m.hashvalues.astype(np.uint64)).all()


@pytest.mark.slow
def test_estimated_jaccard_tracks_true_jaccard(corpora):
    text = (corpora / "quality" / "wikitext2_test.tokens.txt").read_text(encoding="utf-8")
    words = text.split()[:3000]
    rng = random.Random(3)
    a, b = mh.permutations(256, 1)
    for _ in range(10):
        edited = [w if rng.random() > 0.05 else "zzz" for w in words]
        s1, s2 = " ".join(words), " ".join(edited)
        sig = mh.signatures([mh.shingles(s1), mh.shingles(s2)], a, b)
        true = mh.jaccard_sorted(mh.shingle_set64(s1), mh.shingle_set64(s2))
        assert abs(mh.estimated_jaccard(sig[0], sig[1]) - true) < 0.1


def test_jaccard_sorted():
    a, b = np.array([1, 2, 3, 4], np.uint64), np.array([3, 4, 5], np.uint64)
    assert mh.jaccard_sorted(a, b) == 2 / 5
    assert mh.jaccard_sorted(a, a) == 1.0
    assert mh.jaccard_sorted(np.zeros(0, np.uint64), np.zeros(0, np.uint64)) == 0.0
    s = mh.shingle_set64("a b c d e f g h", 2)
    assert s.size == 7 and (np.diff(s.astype(np.float64)) > 0).all()


@pytest.mark.slow
def test_optimal_bands_is_datasketchs():
    from datasketch.lsh import _optimal_param

    for t, n in [(0.5, 128), (0.8, 112), (0.9, 256)]:
        lsh = MinHashLSH(threshold=t, num_perm=n)
        assert mh.optimal_bands(t, n) == (lsh.b, lsh.r)
    # our quadrature against datasketch's scipy `quad`, over thresholds, sizes and weights
    for n in (32, 64, 128, 256):
        for t in [k / 100 for k in range(5, 100, 5)] + [0.72, 0.77, 0.83, 0.86]:
            assert mh.optimal_bands(t, n) == _optimal_param(t, n, 0.5, 0.5), (t, n)
    for fnw in (0.1, 0.3, 0.7, 0.9, 0.995):
        assert mh.optimal_bands(0.8, 128, fnw) == _optimal_param(0.8, 128, 1 - fnw, fnw)


def test_lsh_parameters_do_not_import_scipy():
    import subprocess
    import sys

    code = ("import sys; from stages.dedup import minhash as mh; mh.optimal_bands(0.8, 128); "
            "print('scipy' in sys.modules, 'datasketch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_band_keys():
    rng = np.random.default_rng(0)
    sigs = rng.integers(0, 2**32 - 1, size=(4, 16), dtype=np.uint32)
    sigs[1] = sigs[0]
    sigs[2] = sigs[0]
    sigs[2, 5] ^= 1  # band 1 (rows 4..7) differs
    sigs[3] = mh.EMPTY
    k = mh.band_keys(sigs, 4, 4)
    assert k.shape == (4, 4) and k.dtype == np.uint64
    assert (k[0] == k[1]).all()
    assert k[2, 1] != k[0, 1] and (np.delete(k[2], 1) == np.delete(k[0], 1)).all()
    assert (k[3] == 0).all() and (k[:3] != 0).all()
    same_bands = np.tile(sigs[0, :4], 4)[None, :]
    assert len(set(mh.band_keys(same_bands, 4, 4)[0].tolist())) == 4  # bands never share a key
    with pytest.raises(ValueError):
        mh.band_keys(sigs, 5, 4)


def test_shingle_set64_is_the_hash_set_of_the_shingles_bytes():
    """The set is taken from the n-grams without building `shingles`' distinct byte strings; it must
    be the same set: the xxh3 hashes of those UTF-8 bytes (non-ASCII, repeats, fewer words than n)."""
    import xxhash

    texts = ["", "   ", "!!", "one", "Ünïcode wörds, çafé: naïve — 東京 タワー", "a a a a a a a a a a",
             "the cat sat on the mat; the cat sat on the mat again. " * 3, "Straße STRASSE ǅ ﬁ ½ _x_ y"]
    for text in texts:
        for n in (1, 2, 5):
            want = np.unique(np.array([xxhash.xxh3_64_intdigest(s) for s in mh.shingles(text, n)], np.uint64))
            got = mh.shingle_set64(text, n)
            assert got.dtype == np.uint64 and np.array_equal(got, want), (text, n)
