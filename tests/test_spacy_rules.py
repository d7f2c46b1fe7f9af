"""SpacyRules must give spaCy's tokens for every chunk it answers (and defer the matcher's cases)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.quality.spacy_rules import SpacyRules

CHUNKS = [
    "don't", "U.S.-made?", "(parenthesised),", "[1]", "$100", "1,000.50", "5'11\"", "10km", "10km.", "e.g.",
    "https://example.com/a?b=1&c=2", "a.b@c.org", "well-known", "--", "......", "word......", "a..", "x...y",
    "Hello!!!", "'quoted'", "“curly”", "«fr»", "#hashtag", "@user", "C++", "3:30pm", "20°C.", "£5.", "Ph.D.",
    "Mr.", "i.e.,", "(e.g.", "can't.", "y'all", "'s", "O'Neill's", "rock'n'roll", "a/b/c", "x=y", "1+1=2",
    "ab-", "-ab", "…", "word…", "¿Qué?", "¡Sí!", "北京市。", "Москва,", "Äpfel.", "ǅx.", "İstanbul.",
    "a" * 3000 + ".", "." * 50 + "a", "a" + "." * 50, "),.;:!?", "((((a))))", "1.2.3.4", "v2.0-beta",
]
MATCHER = [":)", "hi:)", "(:)", "a:)", "so''", "x):", ":-)", "<3", "x<3"]


@pytest.fixture(scope="module")
def spacy_tok():
    import spacy

    return spacy.blank("en").tokenizer


@pytest.fixture(scope="module")
def rules(spacy_tok):
    return SpacyRules(spacy_tok)


@pytest.mark.parametrize("chunk", CHUNKS + MATCHER)
def test_same_tokens_as_spacy_or_deferred(rules, spacy_tok, chunk):
    ours = rules.tokens(chunk)
    if ours is not None:
        assert ours == tuple(t.text for t in spacy_tok(chunk)), chunk


def test_shortcuts_were_derived_from_spacys_patterns(rules):
    """For spaCy's English rules every shortcut applies (else the plain searches are used)."""
    assert rules._prefix.first is not None and rules._suffix.last is not None and rules._infix.first is not None
    assert rules._suffix.width and rules._suffix.runs == ["."]


def test_matcher_patterns_are_deferred(rules, spacy_tok):
    # ":" ")" would be re-joined by spaCy's special-case matcher: SpacyRules leaves it to spaCy
    assert rules.tokens("a:)") is None
    assert [t.text for t in spacy_tok("a:)")] == ["a", ":)"]
    assert rules.tokens("plain") == ("plain",)


_ALPHABET = "aZé1.,;:!?'\"()[]{}-–—/\\@#$%&*+=<>…°£€~_`^|ǅ"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_ALPHABET, min_size=1, max_size=14))
def test_random_chunks_match_spacy(rules, spacy_tok, chunk):
    ours = rules.tokens(chunk)
    if ours is not None:
        assert ours == tuple(t.text for t in spacy_tok(chunk))


def test_without_the_regex_parser_the_plain_searches_give_the_same_tokens(spacy_tok, monkeypatch):
    """CPython's regex parser (`re._parser`) only finds shortcuts: a Python without it gets no
    shortcut and the same tokens."""
    from stages.quality import spacy_rules

    monkeypatch.setattr(spacy_rules, "_parser", None)
    plain = SpacyRules(spacy_tok)
    assert plain._prefix.first is None and plain._suffix.last is None and plain._infix.first is None
    for chunk in CHUNKS:
        ours = plain.tokens(chunk)
        if ours is not None:
            assert ours == tuple(t.text for t in spacy_tok(chunk)), chunk
