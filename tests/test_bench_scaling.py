"""benchmarks/scaling.py builds its runs from pipeline_vs_datatrove.py's defaults: the recipe it
writes must be one refinery accepts, with the source's default fallback written out (not `None`)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import pipeline_vs_datatrove as pvd  # noqa: E402
from pipeline.engine.recipe import load_recipe  # noqa: E402
from pipeline.sources.commoncrawl import CommonCrawlConfig  # noqa: E402


def test_default_benchmark_recipe_is_valid_and_names_the_default_fallback(tmp_path):
    args = pvd.main_defaults()
    assert args.extract_fallback == CommonCrawlConfig.model_fields["extract_fallback"].default
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.warc.gz").write_bytes(b"")
    path = tmp_path / "bench.yaml"
    stages = pvd.write_recipe(str(path), str(tmp_path / "in"), str(tmp_path / "out"), 2, args)
    assert f"extract_fallback: {args.extract_fallback}" in path.read_text()
    recipe = load_recipe(str(path))
    assert [s.label for s in recipe.stages] == stages
    assert recipe.ray.num_workers == 2

