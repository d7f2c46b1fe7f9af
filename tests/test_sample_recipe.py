"""End to end: `refinery run mixtures/sample.yaml` on local Ray, checked against the planted cases
of samples/manifest.json (what each sample document is and what must happen to it)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli import main
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((ROOT / "samples" / "manifest.json").read_text())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, ray_local) -> Path:
    out = tmp_path_factory.mktemp("sample") / "out"
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)  # the recipe's paths are relative to the repository root, as in the README
    try:
        assert main(["run", "mixtures/sample.yaml", "--out", str(out), "--quiet"]) == 0
    finally:
        os.chdir(cwd)
    return out


def table(out: Path, pattern: str) -> pa.Table:
    files = sorted(out.glob(pattern))
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default") if files else None


@pytest.fixture(scope="module")
def docs(run_dir) -> dict[str, list[dict]]:
    """url -> rows (kept rows have drop_stage None)."""
    rows = table(run_dir, "kept/*.parquet").to_pylist() + table(run_dir, "rejects/*/*.parquet").to_pylist()
    by_url: dict[str, list[dict]] = {}
    for r in rows:
        by_url.setdefault(r["url"], []).append(r)
    return by_url


def planted(*kinds: str):
    for kind in kinds:
        yield from MANIFEST[kind]


def test_ledger_balances_and_follows_the_recipe(run_dir):
    led = Ledger.read(str(run_dir / "ledger.json"))
    assert led.check() == []
    recipe = load_recipe(str(ROOT / "mixtures" / "sample.yaml"), check_inputs=False)
    assert led.stage_order == ["read"] + [s.label for s in recipe.stages]
    assert set(led.inputs) == set(recipe.sources)


def test_every_document_read_is_kept_or_rejected_once(run_dir):
    led = Ledger.read(str(run_dir / "ledger.json"))
    ids = table(run_dir, "kept/*.parquet").column("id").to_pylist()
    ids += table(run_dir, "rejects/*/*.parquet").column("id").to_pylist()
    assert len(ids) == len(set(ids)) == led.total("read").docs_in


def test_every_planted_web_document_is_accounted_for(docs):
    for p in planted("commoncrawl", "wet", "jsonl"):
        assert len(docs.get(p["url"], [])) >= 1, p


def test_reader_rejects_non_html_and_non_200(docs):
    for p in planted("commoncrawl"):
        if p["case"] in ("http_301", "http_302", "http_404"):
            assert [r["drop_reason"] for r in docs[p["url"]]] == ["http_status"], p
        if p["case"] == "non_html":
            assert [r["drop_reason"] for r in docs[p["url"]]] == ["not_html"], p


def test_duplicate_groups_keep_at_most_one(docs):
    groups: dict[str, list[dict]] = {}
    for p in planted("commoncrawl", "wet", "jsonl"):
        if "group" in p:
            groups.setdefault(p["group"], []).extend(docs[p["url"]])
    assert len(groups) >= 10
    for name, rows in groups.items():
        kept = [r for r in rows if r["drop_stage"] is None]
        assert len(kept) <= 1, (name, [r["url"] for r in kept])
        dedup = [r for r in rows if r["drop_stage"] in ("exact_dedup", "minhash_dedup")]
        if not any(r["drop_stage"] not in (None, "exact_dedup", "minhash_dedup") for r in rows):
            assert len(kept) == 1 and len(dedup) == len(rows) - 1, name
        for r in dedup:
            assert r["drop_detail"] and r["dup_cluster_size"] is None or r["drop_detail"]


def test_toxic_pages_are_not_kept(docs):
    """In every language: the German rant used to pass unscored (English-only model)."""
    for p in planted("commoncrawl", "wet", "jsonl"):
        if p["case"] == "toxic":
            assert all(r["drop_stage"] is not None for r in docs[p["url"]]), p


def test_good_pages_survive(docs):
    good = [p for p in planted("commoncrawl", "wet", "jsonl") if p["case"] in ("good", "charset_cp1251",
                                                                            "charset_header_only", "charset_meta_only")]
    lost = [(p["url"], r["drop_stage"], r["drop_reason"]) for p in good for r in docs[p["url"]]
            if r["drop_stage"] is not None and r["drop_stage"] not in ("exact_dedup", "minhash_dedup")]
    assert lost == []


def test_pii_is_masked_in_kept_text(run_dir, docs):
    import re

    kept = table(run_dir, "kept/*.parquet")
    for text in kept.column("text").to_pylist():
        assert not re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text or ""), text[:200]
    for p in planted("commoncrawl", "wet", "jsonl"):
        if p["case"] == "pii":
            (row,) = [r for r in docs[p["url"]] if r["drop_stage"] is None]
            assert row["pii_email_count"] + row["pii_phone_count"] + row["pii_ip_count"] > 0


def test_arxiv_and_code_outcomes(run_dir):
    rows = table(run_dir, "kept/*.parquet").to_pylist() + table(run_dir, "rejects/read/*.parquet").to_pylist()
    arxiv = {r["url"]: r for r in rows if r["kind"] == "arxiv"}
    assert arxiv["2401.00003.tar.gz"]["drop_reason"] == "no_tex_source"
    assert arxiv["2401.00001.tar.gz"]["drop_stage"] is None and "\\begin{document}" not in arxiv["2401.00001.tar.gz"]["text"]
    code = [r for r in rows if r["kind"] == "code"]
    reasons = {r["drop_reason"] for r in code}
    assert {"vendored", "lock_file", "binary", "generated", "long_line"} <= reasons
    kept_code = [r for r in code if r["drop_stage"] is None]
    assert kept_code and all(json.loads(r["metadata"]).get("language") for r in kept_code)
    assert all(r["lang"] is None for r in kept_code), "language ID skips code"
    # LICENSE files are not code, but their licence is recorded on every file of the repository
    licenses = [r for r in code if r["url"].endswith("/LICENSE")]
    assert len(licenses) == 3 and {r["drop_reason"] for r in licenses} == {"not_code"}
    assert {json.loads(r["metadata"])["license"] for r in kept_code if r["url"].startswith("tinykv/")} == {"MIT"}


def test_mixture_is_written_at_the_target_proportions(run_dir):
    mix = json.loads((run_dir / "mixture" / "mixture.json").read_text())
    sources = mix["sources"]
    for name, s in sources.items():
        assert abs(s["achieved_proportion"] - s["target_proportion"]) <= 0.005, (name, s)
    assert (run_dir / "mixture" / "blend.bin").exists() and (run_dir / "mixture" / "blend.idx").exists()


def test_outputs_read_with_pandas_polars_duckdb_and_datasets(run_dir):
    import duckdb
    import pandas as pd
    import polars as pl
    from datasets import load_dataset

    files = sorted(str(f) for f in (run_dir / "kept").glob("*.parquet"))
    n = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    assert len(pd.concat(pd.read_parquet(f) for f in files)) == n
    assert pl.read_parquet(files).height == n
    assert duckdb.sql(f"select count(*) from read_parquet({files!r})").fetchall()[0][0] == n
    ds = load_dataset("parquet", data_files=files, split="train", cache_dir=str(run_dir / "_hf_cache"))
    assert ds.num_rows == n and "text" in ds.column_names


def test_low_quality_spam_short_and_boilerplate_pages_are_not_kept(docs):
    bad = [p for p in planted("commoncrawl", "wet", "jsonl")
           if p["expect"].startswith("quality") or p["case"] in ("spam", "short", "boilerplate_heavy", "empty")]
    assert len(bad) >= 30
    kept = [(p["case"], p["url"]) for p in bad for r in docs[p["url"]] if r["drop_stage"] is None]
    assert kept == []
    stages = {r["drop_stage"] for p in bad for r in docs[p["url"]]}
    assert "quality" in stages
