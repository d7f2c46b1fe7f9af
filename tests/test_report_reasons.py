"""The report shows what each rule did: signal histograms split by the reason that reads the signal
(Stage.reason_signals), audit samples cut around where the reason applies (Stage.flagged_span)."""
from __future__ import annotations

import re

import numpy as np

from pipeline.engine.ledger import Ledger
from pipeline.report.build import SPAN_END, SPAN_START, write_report
from pipeline.report.scan import scan_run
from stages.quality.stage import Quality
from stages.toxicity import Toxicity
from tests.report_helpers import doc, write_run

FILLER = "A calm sentence about the weather and the garden. "


def _run(tmp_path):
    kept = [doc("web", 0, i, f"kept text {i}", lang="en", lang_score=0.9) for i in range(6)]
    low = [(doc("web", 0, 10 + i, f"low score {i}", lang="en", lang_score=0.1 + 0.05 * i), "language_score_too_low")
           for i in range(4)]
    other = [(doc("web", 0, 20 + i, f"french {i}", lang="fr", lang_score=0.95), "language_not_allowed")
             for i in range(3)]
    return write_run(tmp_path / "out", [{"source": "web", "raw_bytes": 1000, "kept": kept,
                                         "rejects": {"langid": low + other}}])


def _legend(svg: str) -> list[str]:
    return re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="10" height="10" fill="[^"]+"/><text [^>]*>([^<]*)</text>', svg)


def test_histogram_shows_the_reason_that_reads_the_signal_apart(tmp_path):
    out = _run(tmp_path)
    write_report(str(out), resamples=50)
    svg = (out / "report" / "signal_lang_score.svg").read_text()
    assert _legend(svg) == ["kept", "langid: language_score_too_low", "langid: other reasons", "rejected later"]
    scan = scan_run(str(out), Ledger.read(str(out / "ledger.json")))
    by_reason = scan.signal_reasons["lang_score"]
    assert sorted(by_reason[("langid", "language_score_too_low")].round(2)) == [0.1, 0.15, 0.2, 0.25]
    assert sorted(by_reason[("langid", "language_not_allowed")].round(2)) == [0.95] * 3
    assert sorted(scan.signals["lang_score"]["langid"].round(2)) == [0.1, 0.15, 0.2, 0.25] + [0.95] * 3


def test_quality_rules_declare_the_signal_they_read():
    q = Quality(classifier=None, gopher_repetition={"dup_n_grams": [(5, 0.15)]})
    sig = q.reason_signals()
    assert sig["gopher_quality_too_few_words"] == sig["gopher_quality_too_many_words"] == "rps_doc_word_count"
    assert sig["gopher_repetition_too_many_dup_5grams"] == "rps_doc_dup_5gram_frac"
    assert "gopher_repetition_too_many_dup_6grams" not in sig  # not in this config
    assert sig["fineweb_too_many_short_lines"] == "fineweb_short_line_ratio"
    assert set(sig) <= set(q.reasons) and "quality_score_too_low" not in sig  # no min_quality_score
    assert Quality(classifier=None, min_quality_score=0.5).reason_signals()["quality_score_too_low"] == "quality_score"
    assert Toxicity().reason_signals()["toxic_content"] == "toxicity_score"


def test_quality_flags_the_repeated_line_and_the_curly_bracket():
    q = Quality(classifier=None)
    text = "Intro line here.\nSame line again.\nOther text.\nSame line again.\n\nWe write f() { return 1; } here.\nend"
    s, e = q.flagged_span({"text": text, "drop_reason": "gopher_repetition_too_many_dup_lines"})
    assert text[s:e] == "Same line again." and s == text.rindex("Same line again.")
    s, e = q.flagged_span({"text": text, "drop_reason": "c4_curly_bracket"})
    assert text[s:e] == "We write f() { return 1; } here."
    # a '{' on a line C4 deletes (no terminal punctuation) is not what the rule saw
    assert q.flagged_span({"text": "a { b\nNothing here at all.", "drop_reason": "c4_curly_bracket"}) is None
    assert q.flagged_span({"text": text, "drop_reason": "gopher_quality_too_few_words"}) is None


def test_toxicity_flags_its_highest_scoring_paragraph():
    t = Toxicity()
    bad = "You are a stupid idiot and I hate you, go die you worthless moron."
    text = "\n\n".join([FILLER * 3, FILLER * 2, bad, FILLER])
    s, e = t.flagged_span({"text": text, "drop_reason": "toxic_content", "lang": "en"})
    assert text[s:e] == bad


