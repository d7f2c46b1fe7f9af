"""CPU seconds of one worker and its two child processes for single parts, as a Ray actor runs them.

Builds a `ShardWorker` for a recipe (no Ray), runs each listed shard through phase 0 into a fresh
temporary output, and prints, per shard, the process CPU of the worker, of its extraction process
and of its stages' child (read from /proc), and the part's ledger times. List a shard twice, or a
warm-up shard first, to see a warm worker (children started, models loaded). For before/after
comparisons run it alternately in two checkouts (`PYTHONPATH=<checkout>`).

    PYTHONPATH=. python benchmarks/shard_cpu.py /tmp/perf25/e2e/ours.yaml --shards 1,0
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.engine.recipe import load_recipe  # noqa: E402
from pipeline.engine.runner import plan_shards  # noqa: E402
from pipeline.engine.planning import Part, plan_phases  # noqa: E402
from pipeline.engine.worker import ShardWorker  # noqa: E402
from pipeline.schema import full_schema  # noqa: E402


def _cpu(proc) -> float:
    if proc is None:
        return 0.0
    with open(f"/proc/{proc.pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recipe")
    ap.add_argument("--shards", default="0", help="comma-separated shard indices, run in this order")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="shard-cpu-") as out:
        recipe = load_recipe(args.recipe, output=out)
        os.makedirs(os.path.join(out, "_state"), exist_ok=True)
        shards = plan_shards(recipe)
        stages = [s.build() for s in recipe.stages]
        worker = ShardWorker(recipe, full_schema([f for st in stages for f in st.signal_fields()]))
        phase = plan_phases(worker.stages)[0]
        try:
            for k in (int(x) for x in args.shards.split(",")):
                shard = shards[k]
                source = recipe.sources[shard.source]
                box = getattr(getattr(source, "extract", None), "_sandbox", None)
                timed = worker.timed._box if worker.timed is not None else None
                before = (time.process_time(), _cpu(getattr(box, "_proc", None)), _cpu(getattr(timed, "_proc", None)))
                res = worker.run(phase, None, Part((shard,)), None)
                after = (time.process_time(), _cpu(getattr(box, "_proc", None)), _cpu(getattr(timed, "_proc", None)))
                w, e, s = (a - b for a, b in zip(after, before))
                print(f"shard {k}: worker {w:.2f} CPU-s, extraction process {e:.2f}, stages' child {s:.2f}", flush=True)
                times = {st["stage"]: st["total"].get("cpu_seconds") for st in res["ledger"].get("stages", [])}
                print("  ledger CPU-s:", json.dumps(times), flush=True)
        finally:
            worker.close()


if __name__ == "__main__":
    main()
