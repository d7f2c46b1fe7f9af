"""Decontamination: normalisation and index shapes (property tests), the stage's decisions and
details, config validation, and a run with retune (real-data accuracy: test_decontamination_real.py)."""
from __future__ import annotations

import gzip
import json
import string
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from pipeline.errors import ConfigError
from pipeline.engine.recipe import load_recipe
from stages import registry
from stages.decontam.benchmarks import BenchmarkError, read_items
from stages.decontam.index import NgramIndex
from stages.decontam.normalise import token_spans, tokens
from stages.decontam.stage import CONTAMINATED, Decontamination, _cut, _merge
from tests.helpers import write_jsonl, write_recipe

ITEMS = [
    {"q": "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
          "for her friends every day with four.", "a": "She sells the remainder at the farmers' market daily "
          "for $2 per fresh duck egg. #### 18", "id": "gsm-0"},
    {"q": "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total does it "
          "take?", "a": "It takes 2/2=<<2/2=1>>1 bolt of white fiber so the total is 2+1=<<2+1=3>>3 bolts. #### 3",
     "id": "gsm-1"},
    {"q": "What is two plus two today?", "a": "four", "id": "short"},  # 6 words: too short to use
]
CODE_ITEM = {"prompt": "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
                       "    \"\"\" Check if in given list of numbers, are any two numbers closer to each other than\n"
                       "    given threshold.\n    \"\"\"\n",
             "canonical_solution": "    for idx, elem in enumerate(numbers):\n        for idx2, elem2 in enumerate(numbers):\n"
                                   "            if idx != idx2:\n                distance = abs(elem - elem2)\n"
                                   "                if distance < threshold:\n                    return True\n\n    return False\n",
             "task_id": "HumanEval/0"}


@pytest.fixture
def bench(tmp_path: Path) -> dict[str, Path]:
    write_jsonl(tmp_path / "b" / "gsm.jsonl", ITEMS)
    write_jsonl(tmp_path / "b" / "he.jsonl", [CODE_ITEM])
    return {"gsm": tmp_path / "b" / "gsm.jsonl", "he": tmp_path / "b" / "he.jsonl"}


def stage(bench, **kw) -> Decontamination:
    return Decontamination(benchmarks=[
        {"name": "gsm", "path": str(bench["gsm"]), "fields": ["q", "a"], "id_field": "id"},
        {"name": "he", "path": str(bench["he"]), "fields": ["prompt", "canonical_solution"], "id_field": "task_id",
         "tokenizer": "code"}], **kw)


def batch(texts: list[str], kind: str = "web") -> pa.Table:
    return pa.table({"text": texts, "source": ["s"] * len(texts), "kind": [kind] * len(texts)})


def run(st: Decontamination, texts: list[str]) -> tuple[pa.Table, list, list]:
    ann = st.annotate(batch(texts))
    reasons = st.decide(ann)
    return ann, reasons, list(st.drop_details(ann, reasons) or [None] * len(texts))


# -- normalisation: property tests -----------------------------------------------------------------
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
ASCII_WORDS = st.lists(st.text(string.ascii_letters + string.digits, min_size=1, max_size=8), min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.sampled_from(["words", "code"]))
def test_fast_and_span_tokenisation_agree(text, tok):
    toks, spans = token_spans(text, tok)
    assert toks == tokens(text, tok)
    assert len(spans) == len(toks)
    for t, (s, e) in zip(toks, spans):
        assert 0 <= s < e <= len(text)
        assert t in tokens(text[s:e], tok)  # the span holds the token (ASCII: it is the token)


@settings(max_examples=200, deadline=None)
@given(ASCII_WORDS, st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n\n ", ", ", ". ", "! ", " - ", "\" ",
                                                 "' ", "? ", "; ", ": ", " (", ") "]), min_size=30, max_size=30),
       st.sampled_from([str.upper, str.lower, str.title, str.swapcase]))
def test_words_ignore_case_punctuation_and_whitespace(words, seps, case):
    plain = " ".join(words)
    changed = "".join(case(w) + seps[i] for i, w in enumerate(words))
    assert tokens(changed) == tokens(plain) == [w.lower() for w in words]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["def", "f", "(", "x", ")", ":", "return", "x", "+", "1", "[", "]", "==", "elem2"]),
                min_size=1, max_size=40),
       st.lists(st.sampled_from([" ", "\n    ", "\t", "  ", "\n\n"]), min_size=40, max_size=40))
