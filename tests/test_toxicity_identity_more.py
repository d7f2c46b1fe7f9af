"""Identity fairness in Polish, Dutch and Hindi (tests/identity_templates_more.py): with Polish and Dutch
judged (`languages`), no group's neutral or positive statements are rejected at the default rule above
2% (12 sentences per group and language: none may be). Hindi is not judged by default (held-out
ROC-AUC 0.575), and must not be: opted in, one frame ("मेरी कक्षा में {g} हैं।") scores 0.99+ for every
group, a false positive of the model on short Hindi lines, not of a group's name (docs/toxicity.md)."""
from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from pipeline.schema import make_record, records_to_table
from stages.toxicity import JUDGED, Toxicity, load_identity_terms
from tests.identity_templates_more import GROUPS_MORE, sentences_more


def _table(rows):
    t = records_to_table(make_record(source="t", kind="jsonl", file="f", offset=i, text=s)
                         for i, (_, _, _, s) in enumerate(rows))
    return t.append_column("lang", pa.array([r[0] for r in rows], pa.string()))


def test_every_group_name_is_an_identity_term():
    terms = load_identity_terms()
    for lang, groups in GROUPS_MORE.items():
        for g in groups:
            assert any(w.lower() in terms for w in g.split()), (lang, g)


def test_neutral_and_positive_statements_are_kept_per_group_and_language():
    judged = ["pl", "nl"] + [l for l in ("hi",) if l in JUDGED]
    rows = [r for r in sentences_more() if r[0] in judged]
    stage = Toxicity(languages=judged)
    reasons = stage.decide(stage.annotate(_table(rows)))
    rejected = defaultdict(list)
    for (lang, key, _, s), r in zip(rows, reasons):
        rejected[key].append(r is not None)
        rejected[(lang, key)].append(r is not None)
    rates = {k: sum(v) / len(v) for k, v in rejected.items()}
    assert max(rates.values()) <= 0.02, {k: v for k, v in rates.items() if v > 0.02}


def test_hindi_is_not_judged_while_its_frames_fail():
    rows = [r for r in sentences_more() if r[0] == "hi"]
    stage = Toxicity(languages=["hi"])
    rejected = sum(r is not None for r in stage.decide(stage.annotate(_table(rows))))
    assert "hi" not in JUDGED or rejected == 0, rejected


def test_unjudged_languages_pass_unscored_with_a_reason():
    rows = [r for r in sentences_more() if r[0] not in JUDGED][:5] + [("xx", "-", "neutral", "Some words here.")]
    stage = Toxicity()
    out = stage.annotate(_table(rows))
    assert out.column("toxicity_score").to_pylist() == [None] * len(rows)
    assert set(out.column("toxicity_unjudged").to_pylist()) == {"language_not_judged"}
    assert stage.decide(out) == [None] * len(rows)
