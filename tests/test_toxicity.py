"""Toxicity stage: preprocessing, spans, the document rule, the word list, and the shipped model on real data."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from pipeline.schema import make_record, records_to_table
from stages.registry import get
from stages.toxicity import Toxicity, ToxicityConfig, WordList, bundled_model_path, preprocess, split_spans
from pipeline.train.toxicity import _split_parts, load_labelled, prf, roc_auc, wikitext_sentences
from stages.toxicity import JUDGED, MODEL_LANGUAGES, model_language, span_lines

TOXIC = [
    "You are a stupid fucking idiot.",
    "Shut up you worthless bitch.",
    "Those filthy animals should all be sent back where they came from.",
]
GERMAN_TOXIC = "Halt die Fresse, du dummes Arschloch. Du bist ein widerlicher Vollidiot."
CLEAN = [
    "The committee will publish its annual report next week.",
    "The recipe calls for two cups of flour and a pinch of salt.",
    "The museum opens at nine on weekdays.",
]


# The model measured in every language it was trained on (the stage's default judges fewer: JUDGED).
EVERY = {"languages": sorted(MODEL_LANGUAGES)}


@pytest.fixture(scope="module")
def stage():
    s = Toxicity(**EVERY)
    s.ensure_setup()
    return s


def table(rows):
    return records_to_table(
        make_record(source=s, kind=k, file="f", offset=i, text=t) for i, (t, s, k) in enumerate(rows)
    )


def test_registered_and_model_ships_small():
    assert get("toxicity") is Toxicity
    path = bundled_model_path()
    assert path.is_file() and path.name == "toxicity.bin"
    assert path.stat().st_size <= 5 * 1024 * 1024
    from stages._fasttext import load_model

    assert load_model(path).get_dimension() == 1  # the one-dimensional rewrite (pipeline/train/fasttext_linear.py)


def test_preprocess():
    assert preprocess("RT @bob: Check http://t.co/xyz &amp; LOOOOOL!!!\nIdiot?") == (
        "rt xuser check xurl loooool idiot"  # punctuation becomes space; the apostrophe stays
    )
    assert preprocess("Don't\ttab\r\nline\x0bend", negation=False) == "don't tab line end"
    assert preprocess("Don't\ttab\r\nline\x0bend") == "don't not_tab line end"  # a line break ends a negation's scope
    assert preprocess("") == ""
    assert preprocess("  \n ") == ""
    assert preprocess("mail me: a@b.com") == "mail me a b com"  # not a mention: glued to a word
    assert preprocess("«Ça» „so“ ¿qué? 你好，世界！") == "ça so qué 你 好 世 界"
    assert preprocess("Ünïcödé ÄÖÜ 你好") == "ünïcödé äöü 你 好"  # Chinese characters: one token each
    assert preprocess("バカだね") == "バ カ だ ね"
    assert preprocess("바보야") == "바보야"  # Hangul words are space-separated already


def test_preprocess_reads_letters_written_as_digits_or_signs():
    # a sign between letters, or a 0 starting a word, stands for a letter: the plain word's n-grams
    assert preprocess("I h4te them, v3rmin, K1ll, sc*m, Absch@um, pl@ga.") == "i hate them vermin kill scm abschaum plaga"
    assert preprocess("0dio a T0tet M4tad") == "odio a totet matad"
    # digits beside digits or ending a word, a sign starting one, e-mail addresses: unchanged
    assert preprocess("mp3 1st 3rd 2024 b4 covid19 $100 5*3 a@b.com") == "mp3 1st 3rd 2024 b4 covid19 100 5 3 a b com"


def test_the_leet_rule_is_its_plain_definition():
    """`_LEET` (one regex, written for speed) against the rule written character by character."""
    import re

    from stages.toxicity import _LEET, _LEET_MAP, _unleet

    def letter(ch: str) -> bool:
        return bool(ch) and re.fullmatch(r"[^\W\d_]", ch) is not None

    def plain(t: str) -> str:
        out = []
        for i, c in enumerate(t):
            prev, nxt, nxt2 = t[i - 1:i], t[i + 1:i + 2], t[i + 2:i + 3]
            if c in "013457$*" and letter(prev) and letter(nxt):
                out.append(_LEET_MAP[c])
            elif c == "0" and not (prev and re.fullmatch(r"[\w@$*]", prev)) and letter(nxt) and letter(nxt2):
                out.append("o")
            elif c == "@" and letter(prev) and letter(nxt) and not re.match(r"\S*\.[^\W\d_]", t[i + 1:]):
                out.append("a")
            else:
                out.append(c)
        return "".join(out)

    rng = random.Random(5)
    pieces = ["a", "b", "é", "ц", "0", "1", "3", "4", "5", "7", "9", "$", "*", "@", " ", ".", "_", "x.y", "\n"]
    for _ in range(20000):
        t = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert _LEET.sub(_unleet, t) == plain(t), t


def test_split_spans():
    text = "First sentence. Second one!  Third?\n\nNew paragraph here\nline two"
    assert split_spans(text, "sentence") == [
        "First sentence.", "Second one!", "Third?", "New paragraph here", "line two",
    ]
    assert split_spans(text, "paragraph") == ["First sentence. Second one!  Third?", "New paragraph here", "line two"]
    assert split_spans(text, "document") == [text]
    assert split_spans("", "sentence") == []
    assert split_spans("版本。第二句。", "sentence") == ["版本。", "第二句。"]  # 。 ends a sentence without a space
    assert split_spans("版本。 第二句。", "sentence") == ["版本。", "第二句。"]


def test_span_lines_preprocess_in_one_pass():
    text = "Hello there. You IDIOT!\n\nNew para 你好。再见！ ok"
    assert span_lines(text, "sentence") == ["hello there", "you idiot", "new para 你 好", "再 见", "ok"]
    assert [" ".join(l.split()) for l in span_lines(text, "paragraph")] == ["hello there you idiot", "new para 你 好 再 见 ok"]
    assert span_lines(text, "document") == ["hello there you idiot new para 你 好 再 见 ok"]
    assert [" ".join(w.split()) for w in span_lines(text, "window", 10)] == ["hello there", "you idiot", "new para", "你 好 再", "见 ok"]
    for g in ("sentence", "paragraph", "window", "document"):
        assert all("\n" not in l and "\r" not in l for l in span_lines("a\u2028b\rc\n\nd", g))  # fastText: one line each
        assert span_lines("", g) == span_lines(" \n ", g) == []
    # a short tail is joined to the window before it
    assert span_lines("a" * 30 + ". " + "b" * 30 + ". c.", "window", 25) == ["a" * 30, " " + "b" * 30 + "  c "]


def test_the_batch_normalisation_is_the_per_text_one():
    from stages.toxicity import _normalise, normalise_batch

    texts = ["Ünïcödé «Ça» ¿qué? 你好，世界！バカだね ｱｲ", "plain ASCII, text!", None, "", "a\xa0b\x85c\u1680d",
             "HTTPS://X.Y/z ok @Bob &amp; \u3000全角　空白", "line one\n\nline two 再见", "\ud800 lone surrogate"]
    for keep in (False, True):
        assert normalise_batch(texts, keep, negation=False).to_pylist() == [_normalise(t or "", keep, False) for t in texts]
        assert _batch(texts, keep) == [_normalise(t or "", keep) for t in texts]


def test_words_in_a_negations_scope_are_marked_up_to_the_end_of_the_clause():
    from stages.toxicity import drop_identity_terms

    assert preprocess("X are not vermin.") == "x are not not_vermin"
    assert preprocess("X are vermin.") == "x are vermin"
    assert preprocess("I do NOT hate them, they are vermin!") == "i do not not_hate not_them they are vermin"
    assert preprocess("I don't hate them; I won't ever (ever) hurt them") == (
        "i don't not_hate not_them i won't not_ever ever hurt them")  # brackets end a clause too
    assert preprocess("Je n'aime pas ça") == "je n'aime not_pas not_ça"  # French n' glued to its verb
    assert preprocess("Je ne déteste pas les juifs") == "je ne not_déteste not_pas not_les not_juifs"
    assert preprocess("Nie nienawidzę Żydów. Nunca «odio» nada") == "nie not_nienawidzę not_żydów nunca odio nada"
    assert preprocess("Ich hasse Juden nicht.") == "ich hasse juden nicht"  # the scope runs after the cue only
    assert preprocess("nothing\nnew, nota bene, snot no") == "nothing new nota bene snot no"  # whole words only
    assert preprocess("X are not vermin.", negation=False) == "x are not vermin"
    # a group's name is dropped in a scope too
    assert drop_identity_terms(preprocess("I don't hate Jews or women")) == "i don't not_hate not_or"


def _batch(texts, keep):
    """normalise_batch's text with the negation scope marked as the scorer marks it (per string)."""
    from stages._negation import mark_negation
    from stages.toxicity import normalise_batch

    return [mark_negation(t) for t in normalise_batch(texts, keep).to_pylist()]