def test_code_ignores_whitespace_and_case_but_not_symbols(parts, spaces):
    a = "".join(p + s for p, s in zip(parts, spaces))
    b = " ".join(parts).upper()
    assert tokens(a, "code") == tokens(b, "code")
    if "+" in parts:
        assert tokens(a.replace("+", "-"), "code") != tokens(a, "code")


def test_unicode_is_nfkc_and_lower_case():
    assert tokens("ＧＳＭ８Ｋ Ｃａｆé Straße") == tokens("gsm8k cafe\u0301 strasse".replace("strasse", "straße"))
    assert tokens("ﬁve") == ["five"]


# -- the index: shapes ------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefghij+-("), min_size=1, max_size=30), min_size=1, max_size=6),
       st.integers(1, 8), st.integers(1, 8))
def test_every_window_of_every_item_is_found_in_itself(items, n, min_tokens):
    """A window is k words and the symbols between them; an item's every window is found in it."""
    ix = NgramIndex()
    windows = {i: ix.add(i, toks, n, min_tokens) for i, toks in enumerate(items)}
    ix.freeze()
    for i, toks in enumerate(items):
        found = ix.find(toks, want_windows=True)
        words = [j for j, t in enumerate(toks) if t.isalnum()]
        if windows[i] == 0:
            assert len(words) < min_tokens
            assert i not in found.per_item
            continue
        k = min(n, len(words))
        expect = {tuple(toks[words[j]:words[j + k - 1] + 1]) for j in range(len(words) - k + 1)}
        assert found.per_item[i] == len(expect) == ix.item_ngrams[i]
        assert all(toks[lo].isalnum() and toks[hi - 1].isalnum() for lo, hi in found.windows)
        assert {tuple(toks[lo:hi]) for lo, hi in found.windows} >= expect
        # a document of tokens no item has matches nothing; symbols changed: no window with one matches
        assert not ix.find(["zz" + t for t in toks]).per_item
        swapped = ["-" if t == "+" else "+" if t == "-" else t for t in toks]
        if "+" in toks or "-" in toks:
            got = ix.find(swapped, want_windows=True)
            assert all(tuple(swapped[lo:hi]) in {tuple(items[x][a:b]) for x in range(len(items))
                                                 for a in range(len(items[x])) for b in range(a, len(items[x]) + 1)}
                       for lo, hi in got.windows)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), max_size=8))
def test_cut_removes_exactly_the_merged_spans(text, raw):
    spans = _merge([(min(s, len(text)), min(s + w, len(text))) for s, w in raw if w])
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))  # disjoint, in order, not touching
    out, removed = _cut(text, spans)
    assert len(out) == len(text) - removed == len(text) - sum(e - s for s, e in spans)


# -- the stage ------------------------------------------------------------------------------------
def test_drop_names_benchmark_and_item(bench):
    st_ = stage(bench)
    page = ("Home | Forum | Login\n" + ITEMS[1]["q"].upper().replace("?", "!!") + "\n\n   " + ITEMS[1]["a"]
            + "\nCopyright 2024")
    ann, reasons, details = run(st_, [page, "A page about ducks that lay eggs, and muffins.", ""])
    assert reasons == [CONTAMINATED, None, None]
    assert details[0].startswith("gsm item gsm-1: ") and details[1] is None
    row = ann.to_pylist()[0]
    assert row["decontam_benchmark"] == "gsm" and row["decontam_item"] == "gsm-1"
    assert row["decontam_coverage"] == pytest.approx(1.0)


def test_code_item_found_after_reformatting(bench):
    flat = " ".join((CODE_ITEM["prompt"] + CODE_ITEM["canonical_solution"]).split())  # indentation and lines gone
    _, reasons, details = run(stage(bench), ["Solution below:\n" + flat + "\nThanks!"])
    assert reasons == [CONTAMINATED] and details[0].startswith("he item HumanEval/0: ")


def test_fragment_lengths_and_short_items(bench):
    words = (ITEMS[0]["q"] + " " + ITEMS[0]["a"]).split()
    st_ = stage(bench)
    for n_words in (12, 13, 20):
        _, reasons, _ = run(st_, ["Intro text. " + " ".join(words[3:3 + n_words]) + " and more"])
        assert reasons == [CONTAMINATED if n_words >= 13 else None], n_words
    # an item shorter than min_item_tokens is not used; one at least that long but shorter than ngram
    # is matched whole
    _, reasons, _ = run(st_, ["what is two plus two today? four"])
    assert reasons == [None] and st_.params()["benchmarks"]["gsm"]["items_too_short"] == 1
    _, reasons, details = run(stage(bench, min_item_tokens=6), ["Quiz: What is two plus two today? Four. Next."])
    assert reasons == [CONTAMINATED] and details[0].startswith("gsm item short: ")


