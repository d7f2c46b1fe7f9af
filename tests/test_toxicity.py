"""Toxicity stage: preprocessing, spans, the document rule, the word list, and the shipped model on real data."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from pipeline.schema import make_record, records_to_table
from stages.registry import get
from stages.toxicity import (
    Toxicity,
    ToxicityConfig,
    WordList,
    bundled_model_path,
    preprocess,
    split_spans,
)
from pipeline.train.toxicity import limit_per_source, load_background, load_examples, prf, roc_auc, split

TOXIC = [
    "You are a stupid fucking idiot.",
    "Shut up you worthless bitch.",
    "Those filthy animals should all be sent back where they came from.",
]
CLEAN = [
    "The committee will publish its annual report next week.",
    "The recipe calls for two cups of flour and a pinch of salt.",
    "The museum opens at nine on weekdays.",
]


@pytest.fixture(scope="module")
def stage():
    s = Toxicity()
    s.ensure_setup()
    return s


def table(rows):
    return records_to_table(
        make_record(source=s, kind=k, file="f", offset=i, text=t) for i, (t, s, k) in enumerate(rows)
    )


def test_registered_and_model_ships_small():
    assert get("toxicity") is Toxicity
    path = bundled_model_path()
    assert path.is_file()
    assert path.stat().st_size <= 5 * 1024 * 1024


def test_preprocess():
    assert preprocess("RT @bob: Check http://t.co/xyz &amp; LOOOOOL!!!\nIdiot?") == (
        "rt xuser : check xurl & lool ! ! ! idiot ?"
    )
    assert preprocess("") == ""
    assert preprocess("  \n ") == ""
    assert preprocess("mail me: a@b.com") == "mail me : a @ b . com"  # not a mention: glued to a word
    assert preprocess("Ünïcödé ÄÖÜ 你好") == "ünïcödé äöü 你好"


def test_split_spans():
    text = "First sentence. Second one!  Third?\n\nNew paragraph here\nline two"
    assert split_spans(text, "sentence") == [
        "First sentence.", "Second one!", "Third?", "New paragraph here", "line two",
    ]
    assert split_spans(text, "paragraph") == ["First sentence. Second one!  Third?", "New paragraph here", "line two"]
    assert split_spans(text, "document") == [text]
    assert split_spans("", "sentence") == []
    assert split_spans("版本。第二句。", "sentence") == ["版本。第二句。"]  # no space after 。: one span
    assert split_spans("版本。 第二句。", "sentence") == ["版本。", "第二句。"]


def test_obvious_toxic_and_clean_sentences(stage):
    tox = stage.score_texts(TOXIC)
    clean = stage.score_texts(CLEAN)
    assert min(tox) > 0.8, tox
    assert max(clean) < 0.2, clean


def test_document_rule(stage):
    long_clean = " ".join(CLEAN * 10)
    one_rude = long_clean + " " + TOXIC[0]
    mostly_toxic = " ".join(TOXIC) + " " + CLEAN[0]
    t = table([(long_clean, "cc", "jsonl"), (one_rude, "cc", "jsonl"), (mostly_toxic, "cc", "jsonl")])
    out = stage.annotate(t)
    score = out.column("toxicity_score").to_pylist()
    frac = out.column("toxic_span_fraction").to_pylist()
    assert score[0] < 0.5 and frac[0] == 0.0
    assert score[1] > 0.8 and 0 < frac[1] < 0.1  # one rude sentence in a long text
    assert frac[2] > 0.5
    assert stage.decide(out) == [None, None, "toxic_content"]
    strict = Toxicity(max_score=0.8)
    assert strict.decide(strict.annotate(t)) == [None, "toxic_content", "toxic_content"]
    any_span = Toxicity(max_toxic_fraction=0.0)
    assert any_span.decide(any_span.annotate(t)) == [None, "toxic_content", "toxic_content"]


def test_document_granularity_scores_whole_text(stage):
    doc = Toxicity(granularity="document")
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


def test_mixed_scripts(stage):
    text = "这是一个关于天气的普通句子。 Das ist ein ganz normaler Satz. " + TOXIC[1]
    (s, f), = stage.score_documents([text])
    assert s > 0.8
    assert 0.2 < f < 0.8


def test_code_skipped_by_default(stage):
    out = stage.annotate(table([("# you idiot\nx = 1", "repo", "code")]))
    assert out.column("toxicity_score").to_pylist() == [None]
    assert stage.decide(out) == [None]


def test_only_listed_languages_scored_when_langid_ran(stage):
    import pyarrow as pa

    t = table([(TOXIC[0], "cc", "jsonl"), (TOXIC[0], "cc", "jsonl"), (TOXIC[0], "cc", "jsonl")])
    t = t.append_column("lang", pa.array(["en", "de", None], pa.string()))
    out = stage.annotate(t)
    assert [s is not None for s in out.column("toxicity_score").to_pylist()] == [True, False, True]
    assert stage.decide(out) == ["toxic_content", None, "toxic_content"]
    every = Toxicity(languages=None)
    assert None not in every.annotate(t).column("toxicity_score").to_pylist()


def test_word_list_aho_corasick(tmp_path):
    words = WordList(["ass", "Bad Word", "darn"])
    assert words.count("You ASS! a bad word, a BAD WORD. darn-it") == 4
    assert words.count("class assessment passes; badword; darned") == 0  # whole words only
    assert words.count("") == 0
    assert WordList([]).count("anything") == 0
    path = tmp_path / "words.txt"
    path.write_text("# my list\nfoo\n\nbar baz\n", encoding="utf-8")
    s = Toxicity(word_list=str(path), max_toxic_words=2)
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


def test_split_is_fixed_by_seed_and_stratified(corpora):
    ex = load_examples(corpora)
    a_train, a_test = split(ex, 13, 0.2)
    b_train, b_test = split(ex, 13, 0.2)
    assert a_test == b_test and a_train == b_train
    assert {e.source for e in a_test} == {"davidson", "stormfront", "jigsaw"}
    assert not any(e.source == "jigsaw" for e in a_train)
    storm = [e for e in a_test if e.source == "stormfront"]
    assert 0.08 < sum(e.toxic for e in storm) / len(storm) < 0.15


def test_held_out_f1_on_real_sample(corpora, stage):
    """The shipped model on 1,200 held-out examples (never trained on): F1 and AUC floors."""
    _, test = split(load_examples(corpora), 13, 0.2)
    sample = random.Random(0).sample([e for e in test if e.source != "jigsaw"], 1200)
    labels = [e.toxic for e in sample]
    m = prf(labels, stage.score_texts([e.text for e in sample]))
    assert m["f1"] > 0.85, m
    assert m["roc_auc"] > 0.9, m


def test_few_false_positives_on_clean_prose(corpora, stage):
    sents = load_background(corpora / "quality" / "wikitext2_test.tokens.txt", limit=2000)
    rate = sum(p >= 0.5 for p in stage.score_texts(sents)) / len(sents)
    assert rate < 0.01, rate


def test_training_is_deterministic_and_learns(corpora, tmp_path):
    """Two seeded trainings on a small real subset give identical model bytes and a usable model."""
    import hashlib

    ex = limit_per_source(load_examples(corpora), 800, 13)
    train_set, test_set = split(ex, 13, 0.2)
    paths = [tmp_path / "a.bin", tmp_path / "b.bin"]
    # Each training in a fresh interpreter: libraries loaded by other tests can switch the CPU's
    # floating-point mode in this process, which changes fastText's arithmetic.
    script = (
        "import sys; from pathlib import Path; "
        "from pipeline.train.toxicity import limit_per_source, load_examples, split, train; "
        "ex = limit_per_source(load_examples(Path(sys.argv[1])), 800, 13); "
        "train(split(ex, 13, 0.2)[0], Path(sys.argv[2]), 13, quantize=False)"
    )
    root = Path(__file__).resolve().parents[1]
    for p in paths:
        proc = subprocess.run([sys.executable, "-c", script, str(corpora), str(p)], cwd=root,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
    digests = {hashlib.md5(p.read_bytes()).hexdigest() for p in paths}
    assert len(digests) == 1
    s = Toxicity(model_path=str(paths[0]))
    m = prf([e.toxic for e in test_set], s.score_texts([e.text for e in test_set]))
    assert m["roc_auc"] > 0.8, m