NEGATION_ALPHABET = ["no", "not", "nie", "n't", "n'", "x", "juifs", "don't", "'", " ", " ", "\n", ".", ",", "«", "»",
                     "…", "é", "你", "ż", "żadnych", "niemanden", "nirgendwo", "\v", "\t", "\xa0", "&amp;",
                     "http://a.b", "xurl", "xuser", "xurls", "not_x", "@bob", "h4te", "-", "\u2028", "Not", "NIE",
                     "nos", "ni", "ne", "n", "t", "</s>"]


@pytest.mark.slow
def test_the_scorers_negation_scope_is_the_per_text_one():
    """`scope_tokens` (the scorer's tokens of a whole batch) gives the tokens of `mark_negation` of each
    line: cues at line edges, clause ends, apostrophes, placeholders, a "not_" word already in the text;
    and the batch's text with `mark_negation` is `_normalise`'s."""
    import pyarrow as pa

    from stages._fasttext_tokens import line_token_ids
    from stages._negation import mark_negation, scope_tokens
    from stages.toxicity import _normalise, normalise_batch

    rng = random.Random(22)
    for _ in range(1500):
        texts = ["".join(rng.choice(NEGATION_ALPHABET) for _ in range(rng.randint(0, 12)))
                 for _ in range(rng.randint(1, 6))]
        for keep in (False, True):
            assert _batch(texts, keep) == [_normalise(t, keep) for t in texts], texts
        lines = pa.array([l for t in normalise_batch(texts, True).to_pylist() for l in t.split("\n")], pa.large_string())
        words, tok, per_line = line_token_ids(lines, scope_tokens)
        marked = pa.array([mark_negation(l) for l in lines.to_pylist()], pa.large_string())
        words2, tok2, per_line2 = line_token_ids(marked)
        assert words.take(pa.array(tok, pa.int64())).to_pylist() == words2.take(pa.array(tok2, pa.int64())).to_pylist(), texts
        assert list(per_line) == list(per_line2)
        assert len(set(words.to_pylist())) == len(words)  # distinct, also when "not_x" was in the text


