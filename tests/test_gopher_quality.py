from __future__ import annotations

import pytest

from stages.quality.gopher_quality import GopherQuality, GopherQualityConfig
from stages.quality.rules import LangRules
from stages.quality.stop_words import STOP_WORDS
from stages.quality.text_stats import DocStats
from stages.quality.word_tokenizer import ChunkTokenizer

TOK = ChunkTokenizer()
EN = LangRules(word_rules=True, stop_words=frozenset(STOP_WORDS["en"]))
RS = GopherQuality(GopherQualityConfig())


def run(text, lang=EN, rs=RS):
    sig = rs.signals(DocStats(text, TOK), lang)
    return sig, [c.reason for c in rs.checks(sig, lang) if not c.passed]


def test_word_count_boundary():
    base = "the cat and the dog "
    sig, failed = run((base * 10).strip())  # 50 words
    assert sig["rps_doc_word_count"] == 50 and "gopher_quality_too_few_words" not in failed
    sig, failed = run(" ".join((base * 10).split()[:49]))
    assert sig["rps_doc_word_count"] == 49 and "gopher_quality_too_few_words" in failed


def test_punctuation_is_not_a_word():
    sig, _ = run("Hello , world !")
    assert sig["rps_doc_word_count"] == 2
    assert sig["rps_doc_frac_no_alph_words"] == 0.5  # 4 tokens, 2 with a letter
    assert sig["rps_doc_mean_word_length"] == 5


def test_hashes_ellipsis_bullets():
    sig, failed = run("#a #b #c text")
    assert sig["rps_doc_hash_to_word_ratio"] == 3 / 7 and "gopher_quality_too_many_hashes" in failed
    sig, failed = run("- one\n- two\n• three\nfour")
    assert sig["rps_doc_frac_lines_start_with_bullet"] == 0.75 and "gopher_quality_too_many_bullet_lines" not in failed
    sig, failed = run("wait...\nmore…\nend.")
    assert sig["rps_doc_frac_lines_end_with_ellipsis"] == pytest.approx(2 / 3)
    assert "gopher_quality_too_many_ellipsis_lines" in failed


def test_stop_words_case_sensitive_and_language():
    sig, failed = run("The Be To Of")
    assert sig["rps_doc_stop_word_count"] == 0 and "gopher_quality_too_few_stop_words" in failed
    de = LangRules(word_rules=True, stop_words=frozenset(STOP_WORDS["de"]))
    sig, failed = run("Der Hund und die Katze", de)
    assert sig["rps_doc_stop_word_count"] == 2 and "gopher_quality_too_few_stop_words" not in failed
    sig, failed = run("anything", LangRules(word_rules=True, stop_words=None))
    assert sig["rps_doc_stop_word_count"] is None and "gopher_quality_too_few_stop_words" not in failed


def test_unspaced_language_keeps_only_line_rules():
    zh = LangRules(word_rules=False, stop_words=None)
    sig, failed = run("北京是中国的首都。\n上海是一个城市...\n广州...", zh)
    assert failed == ["gopher_quality_too_many_ellipsis_lines"]


def test_disabled_rules():
    rs = GopherQuality(GopherQualityConfig(min_doc_words=None, min_stop_words=None))
    _, failed = run("short text", rs=rs)
    assert "gopher_quality_too_few_words" not in failed and "gopher_quality_too_few_stop_words" not in failed


def test_empty_text():
    sig, failed = run("")
    assert sig["rps_doc_word_count"] == 0 and sig["rps_doc_mean_word_length"] is None
    assert failed == ["gopher_quality_too_few_words", "gopher_quality_too_few_stop_words"]
