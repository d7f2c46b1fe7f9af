"""stages/_fasttext_tokens.py: fastText's hashes, n-gram sums in bounded pieces, the per-token memo."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

import stages._fasttext_tokens as ft
from stages._fasttext_tokens import TokenMemo, fnv, fnv64, ngram_sums, word_hashes


def test_hashes_are_fasttexts():
    # values from fastText's Dictionary::hash (signed chars: "é" and "你" exercise bytes >= 128)
    assert fnv("") == 2166136261 and fnv("abc") == 440920331 and fnv("été") == 200187927
    tokens = ["abc", "été", "你好", "x" * 300, "", "a"]
    h32, h64, lens = word_hashes(pa.array(tokens, pa.large_string()))
    assert h32.tolist() == [fnv(t) for t in tokens]
    assert h64.tolist() == [fnv64(t) for t in tokens] and fnv64("a") == 0xaf63dc4c8601ec8c  # FNV-1a 64 of "a"
    assert lens.tolist() == [len(t.encode()) for t in tokens]


def test_has_byte_looks_at_the_arrays_own_strings_only():
    """`line_tokens` asks `has_byte` before Arrow's exact NUL and "</s>" handling: a slice's bytes
    only, in either offset width, and any answer for a layout it does not read is "maybe" (True)."""
    from stages._fasttext_tokens import has_byte, line_tokens

    for t in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        arr = pa.array(["a\0b", "cd", "e<", "f"], t)
        assert has_byte(arr, 0) and has_byte(arr, ord("<"))
        assert not has_byte(arr.slice(1, 1), 0) and not has_byte(arr.slice(1, 1), ord("<"))
        assert has_byte(arr.slice(2), ord("<")) and not has_byte(arr.slice(2), 0) and not has_byte(arr.slice(4), 0)
        assert not has_byte(pa.array([], t), 0) and not has_byte(pa.array([None, ""], t), 0)
    assert has_byte(pa.array(["a"], pa.string_view()), 0)
    tokens, per_line = line_tokens(pa.array(["x\0y </s> z", "p q", "a</s>b"], pa.large_string()).slice(0, 3))
    assert tokens.to_pylist() == [["x", "y"], ["p", "q"], ["a</s>b"]] and per_line.tolist() == [2, 2, 1]


def test_mod_is_the_remainder_for_every_unsigned_value():
    rng = np.random.default_rng(3)
    for dt in (np.uint32, np.uint64):
        top = np.iinfo(dt).max
        x = np.concatenate((rng.integers(0, top, 10_000, dtype=dt, endpoint=True), np.array([0, 1, top, top - 1], dt)))
        for b in (1, 7, 200_000, 2_000_000, int(top)):
            assert (ft.mod(x, b) == x % dt(b)).all() and ft.mod(x, b).dtype == dt


def reference_ngrams(minn: int, maxn: int):
    """A scorer's `_ngrams` written plainly: per marked token, the sum of a value per n-gram
    (fastText's rule: minn..maxn code points, no lone "<" or ">") and their number; and every piece
    it was given."""
    seen: list[list[str]] = []

    def ngrams(marked: pa.Array):
        toks = marked.to_pylist()
        seen.append(toks)
        total, count = np.zeros(len(toks)), np.zeros(len(toks), np.int64)
        for i, t in enumerate(toks):
            for s in range(len(t)):
                for n in range(max(minn, 1), maxn + 1):
                    if s + n > len(t) or (n == 1 and (s == 0 or s == len(t) - 1)):
                        continue
                    total[i] += fnv(t[s : s + n]) % 1000 / 7
                    count[i] += 1
        return total, count

    return ngrams, seen


def test_windows_give_the_sums_of_the_whole_token_for_any_minn(monkeypatch):
    """A token over LONG_TOKEN bytes is summed in windows: the same sums and numbers as one pass over
    the whole token, also with minn 1, where a lone "<" and ">" are left out (which a window's first
    and last code points must not lose); no piece is longer than a window, no call holds more than
    CHUNK_BYTES (or one piece)."""
    rng = random.Random(3)
    tokens = ["a" * 40, "é你x" * 9 + "b", "xy" * 8 + "z", "w" * 17, "ab", "", "q"]
    tokens += ["".join(rng.choice("ab€") for _ in range(rng.randint(1, 60))) for _ in range(30)]
    arr = pa.array(tokens, pa.large_string())
    for minn, maxn in ((1, 4), (2, 4), (3, 5), (1, 1), (1, 2), (2, 3)):
        whole = ngram_sums(reference_ngrams(minn, maxn)[0], arr, maxn)
        monkeypatch.setattr(ft, "LONG_TOKEN", 5)
        monkeypatch.setattr(ft, "CHUNK_BYTES", 24)
        ngrams, seen = reference_ngrams(minn, maxn)
        windowed = ngram_sums(ngrams, arr, maxn)
        monkeypatch.undo()
        assert np.array_equal(whole[1], windowed[1]) and np.abs(whole[0] - windowed[0]).max() < 1e-9
        assert max(len(t) for call in seen for t in call) <= 5 + max(maxn - 1, 2)
        assert all(len(call) == 1 or sum(len(t.encode()) for t in call) <= 24 for call in seen)


class LengthMemo(TokenMemo):
    """A memo whose one feature is a token's length, counting the tokens it computes."""

    FIELDS = ("value",)

    def __init__(self, words: list[str], memo_size: int):
        self.computed: list[str] = []
        self._start_memo(pa.array(words, pa.large_string()), memo_size, {"value": (np.float64, ())})

    def _features(self, tokens, wids, h32):
        self.computed += tokens.to_pylist()
        return (pc_lengths(tokens) + 0.5,)


def pc_lengths(tokens: pa.Array) -> np.ndarray:
    return np.array([len(t) for t in tokens.to_pylist()], np.float64)


def test_the_memo_computes_each_token_once_and_starts_again_when_full():
    memo = LengthMemo(["the", "a", "word"], memo_size=4)
    rows = memo._lookup(pa.array(["a", "new", "the", "other"], pa.large_string()))
    assert memo.value[rows].tolist() == [1.5, 3.5, 3.5, 5.5] and rows[0] == 1 and rows[2] == 0
    assert memo.computed == ["a", "the", "new", "other"]  # vocabulary words when first met, then new ones
    again = memo._lookup(pa.array(["other", "new", "a"], pa.large_string()))
    assert again.tolist() == [rows[3], rows[1], rows[0]] and len(memo.computed) == 4  # nothing computed again
    memo._lookup(pa.array(["x1", "x2", "x3"], pa.large_string()))  # 2 + 3 > 4: starts again
    assert memo.size == memo.nwords + 3 and len(memo.computed) == 7
    big = [f"t{i}" for i in range(9)]  # more new tokens than the memo holds: grown for this batch
    rows = memo._lookup(pa.array(big, pa.large_string()))
    assert memo.value[rows].tolist() == [2.5] * 9 and len(memo.length) == memo.nwords + 9
    memo.forget()
    assert len(memo.length) == memo.nwords + 4 and memo.size == memo.nwords
    assert memo._lookup(pa.array(["a"], pa.large_string())).tolist() == [1] and memo.computed[-1] == "t8"  # kept