def test_the_stage_scores_a_negation_as_its_marked_line():
    """Paragraph spans marked in the scorer score as the per-text marked line scores (every line a
    span: min_span_words 1; with short lines joined, the joined span: a clause end at the join)."""
    texts = ["Jews are not vermin.\nI don't hate them, they are fine", "Je ne déteste pas les juifs", "no\nnot_x no x"]
    langs = ["en", "fr", "en"]
    stage = Toxicity(**EVERY, min_span_words=1)
    for t, lang, (score, _) in zip(texts, langs, stage.score_documents(texts, langs)):
        assert score == pytest.approx(max(stage.score_texts(t.split("\n"), lang)), abs=1e-6)
    joined = Toxicity(**EVERY, min_span_words=3)
    (score, _), = joined.score_documents(["no\nnot_x no x"], ["en"])
    assert score == pytest.approx(joined.score_texts(["no. not_x no x"], "en")[0], abs=1e-6)


def test_the_batch_normalisation_spaces_cjk_as_the_per_text_one_at_every_edge():
    """`_space_cjk` inserts the spaces around Chinese characters and kana into the batch's bytes:
    the same text as the per-text regex, with such characters first, last, side by side, next to
    other three-byte characters (the same lead bytes: Hangul, fullwidth punctuation) and next to
    strings that are empty or ASCII."""
    from stages.toxicity import _normalise, normalise_batch

    rng = random.Random(20)
    alphabet = ["a", " ", "\n", "é", "你", "好", "\u3040", "\u30ff", "\u303f", "\u4dbf", "\u9fff", "\ufaff",
                "\uff66", "\uff9f", "\uff65", "\ua000", "한", "，", "\u2019", "😀", "\u0800"]
    for _ in range(40):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 30))]
        for keep in (False, True):
            assert _batch(texts, keep) == [_normalise(t, keep) for t in texts], texts


def test_the_per_text_normalisation_is_its_plain_definition():
    """Entities, lowercase, URLs, mentions, ASCII punctuation: the steps written plainly, on texts
    with and without each (the fast path asks the UTF-8 bytes whether a URL or mention can start)."""
    import html

    from stages.toxicity import _KEEP_LINES, _LEET, _MENTION, _TO_SPACE, _URL, _normalise_ascii, _unleet

    def plain(t: str, keep: bool) -> str:
        t = html.unescape(t) if "&" in t else t
        t = _LEET.sub(_unleet, _MENTION.sub(" xuser ", _URL.sub(" xurl ", t.lower())))
        return t.encode("utf-8", "replace").translate(_KEEP_LINES if keep else _TO_SPACE).decode("utf-8", "replace")

    rng = random.Random(21)
    pieces = ["HTTP://", "https://x.y", "WWW.", "www.", "@", "@Bob", "a@b", "&amp;", "&#104;ttp://z", "Ä", "é", "你",
              "\ud800", " ", "\n", ".", "İ", "ΑΣ", "x", "Htt", "p://", "0", "4", "*", "$", "h4t", "c0m"]
    for _ in range(5000):
        t = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        for keep in (False, True):
            assert _normalise_ascii(t, keep) == plain(t, keep), t


def test_urls_are_replaced_as_the_regex_replaces_them():
    from stages.toxicity import _URL, _replace_urls

    rng = random.Random(8)
    pieces = ["http", "https", "htt", "h", "t", "p", "s", "ſ", "://", ":/", "/", "www.", "ww", "w", ".", " ", "\n",
              "x", "\xa0", "é"]
    texts = ["", "http://a b", "www.x", "httpſ://y", "www.http://z www.", "hhttps://q", "wwww.a", "www. a"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 14))) for _ in range(20000)]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(30, 200))) for _ in range(3000)]  # > 16 candidates
    for t in texts:
        assert _replace_urls(t) == _URL.sub(" xurl ", t), t


@pytest.mark.slow
def test_the_batch_normalisation_on_hostile_texts():
    """Long runs of CJK and of punctuation, millions of tiny lines, one huge word, URLs and mentions
    packed tight: the batch path gives the per-text text; bytes cut short in the middle of a
    three-byte character are never read past."""
    import pyarrow as pa

    from stages.toxicity import _normalise, _space_cjk, normalise_batch

    texts = ["你" * 300_000, "\u2019" * 200_000 + "x", "你\n" * 500_000, "w" * 2_000_000, "www.a @b " * 50_000,
             "htt" * 100_000, "a\u3000你\u3000" * 50_000]
    assert _batch(texts, True) == [_normalise(t, True) for t in texts]
    cut = "ab你".encode()[:-1]  # a lead byte 0xE4 and one of its two continuation bytes
    arr = pa.LargeStringArray.from_buffers(1, pa.py_buffer(np.array([0, len(cut)], np.int64)), pa.py_buffer(cut))
    assert len(_space_cjk(arr)) == 1


