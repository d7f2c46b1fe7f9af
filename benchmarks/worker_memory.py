"""Does a worker's memory grow with the input? One process, the benchmark recipe's phase 0 (read,
extract, langid, quality, MinHash keys), resident memory after each shard:

1. the same shard again and again: a leak would grow on every pass;
2. every shard of an input one after the other (e.g. the 4x input): growth here that (1) does not
   show comes from new content (bigger pages, new words in the tokenizer memo), not from a leak.

    PYTHONPATH=. python benchmarks/worker_memory.py --input /tmp/refinery-bench/input-50mb-8s-seed0 \
        --other /tmp/refinery-bench/input-200mb-8s-seed0
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.engine.ledger import Ledger  # noqa: E402
from pipeline.engine.recipe import load_recipe  # noqa: E402
from pipeline.engine.runner import plan_shards  # noqa: E402
from pipeline.schema import full_schema  # noqa: E402
from pipeline.engine.planning import Shard, plan_phases  # noqa: E402
from pipeline.engine.worker import ShardOutputs, ShardWorker  # noqa: E402

RECIPE = """name: memory
output: {out}
sources:
  web:
    kind: commoncrawl
    paths: ["{input}/*.warc.gz"]
stages:
  - stage: langid
    languages: [en]
  - stage: quality
  - stage: minhash_dedup
  - stage: exact_dedup
"""


def rss_mib() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith("VmRSS"))


def peak_mib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def phase0(worker: ShardWorker, shard: Shard, schema) -> int:
    """One shard through phase 0 in this process; outputs are written and thrown away."""
    phase = plan_phases(worker.stages)[0]
    outputs, ledger = ShardOutputs(schema), Ledger()
    docs = 0
    for live in worker._read_source(shard, ledger, outputs):
        docs += live.num_rows
        worker._finish(phase, shard, worker._chain(phase, shard, live, ledger, outputs), outputs)
    outputs.abort()
    return docs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", required=True, help="a benchmark input directory (make_pipeline_input.py)")
    ap.add_argument("--other", help="a second, bigger input: its shards one after the other")
    ap.add_argument("--repeat", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.yaml")
        with open(path, "w") as fh:
            fh.write(RECIPE.format(out=os.path.join(tmp, "out"), input=args.input))
        recipe = load_recipe(path)
        recipe.stage_time_limit = 0  # the stages in this process, as measured here (with a limit: in a child)
        stages = [s.build() for s in recipe.stages]
        schema = full_schema(f for st in stages for f in st.signal_fields())
        worker = ShardWorker(recipe, schema)
        for st in worker.stages:
            st.ensure_setup()
        print(f"after loading the models: {rss_mib()} MiB")
        shard = plan_shards(recipe)[0]
        print(f"1. the same shard ({shard.id_path}) {args.repeat} times")
        for i in range(args.repeat):
            n = phase0(worker, shard, schema)
            print(f"   pass {i + 1}: {n} documents, RSS {rss_mib()} MiB, peak {peak_mib()} MiB", flush=True)
        if args.other:
            with open(path, "w") as fh:
                fh.write(RECIPE.format(out=os.path.join(tmp, "out"), input=args.other))
            other = load_recipe(path)
            worker.recipe = other
            print(f"2. every shard of {args.other}")
            for s in plan_shards(other):
                n = phase0(worker, s, schema)
                print(f"   {s.id_path}: {n} documents, RSS {rss_mib()} MiB, peak {peak_mib()} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
