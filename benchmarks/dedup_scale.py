"""Global step of minhash_dedup (and exact_dedup) at >= 1 million documents: throughput and memory.

Synthetic spill files (what the runner writes after `annotate`): N documents of 60 random words
over `--files` shards, with 14 LSH band keys each. A fraction `--dup` of documents are copies of an
earlier document with one word substituted (true Jaccard ~0.84) that share each band key of their
original with probability 0.7; 1% more share exactly one band key with an unrelated document (LSH
false positives that verification must remove). Keys are generated, not hashed from the text, so
the run measures `resolve` only; signature speed is benchmarks/minhash.py.

`resolve` runs with a process-pool executor (`--workers`, one fresh process per task, like Ray
tasks); every task reports its CPU seconds and peak RSS above the worker's baseline (Linux
clear_refs/VmHWM), aggregated per wave. The driver (connected components) figures are this
process's, with scipy imported beforehand.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/dedup_scale.py --docs 1000000 --partitions 8
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.schema import doc_id
from stages.base import Executor
from stages.dedup.exact import ExactDedup, text_hash
from stages.dedup.near import MinhashDedup

BANDS = 14


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak() -> int:
    """Reset this process's peak RSS (Linux clear_refs 5) and return its current RSS in kB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kb("VmRSS")


def _measured(job):
    fn, item = job
    base = reset_peak()
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = fn(item)
    return out, time.perf_counter() - t0, time.process_time() - c0, (_status_kb("VmHWM") - base) / 1024


class MeasuringExecutor(Executor):
    """Forked process pool; each task reports its CPU time and peak RSS above the worker's baseline."""

    def __init__(self, workers: int):
        self.workers = workers
        self.waves: list[dict] = []

    def map(self, fn, items):
        t0 = time.perf_counter()
        with ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork")) as pool:
            res = list(pool.map(_measured, [(fn, x) for x in items]))
        self.waves.append(dict(
            wave=fn.__name__.strip("_"), tasks=len(res), wall=time.perf_counter() - t0,
            cpu=sum(r[2] for r in res), max_task_cpu=max((r[2] for r in res), default=0),
            max_mb=max((r[3] for r in res), default=0),
        ))
        return [r[0] for r in res]

    @property
    def parallelism(self) -> int:
        return self.workers


def make_spills(out_dir: str, n: int, files: int, dup: float, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    words = rng.integers(0, vocab.size, size=(n, 60))
    keys = rng.integers(1, 2**64 - 1, size=(n, BANDS), dtype=np.uint64)
    is_copy = rng.random(n) < dup
    is_copy[0] = False
    src = (rng.random(n) * np.arange(n)).astype(np.int64)  # an earlier document
    for d in np.flatnonzero(is_copy):  # copies chain to their source's (possibly copied) words/keys
        s = src[d]
        words[d] = words[s]
        if rng.random() < 0.67:  # a third of the copies are exact
            words[d, rng.integers(0, 60)] = rng.integers(0, vocab.size)
        share = rng.random(BANDS) < 0.7
        keys[d, share] = keys[s, share]
    fp = np.flatnonzero(rng.random(n) < 0.01)
    partner = rng.integers(0, n, size=fp.size)
    band = rng.integers(0, BANDS, size=fp.size)
    keys[fp, band] = keys[partner, band]
    paths = []
    per = -(-n // files)
    for f in range(files):
        lo, hi = f * per, min(n, (f + 1) * per)
        texts = [" ".join(vocab[w]) for w in words[lo:hi]]
        ids = [doc_id("synthetic", f"shard{f}", k) for k in range(lo, hi)]
        col = pa.FixedSizeListArray.from_arrays(pa.array(keys[lo:hi].ravel(), pa.uint64()), BANDS)
        t = pa.table({"id": ids, "text": texts, "minhash_bands": col,
                      "text_hash": [text_hash(x) for x in texts]})
        p = os.path.join(out_dir, f"part-{f:04d}.parquet")
        pq.write_table(t, p)
        paths.append(p)
    return paths


def report(label, ex, t_total, cpu_driver, rss_driver_mb, n, extra=""):
    cpu = sum(w["cpu"] for w in ex.waves) + cpu_driver
    print(f"\n{label}: {n:,} documents, resolve {t_total:.1f} s wall, {cpu:.1f} CPU s in all "
          f"({n / cpu:,.0f} docs per CPU second); driver CPU {cpu_driver:.1f} s, driver peak +{rss_driver_mb:.0f} MB "
          f"{extra}\n")
    print("| wave | tasks | wall s | CPU s (sum) | slowest task CPU s | peak task memory MB (above baseline) |")
    print("|---|---|---|---|---|---|")
    for w in ex.waves:
        print(f"| {w['wave']} | {w['tasks']} | {w['wall']:.1f} | {w['cpu']:.1f} | {w['max_task_cpu']:.1f} | {w['max_mb']:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dup", type=float, default=0.3)
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--skip-exact", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dedup_scale_")
    try:
        t0 = time.perf_counter()
        paths = make_spills(tmp, args.docs, args.files, args.dup)
        size = sum(os.path.getsize(p) for p in paths) / 1e6
        print(f"synthetic spills: {args.docs:,} docs in {args.files} files ({size:.0f} MB) made in "
              f"{time.perf_counter() - t0:.0f} s; {args.workers} worker processes, {args.partitions} partitions")
        import gc

        import scipy.sparse.csgraph  # noqa: F401  imported lazily by the stage; keep its 0.8 s / ~40 MB out of the driver numbers

        gc.collect()
        stage = MinhashDedup(partitions=args.partitions, verify=not args.no_verify)
        ex = MeasuringExecutor(args.workers)
        base = reset_peak()
        c0, t0 = time.process_time(), time.perf_counter()
        stage.resolve(paths, ex)
        t, cpu = time.perf_counter() - t0, time.process_time() - c0
        drv = (_status_kb("VmHWM") - base) / 1024
        entries = stage.stats["band_entries"]
        report("minhash_dedup", ex, t, cpu, drv, args.docs,
               f"(band entries {entries:,}, ~{entries / args.partitions:,.0f} per partition; stats {stage.stats})")
        if not args.skip_exact:
            ex2 = MeasuringExecutor(args.workers)
            base = reset_peak()
            c0, t0 = time.process_time(), time.perf_counter()
            files = ExactDedup(partitions=args.partitions).resolve(paths, ex2)
            t, cpu = time.perf_counter() - t0, time.process_time() - c0
            drv = (_status_kb("VmHWM") - base) / 1024
            kept = sum(pq.read_table(f, columns=["drop_reason"]).column(0).null_count for f in files)
            report("exact_dedup", ex2, t, cpu, drv, args.docs, f"(kept {kept:,})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
