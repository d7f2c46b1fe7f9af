from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.errors import ConfigError
from stages.url_filter.stage import UrlFilter
from tests.helpers import kept_ids, write_jsonl, write_recipe
from tests.test_commoncrawl import page, write_warc


def lst(tmp_path: Path, name: str, lines: list[str]) -> str:
    p = tmp_path / name
    p.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(p)


@pytest.fixture
def small(tmp_path):
    """The stage with datatrove's word lists and small domain/URL lists of our own (fast setup)."""
    return UrlFilter(categories=[], block_domains=[lst(tmp_path, "d.txt", ["# blocked", "bad.com", "sub.evil.org"])],
                     block_urls=[lst(tmp_path, "u.txt", ["http://ok.com/this-page"])],
                     allow_domains=[lst(tmp_path, "a.txt", ["good.bad.com"])])


def decide(st: UrlFilter, urls: list[str | None]) -> tuple[list, list, pa.Table]:
    ann = st.annotate(pa.table({"url": pa.array(urls, pa.string())}))
    reasons = list(st.decide(ann))
    return reasons, st.drop_details(ann, reasons), ann


def test_each_cause_its_reason_and_detail(small, tmp_path):
    urls = ["http://www.bad.com/x", "http://sub.evil.org/", "http://evil.org/", "http://ok.com/this-page",
            "http://ok.com/2g1c-video", "http://ok.com/sex/babes", "http://ok.com/sex", "http://ok.com/a-2girls1cup-b",
            "http://[::1/x", "https://ok.com/fine/page"]
    reasons, details, _ = decide(small, urls)
    assert reasons == ["url_domain_blocked", "url_subdomain_blocked", None, "url_blocked", "url_banned_word",
                       "url_soft_banned_words", None, "url_banned_subword", "url_unparseable", None]
    assert details[0] == f"{tmp_path / 'd.txt'}: bad.com"
    assert details[1] == f"{tmp_path / 'd.txt'}: sub.evil.org"
    assert details[3] == str(tmp_path / "u.txt")
    assert details[4] == "2g1c"
    assert details[5] == "2 soft-banned words (threshold 2): babes,sex"
    assert details[7] == "2girls1cup"
    assert "IPv6" in details[8]


def test_allow_list_wins(small):
    reasons, _, ann = decide(small, ["http://good.bad.com/xxx/sex/2g1c", "http://other.bad.com/"])
    assert reasons == [None, "url_domain_blocked"]
    assert ann.column("url_allowed").to_pylist() == [True, False]


def test_documents_without_url_pass_and_are_counted(small):
    reasons, _, ann = decide(small, [None, "", "http://bad.com/"])
    assert reasons == [None, None, "url_domain_blocked"]
    assert small.unexamined(ann) == 2


def test_soft_threshold_redecided_from_signals(small):
    """A retune of soft_word_threshold re-decides from the stored signals alone."""
    urls = ["http://ok.com/sex/babes", "http://ok.com/sex/babes/nude", "http://ok.com/sex-2girls1cup-babes"]
    reasons, _, ann = decide(small, urls)
    assert reasons == ["url_soft_banned_words"] * 3
    small.config.soft_word_threshold = 3
    # with 3, the 2-word URL is kept, the one with a subword falls to the subword cause
    assert list(small.decide(ann)) == [None, "url_soft_banned_words", "url_banned_subword"]
    assert "soft_word_threshold" in UrlFilter.decision_keys and UrlFilter.decision_only("soft_word_threshold")
    assert not UrlFilter.decision_only("block_domains")


def test_case_and_host_reading_as_datatrove(small):
    # the host's case is kept (datatrove compares it with the lower-case list as it is); ports,
    # user info and full-width dots are read as tldextract reads them
    reasons, _, _ = decide(small, ["http://BAD.com/", "http://user:pw@bad.com:8080/", "http://www.bad\u3002com/"])
    assert reasons == [None, "url_domain_blocked", "url_domain_blocked"]