def test_thresholds_only_move_the_decision(bench):
    page = "Intro. " + " ".join((ITEMS[0]["q"] + " " + ITEMS[0]["a"]).split()[:14])  # 15 tokens: 3 distinct 13-grams
    ann, reasons, _ = run(stage(bench), [page])
    assert reasons == [CONTAMINATED] and ann.column("decontam_matches").to_pylist() == [3]
    for kw, want in (({"min_matches": 3}, CONTAMINATED), ({"min_matches": 4}, None), ({"min_coverage": 0.5}, None)):
        again = stage(bench, **kw)
        assert again.decide(ann) == [want]  # decided from the stored signals alone
    assert Decontamination.decision_only("min_matches") and Decontamination.decision_only("min_coverage")
    assert not Decontamination.decision_only("ngram") and not Decontamination.decision_only("benchmarks")


def test_remove_cuts_the_overlap_and_keeps_the_page(bench):
    st_ = stage(bench, action="remove")
    item = ITEMS[0]["q"] + " " + ITEMS[0]["a"]
    before, after = "Welcome to our forum about farm animals.\n", "\nReply from Tom: nice puzzle, thanks."
    ann, reasons, _ = run(st_, [before + item + after, item, "no overlap here"])
    texts = ann.column("text").to_pylist()
    assert texts[0].strip() == (before + after).strip()
    assert reasons == [None, CONTAMINATED, None]
    rows = ann.to_pylist()
    assert rows[0]["decontam_removed_chars"] == len(item) and rows[2]["decontam_removed_chars"] == 0
    assert st_.rewrote(rows[0]) and not st_.rewrote(rows[2])
    assert texts[2] == "no overlap here"
    # what is left shares nothing with the benchmark
    assert run(stage(bench), [texts[0]])[1] == [None]


def test_sources_and_kinds_pass_unexamined(bench):
    st_ = stage(bench, sources=["other"])
    ann = st_.annotate(batch([ITEMS[0]["q"] + ITEMS[0]["a"]]))
    assert st_.decide(ann) == [None] and ann.column("decontam_matches").to_pylist() == [None]


def test_formats_parquet_text_and_gzip(tmp_path):
    pq.write_table(pa.table({"question": ["one two three four five six seven eight nine"], "n": [7]}),
                   tmp_path / "b.parquet")
    (tmp_path / "b.txt").write_text("\nfirst item line here\n\nsecond item\n")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"x": ["a", "b"], "k": 3}) + "\n")
    assert read_items(str(tmp_path / "b.parquet"), ["question"], "n")[0].id == "7"
    assert [(i.id, i.text) for i in read_items(str(tmp_path / "b.txt"), [])] == [("0", "first item line here"),
                                                                                ("1", "second item")]
    assert read_items(str(tmp_path / "b.jsonl.gz"), ["x"])[0].text == "a\nb"
    import fsspec  # an fsspec URL, as for s3:// or gs://

    with fsspec.open("memory://bench/q.jsonl", "wt") as fh:
        fh.write(json.dumps({"q": "an item stored in memory"}) + "\n")
    assert [i.text for i in read_items("memory://bench/q.jsonl", ["q"])] == ["an item stored in memory"]
    with pytest.raises(BenchmarkError, match="cannot read 'memory://bench/none.jsonl'"):
        read_items("memory://bench/none.jsonl", ["q"])


# -- stage contract, registry ---------------------------------------------------------------------
def test_registered_and_documented():
    cls = registry.get("decontamination")
    info = registry.describe(cls)
    assert info.reasons == (CONTAMINATED,) and info.kind == "per-document"
    assert {s[0] for s in info.signals} >= {"decontam_matches", "decontam_benchmark", "decontam_item"}
    assert all(s[2] for s in info.signals)
    keys = {k.key for k in info.config}
    assert {"benchmarks", "benchmarks.path", "benchmarks.fields", "ngram", "min_matches", "action"} <= keys
    assert all(k.description for k in info.config)


# -- config validation: one line, before anything is written ---------------------------------------
RECIPE = """
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"]}}
stages:
  - stage: decontamination
    benchmarks:
      - {{name: gsm, path: "{bench}", fields: [q, a]}}
"""


