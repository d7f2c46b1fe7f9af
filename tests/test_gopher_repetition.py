from __future__ import annotations

import pytest

from stages.quality.gopher_repetition import GopherRepetition, GopherRepetitionConfig
from stages.quality.rules import LangRules
from stages.quality.text_stats import DocStats
from stages.quality.word_tokenizer import ChunkTokenizer

TOK = ChunkTokenizer()
EN = LangRules(word_rules=True, stop_words=None)
RS = GopherRepetition(GopherRepetitionConfig())


def run(text, lang=EN):
    sig = RS.signals(DocStats(text, TOK), lang)
    return sig, [c.reason for c in RS.checks(sig, lang) if not c.passed]


def test_empty():
    sig, failed = run("")
    assert failed == ["gopher_repetition_empty"] and sig["rps_doc_dup_line_frac"] is None


def test_repeated_lines_and_paragraphs():
    text = "same line here\n\nsame line here\n\nsame line here\n\nanother one"
    sig, failed = run(text)
    assert sig["rps_doc_dup_para_frac"] == 0.5 and sig["rps_doc_dup_line_frac"] == 0.5
    assert sig["rps_doc_dup_para_char_frac"] == pytest.approx(2 * len("same line here") / len(text))
    assert failed[:4] == ["gopher_repetition_too_many_dup_paras", "gopher_repetition_too_many_dup_para_chars", "gopher_repetition_too_many_dup_lines", "gopher_repetition_too_many_dup_line_chars"]


def test_ngram_repetition():
    text = " ".join(["alpha beta gamma delta epsilon"] * 4) + " " + " ".join(f"w{i}" for i in range(100))
    sig, failed = run(text)
    assert sig["rps_doc_dup_5gram_frac"] > 0.15 and "gopher_repetition_too_many_dup_5grams" in failed
    assert sig["rps_doc_top_2gram_frac"] == pytest.approx(len("alpha beta") * 4 / len(text))


def test_unique_text_passes():
    text = " ".join(f"word{i}" for i in range(200))
    sig, failed = run(text)
    assert failed == [] and sig["rps_doc_dup_10gram_frac"] == 0.0


def test_ngram_rules_off_for_unspaced():
    text = "重复重复重复 重复重复重复 重复重复重复 重复重复重复"
    _, failed = run(text, LangRules(word_rules=False, stop_words=None))
    assert not any(r.startswith(("top_", "duplicated_")) for r in failed)
    _, failed = run(text)
    assert "gopher_repetition_top_2gram_too_frequent" in failed


def test_custom_ngram_config_changes_fields():
    rs = GopherRepetition(GopherRepetitionConfig(top_n_grams=[(2, 0.5)], dup_n_grams=[]))
    names = [f.name for f in rs.fields()]
    assert "rps_doc_top_2gram_frac" in names and "rps_doc_top_3gram_frac" not in names
    assert not any(n.startswith("rps_doc_dup_") and "gram" in n for n in names)
