from __future__ import annotations

from datatrove.utils.text import split_into_sentences
import pytest

from stages.quality.c4 import C4, C4Config, count_sentences
from stages.quality.rules import LangRules
from stages.quality.text_stats import DocStats
from stages.quality.word_tokenizer import ChunkTokenizer

TOK = ChunkTokenizer()
EN = LangRules(word_rules=True, stop_words=None)
RS = C4(C4Config())
GOOD = "This is a complete sentence with enough words."


def run(text, lang=EN, rs=RS):
    sig = rs.signals(DocStats(text, TOK), lang)
    return sig, [c.reason for c in rs.checks(sig, lang) if not c.passed]


@pytest.mark.parametrize(
    "line",
    [
        "One. Two! Three? Four.",
        "Dr. Smith went to the U.S. in 1999. He liked it.",
        'He said "stop." Then left.',
        "Hi.  ) odd spacing",
        "Tabs.\tAfter tab. End",
        "Wait... what?! Really.",
        "No punctuation at all",
        "。 Chinese full stop。Next",
        "",
        "...",
        " Starts with a space. Then more.",
    ],
)
def test_sentence_count_matches_datatrove(line):
    assert count_sentences(line, TOK) == len(split_into_sentences(line))


def test_enough_sentences_pass():
    sig, failed = run("\n".join([GOOD] * 5))
    assert sig["c4_num_sentences"] == 5 and sig["c4_kept_lines"] == 5 and failed == []


def test_line_filters():
    text = "\n".join(
        [
            GOOD,
            "Please enable JavaScript to view this page.",
            "This site uses cookies to improve things.",
            "too short.",
            "No terminal punctuation here",
            "Ends with an ellipsis like this...",
            "A citation[1] follows this stop.",
            "A citation at the end leaves a space. [2]",
        ]
    )
    sig, failed = run(text)
    assert sig["c4_javascript_lines"] == 1 and sig["c4_policy_lines"] == 1
    assert sig["c4_kept_lines"] == 2 and failed == ["c4_too_few_sentences"]


def test_lorem_ipsum_and_curly_bracket():
    sig, failed = run("\n".join([GOOD] * 5 + ["Lorem ipsum dolor sit amet, consectetur."]))
    assert sig["c4_lorem_ipsum"] and failed == ["c4_lorem_ipsum"]
    sig, failed = run("\n".join([GOOD] * 5 + ["function f() { return 1; } is code."]))
    assert sig["c4_curly_bracket"] and failed == ["c4_curly_bracket"]
    # a bracket on a line C4 already drops (no terminal punctuation) does not count
    sig, failed = run("\n".join([GOOD] * 5 + ["{ not a sentence"]))
    assert not sig["c4_curly_bracket"] and failed == []


def test_all_line_filters_off_matches_datatrove_counting():
    rs = C4(C4Config(filter_no_terminal_punct=False, min_words_per_line=-1))
    sig, failed = run("one\n\ntwo\n\nthree", rs=rs)
    assert sig["c4_num_sentences"] == 5 and failed == []  # empty lines count as one sentence each


def test_long_word_line_dropped():
    sig, _ = run("\n".join([GOOD] * 5 + ["x" * 1001 + " is a long word."]))
    assert sig["c4_kept_lines"] == 5


def test_unspaced_language_skips_words_per_line_and_sentences():
    text = "北京是中国的首都。\n上海是一个城市。"
    zh = LangRules(word_rules=False, stop_words=None)
    sig, failed = run(text, zh)  # "。" is not C4's terminal punctuation, but the sentence rule is off
    assert sig["c4_kept_lines"] == 0 and failed == []
    _, failed = run(text)
    assert failed == ["c4_too_few_sentences"]


# -- line removal (remove_lines): the text datatrove's C4QualityFilter leaves -------------------
def datatrove_text(text, **kw):
    """datatrove's C4 filter on `text`: (kept?, its text afterwards)."""
    from datatrove.data import Document
    from datatrove.pipeline.filters import C4QualityFilter

    doc = Document(text=text, id="0", metadata={})
    return C4QualityFilter(**kw).filter(doc) is True, doc.text


def cleaned(text, lang=EN, rs=RS):
    return rs.scan(DocStats(text, TOK), lang)[1]


REWRITES = {
    "citations": "\n".join([GOOD] * 4 + ["A citation[1] follows this stop[23].", "Edited here[edit] and there[citation needed]."]),
    "leading_citation": "\n".join(["[4] Starts with a citation and ends well."] + [GOOD] * 5),
    "citation_at_end": "\n".join([GOOD] * 5 + ["A citation at the end leaves a space. [2]"]),
    "ellipsis": "\n".join([GOOD] * 5 + ["Ends with an ellipsis like this...", "Read more..."]),
    "navigation": "\n".join(["Home", "About us", GOOD, "Contact", GOOD, GOOD, "Share this", GOOD, GOOD, "© 2024"]),
    "javascript_policy": "\n".join([GOOD] * 5 + ["Please enable JavaScript to view this page.", "This site uses cookies to work."]),
    "too_few_words": "\n".join([GOOD] * 5 + ["Short one.", "Ok!"]),
    "long_word": "\n".join([GOOD] * 5 + ["x" * 1001 + " is a long word."]),
    "spaces_and_crlf": "   " + "\r\n".join(["  " + GOOD + "  "] * 5) + "\r\n\r\n",
    "blank_lines": "\n\n".join([GOOD] * 6),
    "unchanged": "\n".join([GOOD] * 5),
}


@pytest.mark.parametrize("name", list(REWRITES))
@pytest.mark.parametrize("kw", [{}, {"filter_no_terminal_punct": False}], ids=["defaults", "fineweb_c4"])
def test_removed_lines_match_datatrove(name, kw):
    text = REWRITES[name]
    rs = C4(C4Config(**kw))
    kept, dt_text = datatrove_text(text, **kw)
    assert kept  # every case keeps enough sentences, so datatrove rewrites it
    ours = cleaned(text, rs=rs)
    assert (text if ours is None else ours) == dt_text
    assert (ours is None) == (name == "unchanged")


def test_rewrite_examples():
    assert cleaned(REWRITES["citations"]).endswith("A citation follows this stop.\nEdited here and there.")
    assert "..." not in cleaned(REWRITES["ellipsis"])
    assert cleaned(REWRITES["navigation"]) == "\n".join([GOOD] * 5)
    assert cleaned(REWRITES["spaces_and_crlf"]) == "\n".join([GOOD] * 5)
    assert cleaned(REWRITES["leading_citation"]).startswith("Starts with")  # the joined text is stripped
    sig, _ = run(REWRITES["navigation"])
    assert sig["c4_kept_lines"] == 5 and sig["c4_removed_lines"] == 5


def test_every_line_removed():
    text = "Home\nAbout us\nRead more...\nok."
    assert cleaned(text) == ""
    assert datatrove_text(text, min_num_sentences=-1) == (True, "")
    _, failed = run(text)
    assert failed == ["c4_too_few_sentences"]


def test_remove_lines_false_measures_only():
    rs = C4(C4Config(remove_lines=False))
    text = REWRITES["navigation"]
    assert cleaned(text, rs=rs) is None
    assert rs.signals(DocStats(text, TOK), EN) == RS.signals(DocStats(text, TOK), EN)


def test_unspaced_language_is_not_rewritten():
    # "。" is not C4's terminal punctuation: rewriting would delete every line of Chinese text
    text = "北京是中国的首都。\n上海是一个城市。\n" + GOOD
    assert cleaned(text, LangRules(word_rules=False, stop_words=None)) is None
    assert cleaned(text) == GOOD