def test_mentions_are_words_after_an_at_not_glued_to_a_word():
    import re

    from stages.toxicity import _MENTION

    plain = re.compile(r"(?<!\w)@\w+")  # the obvious pattern; ours starts with "@" to be searched for fast
    rng = random.Random(4)
    alphabet = "a1_@ é٣.-\n"
    for _ in range(3000):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _MENTION.sub(" xuser ", t) == plain.sub(" xuser ", t), t


@pytest.mark.slow
def test_the_fast_scorer_and_fasttext_give_the_same_scores():
    """The stage scores the shipped model with stages/_scalar_fasttext.py; fastText itself gives
    the same document scores (tests/test_scalar_fasttext.py checks 20,000 real paragraphs)."""
    texts = TOXIC + CLEAN + [GERMAN_TOXIC, "Ünïcödé «Ça» 你好，世界！\n\nbitch\xa0please", "", None, "  \n ",
                             "Muslims and women.\nLes juifs, les Noirs et les migrants sont là.", "Frauen"]
    langs = ["en"] * 6 + ["de", "fr", None, "en", "zho_Hans", "fr", "de"]
    for granularity in ("paragraph", "sentence", "window", "document"):
        fast = Toxicity(**EVERY, granularity=granularity)
        fast.ensure_setup()
        assert fast.scalar is not None
        slow = Toxicity(**EVERY, granularity=granularity)
        slow.ensure_setup()
        slow.scalar = None
        for (a, fa), (b, fb) in zip(fast.score_documents(texts, langs), slow.score_documents(texts, langs)):
            assert abs(a - b) < 2e-6 and abs(fa - fb) < 1e-9


def test_a_groups_name_is_no_evidence(stage):
    """Names of groups (stages/data/identity_terms.txt) are dropped before the model sees a span, as
    in training: sentences that differ only in the group they name score the same, in the fast
    scorer and in fastText; `identity_terms: false` lets a model see them."""
    cases = {"en": ("All {} are lazy and stupid.", ["Muslims", "Jews", "women", "migrants", "Arabs"]),
             "fr": ("Des {} se sont réunis pour la fête.", ["musulmans", "juifs", "femmes", "migrants", "Noirs"])}
    slow = Toxicity(**EVERY)
    slow.ensure_setup()
    slow.scalar = None
    seeing = Toxicity(**EVERY, identity_terms=False)
    for lang, (frame, groups) in cases.items():
        texts = [frame.format(g) for g in groups]
        fast = stage.score_documents(texts, [lang] * len(texts))
        assert len({round(p, 9) for p, _ in fast}) == 1
        assert max(abs(a - b) for (a, _), (b, _) in zip(fast, slow.score_documents(texts, [lang] * len(texts)))) < 2e-6
        assert len({round(p, 9) for p in seeing.score_texts(texts, lang)}) > 1


def test_model_language():
    assert model_language("de") == "de"
    assert model_language("deu_Latn") == "de"
    assert model_language("zho") == "zh"
    assert model_language("pt-BR") == "pt"
    assert model_language("nl") is None
    assert model_language(None) is None
    assert model_language("") is None


def test_obvious_toxic_and_clean_sentences(stage):
    tox = stage.score_texts(TOXIC)
    clean = stage.score_texts(CLEAN)
    assert min(tox) > 0.8, tox
    assert max(clean) < 0.2, clean


@pytest.mark.slow
def test_document_rule(stage):
    long_clean = "\n\n".join(CLEAN * 10)
    one_rude = long_clean + "\n\n" + TOXIC[0]
    mostly_toxic = "\n\n".join(TOXIC + CLEAN[:1])
    t = table([(long_clean, "cc", "jsonl"), (one_rude, "cc", "jsonl"), (mostly_toxic, "cc", "jsonl")])
    out = stage.annotate(t)
    score = out.column("toxicity_score").to_pylist()
    frac = out.column("toxic_span_fraction").to_pylist()
    assert score[0] < 0.5 and frac[0] == 0.0
    assert score[1] > 0.8 and 0 < frac[1] < 0.1  # one rude paragraph in a long text
    assert frac[2] > 0.5
    # default: a paragraph at P >= 0.95 rejects when toxic spans hold >= 3% of the text (min_toxic_fraction,
    # chosen on dev documents): one rude sentence after 30 clean ones (under 3%) is kept
    assert frac[1] < 0.03 and stage.decide(out) == [None, None, "toxic_content"]
    one_span = Toxicity(**EVERY, min_toxic_fraction=None)  # one span decides
    assert one_span.decide(out) == [None, "toxic_content", "toxic_content"]
    short = Toxicity(**EVERY).annotate(table([("\n\n".join(CLEAN * 2) + "\n\n" + TOXIC[0], "cc", "jsonl")]))
    assert stage.decide(short) == ["toxic_content"]  # the same sentence after 6 clean ones: over 3%
    share = Toxicity(**EVERY, max_score=None, max_toxic_fraction=0.5)
    assert share.decide(share.annotate(t)) == [None, None, "toxic_content"]
    any_span = Toxicity(**EVERY, max_score=None, max_toxic_fraction=0.0)
    assert any_span.decide(any_span.annotate(t)) == [None, "toxic_content", "toxic_content"]
    never = Toxicity(**EVERY, max_score=None)
    assert never.decide(never.annotate(t)) == [None, None, None]


