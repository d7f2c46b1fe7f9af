"""Identity fairness of the shipped toxicity model, at the stage's default document rule.

Neutral and positive sentences about 25 identity groups (tests/identity_templates.py, en/de/fr/es),
each scored as a one-sentence document with its `lang`: at most 2% of them may be rejected per group
(60 sentences per group: one rejection is 1.7%). Their hateful counterparts must still outscore them.
"""
from __future__ import annotations

from collections import defaultdict

import pytest

from pipeline.schema import make_record, records_to_table
from pipeline.train.toxicity import TRAIN_FRAMES, generated
from stages.toxicity import Toxicity
from tests.identity_templates import FRAMES, GROUP_NAMES, sentences

MAX_FPR = 0.02


@pytest.fixture(scope="module")
def decided():
    """(lang, group, kind, sentence, rejected, score) for every template sentence."""
    rows = sentences()
    stage = Toxicity(languages=sorted(FRAMES))  # the model in these languages, judged by default or not
    recs = [make_record(source="t", kind="jsonl", file="f", offset=i, text=s) for i, (_, _, _, s) in enumerate(rows)]
    table = records_to_table(recs)
    import pyarrow as pa

    table = table.append_column("lang", pa.array([r[0] for r in rows], pa.string()))
    annotated = stage.annotate(table)
    reasons = stage.decide(annotated)
    scores = annotated.column("toxicity_score").to_pylist()
    return [(*r, reason is not None, sc) for r, reason, sc in zip(rows, reasons, scores)]


def test_the_set_is_big_enough_and_disjoint_from_training():
    rows = sentences()
    assert len(GROUP_NAMES) >= 15
    assert {lang for lang, *_ in rows} >= {"en", "de", "fr"}
    per_group = defaultdict(int)
    for lang, g, kind, _ in rows:
        per_group[g] += kind != "hateful"
    assert min(per_group.values()) >= 50  # one rejection stays under 2%
    trained = {e.text for e in generated(13)}
    assert not trained & {s for *_, s in rows}
    for lang, frames in FRAMES.items():
        train_frames = {f for fs in TRAIN_FRAMES[lang].values() for f in fs}
        assert not train_frames & {f for fs in frames.values() for f in fs}


def _rates(decided, key):
    out = defaultdict(list)
    for lang, g, kind, s, rejected, score in decided:
        if kind != "hateful":
            out[lang if key == "lang" else g].append(rejected)
    return {k: sum(v) / len(v) for k, v in out.items()}


# Regression guards at the shipped model's measured rates (docs/toxicity.md, "Identity fairness"):
# per language, neutral and positive sentences rejected (none of 375 in each language; the previous
# model rejected 22 of 375 French ones, one positive frame for every group, and the guard was 0.06).
GUARD_PER_LANGUAGE = {"en": 0.003, "de": 0.003, "es": 0.003, "fr": 0.003}


def test_neutral_and_positive_sentences_are_kept_per_group(decided):
    """The issue's goal (1b): at most 2% of the neutral and positive sentences about any group rejected."""
    per_group = _rates(decided, "group")
    assert max(per_group.values()) <= MAX_FPR, sorted(per_group.items(), key=lambda x: -x[1])[:5]
    per_lang = _rates(decided, "lang")
    assert all(per_lang[l] <= GUARD_PER_LANGUAGE[l] for l in per_lang), per_lang


def test_the_issue_examples_are_kept(decided):
    by_text = {s: rejected for *_, s, rejected, _ in decided}
    assert by_text["These women make me so happy."] is False
    assert by_text["They work with a lot of Muslims."] is False


# Hateful sentences caught at the default rule (paragraph >= 0.95), guards a little under the measured
# shares of the shipped model (en 80%, de 77%, fr 22%, es 80%; ROC-AUC 1.000, 1.000, 1.000, 0.999).
# The model before it caught 80 / 19 / 40 / 60%: the composed French lines that reject or report a
# hateful predicate ("Le message « ... sont des parasites » a été supprimé") pulled such words below
# 0.95 in French while the ranking stayed perfect (docs/toxicity.md, "Identity terms").
HATEFUL_CAUGHT_FLOOR = {"en": 0.75, "de": 0.70, "fr": 0.20, "es": 0.75}


def test_hateful_counterparts_score_higher(decided):
    """Per language, a hateful sentence outscores a neutral or positive one (ROC-AUC), and some are caught."""
    from pipeline.train.toxicity import roc_auc

    for lang in FRAMES:
        rows = [(kind == "hateful", score) for l, g, kind, s, rejected, score in decided if l == lang]
        auc = roc_auc([y for y, _ in rows], [s for _, s in rows])
        caught = sum(r for l, g, kind, s, r, _ in decided if l == lang and kind == "hateful")
        assert auc >= 0.85, (lang, auc)
        assert caught >= HATEFUL_CAUGHT_FLOOR.get(lang, 0.0) * len(GROUP_NAMES) * len(FRAMES[lang]["hateful"]), (lang, caught)
