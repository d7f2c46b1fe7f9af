from __future__ import annotations

import pytest

from stages.quality.fineweb import FineWeb, FineWebConfig
from stages.quality.rules import LangRules
from stages.quality.text_stats import DocStats
from stages.quality.word_tokenizer import ChunkTokenizer

TOK = ChunkTokenizer()
EN = LangRules(word_rules=True, stop_words=None)
RS = FineWeb(FineWebConfig())


def run(text, lang=EN, rs=RS):
    sig = rs.signals(DocStats(text, TOK), lang)
    return sig, [c.reason for c in rs.checks(sig, lang) if not c.passed]


def test_empty_and_blank():
    assert run("")[1] == ["fineweb_empty"]
    assert run(" \n \n\t")[1] == ["fineweb_empty"]


def test_menu_like_page_fails():
    text = "\n".join(["Home", "About us", "Contact", "Login", "A real sentence that is long enough to count here."])
    sig, failed = run(text)
    assert sig["fineweb_line_punct_ratio"] == 0.2 and sig["fineweb_short_line_ratio"] == 0.8
    assert failed == ["fineweb_too_many_short_lines"]  # 1 of 5 lines ends in punctuation: above 0.12


def test_trailing_space_is_not_punctuation():
    sig, _ = run("This line ends with a full stop. \nAnd this one too.")
    assert sig["fineweb_line_punct_ratio"] == 0.5


def test_other_scripts_terminal_punctuation():
    sig, _ = run("这是一个句子。\nहिंदी वाक्य।")
    assert sig["fineweb_line_punct_ratio"] == 1.0


def test_char_dup_ratio():
    line = "A repeated line that is long enough to count as a sentence."
    text = "\n".join([line, line, "Another different sentence that is also rather long."])
    sig, failed = run(text)
    assert sig["fineweb_char_dup_ratio"] == pytest.approx(len(line) / (len(text) - 2))
    assert "fineweb_too_many_dup_line_chars" in failed


def test_list_ratio_off_for_unspaced():
    text = "\n".join(["这是一个很长的句子，用来测试每行的标点符号比例是否足够高。"] * 1 + ["第二行也是一个很长的句子，同样以句号结尾，没有任何问题。"])
    sig, failed = run(text, LangRules(word_rules=False, stop_words=None))
    assert sig["fineweb_new_line_ratio"] is None and "fineweb_too_many_newlines" not in failed
    assert failed == ["fineweb_too_many_short_lines"]  # 30 characters is the same limit in every script