def test_document_granularity_scores_whole_text(stage):
    doc = Toxicity(**EVERY, granularity="document")
    text = " ".join(CLEAN * 10) + " " + TOXIC[0]
    s, f = doc.score_documents([text])[0]
    assert f in (0.0, 1.0)  # one span: all or nothing


def test_empty_none_and_whitespace(stage):
    out = stage.annotate(table([("", "cc", "jsonl"), (None, "cc", "jsonl"), (" \n\n ", "cc", "jsonl")]))
    assert out.column("toxicity_score").to_pylist() == [0.0, 0.0, 0.0]
    assert out.column("toxic_span_fraction").to_pylist() == [0.0, 0.0, 0.0]
    assert out.column("toxic_word_count").to_pylist() == [None, None, None]
    assert stage.decide(out) == [None, None, None]


def test_very_long_text(stage):
    text = "\n".join(CLEAN * 3000)  # ~400 kB, 9,000 spans
    (s, f), = stage.score_documents([text])
    assert s < 0.5 and f == 0.0


def test_mixed_scripts():
    sentences = Toxicity(**EVERY, granularity="sentence")
    text = "这是一个关于天气的普通句子。 Das ist ein ganz normaler Satz. " + TOXIC[1]
    (s, f), = sentences.score_documents([text])
    assert s > 0.8
    assert 0.2 < f < 0.8  # the Chinese and German sentences are not toxic


def test_code_skipped_by_default(stage):
    out = stage.annotate(table([("# you idiot\nx = 1", "repo", "code")]))
    assert out.column("toxicity_score").to_pylist() == [None]
    assert stage.decide(out) == [None]


def test_arxiv_skipped_by_default_and_a_recipe_may_opt_in(stage):
    text = "We thank the reviewers. You are a stupid fucking idiot and a worthless moron."
    out = stage.annotate(table([(text, "papers", "arxiv")]))
    assert out.column("toxicity_score").to_pylist() == [None] and stage.decide(out) == [None]
    opted = Toxicity(**EVERY, skip_kinds=["code"])
    assert opted.decide(opted.annotate(table([(text, "papers", "arxiv")]))) == ["toxic_content"]


def test_markup_never_raises_a_score():
    from pipeline import api

    en = {"lang": "en", "languages": ["en"]}
    assert api.toxicity("Retrieval & Model & Row & P & R & F1 \\\\", **en).score < 0.5
    assert api.toxicity("PSL<sub>k</sub>(2,<b>R</b>), Homeo<sub>k</sub>(<b>S</b><sup>1</sup>),", **en).score < 0.5
    # the prose around markup is still read
    assert not api.toxicity("You are a stupid \\textbf{fucking idiot}, see $x^2$ and Table~\\ref{t}.", **en).keep


def test_no_real_arxiv_paper_is_rejected_when_a_recipe_opts_in(corpora):
    from functools import partial
    from pipeline.sources.arxiv import ArxivSource  # noqa: F401 (registers the kind)
    from tests.helpers import read_source

    rows = [r for r in partial(read_source, "arxiv")(corpora / "arxiv" / "*") if r["drop_reason"] is None]
    assert len(rows) == 11
    opted = Toxicity(**EVERY, skip_kinds=[])
    t = table([(r["text"], "papers", "arxiv") for r in rows])
    import pyarrow as pa
    out = opted.annotate(t.append_column("lang", pa.array(["en"] * len(rows))))
    assert opted.decide(out) == [None] * 11
    # every paper below the rejection point even without min_toxic_fraction; the largest is an
    # affiliation block of short lines ("department of physics, university of toronto", 0.94; the
    # model before this one had 0.84 at most: docs/measurements/2026-11-29-toxicity-en.md)
    assert max(out.column("toxicity_score").to_pylist()) < 0.95


def test_every_listed_language_is_scored(stage):
    """A listed language the model was trained on uses its token; another listed one (or none) is
    scored untokened; a language not listed passes unscored with its reason."""
    import pyarrow as pa

    rows = [(TOXIC[0], "en"), (GERMAN_TOXIC, "de"), (GERMAN_TOXIC, "deu_Latn"), (TOXIC[0], "nl"), (TOXIC[0], "xx"),
            (CLEAN[0], "en")]
    t = table([(x, "cc", "jsonl") for x, _ in rows]).append_column("lang", pa.array([l for _, l in rows], pa.string()))
    s = Toxicity(languages=["en", "de", "nl"])
    out = s.annotate(t)
    assert out.column("toxicity_lang").to_pylist() == ["en", "de", "de", "any", None, "en"]
    assert out.column("toxicity_unjudged").to_pylist() == [None] * 4 + ["language_not_judged", None]
    assert s.decide(out) == ["toxic_content"] * 4 + [None, None]


