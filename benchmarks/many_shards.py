"""Many small shards vs a few large ones: the same documents split into 4 and into 800
input files, run with 2 Ray workers through langid, quality, exact and MinHash dedup. Prints the
wall-time ratio (800 / 4; goal <= 1.3), the driver's CPU per shard (goal <= 5 ms) and the ratio of
the work's CPU (every part on the workers plus the global steps, as the ledger books them: wall
time is noisy on a shared machine, CPU much less so), alternating the two layouts on one embedded
Ray so both see the same machine. Checks that both layouts keep as many documents and that
repeats of a layout keep the same ids. `--one-part-per-file` runs the runner as it was before
small files were joined into parts (each file its own task, files and record), for comparison.

    python benchmarks/many_shards.py [--docs 4000] [--few 4] [--many 800] [--repeats 2] [--workers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORDS = ("the of and to in is was for that on with as by at from his her an which this are be have "
         "not had it were they but their one all been has more who when there would can new other "
         "first time after two year people city between during world state school river music "
         "family history government company team water system church party union county village").split()


def documents(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        sentences = []
        for _ in range(rng.randint(6, 14)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
            sentences.append(" ".join(words).capitalize() + ".")
        text = " ".join(sentences)
        if i % 10 == 3:  # some exact duplicates and near duplicates for the dedup stages
            text = docs[i - 3]["text"]
        elif i % 10 == 7:
            text = docs[i - 7]["text"] + " Extra words here."
        docs.append({"text": text, "url": f"http://bench/{i}"})
    return docs


def write_inputs(root: Path, docs: list[dict], shards: int) -> None:
    root.mkdir(parents=True)
    per = -(-len(docs) // shards)
    for k in range(shards):
        with open(root / f"s{k:05d}.jsonl", "w", encoding="utf-8") as fh:
            for d in docs[k * per:(k + 1) * per]:
                fh.write(json.dumps(d) + "\n")


RECIPE = """
name: many-shards
output: {out}
ray: {{num_workers: {workers}}}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"]}}
stages:
  - stage: langid
    languages: [en]
    min_score: 0.3
  - stage: quality
    gopher_quality: {{}}
    gopher_repetition: {{}}
  - stage: exact_dedup
  - stage: minhash_dedup
"""


def kept_ids(out: Path) -> list[str]:
    import pyarrow.parquet as pq

    from pipeline import storage

    ids: list[str] = []
    for f in storage.committed_files(str(out), "kept"):
        ids += pq.read_table(f, columns=["id"]).column("id").to_pylist()
    return sorted(ids)


def one_run(tmp: Path, label: str, shards: int, workers: int, n: int) -> tuple[float, float, float, list[str]]:
    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.runner import run

    d = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=tmp))
    write_inputs(d / "in", documents(n), shards)
    (d / "r.yaml").write_text(RECIPE.format(out=d / "out", inp=d / "in", workers=workers))
    recipe = load_recipe(str(d / "r.yaml"))
    cpu0, t0 = time.process_time(), time.perf_counter()
    res = run(recipe, progress=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    # CPU of the work wherever it ran: every part on the workers plus every global step (its
    # tasks on the workers and the driver's share), as the ledger books them
    everything = res.ledger.shard_work["cpu_seconds"] + sum(t["cpu_seconds"] for t in res.ledger.global_steps.values())
    return wall, cpu, everything, kept_ids(d / "out")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--few", type=int, default=4)
    ap.add_argument("--many", type=int, default=800)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--one-part-per-file", action="store_true", help="do not join small files into parts")
    args = ap.parse_args(argv)
    if args.one_part_per_file:
        from pipeline.engine import runner

        runner.part_limits = lambda sizes, workers: (1, 1)

    import ray

    ray.init(address="local", num_cpus=args.workers, include_dashboard=False, logging_level="ERROR")
    results: dict[int, list[tuple[float, float, float, list[str]]]] = {args.few: [], args.many: []}
    with tempfile.TemporaryDirectory(prefix="many-shards-") as tmp:
        one_run(Path(tmp), "warmup", args.few, args.workers, min(args.docs, 400))  # models, Ray workers
        for r in range(args.repeats):
            order = (args.few, args.many) if r % 2 == 0 else (args.many, args.few)
            for shards in order:
                results[shards].append(one_run(Path(tmp), f"s{shards}", shards, args.workers, args.docs))
                w, c, a, k = results[shards][-1]
                print(f"  {shards:5d} shards: {w:6.1f} s wall, driver CPU {c:6.2f} s "
                      f"({1000 * c / shards:.1f} ms/shard), work {a:6.1f} CPU-s, {len(k)} kept, "
                      f"load average {os.getloadavg()[0]:.1f}", flush=True)
    ray.shutdown()
    few = statistics.median(r[0] for r in results[args.few])
    many = statistics.median(r[0] for r in results[args.many])
    cpu_many = statistics.median(r[1] for r in results[args.many])
    all_few = statistics.median(r[2] for r in results[args.few])
    all_many = statistics.median(r[2] for r in results[args.many])
    same = all(len({tuple(r[3]) for r in v}) == 1 for v in results.values())
    counts = {len(r[3]) for v in results.values() for r in v}
    print(f"{args.docs} documents, {args.workers} workers, median of {args.repeats}, "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}:")
    print(f"  wall {args.many} shards / {args.few} shards = {many / few:.2f}  (goal <= 1.3)")
    print(f"  driver CPU per shard at {args.many} shards = {1000 * cpu_many / args.many:.1f} ms  (goal <= 5)")
    print(f"  work CPU (parts + global steps, from the ledger) {args.many} shards / {args.few} shards = "
          f"{all_many / all_few:.2f}")
    # ids name their file, so the two layouts have different ids (and may keep another member of a
    # near-duplicate cluster); tests/test_many_shards.py checks ids for one layout, joined or not
    print(f"  same kept ids in repeats of a layout: {same}; kept documents per run: {sorted(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
