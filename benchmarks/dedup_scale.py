"""Global step of minhash_dedup at 1-10+ million documents: time, CPU, memory, and accuracy on
planted clusters of known sizes (one of 100,000).

Synthetic spill files (what the runner writes after `annotate`) over `--files` shards, rows in
random order. Planted documents are token sets (`ngram: 1`, 40 tokens from a 10M-token vocabulary)
with their *real* MinHash band keys from `annotate`, so LSH recall is measured, not assumed. The
stage runs with its own defaults unless a flag switches one (the run prints the values in use):
112 permutations; bands x rows derived from threshold 0.8 with false_negative_weight 0.995 (18 x 6;
`--fn-weight`, or `--bands/--rows`); the sweep among kept documents, `sweep_rows` 4 (28 x 4;
`--sweep-rows 0`: none); `partition_entries` 8,000,000 band entries per partition (`--partition-entries`,
or `--partitions`); verification on; greedy clusters (`--clusters components`); any other key with
`--set KEY=VALUE` (e.g. `--set threshold=0.85 verify=false`); the run prints every key in use. Planted:
  - clusters of near-copies (base + one own token, pairwise J = 0.95): one of 100,000, five of
    10,000, fifty of 1,000, 500 of 100, 5,000 of 10;
  - 50,000 graded pairs: a base and a copy with m of its 40 tokens replaced, m uniform in 0..8
    (J = (40-m)/(40+m): 1.0, 0.95, 0.90, 0.86, 0.82, 0.78, 0.74, 0.70, 0.67).
Every other document is a singleton with random band (and sweep) keys (the global step's load
without the cost of signing 10M texts; signature speed is benchmarks/minhash.py).

Reported: wall and CPU seconds per wave (the sweep's waves apart, as `sweep:WAVE`), peak RSS of
the biggest task of each wave (per worker process, above the RSS it started the task with), the
worker process's absolute peak RSS during its biggest task (memory per worker; the workers are
forked from this process, which holds the planted texts), and the driver's peak; recall =
planted duplicates removed / planted duplicates at J >= threshold + 0.05 (cluster of n: n - 1;
graded pair: 1); precision = dropped documents whose true Jaccard with their keeper is >=
threshold; kept pairs above the threshold among planted documents (must be 0).

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/dedup_scale.py --docs 10000000 --workers 2
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
import xxhash

from stages.base import Executor
from stages.dedup import io
from stages.dedup import minhash as mh
from stages.dedup.near import MinhashDedup

CLUSTERS = [(100_000, 1), (10_000, 5), (1_000, 50), (100, 500), (10, 5_000)]
PAIRS = 50_000
TOKENS = 40


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
    peak = _status_kb("VmHWM")  # the worker process's peak RSS during this task (clear_refs reset it at the start)
    return out, time.perf_counter() - t0, time.process_time() - c0, (peak - base) / 1024, base / 1024, peak / 1024


class MeasuringExecutor(Executor):
    """Forked worker processes (`workers` of them, like the run's Ray actors); each task reports its
    CPU time and peak RSS above the worker's baseline."""

    def __init__(self, workers: int):
        self.workers = workers
        self.waves: list[dict] = []

    def map(self, fn, items):
        t0 = time.perf_counter()
        fork_mb = _status_kb("VmRSS") / 1024  # the workers are forked from here: their RSS starts at about this
        with ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork")) as pool:
            res = list(pool.map(_measured, [(fn, x) for x in items]))
        swept = any(isinstance(x, io.Work) and x.url.rstrip("/").endswith("/sweep") for x in (items[0] if items else ()))
        self.waves.append(dict(
            wave=("sweep:" if swept else "") + fn.__name__.strip("_"), tasks=len(res), wall=time.perf_counter() - t0,
            cpu=sum(r[2] for r in res), max_task_cpu=max((r[2] for r in res), default=0),
            max_mb=max((r[3] for r in res), default=0), base_mb=max((r[4] for r in res), default=0),
            worker_mb=max((r[5] for r in res), default=0), fork_mb=fork_mb,
        ))
        return [r[0] for r in res]

    @property
    def parallelism(self) -> int:
        return self.workers


def planted(seed: int = 0):
    """Texts of the planted documents, their group (cluster or pair), and per pair the m used."""
    rng = np.random.default_rng(seed)
    texts, group, kind = [], [], []
    g = 0
    vocab = 10_000_000

    def toks(n):
        return [f"t{x}" for x in rng.integers(0, vocab, n)]

    for size, count in CLUSTERS:
        for _ in range(count):
            base = " ".join(toks(TOKENS))
            own = toks(size)
            texts += [f"{base} {o}" for o in own]
            group += [g] * size
            kind += ["cluster"] * size
            g += 1
    ms = rng.integers(0, 9, PAIRS)
    for m in ms:
        base = toks(TOKENS)
        copy = list(base)
        for j in rng.choice(TOKENS, int(m), replace=False):
            copy[j] = f"r{rng.integers(0, vocab)}"
        texts += [" ".join(base), " ".join(copy)]
        group += [g, g]
        kind += ["pair", "pair"]
        g += 1
    return texts, np.array(group), kind


def make_spills(out_dir: str, n: int, files: int, stage: MinhashDedup, seed: int = 0):
    t0 = time.perf_counter()
    texts, group, kind = planted(seed)
    k = len(texts)
    assert n > k, f"--docs must exceed the {k:,} planted documents"
    cols = [f.name for f in stage.spill_fields()]  # minhash_bands (and minhash_sweep with --sweep-rows)
    width = {f.name: f.type.list_size for f in stage.spill_fields()}
    signed = [stage.annotate(pa.table({"text": texts[s : s + 50_000]})) for s in range(0, k, 50_000)]
    planted_keys = {c: np.concatenate([np.asarray(t.column(c).combine_chunks().flatten().to_numpy(), dtype=np.uint64)
                                       .reshape(-1, width[c]) for t in signed]) for c in cols}
    keys = planted_keys["minhash_bands"]
    print(f"planted {k:,} documents signed in {time.perf_counter() - t0:.0f} s", flush=True)
    rng = np.random.default_rng(seed + 1)
    perm = rng.permutation(n)  # position -> document; documents < k are the planted ones
    ids = [xxhash.xxh3_128_hexdigest(f"doc{d}") for d in range(k)]
    paths = []
    per = -(-n // files)
    for f in range(files):
        docs = perm[f * per : min(n, (f + 1) * per)]
        is_p = docs < k
        table = {
            "id": [ids[d] if d < k else xxhash.xxh3_128_hexdigest(f"doc{d}") for d in docs.tolist()],
            "text": [texts[d] if d < k else f"u{d} v{d} w{d}" for d in docs.tolist()],
        }
        for c in cols:
            band = rng.integers(1, 2**63, size=(docs.size, width[c]), dtype=np.uint64)
            band[is_p] = planted_keys[c][docs[is_p]]
            table[c] = pa.FixedSizeListArray.from_arrays(pa.array(band.ravel(), pa.uint64()), width[c])
        t = pa.table(table)
        p = os.path.join(out_dir, f"part-{f:04d}.parquet")
        pq.write_table(t, p)
        paths.append(p)
    return paths, texts, group, kind, ids, keys


def accuracy(files, texts, group, kind, ids, keys, threshold):
    index = {i: d for d, i in enumerate(ids)}
    kept = np.ones(len(ids), dtype=bool)
    keeper = np.arange(len(ids))
    for f in files:
        t = pq.read_table(f, columns=["id", "drop_detail"]).to_pydict()
        for i, det in zip(t["id"], t["drop_detail"]):
            d = index.get(i)
            if d is not None and det is not None:
                kept[d] = False
                keeper[d] = index[det]
    sets = {}

    def s(d):
        if d not in sets:
            sets[d] = mh.shingle_set64(texts[d], 1)
        return sets[d]

    should = found = 0
    for g_kind in ("cluster", "pair"):
        sel = np.array([x == g_kind for x in kind])
        groups, first, size = np.unique(group[sel], return_index=True, return_counts=True)
        offs = np.flatnonzero(sel)
        for g0, f0, sz in zip(groups, first, size):
            members = offs[f0 : f0 + sz]
            if g_kind == "pair" and mh.jaccard_sorted(s(members[0]), s(members[1])) < threshold + 0.05:
                continue
            should += sz - 1
            found += sz - int(kept[members].sum())
    dropped = np.flatnonzero(~kept)
    good = sum(mh.jaccard_sorted(s(d), s(keeper[d])) >= threshold for d in dropped)
    # kept planted pairs above the threshold (all pairs of a group's kept members): those sharing
    # an LSH bucket (candidates: the guarantee says none) and those LSH never paired
    bad = {"candidates": 0, "missed by LSH": 0, "missed by LSH at J >= threshold + 0.05": 0}
    members_by_group: dict[int, list[int]] = {}
    for d in np.flatnonzero(kept):
        members_by_group.setdefault(int(group[d]), []).append(int(d))
    for live in members_by_group.values():
        for a in range(len(live)):
            for b in range(a + 1, len(live)):
                j = mh.jaccard_sorted(s(live[a]), s(live[b]))
                if j >= threshold:
                    if np.intersect1d(keys[live[a]], keys[live[b]]).size:
                        bad["candidates"] += 1
                    else:
                        bad["missed by LSH"] += 1
                        bad["missed by LSH at J >= threshold + 0.05"] += j >= threshold + 0.05
    return found / max(should, 1), good / max(dropped.size, 1), bad, int(dropped.size), int(should)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--workers", type=int, nargs="+", default=[2])
    ap.add_argument("--partition-entries", type=int, default=None,
                    help="band entries per partition (default: the stage's, 8,000,000)")
    ap.add_argument("--partitions", type=int, default=None, help="explicit partitions (default: from partition_entries)")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--fn-weight", type=float, default=None,
                    help="false_negative_weight deriving bands x rows (default: the stage's, 0.995)")
    ap.add_argument("--bands", type=int, default=None, help="explicit bands (with --rows)")
    ap.add_argument("--rows", type=int, default=None, help="explicit rows per band (with --bands)")
    ap.add_argument("--sweep-rows", type=int, default=None,
                    help="minhash_dedup's sweep_rows (default: the stage's, 4; 0: no sweep)")
    ap.add_argument("--clusters", default=None, choices=["greedy", "components"], help="default: the stage's (greedy)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="any other minhash_dedup config key (YAML value), e.g. threshold=0.85 num_perm=128 verify=false")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dedup_scale_", dir=args.tmp)
    try:
        extra = {k: v for k, v in dict(
            false_negative_weight=args.fn_weight, bands=args.bands, rows=args.rows, partitions=args.partitions,
            partition_entries=args.partition_entries, clusters=args.clusters).items() if v is not None}
        if args.sweep_rows is not None:
            extra["sweep_rows"] = args.sweep_rows or None
        import yaml

        for kv in args.set:
            k, _, v = kv.partition("=")
            extra[k] = yaml.safe_load(v)
        stage = MinhashDedup(ngram=1, **extra)
        c = stage.config
        print(f"config in use: num_perm {c.num_perm}, bands x rows {c.bands} x {c.rows} (false_negative_weight "
              f"{c.false_negative_weight}), sweep {f'{c.sweep_bands} x {c.sweep_rows}' if c.sweep_rows else 'none'}, "
              f"partitions {c.partitions or f'from partition_entries {c.partition_entries:,}'}, verify {c.verify}, "
              f"clusters {c.clusters}, threshold {c.threshold}; every key: "
              f"{c.model_dump(exclude={'sources', 'skip_kinds', 'work_dir'})}", flush=True)
        t0 = time.perf_counter()
        paths, texts, group, kind, ids, keys = make_spills(tmp, args.docs, args.files, stage)
        size = sum(os.path.getsize(p) for p in paths) / 1e6
        print(f"synthetic spills: {args.docs:,} docs in {args.files} files ({size:.0f} MB) made in "
              f"{time.perf_counter() - t0:.0f} s; params {stage.params()}", flush=True)
        for w in args.workers:
            ex = MeasuringExecutor(w)
            base = reset_peak()
            c0, t0 = time.process_time(), time.perf_counter()
            files = stage.resolve(paths, ex)
            wall, cpu_drv = time.perf_counter() - t0, time.process_time() - c0
            drv = (_status_kb("VmHWM") - base) / 1024
            cpu = sum(x["cpu"] for x in ex.waves) + cpu_drv
            rec, prec, bad, dropped, should = accuracy(files, texts, group, kind, ids, keys, stage.config.threshold)
            print(f"\n## {args.docs:,} documents, {w} worker(s)\n\nwall {wall:.0f} s, CPU {cpu:.0f} s "
                  f"({args.docs / cpu:,.0f} docs per CPU s), driver CPU {cpu_drv:.1f} s, driver peak +{drv:.0f} MB; "
                  f"peak task RSS {max(x['max_mb'] + x['base_mb'] for x in ex.waves):.0f} MB\n"
                  f"recall {rec:.4f} ({should:,} planted duplicates at J >= threshold + 0.05), precision {prec:.4f} "
                  f"({dropped:,} planted documents dropped), kept planted pairs above the threshold: {bad}\n"
                  f"stats {stage.stats}\n", flush=True)
            print("| wave | tasks | wall s | CPU s (sum) | slowest task CPU s | peak task RSS MB (above a worker's ~base) "
                  "| worker peak RSS MB (absolute; forked from a driver of) |")
            print("|---|---|---|---|---|---|---|")
            waves: dict[str, dict] = {}
            for x in ex.waves:  # the components' rounds are many waves of the same two kinds
                y = waves.setdefault(x["wave"], dict(x, tasks=0, wall=0.0, cpu=0.0, max_task_cpu=0.0, max_mb=0.0, worker_mb=0.0))
                y["worker_mb"] = max(y["worker_mb"], x["worker_mb"])
                y["tasks"] += x["tasks"]
                y["wall"] += x["wall"]
                y["cpu"] += x["cpu"]
                y["max_task_cpu"] = max(y["max_task_cpu"], x["max_task_cpu"])
                y["max_mb"] = max(y["max_mb"], x["max_mb"])
            for x in waves.values():
                print(f"| {x['wave']} | {x['tasks']} | {x['wall']:.1f} | {x['cpu']:.1f} | {x['max_task_cpu']:.1f} | "
                      f"{x['max_mb']:.0f} (base {x['base_mb']:.0f}) | {x['worker_mb']:.0f} ({x['fork_mb']:.0f}) |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
