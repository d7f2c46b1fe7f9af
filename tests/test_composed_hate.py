"""The composed hateful and clean statements of pipeline/train/composed_hate.py (toxicity training lines)."""
from __future__ import annotations

import random

from pipeline.train import composed_hate
from pipeline.train.toxicity import COMPOSED_LANGUAGES, GROUPS, composed, obfuscate
from stages.toxicity import drop_identity_terms, load_identity_terms, preprocess


def test_every_composed_language_has_hateful_and_clean_lines_of_every_kind():
    assert set(COMPOSED_LANGUAGES) <= set(composed_hate.COMPOSED)
    lines = composed(13)
    for lang in COMPOSED_LANGUAGES:
        spec = composed_hate.COMPOSED[lang]
        mine = [e for e in lines if e.lang == lang]
        assert {e.toxic for e in mine} == {True, False}, lang
        # each hateful `are` predicate is also said in a rejecting clean line (negated, reported, condemned)
        clean = {e.text for e in mine if not e.toxic}
        for p in spec["are"][0]:
            assert any(p in t for t in clean), (lang, p)
        for key in ("hateful", "clean", "rejecting", "negated"):
            assert all("{g}" in t or "{G}" in t for t in spec[key]), (lang, key)
        assert all("{p}" in t for t in spec["rejecting"]), lang


def test_composed_lines_are_seeded_and_misspell_only_hateful_lines():
    a = composed_hate.composed_lines("de", GROUPS["de"], 13, obfuscate)
    assert a == composed_hate.composed_lines("de", GROUPS["de"], 13, obfuscate)
    assert a != composed_hate.composed_lines("de", GROUPS["de"], 14, obfuscate)
    with_typos = composed_hate.composed_lines("de", GROUPS["de"], 13, obfuscate, obfuscated_share=1.0)
    without = composed_hate.composed_lines("de", GROUPS["de"], 13, lambda w, rng: w, obfuscated_share=1.0)
    assert sum(not h for _, h in with_typos) == sum(not h for _, h in without)  # clean lines are never misspelled
    assert len(with_typos) > len(a)


def test_group_names_of_the_composed_subjects_are_identity_terms():
    terms = load_identity_terms()
    for lang, groups in composed_hate.GROUPS_EXTRA.items():
        for g in groups:
            assert any(w in terms for w in preprocess(g).split()), (lang, g)
    # so a composed line reaches the model without the group's name
    line = composed_hate.ARTICLES["pt"]("judeus")
    assert drop_identity_terms(preprocess(f"Eu odeio {line}.")) == "eu odeio os"


def test_obfuscate_changes_one_word_the_way_filters_are_evaded():
    rng = random.Random(1)
    seen = {obfuscate("Ungeziefer", rng) for _ in range(50)}
    assert "Ungeziefer" not in seen and len(seen) > 5
