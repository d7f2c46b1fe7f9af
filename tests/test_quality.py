"""The quality stage: contract, language handling, hand-written edge cases and real-data parity
with datatrove's filters (every rule alone in datatrove vs the same rule here, and datatrove's
4-filter chain, C4 deleting lines, vs the stage with its defaults)."""
from __future__ import annotations

import random
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.quality import C4_SETTINGS, datatrove_chain, dt_reason, isolated_rules, run_chain, same_reason, stage_chain
from pipeline.schema import full_schema, make_record, records_to_table
from stages import registry
from stages.quality.stage import Quality

GOOD = (
    "The history of the town goes back to the twelfth century, when a small abbey was founded on the hill.\n"
    "Over the following centuries the settlement grew into a market town with a busy harbour and a mill.\n"
    "Today it is known for its old bridge, which was rebuilt after a flood and is still in use by the locals.\n"
    "Visitors come to see the abbey ruins, to walk along the river and to taste the cheese that is made nearby.\n"
    "The museum in the former town hall shows tools, paintings and letters that tell the story of the place."
)

EDGE_CASES = {
    "empty": "",
    "single_word": "Hello",
    "all_punctuation": "!!! ... ??? --- ### ,,, ;;; ::: ((( ))) ***",
    "good_prose": GOOD,
    "very_long": GOOD.replace("\n", " ") + "\n" + " ".join(f"token{i} is here." for i in range(8000)),
    "mixed_scripts": GOOD + "\nМосква — столица России. 北京是中国的首都。 Αθήνα είναι η πρωτεύουσα. مرحبا بالعالم.",
    "cjk": "北京是中华人民共和国的首都，也是全国的政治、文化中心。\n上海是中国最大的城市之一，位于长江入海口。\n广州是华南地区的重要城市。",
    "repeated_lines": "\n".join(["Buy cheap shoes online now and save money today!"] * 8 + [GOOD]),
    "repeated_paragraphs": "\n\n".join([GOOD.split("\n")[0]] * 5 + [GOOD]),
    "repeated_ngrams": GOOD + " " + "click here to subscribe to our newsletter " * 20,
    "bullets": "\n".join(f"- item number {i} of the list" for i in range(20)),
    "ellipsis_lines": "\n".join(f"Read more about the story number {i} of the day..." for i in range(10)),
    "javascript_policy": GOOD + "\nPlease enable JavaScript in your browser to continue.\nThis website uses cookies to improve your experience.\nRead our privacy policy for details.",
    "lorem_ipsum": GOOD + "\nLorem ipsum dolor sit amet, consectetur adipiscing elit.",
    "curly_bracket": GOOD + "\nThe code is var x = {a: 1}; and it works.",
    "hashtags": GOOD + " " + " ".join(f"#tag{i}" for i in range(40)),
    "windows_newlines": GOOD.replace("\n", "\r\n"),
    "only_newlines": "\n\n\n\n",
    "numbers_table": "\n".join(" | ".join(str(i * j) for j in range(8)) for i in range(30)),
}


@pytest.fixture(scope="module")
def quality():
    """Measure-only C4, so every rule sees the original text, as each datatrove rule run alone."""
    q = Quality(c4={"remove_lines": False})
    q.ensure_setup()
    return q


@pytest.fixture(scope="module")
def rules():
    return isolated_rules()


def compare(quality, rules, text):
    """Rules whose keep/drop differs from datatrove's same rule run alone (undefined ones skipped)."""
    failed = set(quality.score_text(text)["quality_failed_rules"].split(",")) - {""}
    diffs = []
    for reason, filt, dt_name in rules:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = dt_reason(filt, text, 0)
            except (ZeroDivisionError, ValueError):
                continue
        if reason == "gopher_quality_too_many_ellipses" and r == "gopher_too_many_hashes":
            continue
        if (r == dt_name) != (reason in failed):
            diffs.append(reason)
    return diffs


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_cases_agree_with_datatrove(quality, rules, name):
    assert compare(quality, rules, EDGE_CASES[name]) == []


@pytest.mark.parametrize(
    "name, expected",
    [
        ("empty", "gopher_repetition_empty"),
        ("single_word", "gopher_quality_too_few_words"),
        ("all_punctuation", "gopher_repetition_top_4gram_too_frequent"),  # repetition rules come first, as in FineWeb
        ("good_prose", None),
        ("repeated_lines", "gopher_repetition_too_many_dup_lines"),
        ("repeated_paragraphs", "gopher_repetition_too_many_dup_paras"),
        ("repeated_ngrams", "gopher_repetition_top_3gram_too_frequent"),
        ("bullets", "gopher_repetition_top_2gram_too_frequent"),
        ("lorem_ipsum", "c4_lorem_ipsum"),
        ("curly_bracket", "c4_curly_bracket"),
        ("javascript_policy", None),
        ("hashtags", "gopher_quality_too_many_hashes"),
    ],
)
def test_first_reason(quality, name, expected):
    failed = quality.score_text(EDGE_CASES[name])["quality_failed_rules"]
    assert (failed.split(",")[0] or None) == expected