@pytest.mark.parametrize("mutate, expected", [
    (lambda b, s: s.replace(str(b), str(b.parent / "missing.jsonl")), "cannot read"),
    (lambda b, s: s.replace("fields: [q, a]", "fields: [q, answer]"), "no field 'answer' (its fields: a, id, q)"),
    (lambda b, s: s.replace(", fields: [q, a]", ""), "name the fields"),
    (lambda b, s: s.replace("fields: [q, a]", "fields: [q], id_field: task_id"), "no field 'task_id'"),
    (lambda b, s: s.replace(str(b), str(b.parent / "empty.jsonl")), "holds no test items"),
    (lambda b, s: s.replace(str(b), str(b.parent / "blank.jsonl")), "holds no items with text in the named fields"),
    (lambda b, s: s.replace(str(b), str(b.parent / "bad.jsonl")), "line 2: not JSON"),
    (lambda b, s: s.replace(str(b), str(b.parent / "b.csv")), "cannot tell the format"),
    (lambda b, s: s.replace(str(b), str(b.parent)) .replace("path: ", "format: jsonl, path: "), "cannot read"),
    (lambda b, s: s.split("    benchmarks:")[0] + "    ngram: 13\n", "name at least one benchmark file"),
    (lambda b, s: s.replace("fields: [q, a]}", "fields: [q, a]}\n      - {name: gsm, path: \"" + str(b) + "\", fields: [q]}"),
     "benchmark 'gsm' is named twice"),
    (lambda b, s: s.replace("fields: [q, a]", "fields: [q, a], tokenizer: bpe"), "tokenizer"),
])
def test_bad_benchmark_config_is_one_line(tmp_path, bench, mutate, expected):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "hello world"}])
    (bench["gsm"].parent / "empty.jsonl").write_text("\n\n")
    write_jsonl(bench["gsm"].parent / "blank.jsonl", [{"q": "", "a": None}])
    (bench["gsm"].parent / "bad.jsonl").write_text('{"q": "x", "a": "y"}\n{"q": \n')
    (bench["gsm"].parent / "b.csv").write_text("q,a\n1,2\n")
    body = RECIPE.format(out=tmp_path / "out", inp=tmp_path / "in", bench=bench["gsm"])
    path = str(write_recipe(tmp_path / "r.yaml", mutate(bench["gsm"], body)))
    assert load_recipe(str(write_recipe(tmp_path / "ok.yaml", body))).stages[0].name == "decontamination"
    with pytest.raises(ConfigError) as err:
        load_recipe(path)
    msg = str(err.value)
    assert msg.startswith(path + ": stages[0]") and expected in msg and "\n" not in msg, msg
    assert not (tmp_path / "out").exists()


def test_benchmark_error_is_one_line(tmp_path):
    with pytest.raises(BenchmarkError, match="cannot read") as err:
        read_items(str(tmp_path / "nope.jsonl"), ["q"])
    assert "\n" not in str(err.value)


# -- in a run: rejects with details, ledger, retune ------------------------------------------------
def _run_recipe(tmp_path: Path, bench, name: str, extra: str = "", time_limit: float = 0) -> str:
    from pipeline.engine.runner import run as run_pipeline

    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate([
        "A forum page.\n" + ITEMS[0]["q"] + "\n" + ITEMS[0]["a"] + "\nReply",  # whole item
        "Puzzle of the day: " + " ".join(ITEMS[1]["q"].split()[:13]) + " etc.",  # one 13-gram
        "A page about ducks and eggs, with no test item in it at all, just prose about farms.",
        "Code: " + " ".join((CODE_ITEM["prompt"] + CODE_ITEM["canonical_solution"]).split()),
    ])]
    if not (tmp_path / "in" / "a.jsonl").exists():
        write_jsonl(tmp_path / "in" / "a.jsonl", docs)
    body = RECIPE.format(out=tmp_path / name, inp=tmp_path / "in", bench=bench["gsm"]) + \
        f"      - {{name: he, path: \"{bench['he']}\", fields: [prompt, canonical_solution], id_field: task_id, " \
        f"tokenizer: code}}\n" + extra + f"stage_time_limit: {time_limit}\n"
    recipe = load_recipe(str(write_recipe(tmp_path / f"{name}.yaml", body)))
    return run_pipeline(recipe, executor="local", progress=False).out


