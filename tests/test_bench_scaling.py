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



def test_scaling_reads_the_serial_steps_and_lost_worker_seconds_from_a_real_run_log(tmp_path, capsys):
    """scaling.py's steps() parses what the runner and the CLI write to run.log (a change of those
    lines would silently empty its table) and splits process CPU by role."""
    import scaling
    from pipeline.cli import main
    from tests.helpers import write_jsonl, write_recipe

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"word {i} " * 20} for i in range(30)])
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"text": f"other {i} " * 20} for i in range(30)])
    out = tmp_path / "out"
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages:
  - stage: exact_dedup
""")
    assert main(["run", str(path), "--no-ray", "--quiet"]) == 0
    (tmp_path / "out.log").write_text(capsys.readouterr().out)
    sp = scaling.steps(str(out))
    assert sp["workers"] == 1 and sp["setup"] >= 0 and sp["report"] is not None and sp["run"] is not None
    assert [p["phase"] for p in sp["phases"]] == [0, 1]
    # a 30-document run's shard work can round to 0.00 s on a warm machine: the parse is what is tested
    assert all(isinstance(p["work"], float) and p["work"] >= 0 for p in sp["phases"])
    assert all(abs(p["lost"] - (p["wall"] - p["work"])) < 0.02 for p in sp["phases"])  # 1 worker: wall - work
    assert "global_steps" in sp and sp["global_steps_cpu"] >= 0 and sp["report_cpu"] >= 0

    st = pvd.RunStats("refinery", 2, 1.0, 0.0, True)
    st.extra["cpu_by_process"] = [[1, "python -m pipeline.cli run r.yaml", 2.0], [2, "ray::ShardWorker", 50.0],
                                  [3, "python -c from pipeline.sources.sandbox import _child_main", 40.0],
                                  [4, ".../ray/core/src/ray/raylet/raylet --raylet_socket_name=x", 0.5],
                                  [5, "python .../default_worker.py --raylet-name=x", 0.3]]
    assert scaling.cpu_by_role(st, {1: 0.5}) == {"workers": 50.0, "worker children": 40.0, "driver": 1.5,
                                                 "raylet": 0.5, "other Ray workers": 0.3}