def test_rule_specific_signals(quality):
    s = quality.score_text(EDGE_CASES["bullets"])
    assert s["rps_doc_frac_lines_start_with_bullet"] == 1.0 and "gopher_quality_too_many_bullet_lines" in s["quality_failed_rules"]
    s = quality.score_text(EDGE_CASES["ellipsis_lines"])
    assert s["rps_doc_frac_lines_end_with_ellipsis"] == 1.0 and "gopher_quality_too_many_ellipsis_lines" in s["quality_failed_rules"]
    s = quality.score_text(EDGE_CASES["javascript_policy"])
    assert s["c4_javascript_lines"] == 1 and s["c4_policy_lines"] == 2


def test_quality_score_range_and_order(quality):
    scores = {k: quality.score_text(v)["quality_score"] for k, v in EDGE_CASES.items()}
    assert all(0.0 <= s <= 1.0 for s in scores.values())
    assert scores["good_prose"] == 1.0
    assert scores["good_prose"] > scores["repeated_ngrams"] > 0 and scores["empty"] < 0.5


def test_cjk_skips_word_rules_unless_asked():
    text = EDGE_CASES["cjk"]
    zh = Quality().score_text(text, "zh")["quality_failed_rules"].split(",")
    assert not {"gopher_quality_too_few_words", "gopher_quality_too_few_stop_words", "gopher_repetition_top_2gram_too_frequent", "c4_too_few_sentences"} & set(zh)
    forced = Quality(word_rules_for_unspaced=True).score_text(text, "zh")["quality_failed_rules"]
    assert "gopher_quality_too_few_words" in forced
    assert "gopher_quality_too_few_words" in Quality().score_text(text, None)["quality_failed_rules"]  # default: English


def test_stop_words_follow_language():
    de = " ".join(["Der Hund und die Katze spielen im Garten mit dem Ball des Nachbarn."] * 6)
    q = Quality()
    assert "gopher_quality_too_few_stop_words" in q.score_text(de, None)["quality_failed_rules"]
    assert "gopher_quality_too_few_stop_words" not in q.score_text(de, "de")["quality_failed_rules"]
    assert "gopher_quality_too_few_stop_words" not in q.score_text(de, "deu_Latn")["quality_failed_rules"]
    assert q.score_text(de, "xx")["rps_doc_stop_word_count"] is None  # no list: rule skipped
    custom = Quality(stop_words={"xx": ["Hund", "Katze"]})
    assert custom.score_text(de, "xx")["rps_doc_stop_word_count"] == 2


def table(texts, langs=None):
    t = records_to_table(
        make_record(source="s", kind="jsonl", file="f", offset=i, text=x) for i, x in enumerate(texts)
    )
    if langs is not None:
        t = t.append_column("lang", pa.array(langs, pa.string()))
    return t


def test_stage_contract():
    assert registry.get("quality") is Quality
    q = Quality()
    texts = [GOOD, EDGE_CASES["lorem_ipsum"], "", None, EDGE_CASES["cjk"]]
    out = q.annotate(table(texts, ["en", "en", "en", "en", "zh"]))
    fields = {f.name: f.type for f in q.signal_fields()}
    for name, typ in fields.items():
        assert out.schema.field(name).type == typ
    reasons = q.decide(out)
    assert reasons[0] is None and reasons[1] == "c4_lorem_ipsum" and reasons[2] == reasons[3] == "gopher_repetition_empty"
    assert reasons[4] in (None, "fineweb_too_many_short_lines")
    assert all(r is None or r in q.reasons for r in reasons)
    full_schema(q.signal_fields())  # signals fit the one output schema
    again = q.annotate(out)  # re-annotating replaces the columns instead of duplicating them
    assert again.num_columns == out.num_columns


def test_pickles_for_workers(quality):
    import pickle

    q = pickle.loads(pickle.dumps(quality))
    assert q._tokenizer is None and q.score_text(GOOD) == quality.score_text(GOOD)


def test_annotate_only_and_score_threshold():
    t = table([GOOD, EDGE_CASES["repeated_ngrams"]])
    q = Quality(drop_on_rules=False)
    assert q.decide(q.annotate(t)) == [None, None]
    q = Quality(drop_on_rules=False, min_quality_score=0.6)  # GOOD (five sentences) 0.74 with the page score, the repeats 0.44
    assert q.decide(q.annotate(t)) == [None, "quality_score_too_low"]
    q = Quality(drop_on_rules=False, min_quality_score=0.95, page_score=False)  # by the classifier alone: 0.99, 0.62
    assert q.decide(q.annotate(t)) == [None, "quality_score_too_low"]