@pytest.mark.parametrize("time_limit", [0, 30])
def test_run_writes_reasons_and_details(tmp_path, bench, time_limit):
    from pipeline.engine.ledger import Ledger

    out = _run_recipe(tmp_path, bench, "run", time_limit=time_limit)
    name = {"A forum ": "d0", "Puzzle o": "d1", "A page a": "d2", "Code: de": "d3"}
    rej = {name[r["text"][:8]]: r for f in sorted(Path(out, "rejects", "decontamination").glob("*.parquet"))
           for r in pq.read_table(f).to_pylist()}
    assert set(rej) == {"d0", "d1", "d3"}
    assert rej["d0"]["drop_reason"] == CONTAMINATED and rej["d0"]["drop_detail"].startswith("gsm item 0: ")
    assert rej["d1"]["drop_detail"].startswith("gsm item 1: 1 shared n-gram, ")
    assert rej["d3"]["drop_detail"].startswith("he item HumanEval/0: ")
    kept = [r for f in Path(out, "kept").glob("*.parquet") for r in pq.read_table(f).to_pylist()]
    assert [name[r["text"][:8]] for r in kept] == ["d2"] and kept[0]["decontam_matches"] == 0
    led = Ledger.read(f"{out}/ledger.json").to_dict(times=False)
    assert json.dumps(led).count(CONTAMINATED) >= 1


def test_retune_min_matches_equals_a_full_rerun(tmp_path, bench):
    from pipeline.engine.retune import retune
    from tests.test_retune import assert_same_run

    old = _run_recipe(tmp_path, bench, "base")
    full = _run_recipe(tmp_path, bench, "full", extra="    min_matches: 2\n")
    res = retune(old, ["decontamination.min_matches=2"], str(tmp_path / "re"))
    assert res.changed == 1 and not res.inexact  # d1 (one shared 13-gram) is kept now
    assert_same_run(full, res.out)
    with pytest.raises(ConfigError, match="changes what the stage measures"):
        retune(old, ["decontamination.ngram=8"], str(tmp_path / "re2"))


def test_report_shows_reasons_details_and_the_threshold_yield(tmp_path, bench):
    from pipeline.engine.ledger import Ledger
    from pipeline.report.build import build_report
    from pipeline.report.doc import to_markdown
    from pipeline.report.yields import rule_yields

    out = _run_recipe(tmp_path, bench, "rep")
    with open(f"{out}/recipe.json", encoding="utf-8") as fh:
        recipe = json.load(fh)
    rules = {r.key: r for r in rule_yields(out, recipe, Ledger.read(f"{out}/ledger.json"), 0.25)
             if r.stage == "decontamination"}
    assert set(rules) == {"min_matches", "min_coverage"}
    assert rules["min_matches"].column == "decontam_matches"
    assert rules["min_matches"].points[0].value == 2 and rules["min_matches"].points[0].docs == 1  # d1: one 13-gram
    assert rules["min_matches"].points[-1].docs == 3  # the rule off: every contaminated document
    md = to_markdown(build_report(out, resamples=50)[0])
    assert "benchmark_contamination" in md and "gsm item 0: " in md


def test_cli_run_with_a_missing_field_exits_2_with_one_line(tmp_path, bench):
    import subprocess
    import sys

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "hello world"}])
    body = RECIPE.format(out=tmp_path / "out", inp=tmp_path / "in", bench=bench["gsm"]).replace("[q, a]", "[q, answer]")
    path = write_recipe(tmp_path / "r.yaml", body)
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(path), "--no-ray"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "benchmarks[0].path" in lines[0] and "no field 'answer'" in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_an_item_wholly_contained_is_found_beside_a_more_matched_one(tmp_path):
    """min_coverage is met by one item (all of a short item) while another item has more matches
    but a small share: the document is contaminated by the first (it was kept)."""
    import json

    long_item = " ".join(f"alpha{i}" for i in range(200))
    short_item = "the quick brown fox jumps over the lazy dog near the old river bank today"
    path = tmp_path / "bench.jsonl"
    path.write_text(json.dumps({"q": long_item}) + "\n" + json.dumps({"q": short_item}) + "\n")
    text = " ".join(long_item.split()[:40]) + " and then " + short_item + " end."
    st = Decontamination(benchmarks=[{"name": "b", "path": str(path), "fields": ["q"]}], min_coverage=0.5)
    out = st.annotate(batch([text]))
    assert out.column("decontam_coverage").to_pylist()[0] < 0.5  # the most-matched item's share
    assert st.decide(out) == ["benchmark_contamination"]
    assert Decontamination(benchmarks=[{"name": "b", "path": str(path), "fields": ["q"]}],
                           min_coverage=0.5, min_matches=20).decide(out) == [None]
