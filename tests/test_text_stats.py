"""Shared statistics against datatrove's own helper functions."""
from __future__ import annotations

from datatrove.pipeline.filters.gopher_repetition_filter import find_all_duplicate, find_top_duplicate, get_n_grams
from datatrove.pipeline.filters.gopher_repetition_filter import find_duplicates as dt_find_duplicates
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from stages.quality.text_stats import DocStats, find_duplicates
from stages.quality.word_tokenizer import ChunkTokenizer

TOK = ChunkTokenizer()


def stats_for(words: list[str]) -> DocStats:
    st_ = DocStats(" ".join(words), TOK)
    assert st_.words == words  # plain lowercase words tokenize to themselves
    return st_


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", "ccc", "the", "dog", "x"]), min_size=0, max_size=300))
def test_ngram_counts_match_datatrove(words):
    s = stats_for(words)
    for n in (2, 3, 4):
        grams = get_n_grams(words, n)
        assert s.top_ngram_chars(n) == (find_top_duplicate(grams) if grams else 0)
    for n in range(5, 11):
        assert s.dup_ngram_chars(n) == find_all_duplicate(words, n)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["", "a", "ab", "line", "x y"]), max_size=30))
def test_find_duplicates_matches_datatrove(items):
    assert find_duplicates(items) == dt_find_duplicates(items)


def test_top_ngram_tie_goes_to_first_seen():
    # "b b" and "a a" both occur twice; datatrove's Counter.most_common keeps the first one seen
    s = stats_for("b b x a a y b b z a a".split())
    assert s.top_ngram_chars(2) == len("b b") * 2


def test_views_are_computed_once():
    s = DocStats("a b\n\nc", TOK)
    assert s.splitlines is s.splitlines and s.paragraphs == ["a b", "c"]
    assert s.nl_lines == ["a b", "c"] and s.fw_lines == ["a b", "c"]
    assert s.words is s.words


def test_empty():
    s = DocStats("", TOK)
    assert s.words == [] and s.n_words == 0 and s.top_ngram_chars(2) == 0 and s.dup_ngram_chars(5) == 0
    assert s.paragraphs == [""] and s.nl_lines == [""] and s.fw_lines == [] and s.splitlines == []


@pytest.mark.parametrize("n", [5, 7, 10])
def test_long_repetition(n):
    words = ("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 " * 300).split()
    s = stats_for(words)
    assert s.dup_ngram_chars(n) == find_all_duplicate(words, n)


def test_small_and_large_paths_agree(monkeypatch):
    import stages.quality.text_stats as ts

    words = ("a b c d e f a b c d e f g " * 5 + "x y a b").split()
    small = stats_for(words)
    expect = ([small.top_ngram_chars(n) for n in (2, 3, 4)], [small.dup_ngram_chars(n) for n in range(5, 11)])
    monkeypatch.setattr(ts, "SMALL", 0)
    large = stats_for(words)
    assert ([large.top_ngram_chars(n) for n in (2, 3, 4)], [large.dup_ngram_chars(n) for n in range(5, 11)]) == expect
    assert expect[1][0] == find_all_duplicate(words, 5) > 0