NAV = ["Home", "About us", "Contact", "Opening hours", "Share this", "Print", "Tweet", "Back to top",
       "Sitemap", "Imprint", "© 2024 Town Council"]
NAV_PAGE = "\n".join(NAV[:6] + GOOD.split("\n") + NAV[6:])  # 11 short menu lines around 5 good ones


def test_kept_documents_carry_c4_text():
    t = table([NAV_PAGE, EDGE_CASES["lorem_ipsum"], GOOD + "\nRead more..."])
    q = Quality()
    out = q.annotate(t)
    reasons = q.decide(out)
    # the menu lines made FineWeb's short-line rule fail on the page; on C4's text it passes
    assert reasons == [None, "c4_lorem_ipsum", None]
    assert out.column("text").to_pylist() == [GOOD, EDGE_CASES["lorem_ipsum"], GOOD]  # rejected: original
    assert out.column("c4_removed_lines").to_pylist() == [11, 0, 1]
    chain = datatrove_chain()
    assert [run_chain(chain, x) for x in t.column("text").to_pylist()] == list(zip(reasons, out.column("text").to_pylist()))


def test_remove_lines_false_leaves_text():
    t = table([NAV_PAGE, GOOD + "\nRead more..."])
    q = Quality(c4={"remove_lines": False})
    out = q.annotate(t)
    assert q.decide(out) == ["fineweb_too_many_short_lines", None]
    assert out.column("text").to_pylist() == t.column("text").to_pylist()


def test_rules_before_c4_and_rejects_see_the_original():
    # fails Gopher (too few words): FineWeb measures the original text and the text is not rewritten
    short = "Home\nMenu\nThis is one sentence.\nAnd here is another one."
    q = Quality()
    sig, new = q.evaluate(short)
    assert "gopher_quality_too_few_words" in sig["quality_failed_rules"] and new is None
    assert sig["fineweb_short_line_ratio"] == Quality(c4={"remove_lines": False}).score_text(short)["fineweb_short_line_ratio"]
    # kept only because drop_on_rules is off, it failed C4: datatrove never rewrites it either
    out = Quality(drop_on_rules=False).annotate(table([short, NAV_PAGE]))
    assert out.column("text").to_pylist() == [short, GOOD]


def test_unspaced_documents_are_not_rewritten():
    q = Quality()
    out = q.annotate(table([EDGE_CASES["cjk"]], ["zh"]))
    assert out.column("text").to_pylist() == [EDGE_CASES["cjk"]]


def test_config_is_strict():
    with pytest.raises(Exception):
        Quality(gopher_quality={"min_doc_word": 10})
    q = Quality(c4=None, fineweb=None)
    assert not any(f.name.startswith(("c4_", "fineweb_")) for f in q.signal_fields())
    assert q.default_skip_kinds == ("code", "arxiv")


@pytest.mark.slow
def test_real_data_parity(corpora, quality, rules):
    """>= 99% per-rule agreement with datatrove on a sample of real documents."""
    from benchmarks.quality_corpus import LINGUA_LANGS, fourchan, hplt, lingua, sms, wikitext

    rng = random.Random(0)
    docs = list(hplt(corpora))
    docs = rng.sample(docs, 50) + list(wikitext(corpora))[:12] + rng.sample(list(fourchan(corpora)), 30)
    docs += rng.sample(list(sms(corpora)), 40) + list(lingua(corpora, LINGUA_LANGS, docs_per_lang=3))
    counts = {r: 0 for r, _, _ in rules}
    for _, _, text in docs:
        for r in compare(quality, rules, text):
            counts[r] += 1
    worst = {r: c for r, c in counts.items() if c / len(docs) > 0.01}
    assert not worst, f"rules below 99% agreement on {len(docs)} docs: {worst}"


@pytest.mark.slow
@pytest.mark.parametrize("c4", list(C4_SETTINGS.values()), ids=["c4_defaults", "fineweb_c4"])
def test_real_data_chain_parity(corpora, c4):
    """datatrove's GopherRepetition -> GopherQuality -> C4 -> FineWeb chain vs the stage: the same
    keep/drop and first reason for every document, the identical text for every kept one."""
    from benchmarks.quality_corpus import fourchan, hplt, sms, wikitext

    rng = random.Random(1)
    docs = list(hplt(corpora)) + rng.sample(list(wikitext(corpora)), 15) + rng.sample(list(fourchan(corpora)), 60)
    texts = [t for _, _, t in docs + rng.sample(list(sms(corpora)), 30)]
    filters = datatrove_chain(**c4)
    ours = stage_chain(Quality(c4=c4), texts)
    kept = rewritten = 0
    for i, (text, (reason, out)) in enumerate(zip(texts, ours)):
        dt_reason_, dt_text = run_chain(filters, text, i)
        assert same_reason(dt_reason_, reason), (i, dt_reason_, reason, text[:200])
        if reason is None:
            assert out == dt_text, (i, text[:200])
            kept += 1
            rewritten += out != text
    assert kept >= 20 and rewritten >= 15  # the sample exercises the rewrite


