"""English: what the model is trained on, and what it must hold on held-out data (docs/toxicity.md, "English")."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import toxicity_functional as suite  # noqa: E402
from pipeline.train import english_contrasts  # noqa: E402
from pipeline.train import toxicity as train  # noqa: E402
from pipeline.train.toxicity import roc_auc  # noqa: E402
from stages.toxicity import JUDGED, Toxicity  # noqa: E402

EXPLETIVES = {"fuck", "fucking", "shit", "bullshit", "dick"}


def test_expletives_that_insult_nobody_are_not_inserted_as_insults():
    assert not EXPLETIVES & set(train.INSERT_WORDS["en"])


def test_english_contrast_lines_are_labelled_as_written():
    rows = english_contrasts.lines(train.GROUPS["en"], train.COMPOSED_PLAIN_SUBJECTS, 13)
    clean = [t for t, y in rows if not y]
    hateful = [t for t, y in rows if y]
    assert len(clean) > 150 and len(hateful) >= 50
    # profanity lines are clean, and every expletive used is one the insertion list no longer has
    assert any("fucking" in t for t in clean) and any(t.startswith("Shit,") for t in clean)
    assert all(not any(w in t.lower().split() for w in ("fuck", "fucking", "shit")) for t in hateful)
    composed = {e.text for e in train.composed(13) if e.lang == "en"}
    assert {t for t, _ in rows} <= composed


@pytest.mark.slow
def test_davidson_offensive_only_class_is_not_trained_on(corpora, monkeypatch):
    import csv

    with open(corpora / "toxicity" / "davidson2017_labeled_data.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    offensive = {r["tweet"] for r in rows if r["class"] == "1"}
    hate = {r["tweet"] for r in rows if r["class"] == "0"} - offensive
    now = [e for e in train.load_labelled(corpora) if e.source == "davidson"]
    monkeypatch.setattr(train, "DROP_DAVIDSON_OFFENSIVE", False)
    before = [e for e in train.load_labelled(corpora) if e.source == "davidson"]
    trained = {e.text for e in now if e.part == "train"}
    assert not trained & offensive
    assert trained & hate and {e.text for e in before if e.part == "train"} & offensive
    # the held-out parts are the same lines with the same labels (class 1 still toxic there)
    for part in ("dev", "test"):
        assert sorted((e.text, e.toxic) for e in now if e.part == part) == \
            sorted((e.text, e.toxic) for e in before if e.part == part)


def test_queer_is_an_identity_term_and_slurs_are_not():
    from stages.toxicity import UNSCORED_TERMS

    assert {"queer", "queers", "gay", "lesbian"} <= UNSCORED_TERMS
    assert not {"dyke", "faggot", "tranny"} & UNSCORED_TERMS


def test_english_ranks_well_but_is_not_judged_while_books_are_rejected():
    """English reaches the ROC-AUC goal on both held-out measurements; it is not judged because the
    stage rejects more than 0.5% of held-out book documents in English (the coverage rule)."""
    data = json.loads((ROOT / "stages" / "data" / "toxicity_languages.json").read_text(encoding="utf-8"))
    en = data["not_judged"]["en"]
    assert "en" not in JUDGED
    assert en["labelled_test"]["auc"] >= 0.80 and en["functional_test"]["auc"] >= 0.80
    assert en["clean_prose"]["rejected_share"] > data["max_prose_rejected"]


def test_english_functional_test_part_ranks_hate_above_its_contrasts():
    cs = suite.cases("en", "test")
    st = Toxicity(languages=["en"])
    scores = st.score_texts([t for *_, t in cs], "en")
    assert roc_auc([h for _, h, _, _ in cs], scores) >= 0.80  # 0.696 with the model before
    # profanity that insults nobody and reclaimed words are not ranked with the hate
    by = {}
    for (cat, *_), s in zip(cs, scores):
        by.setdefault(cat, []).append(s)
    mean = {c: sum(v) / len(v) for c, v in by.items()}
    assert mean["reclaimed_slur"] < mean["direct_hate"] and mean["profanity_not_hate"] < mean["dehumanisation"]


def test_short_lines_are_scored_with_the_lines_after_them():
    import numpy as np
    import pyarrow as pa

    from stages.toxicity import join_short_lines

    lines = pa.array(["a b c", "x", "y z w q", "k", "l m n"], pa.large_string())
    spans, owner = join_short_lines(lines, np.array([0, 0, 0, 1, 2]), 3)
    assert spans.to_pylist() == ["a b c", "x\x0b y z w q", "k", "l m n"]  # never across documents
    assert owner.tolist() == [0, 0, 1, 2]
    same, _ = join_short_lines(lines, np.array([0, 0, 0, 1, 2]), 1)
    assert same.to_pylist() == lines.to_pylist()


@pytest.mark.slow
def test_english_clean_prose_opted_in(corpora):
    """Held-out English books, encyclopedia articles and textbook sections with English opted in: the
    figures of docs/toxicity.md (books 5.96%, was 10.50% before the English changes and 12.70% before
    that); the books are why English is not judged."""
    import pyarrow as pa

    from benchmarks.toxicity_prose import documents
    from pipeline.schema import make_record, records_to_table

    st = Toxicity(languages=["en"])
    limits = {"Gutenberg even books, 20-paragraph documents": 0.07, "OpenStax sections, test half (NC)": 0.01,
              "WikiText-2 test articles": 0.02, "XQuAD paragraphs, articles 24-47": 0.0}
    for (lang, name), docs in documents(corpora).items():
        if lang != "en":
            continue
        t = records_to_table(make_record(source="p", kind="jsonl", file="f", offset=i, text=d) for i, d in enumerate(docs))
        ann = st.annotate(t.append_column("lang", pa.array([lang] * len(docs), pa.string())))
        rejected = sum(r is not None for r in st.decide(ann))
        assert rejected <= limits[name] * len(docs), (name, rejected, len(docs))