def test_before_text_predicate_only_for_causes_no_retune_revives(small):
    rejects = small.rejects_before_text()
    assert rejects("http://bad.com/") and rejects("http://ok.com/2girls1cup") and rejects("http://ok.com/2g1c")
    assert not rejects("http://ok.com/sex/babes")  # soft words alone: a higher threshold would keep it
    assert not rejects("http://good.bad.com/") and not rejects(None) and not rejects("http://ok.com/")


# -- configuration -----------------------------------------------------------------------------
def _recipe(tmp_path: Path, stage: str) -> str:
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "hello world", "url": "http://x.com/"}])
    return str(write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages:
  - {stage}
"""))


@pytest.mark.parametrize("stage, expected", [
    ("{stage: url_filter, categories: [gambling]}", r"stages\[0\]\.categories: .*unknown UT1 category 'gambling'"),
    ("{stage: url_filter, block_domains: [/nonexistent/list.txt]}",
     r"stages\[0\]: .*block_domains: cannot read list file '/nonexistent/list.txt'"),
    ("{stage: url_filter, banned_words: [EMPTY]}", r"banned_words: list file '.*empty.txt' holds no entry"),
    ("{stage: url_filter, soft_word_threshold: 0}", r"stages\[0\]\.soft_word_threshold"),
])
def test_bad_configuration_one_line(tmp_path, stage, expected):
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=expected) as err:
        load_recipe(_recipe(tmp_path, stage.replace("EMPTY", str(empty))))
    assert "\n" not in str(err.value)


def test_bad_configuration_exits_2(tmp_path):
    import subprocess
    import sys

    path = _recipe(tmp_path, "{stage: url_filter, categories: [nope]}")
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "validate", path], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "unknown UT1 category 'nope'" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


# -- in a run --------------------------------------------------------------------------------
def _cc_recipe(tmp_path: Path, name: str, stages: str) -> str:
    return str(write_recipe(tmp_path / f"{name}.yaml", f"""
output: {tmp_path / name}
sources:
  cc: {{kind: commoncrawl, paths: ["{tmp_path / 'in'}/*.warc.gz"], extract_time_limit: 0}}
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages:
{stages}
"""))


def _rejects(out: Path, label: str) -> list[dict]:
    files = sorted((out / "rejects" / label).glob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pylist() if files else []


@pytest.mark.slow
def test_leading_url_stage_decides_before_extraction(tmp_path, monkeypatch):
    """Pages the URL stage rejects are never extracted; their rejects are booked under the stage,
    with the same kept documents as running it after extraction."""
    (tmp_path / "in").mkdir()
    blocked = lst(tmp_path, "d.txt", ["bad.com"])
    write_warc(tmp_path / "in" / "a.warc.gz", [
        {"type": "response", "uri": "http://bad.com/page", "body": page().encode()},
        {"type": "response", "uri": "http://ok.com/sex/babes", "body": page().encode()},
        {"type": "response", "uri": "http://ok.com/page", "body": page().encode()},
        {"type": "response", "uri": "http://ok.com/2girls1cup", "body": page().encode()},
    ])
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"text": "a page without url"}, {"text": "x y", "url": "http://bad.com/"}])
    url_stage = f"  - {{stage: url_filter, categories: [], block_domains: [{blocked}]}}"
    # a stage first that reads the text: the URL stage then decides after extraction
    after = _cc_recipe(tmp_path, "after", "  - {stage: pii}\n" + url_stage)
    first = _cc_recipe(tmp_path, "first", url_stage + "\n  - {stage: pii}")

    from pipeline.sources import extract

    extracted: list[int] = []
    real = extract.Extractor.extract_payloads

    def counting(self, items):
        extracted.append(len(items))
        return real(self, items)

    monkeypatch.setattr(extract.Extractor, "extract_payloads", counting)
    run(load_recipe(after), executor="local", progress=False)
    n_after = sum(extracted)
    extracted.clear()
    run(load_recipe(first), executor="local", progress=False)
    n_first = sum(extracted)
    assert (n_after, n_first) == (4, 2)  # bad.com and the subword page are not extracted

    assert kept_ids(tmp_path / "first") == kept_ids(tmp_path / "after")
    rej_first = {r["url"]: r for r in _rejects(tmp_path / "first", "url_filter")}
    rej_after = {r["url"]: r for r in _rejects(tmp_path / "after", "url_filter")}
    assert set(rej_first) == set(rej_after) == {"http://bad.com/page", "http://ok.com/sex/babes",
                                                 "http://ok.com/2girls1cup", "http://bad.com/"}
    for u, r in rej_first.items():
        assert (r["drop_reason"], r["drop_detail"]) == (rej_after[u]["drop_reason"], rej_after[u]["drop_detail"])
    assert rej_first["http://bad.com/page"]["drop_detail"] == f"{blocked}: bad.com"
    assert json.loads(rej_first["http://bad.com/page"]["metadata"]).get("not_extracted") is True
    assert rej_first["http://bad.com/page"]["text"] == ""
    assert rej_first["http://ok.com/sex/babes"]["text"]  # soft words alone: extracted (a retune may revive it)

    led = json.loads((tmp_path / "first" / "ledger.json").read_text())
    stages = {e["stage"]: e["sources"] for e in led["stages"]}
    cc = stages["url_filter"]["cc"]
    assert (cc["docs_in"], cc["rejected"], cc["skipped"]) == (4, 3, 0)
    assert stages["read"]["cc"]["rejected"] == 0  # not booked under read
    web = stages["url_filter"]["web"]
    assert (web["docs_in"], web["rejected"], web["skipped"]) == (2, 1, 1)  # the url-less document: skipped


# -- parity with datatrove --------------------------------------------------------------------
@pytest.mark.slow
def test_same_decisions_as_datatrove_on_every_corpus_url_and_100k_generated(corpora):
    """datatrove's URLFilter with its defaults and the stage with its defaults decide every URL of
    the corpora and 100,000 generated ones alike (cause for cause); a URL urlsplit refuses is the
    stage's url_unparseable reject, and only such a URL is."""
    import urllib.parse

    from benchmarks.url_filter import (compare, corpus_urls, datatrove_decisions, datatrove_filter,
                                       generated_for, our_decisions, our_stage)

    st, flt = our_stage(), datatrove_filter()
    corpus = corpus_urls(corpora)
    assert len(corpus) > 100_000
    generated = generated_for(st, 100_000, 0, corpus)
    for urls in (corpus, generated):
        ours = our_decisions(st, urls)
        agree, unparseable, bad = compare(ours, datatrove_decisions(flt, urls), urls)
        assert bad == []
        refused = 0
        for u in urls:
            try:
                urllib.parse.urlsplit(u)
            except ValueError:
                refused += 1
        assert unparseable == refused
        assert agree + unparseable == len(urls)
    assert sum(r is not None for r in our_decisions(st, generated)) > 50_000  # every cause exercised
    assert {r for r in our_decisions(st, generated)} >= set(UrlFilter.reasons) | {None}


def test_retune_of_the_soft_threshold_matches_a_full_run(tmp_path):
    from pipeline.engine.retune import retune

    urls = ["http://ok.com/sex/babes", "http://ok.com/sex/babes/nude", "http://ok.com/fine", None,
            "http://ok.com/sex-2girls1cup-babes"]
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"document {i} text", **({"url": u} if u else {})}
                                            for i, u in enumerate(urls)])

    def recipe(name: str, threshold: int) -> str:
        return str(write_recipe(tmp_path / f"{name}.yaml", f"""
output: {tmp_path / name}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages:
  - {{stage: url_filter, categories: [], soft_word_threshold: {threshold}}}
"""))

    run(load_recipe(recipe("two", 2)), executor="local", progress=False)
    run(load_recipe(recipe("three", 3)), executor="local", progress=False)
    res = retune(str(tmp_path / "two"), ["url_filter.soft_word_threshold=3"], str(tmp_path / "re"))
    assert res.ledger.check() == []
    assert kept_ids(tmp_path / "re") == kept_ids(tmp_path / "three")
    full = {r["id"]: (r["drop_reason"], r["drop_detail"]) for r in _rejects(tmp_path / "three", "url_filter")}
    again = {r["id"]: (r["drop_reason"], r["drop_detail"]) for r in _rejects(tmp_path / "re", "url_filter")}
    assert again == full and len(full) == 2