PIECES = [
    "the", "of", "and", "cat", "sat", "on", "mat", "Hello", "world", "a", "x", "supercalifragilistic",
    ".", ",", "!", "?", "...", "…", "#", "#tag", "-", "•", "{", "}", "lorem ipsum", "javascript",
    "privacy policy", "don't", "U.S.", "e.g.", "10km", "$5", "(see)", '"quoted."', "[1]", "北京。", "😀",
    "\n", "\n", "\n\n", "\r\n", "  ", "\t",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from([" ", " ", " ", "", "\n"])), max_size=160))
def test_random_texts_agree_with_datatrove(quality, rules, pieces):
    text = "".join(p + sep for p, sep in pieces)
    assert compare(quality, rules, text) == []


def _rescore_row_by_row(q: Quality, batch: pa.Table) -> tuple[list, list, list]:
    """The per-document reference: `RuleSet.checks` on each row's stored signals, as `evaluate` checks."""
    from stages.quality.stage import mean_of

    names = [f.name for rs in q.rule_sets for f in rs.fields()]
    pre = q._reasons_up_to_c4()
    failed_col, rule_col, changed = [], [], []
    for sig, lang, was in zip(batch.select(names).to_pylist(), batch.column("lang").to_pylist(),
                              batch.column("quality_failed_rules").to_pylist()):
        failed, scores = [], []
        for rs in q.rule_sets:
            for chk in rs.checks(sig, q.lang_rules(lang)):
                scores.append(chk.score)
                if not chk.passed:
                    failed.append(chk.reason)
        failed_col.append(",".join(failed))
        rule_col.append(mean_of(scores))
        now_pre = not any(f in pre for f in failed)
        was_pre = not any(f in pre for f in (was or "").split(",") if f)
        changed.append(bool(pre) and bool(sig.get("c4_removed_lines")) and now_pre != was_pre)
    return failed_col, rule_col, changed


@pytest.mark.parametrize("changes", [
    {},
    {"gopher_quality": {"min_stop_words": 1, "max_non_alpha_words_ratio": 0.64}},
    {"gopher_repetition": {"top_n_grams": [[2, 0.25], [3, 0.2], [4, 0.2]], "dup_line_frac": 0.1}},
    {"fineweb": {"line_punct_exclude_zero": True, "line_punct_thr": 0.3}, "c4": {"min_num_sentences": 0}},
    {"word_rules_for_unspaced": True, "gopher_quality": {"min_doc_words": 0, "max_avg_word_length": 12}},
], ids=["stored", "gopher", "repetition", "fineweb-c4", "unspaced"])
def test_rescore_by_columns_equals_the_rules_row_by_row(changes):
    """Real pages (samples/jsonl), an empty one, a Chinese one and a repetitive one, measured once
    with the default settings; rescored under other settings, column by column, they get exactly
    the failed rules and scores the per-document checks give."""
    import gzip
    import json
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "samples", "jsonl", "web-0000.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        texts = [json.loads(x)["text"] for x in fh if x.strip()]
    texts += ["", "这是一个没有空格的中文句子。" * 30, "buy now\n" * 80, "Short.\n\nToo short... ok…\n- bullet"]
    langs = ["it", "en", "de", None] * (len(texts) // 4) + ["en"] * (len(texts) % 4)
    measured = Quality().annotate(table(texts, langs))
    base = Quality()
    again, _ = base.rescore(measured)  # the run's own settings: what annotate stored
    assert again.column("quality_failed_rules").to_pylist() == measured.column("quality_failed_rules").to_pylist()
    assert again.column("quality_score").to_pylist() == measured.column("quality_score").to_pylist()
    cfg = base.config.model_dump()
    for key, value in changes.items():
        cfg[key] = {**cfg[key], **value} if isinstance(value, dict) else value
    q = Quality(Quality.Config.model_validate(cfg))
    got, changed = q.rescore(measured)
    failed, rule, changed_ref = _rescore_row_by_row(q, measured)
    assert got.column("quality_failed_rules").to_pylist() == failed
    assert got.column("quality_rule_score").to_pylist() == pa.array(rule, pa.float32()).to_pylist()
    assert changed == changed_ref
    if changes:
        assert failed != measured.column("quality_failed_rules").to_pylist()  # the settings do move something
