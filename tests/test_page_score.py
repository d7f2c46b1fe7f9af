"""The page score: main content vs boilerplate and link lists, scored from the text."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.quality.page_score import FEATURES, PageScore, feature_rows, fit, text_features
from stages.quality.stage import Quality
from tests.test_quality import table

ARTICLE = ("The old bridge over the river was built in 1843 by a local stonemason, who used granite from a "
           "quarry a few miles upstream. It survived the great flood of 1910, when the water rose higher than "
           "anyone in the town could remember, and it still carries traffic today.\n"
           "Engineers who inspected it last year found that the arches, although worn, are sound, and the town "
           "council has decided to repair the parapet rather than replace the structure.")
FOOTER = "Home\nAbout us\nContact\nImpressum\nDatenschutz\nNewsletter\n© 2024 Example GmbH\nFollow us on Twitter"
LINKS = "\n".join(f"Bridge news {i}: council meeting on {i} May" for i in range(1, 15))


def test_shipped_weights_rank_an_article_above_its_footer_and_link_list():
    q = Quality(drop_on_rules=False)
    out = q.annotate(table([ARTICLE, FOOTER, LINKS], ["en"] * 3))
    page = out.column("quality_page_score").to_pylist()
    assert page[0] > 0.5 > max(page[1], page[2])
    score = out.column("quality_score").to_pylist()
    assert score[0] > max(score[1], score[2])


def test_page_score_off_ranks_by_the_classifier_as_before():
    q = Quality(page_score=False)
    out = q.annotate(table([ARTICLE], ["en"]))
    assert "quality_page_score" not in out.column_names
    r, c = out.column("quality_rule_score")[0].as_py(), out.column("quality_classifier_score")[0].as_py()
    assert out.column("quality_score")[0].as_py() == pytest.approx((r + c) / 2, abs=1e-6)


def test_rescore_combines_the_stored_page_score():
    """`refinery retune` re-derives quality_score from stored columns: the page score, not the classifier's."""
    q = Quality(drop_on_rules=False)
    out = q.annotate(table([ARTICLE, FOOTER, LINKS], ["en"] * 3))
    again, _ = q.rescore(out)
    assert again.column("quality_score").to_pylist() == out.column("quality_score").to_pylist()


def test_dense_scripts_count_as_latin_lengths():
    """A Chinese sentence counts about as long as its English translation (3 characters per Han character)."""
    zh = text_features("这座古老的桥建于一八四三年，至今仍在使用。")
    en = text_features("The old bridge was built in 1843 and is still in use today.")
    assert abs(zh[0] - en[0]) < 0.5  # log characters
    assert abs(zh[8] - en[8]) < 0.6  # log words per sentence


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_features_are_finite_for_any_text(text):
    row = feature_rows([text], [0.5], ["en"])
    assert row.shape == (1, len(FEATURES)) and np.isfinite(row).all()


def test_fit_separates_and_is_deterministic():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, len(FEATURES)))
    y = (x[:, 4] + 0.3 * rng.normal(size=400) > 0).astype(float)
    w1, w2 = fit(x, y, np.ones(400)), fit(x, y, np.ones(400))
    assert w1 == w2
    s = PageScore({**w1, "language_offsets": {}}).from_features(x)
    assert ((s > 0.5) == (y == 1)).mean() > 0.9


def test_language_offsets_apply_by_the_lang_column():
    w = {"features": list(FEATURES), "mean": [0.0] * len(FEATURES), "scale": [1.0] * len(FEATURES),
         "coef": [1.0] + [0.0] * (len(FEATURES) - 1), "bias": 0.0, "language_offsets": {"pl": 2.0}}
    ps = PageScore(w)
    en, pl, none = ps.scores(["x", "x", "x"], [0.5, 0.5, 0.5], ["en", "pol", None])
    assert en == none == pytest.approx(0.5) and pl == pytest.approx(1 / (1 + np.exp(-2.0)))
    with pytest.raises(ValueError):
        PageScore({**w, "features": ["other"]})


@pytest.mark.slow
def test_web_pages_held_out(corpora):
    """Held-out sites of trafilatura's eval pages (the half the shipped weights were not fitted on)."""
    from pipeline.train.quality import stage_scores
    from pipeline.train.toxicity import roc_auc
    from pipeline.train.web_pages import read_benchmark, split_by_site, with_languages

    docs = with_languages(read_benchmark(corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst", "cache"))
    _, report = split_by_site(with_languages(read_benchmark(corpora / "web" / "trafilatura_eval_html_benchmark.tar.zst", "eval")), 13)
    for part in (docs, report):
        rows = [(d.text, d.lang, d.hq, d.kind) for d in part]
        sc = stage_scores(rows, page_score=True)["quality_score"]
        for neg, goal in (("boilerplate", 0.85), ("list", 0.80)):
            idx = [i for i, r in enumerate(rows) if r[3] in ("article", neg)]
            assert roc_auc([rows[i][2] for i in idx], [sc[i] for i in idx]) >= goal, neg


def test_shipped_weights_are_small_and_hold_no_text():
    """Numbers only: 13 weights, means and spreads, one offset per calibrated language."""
    import json

    from stages.quality.page_score import shipped_weights_path

    path = shipped_weights_path()
    w = json.loads(path.read_text())
    assert path.stat().st_size < 20_000 and set(w) <= {"features", "mean", "scale", "coef", "bias", "l2",
                                                         "language_offsets", "fitted_to"}
    assert len(w["coef"]) == len(FEATURES) and {"en", "de", "pl", "zh"} <= set(w["language_offsets"])
    assert w["language_offsets"]["en"] == 0.0
