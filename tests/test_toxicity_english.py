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


def test_english_is_judged_with_its_measured_auc():
    data = json.loads((ROOT / "stages" / "data" / "toxicity_languages.json").read_text(encoding="utf-8"))
    assert "en" in JUDGED and "en" in data["judged"]
    en = data["judged"]["en"]
    assert en["labelled_test"]["auc"] >= 0.80 and en["functional_test"]["auc"] >= 0.80


def test_english_functional_test_part_ranks_hate_above_its_contrasts():
    cs = suite.cases("en", "test")
    st = Toxicity()
    scores = st.score_texts([t for *_, t in cs], "en")
    assert roc_auc([h for _, h, _, _ in cs], scores) >= 0.80
    # profanity that insults nobody and reclaimed words are not ranked with the hate
    by = {}
    for (cat, *_), s in zip(cs, scores):
        by.setdefault(cat, []).append(s)
    mean = {c: sum(v) / len(v) for c, v in by.items()}
    assert mean["reclaimed_slur"] < mean["direct_hate"] and mean["profanity_not_hate"] < mean["dehumanisation"]


@pytest.mark.slow
def test_english_clean_prose_is_kept_at_the_defaults(corpora):
    """Held-out English books, encyclopedia articles and textbook sections: at most 0.5% rejected."""
    import pyarrow as pa

    from benchmarks.toxicity_prose import documents
    from pipeline.schema import make_record, records_to_table

    st = Toxicity()
    for (lang, name), docs in documents(corpora).items():
        if lang != "en":
            continue
        t = records_to_table(make_record(source="p", kind="jsonl", file="f", offset=i, text=d) for i, d in enumerate(docs))
        ann = st.annotate(t.append_column("lang", pa.array([lang] * len(docs), pa.string())))
        assert all(s is not None for s in ann.column("toxicity_score").to_pylist()), name  # English is scored
        rejected = sum(r is not None for r in st.decide(ann))
        assert rejected <= 0.005 * len(docs), (name, rejected, len(docs))