def test_audit_sample_is_cut_around_the_flagged_span(tmp_path):
    bad = "THE SAME REPEATED LINE"
    text = (FILLER * 30) + "\n" + bad + "\n" + (FILLER * 10) + "\n" + bad + "\n" + FILLER * 20
    rows = [(doc("web", 0, 30, text, lang="en", lang_score=0.9), "gopher_repetition_too_many_dup_lines")]
    out = write_run(tmp_path / "out", [{"source": "web", "raw_bytes": 1000, "kept": [doc("web", 0, 1, "k", lang="en",
                                                                                         lang_score=0.9)],
                                        "rejects": {"langid": rows}}])
    q = Quality(classifier=None)
    scan = scan_run(str(out), Ledger.read(str(out / "ledger.json")), flagged_span=lambda stage, row: q.flagged_span(row))
    (ex,) = scan.examples[("langid", "gopher_repetition_too_many_dup_lines")]
    at = text.rindex(bad)
    assert ex.span_of == (at, at + len(bad))
    assert ex.text.startswith("…") and ex.text.endswith("…") and 395 <= len(ex.text) <= 402
    assert ex.text[ex.span_at:ex.span_end_at] == bad
    assert abs(ex.span_at - (len(ex.text) - ex.span_end_at)) <= 3  # centred
    # without a span: the first 400 characters, as before
    plain = scan_run(str(out), Ledger.read(str(out / "ledger.json"))).examples[
        ("langid", "gopher_repetition_too_many_dup_lines")][0]
    assert plain.text == text[:400] + "…" and plain.span_at is None


def test_report_marks_the_flagged_span(tmp_path, monkeypatch):
    import pipeline.report.build as build

    bad = "You are a stupid idiot and I hate you, go die you worthless moron."
    text = "\n\n".join([FILLER * 12, bad, FILLER * 12])
    rows = [(doc("web", 0, 30, text, lang="en", lang_score=0.9), "toxic_content")]
    out = write_run(tmp_path / "out", [{"source": "web", "raw_bytes": 1000,
                                        "kept": [doc("web", 0, 1, "k", lang="en", lang_score=0.9)],
                                        "rejects": {"langid": rows}}])
    # the handmade run's langid label stands in for a toxicity stage
    monkeypatch.setattr(build, "recipe_stages", lambda recipe: {"langid": Toxicity()})
    md = write_report(str(out), resamples=50).markdown
    audit = md.split("## Rejected documents to audit", 1)[1]
    at = text.index(bad)
    assert f"(flagged: characters {at:,}-{at + len(bad):,})" in audit
    assert f"{SPAN_START}{bad}{SPAN_END}" in audit


def test_signal_series_by_reason_only_for_a_signal_a_rule_reads():
    from pipeline.report.build import _signal_series

    q = Quality(classifier=None)
    groups = {"kept": np.array([60.0]), "quality": np.array([10.0, 20.0, 300.0])}
    by_reason = {("quality", "gopher_quality_too_few_words"): np.array([10.0, 20.0]),
                 ("quality", "c4_too_few_sentences"): np.array([300.0])}
    stages = ["read", "quality"]
    names = [(n, sorted(v)) for n, v, _ in _signal_series(groups, stages, by_reason, "rps_doc_word_count", lambda s: q)]
    assert names == [("kept", [60.0]), ("quality: gopher_quality_too_few_words", [10.0, 20.0]),
                     ("quality: other reasons", [300.0]), ("rejected later", [])]
    # no rule reads quality_score here (no min_quality_score): the stage's rejects stay one group
    assert [n for n, _, _ in _signal_series(groups, stages, by_reason, "quality_score", lambda s: q)] == [
        "kept", "rejected at quality", "rejected later"]


def test_decontamination_flags_the_overlap_with_the_test_item(tmp_path):
    from stages.decontam.stage import CONTAMINATED, Decontamination
    from tests.helpers import write_jsonl

    q = ("Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
         "for her friends every day with four.")
    write_jsonl(tmp_path / "gsm.jsonl", [{"q": q, "id": "gsm-0"}])
    st = Decontamination(benchmarks=[{"name": "gsm", "path": str(tmp_path / "gsm.jsonl"), "fields": ["q"],
                                      "id_field": "id"}])
    text = FILLER * 8 + q.upper() + " " + FILLER * 8
    s, e = st.flagged_span({"text": text, "drop_reason": CONTAMINATED})
    assert text[s:e] == q.upper().rstrip(".")  # from its first word to its last
    assert st.flagged_span({"text": FILLER * 4, "drop_reason": CONTAMINATED}) is None


def test_a_stage_that_cannot_flag_is_reported_once_and_samples_start_at_the_top(tmp_path, monkeypatch, caplog):
    import pipeline.report.build as build

    rows = [(doc("web", 0, 30 + i, f"{FILLER * 10} sample {i}", lang="en", lang_score=0.9), "toxic_content")
            for i in range(3)]
    out = write_run(tmp_path / "out", [{"source": "web", "raw_bytes": 1000,
                                        "kept": [doc("web", 0, 1, "k", lang="en", lang_score=0.9)],
                                        "rejects": {"langid": rows}}])
    broken = Toxicity(model_path=str(tmp_path / "gone.bin"))
    monkeypatch.setattr(build, "recipe_stages", lambda recipe: {"langid": broken})
    with caplog.at_level("WARNING", logger="refinery"):
        md = write_report(str(out), resamples=50).markdown
    assert sum("cannot say where its rejects were flagged" in r.message for r in caplog.records) == 1
    audit = md.split("## Rejected documents to audit", 1)[1]
    assert "(flagged:" not in audit and audit.count(f"> {FILLER[:20]}") == 3