def test_the_default_judges_only_languages_measured_good_enough():
    from stages.toxicity import MIN_AUC

    assert JUDGED and all(a >= MIN_AUC for a in JUDGED.values())
    assert set(JUDGED) <= MODEL_LANGUAGES
    assert Toxicity().config.languages is None and "languages" in ToxicityConfig.model_fields


def test_without_lang_the_stage_identifies_the_language_or_passes_unscored():
    s = Toxicity(languages=["de"])
    out = s.annotate(table([(GERMAN_TOXIC, "cc", "jsonl"), (TOXIC[0], "cc", "jsonl")]))  # no lang column
    assert out.column("toxicity_lang").to_pylist() == ["de", None]
    assert out.column("toxicity_unjudged").to_pylist() == [None, "language_not_judged"]
    off = Toxicity(languages=["de"], detect_language=False)
    out = off.annotate(table([(GERMAN_TOXIC, "cc", "jsonl"), ("", "cc", "jsonl")]))
    assert out.column("toxicity_unjudged").to_pylist() == ["no_language", None]
    assert out.column("toxicity_score").to_pylist() == [None, 0.0]


def test_planted_german_toxic_page_is_rejected(stage):
    """samples/: the German forum rant that the English-only model used to keep unscored."""
    import pyarrow as pa

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "samples"))
    import special

    pages = [(lang, "\n\n".join(paras)) for lang, _, paras in special.TOXIC]
    t = table([(x, "cc", "jsonl") for _, x in pages]).append_column("lang", pa.array([l for l, _ in pages], pa.string()))
    assert "de" in [l for l, _ in pages]
    assert stage.decide(stage.annotate(t)) == ["toxic_content"] * len(pages)


def test_word_list_aho_corasick(tmp_path):
    words = WordList(["ass", "Bad Word", "darn"])
    assert words.count("You ASS! a bad word, a BAD WORD. darn-it") == 4
    assert words.count("class assessment passes; badword; darned") == 0  # whole words only
    assert words.count("") == 0
    assert WordList([]).count("anything") == 0
    path = tmp_path / "words.txt"
    path.write_text("# my list\nfoo\n\nbar baz\n", encoding="utf-8")
    s = Toxicity(**EVERY, word_list=str(path), max_toxic_words=2)
    out = s.annotate(table([("foo and bar baz", "cc", "jsonl"), ("foo only", "cc", "jsonl"), ("# my list", "cc", "jsonl")]))
    assert out.column("toxic_word_count").to_pylist() == [2, 1, 0]
    assert s.decide(out) == ["toxic_words", None, None]


def test_config_validation():
    with pytest.raises(ValidationError):
        ToxicityConfig(granularity="word")
    with pytest.raises(ValidationError):
        ToxicityConfig(span_threshold=1.5)
    with pytest.raises(ValidationError):
        ToxicityConfig(treshold=0.5)


def test_metrics_helpers():
    assert roc_auc([True, False, True, False], [0.9, 0.1, 0.8, 0.2]) == 1.0
    assert roc_auc([True, False], [0.5, 0.5]) == 0.5
    assert roc_auc([True, False, True, False], [0.1, 0.9, 0.2, 0.8]) == 0.0
    m = prf([True, True, False, False], [0.9, 0.4, 0.6, 0.1])
    assert (m["precision"], m["recall"], m["f1"]) == (0.5, 0.5, 0.5)


def test_splits_are_fixed_by_seed_and_stratified():
    rows = [(f"text {i}", i % 5 == 0) for i in range(1000)]
    a = _split_parts(rows, "s", "en", 13)
    assert a == _split_parts(rows, "s", "en", 13)
    assert a != _split_parts(rows, "s", "en", 14)
    parts = {p: [e for e in a if e.part == p] for p in ("train", "dev", "test")}
    assert [len(v) for v in parts.values()] == [700, 100, 200]
    assert all(sum(e.toxic for e in v) / len(v) == 0.2 for v in parts.values())


@pytest.fixture(scope="module")
def labelled(corpora):
    return load_labelled(corpora)


@pytest.mark.slow
def test_no_held_out_text_is_trained_on(labelled):
    trained = {e.text for e in labelled if e.part == "train"}
    assert not [e for e in labelled if e.part != "train" and e.text in trained]
    assert {e.lang for e in labelled if e.part == "test"} >= {"en", "de", "fr", "pt", "pl", "zh", "ja", "tr"}


@pytest.mark.slow
def test_the_dev_report_reads_dev_parts_and_dev_frames_only(labelled):
    """`refinery train-toxicity` prints what training changes are chosen by: dev parts (never the
    test parts), the identity dev frames (neutral rejected, hateful caught) and, when the
    debian-handbook package is installed, its dev pages."""
    from pipeline.train.toxicity import dev_report

    dev = [e for src in ("davidson", "mlma_fr") for e in [e for e in labelled if e.part == "dev" and e.source == src][:150]]
    test = [e for e in labelled if e.part == "test" and e.source == "germeval2018"][:50]
    lines = dev_report(dev + test, bundled_model_path())
    sets = {l.split(" | ")[1] for l in lines[2:] if l.startswith("| ") and " | " in l}
    assert {"davidson", "mlma_fr"} <= sets and "germeval2018" not in sets
    identity = [l for l in lines if l.startswith(("| en | ", "| fr | ")) and "%" in l]
    assert len(identity) == 2


