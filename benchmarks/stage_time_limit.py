"""What the per-document time limit costs: the same recipe with `stage_time_limit: 0` (stages in the
worker process) and `stage_time_limit: 60` (stages in a supervised child, pipeline/engine/time_limit.py),
alternating, `--rounds` times each (order rotated). Each run is `refinery run --no-ray` in a
subprocess; CPU is the whole process tree's (the child is reaped, so its CPU counts). Prints wall and
CPU seconds per run, the medians' ratios (limit / no limit) and whether the kept documents (ids and
text) are identical.

    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 10 --shards 4 --jsonl --out /tmp/tl-bench/input
    PYTHONPATH=. python benchmarks/stage_time_limit.py --input /tmp/tl-bench/input --rounds 3
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]

RECIPE = """
name: time-limit-bench
output: {out}
stage_time_limit: {limit}
sources:
  web: {{kind: jsonl, paths: ["{input}/bench-*.jsonl*"]}}
stages:
  - stage: langid
    languages: [en, de, fr, es]
  - stage: quality
    gopher_repetition: {{}}
    gopher_quality: {{}}
    c4: {{filter_no_terminal_punct: false}}
    fineweb: {{}}
  - stage: toxicity
  - stage: pii
"""


def one(work: Path, inp: str, limit: float) -> tuple[float, float, pa.Table]:
    out = work / f"limit-{limit:g}"
    recipe = work / f"limit-{limit:g}.yaml"
    recipe.write_text(RECIPE.format(out=out, limit=limit, input=inp))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "run", str(recipe), "--no-ray", "--quiet",
                             "--overwrite"], env=env, cwd=str(REPO))
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"run with stage_time_limit {limit} failed ({status})")
    kept = pa.concat_tables([pq.read_table(f, columns=["id", "text"]) for f in sorted(glob.glob(f"{out}/kept/*.parquet"))])
    return wall, ru.ru_utime + ru.ru_stime, kept.sort_by("id")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True, help="a directory of JSONL files (make_pipeline_input.py --jsonl)")
    ap.add_argument("--work", default="/tmp/tl-bench/run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=float, default=60.0)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    res: dict[float, list[tuple[float, float]]] = {0.0: [], args.limit: []}
    kept: dict[float, pa.Table] = {}
    for r in range(args.rounds):
        order = [0.0, args.limit] if r % 2 == 0 else [args.limit, 0.0]
        for limit in order:
            load = os.getloadavg()[0]
            wall, cpu, k = one(work, args.input, limit)
            res[limit].append((wall, cpu))
            kept[limit] = k
            print(f"round {r + 1} stage_time_limit={limit:g}: wall {wall:.1f} s, CPU {cpu:.1f} s, "
                  f"kept {k.num_rows:,} (load {load:.1f})", flush=True)
    same = kept[0.0].equals(kept[args.limit])
    w0, c0 = (statistics.median(x[i] for x in res[0.0]) for i in (0, 1))
    w1, c1 = (statistics.median(x[i] for x in res[args.limit]) for i in (0, 1))
    print(f"median wall: {w0:.1f} s without, {w1:.1f} s with the limit: ratio {w1 / w0:.3f}")
    print(f"median CPU:  {c0:.1f} s without, {c1:.1f} s with the limit: ratio {c1 / c0:.3f}")
    print(f"kept documents (ids and text) identical: {same} ({kept[0.0].num_rows:,} kept)")


if __name__ == "__main__":
    main()
