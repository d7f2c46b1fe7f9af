"""Quality buckets: mixture sources that are `where:` views of one run source."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.errors import ConfigError
from pipeline.mixture.build import build_mixture
from pipeline.mixture.recipe import load_mixture, parse_mixture
from pipeline.mixture.where import mask, parse_where
from pipeline.schema import conform, full_schema, make_record


def test_parse_and_mask():
    conds = parse_where("quality_score >= 0.5 and lang == 'en'")
    t = pa.table({"quality_score": pa.array([0.9, 0.4, None, 0.7], pa.float32()), "lang": ["en", "en", "en", "de"]})
    assert mask(t, conds).to_pylist() == [True, False, False, False]
    assert mask(t, parse_where("lang != en")).to_pylist() == [False, False, False, True]
    for bad in ["", "quality_score", "quality_score => 1", "1 > quality_score"]:
        with pytest.raises(ValueError):
            parse_where(bad)


@pytest.fixture()
def run(tmp_path):
    recs = [make_record(source="web", kind="jsonl", file="w.jsonl", offset=i, text=f"document number {i} " * (5 + i % 7))
            for i in range(60)]
    table = conform(pa.Table.from_pylist(recs), full_schema([pa.field("quality_score", pa.float32())]))
    scores = [i / 60 for i in range(60)]
    table = table.set_column(table.column_names.index("quality_score"), "quality_score", pa.array(scores, pa.float32()))
    (tmp_path / "run" / "kept").mkdir(parents=True)
    pq.write_table(table, tmp_path / "run" / "kept" / "part-00000.parquet")
    return tmp_path / "run", {r["id"]: s for r, s in zip(recs, scores)}


def _mixture(tmp_path, run, sources, **extra):
    data = {"sources": sources, "budget": "all", "seed": 0, "tokenizer": "cl100k_base", **extra}
    for s in data["sources"].values():
        s.setdefault("run", str(run))
        s.setdefault("source", "web")
    p = tmp_path / "mix.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_mixture(p)


def test_buckets_split_a_source_first_match_wins(tmp_path, run):
    run_dir, _ = run
    m = _mixture(tmp_path, run_dir, {
        "top": {"weight": 0.5, "where": "quality_score >= 0.75", "max_epochs": 4},
        "mid": {"weight": 0.3, "where": "quality_score >= 0.5", "max_epochs": 2},  # overlaps top: top wins
        "rest": {"weight": 0.2, "where": "quality_score < 0.5", "max_epochs": 1},
    }, rescale=True)
    report = build_mixture(m, tmp_path / "out", use_ray=False, log=lambda *_: None)
    src = report["sources"]
    assert src["top"]["unique_documents"] == 15 and src["mid"]["unique_documents"] == 15 and src["rest"]["unique_documents"] == 30
    assert src["top"]["max_epochs"] == 4 and src["rest"]["max_epochs"] == 1
    assert report["inputs"]["top"]["where"] == "quality_score >= 0.75"
    assert json.loads((tmp_path / "out" / "mixture.json").read_text())["totals"]["unique_documents"] == 60


def test_where_is_validated(tmp_path, run):
    run_dir, _ = run
    with pytest.raises(ConfigError, match=r"sources\.top\.where: .*expected COLUMN OP VALUE"):
        _mixture(tmp_path, run_dir, {"top": {"weight": 1.0, "where": "quality_score ~ 1"}})
    with pytest.raises(ConfigError, match="same input as sources.a"):
        _mixture(tmp_path, run_dir, {"a": {"weight": 0.5}, "b": {"weight": 0.5}})
    m = _mixture(tmp_path, run_dir, {"top": {"weight": 1.0, "where": "nosuch >= 1"}})
    with pytest.raises(ConfigError, match=r"sources\.top\.where: no column 'nosuch'"):
        build_mixture(m, tmp_path / "out", use_ray=False)
    parse_mixture({"sources": {"a": {"weight": 0.5, "run": "x", "where": "q >= 1"},
                               "b": {"weight": 0.5, "run": "x", "where": "q < 1"}}})