# Floors under the held-out scores in docs/toxicity.md (per language, test parts never trained on).
FLOORS = {"en": 0.85, "de": 0.70, "fr": 0.62, "pt": 0.72, "pl": 0.90, "zh": 0.82, "tr": 0.80, "ar": 0.70, "ko": 0.75}


@pytest.mark.slow
def test_held_out_auc_per_language(labelled, stage):
    rng = random.Random(0)
    for lang, floor in FLOORS.items():
        test = [e for e in labelled if e.part == "test" and e.lang == lang]
        sample = rng.sample(test, min(600, len(test)))
        auc = roc_auc([e.toxic for e in sample], stage.score_texts([e.text for e in sample], lang))
        assert auc > floor, (lang, auc)


@pytest.mark.slow
def test_few_false_positives_on_clean_prose(corpora, stage):
    sents = wikitext_sentences(corpora / "quality" / "wikitext2_test.tokens.txt")[:2000]
    rate = sum(p >= 0.5 for p in stage.score_texts(sents, "en")) / len(sents)
    assert rate < 0.01, rate


@pytest.mark.slow
def test_training_is_deterministic_and_learns(corpora, tmp_path):
    """Two seeded trainings on a small real subset (Davidson) give identical model bytes and a usable model."""
    import hashlib

    paths = [tmp_path / "a.bin", tmp_path / "b.bin"]
    # Each training in a fresh interpreter: libraries loaded by other tests can switch the CPU's
    # floating-point mode in this process, which changes fastText's arithmetic.
    script = (
        "import sys, csv; from pathlib import Path; "
        "from pipeline.train.toxicity import _csv, _split_parts, train; "
        "rows = [(r['tweet'], r['class'] in '01') for r in _csv(Path(sys.argv[1]) / 'toxicity' / 'davidson2017_labeled_data.csv')][:4000]; "
        "train([e for e in _split_parts(rows, 'd', 'en', 13) if e.part == 'train'], Path(sys.argv[2]), 13)"
    )
    root = Path(__file__).resolve().parents[1]
    for p in paths:
        proc = subprocess.run([sys.executable, "-c", script, str(corpora), str(p)], cwd=root,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
    digests = {hashlib.md5(p.read_bytes()).hexdigest() for p in paths}
    assert len(digests) == 1
    import csv as _csv_mod

    with open(corpora / "toxicity" / "davidson2017_labeled_data.csv", newline="", encoding="utf-8") as f:
        rows = [(r["tweet"], r["class"] in "01") for r in _csv_mod.DictReader(f)][:4000]
    test_set = [e for e in _split_parts(rows, "d", "en", 13) if e.part == "test"]
    s = Toxicity(model_path=str(paths[0]))
    m = prf([e.toxic for e in test_set], s.score_texts([e.text for e in test_set], "en"))
    assert m["roc_auc"] > 0.8, m


def test_written_sentences_parse_with_licence_and_pairs():
    """The sentences written for this project (pipeline/train/data/written_<lang>.tsv) say so and give
    their licence in the header; every line is labelled; toxic and clean lines are balanced."""
    from pipeline.train.toxicity import WRITTEN_DIR, load_written

    files = sorted(WRITTEN_DIR.glob("written_*.tsv"))
    assert {p.stem for p in files} >= {"written_es", "written_ru", "written_en"}
    for p in files:
        head = "".join(l for l in p.read_text(encoding="utf-8").splitlines(True) if l.startswith("#"))
        assert "WRITTEN FOR REFINERY" in head and "CC0" in head, p
    rows = load_written()
    for lang in ("es", "ru", "en"):
        toxic = [e for e in rows if e.lang == lang and e.toxic]
        clean = [e for e in rows if e.lang == lang and not e.toxic]
        assert len(toxic) >= 40 and len(clean) == len(toxic), lang
        assert len({e.text for e in toxic + clean}) == len(toxic) + len(clean), lang  # no duplicates


def test_a_malformed_written_line_names_the_file_and_line(tmp_path):
    from pipeline.train.toxicity import load_written

    (tmp_path / "written_xx.tsv").write_text("# header\ntoxic\tok line\nbad line without a label\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"written_xx.tsv:3"):
        load_written(tmp_path)


@pytest.mark.slow
def test_written_sentences_are_not_taken_from_the_evaluation_sets(corpora):
    """HatEval es and ru_paradetox are evaluation-only: no written line is one of their texts."""
    from pipeline.train.toxicity import load_evaluation_only, load_written

    norm = lambda t: " ".join(preprocess(t).split())  # noqa: E731
    held_out = {norm(e.text) for e in load_evaluation_only(corpora)}
    assert not [e.text for e in load_written() if norm(e.text) in held_out]


def test_inserted_lines_are_training_prose_with_one_insult():
    from pipeline.train.toxicity import Example, inserted, insertion_words

    prose = [Example(f"the river runs past the old mill number {i} today", False, "lingua", "es", "train") for i in range(50)]
    prose += [Example("never inserted into: a labelled line", False, "davidson", "es", "train")]
    out = inserted(prose, 13, per_language=20)
    assert len(out) == 20 and all(e.toxic and e.lang == "es" and e.source == "inserted" for e in out)
    base = {e.text for e in prose[:50]}
    words = insertion_words("es")
    for e in out:
        assert any(" ".join(e.text.replace(f" {w}", "", 1).split()) in base or e.text.startswith(w) for w in words), e.text
    assert out == inserted(prose, 13, per_language=20)


@pytest.mark.slow
def test_the_spanish_and_russian_evaluation_sets_are_split_in_halves(corpora):
    from pipeline.train.toxicity import load_evaluation_only

    rows = load_evaluation_only(corpora)
    for source in ("hateval_es", "ru_paradetox"):
        parts = [e.part for e in rows if e.source == source]
        assert set(parts) == {"dev", "test"} and 0.4 < parts.count("dev") / len(parts) < 0.6, source
    assert {e.part for e in rows if e.source in ("hatebr", "gahd", "hateval_en", "jigsaw101")} == {"test"}


def test_composed_english_lines():
    """Composed lines: hateful and clean ones for every predicate kind, seeded (same lines twice),
    misspelled variants among the hateful ones, rejecting lines (negated hate, counter-speech) clean."""
    from pipeline.train.toxicity import COMPOSED_EN, composed, obfuscate

    every = composed(13)
    assert every == composed(13) and {e.source for e in every} == {"composed"}
    lines = [e for e in every if e.lang == "en"]  # the other languages: tests/test_composed_hate.py
    toxic = {e.text for e in lines if e.toxic}
    clean = {e.text for e in lines if not e.toxic}
    assert toxic and clean and not toxic & clean
    assert any(t.startswith("I don't think") for t in clean)
    hateful_words = {w for hateful, _ in COMPOSED_EN.values() for p in hateful for w in p.split()}
    assert any(not set(t.rstrip(".").split()) & hateful_words for t in toxic)  # misspelled key words
    rng = random.Random(0)
    variants = {obfuscate("disgusting", rng) for _ in range(40)}
    assert "disgusting" not in variants and len(variants) > 5
    assert obfuscate("ab", rng) == "ab"


@pytest.mark.slow
def test_openstax_halves_are_disjoint(corpora):
    from pipeline.train.toxicity import openstax_sentences

    dev, test = openstax_sentences(corpora, "dev"), openstax_sentences(corpora, "test")
    # halves of the sections; only sentences every book repeats (prefaces, "The opposite is also true.") are in both
    assert len(dev) > 1000 and len(test) > 1000 and len(set(dev) & set(test)) < 0.01 * len(set(test))


def test_written_sentences_are_not_identity_test_or_dev_sentences():
    from pipeline.train import identity_examples
    from pipeline.train.toxicity import GROUPS, composed, load_written
    from tests.identity_templates import sentences

    written = {e.text for e in load_written()} | {e.text for e in composed(13)}
    assert not written & {s for *_, s in sentences()}
    assert not written & {s for _, _, s in identity_examples.dev_sentences(GROUPS)}
    assert not written & {s for _, _, s in identity_examples.dev_hateful_sentences(GROUPS)}


# Floors under the Spanish and Russian held-out scores (test halves of the evaluation-only sets, never
# trained on; docs/toxicity.md: 0.612 and 0.826 ROC-AUC), whose training text is the written sentences.
@pytest.mark.slow
def test_spanish_and_russian_held_out_auc(corpora, stage):
    from pipeline.train.toxicity import load_evaluation_only

    rng = random.Random(0)
    rows = load_evaluation_only(corpora)
    for source, lang, floor in (("hateval_es", "es", 0.57), ("ru_paradetox", "ru", 0.78)):
        test = [e for e in rows if e.source == source and e.part == "test"]
        sample = rng.sample(test, 800)
        auc = roc_auc([e.toxic for e in sample], stage.score_texts([e.text for e in sample], lang))
        assert auc > floor, (lang, auc)


def test_fragments_are_short_clean_pieces_of_the_prose_of_each_language():
    """The trainer's short clean lines (pipeline/train/toxicity.py, FRAGMENTS_PER_LANGUAGE): 1 to
    FRAGMENT_WORDS consecutive words of a language's clean prose, in that language, seeded."""
    from pipeline.train.toxicity import FRAGMENT_WORDS, Example, fragments

    prose = [Example("The quick brown fox jumps over the lazy dog near the river bank.", False, "wikitext_valid", "en", "train"),
             Example("Der schnelle braune Fuchs springt über den faulen Hund.", False, "xquad", "de", "train"),
             Example("you are an idiot", True, "davidson", "en", "train")]  # not prose: never cut
    out = fragments(prose, seed=13, per_language=50)
    assert len(out) == 100 and {e.lang for e in out} == {"en", "de"}
    assert all(not e.toxic and e.source == "fragment" and e.part == "train" for e in out)
    words = {"en": set(preprocess(prose[0].text).split()), "de": set(preprocess(prose[1].text).split())}
    assert all(1 <= len(e.text.split()) <= FRAGMENT_WORDS and set(e.text.split()) <= words[e.lang] for e in out)
    assert len({len(e.text.split()) for e in out}) > 3  # lengths vary
    assert fragments(prose, seed=13, per_language=50) == out and fragments(prose, seed=14, per_language=50) != out
    assert fragments(prose, seed=13, per_language=0) == []
