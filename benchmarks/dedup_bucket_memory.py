"""Memory of one bucket task of near-dedup's global step (the wave that bounds memory per worker),
per band entry of its partition, in a fresh process per case.

A partition's entry files as `_scan` writes them (`--files` producers, each one's docs ascending
with its file index in the high bits), `--shared` of the entries in LSH buckets of 2-20 documents
and the rest with keys of their own (dedup_scale's planted documents are ~4-40% of its entries);
then `stages.dedup.near._bucket` on that partition (its star edges into 8 node partitions), peak RSS above the process's RSS before the
task (Linux VmHWM after `clear_refs`), divided by the partition's entries.

    PYTHONPATH=. python benchmarks/dedup_bucket_memory.py --entries 2000000 6000000 8000000 --files 10 30 100
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _memory import status_bytes  # noqa: E402  (run as a script, with or without PYTHONPATH)


def child(entries: int, files: int, shared: float) -> dict:
    import numpy as np

    from stages.dedup import io
    from stages.dedup.near import ENTRY_DTYPE, _bucket

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="bucketmem-") as tmp:
        work = io.Work(tmp)
        n_shared = int(entries * shared)
        size = rng.integers(2, 21, n_shared // 2 + 1)  # buckets of 2-20 documents
        keys = np.repeat(rng.integers(1, 2**63, size.size, dtype=np.uint64), size)[:n_shared]
        keys = np.concatenate([keys, rng.integers(1, 2**63, entries - keys.size, dtype=np.uint64)])
        rng.shuffle(keys)
        per = np.array_split(keys, files)
        del keys
        for i, k in enumerate(per):
            rec = np.zeros(k.size, dtype=ENTRY_DTYPE)
            rec["key"] = k
            rec["doc"] = (np.int64(i) << io.ROW_BITS) | np.sort(rng.integers(0, 100_000, k.size))
            work.write("entries", i, rec)  # one partition: bucket 0
        del per, rec
        io.release_memory()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = status_bytes("VmRSS")
        buckets, largest = _bucket((0, work, files, 8))  # star edges into 8 node partitions, as a run with 8
        peak = status_bytes("VmHWM") - base
    return {"entries": entries, "files": files, "shared": shared, "peak_mb": peak / 2**20,
            "bytes_per_entry": peak / entries, "buckets": buckets, "largest": largest}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, nargs="+", default=[2_000_000, 6_000_000, 8_000_000])
    ap.add_argument("--files", type=int, nargs="+", default=[10, 30])
    ap.add_argument("--shared", type=float, nargs="+", default=[0.1, 0.5])
    ap.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(int(a.child[0]), int(a.child[1]), float(a.child[2]))))
        return
    print("| entries in the partition | producer files | shared entries | peak above the task's start MB | bytes per entry |")
    print("|---|---|---|---|---|")
    for e in a.entries:
        for f in a.files:
            for s in a.shared:
                r = subprocess.run([sys.executable, __file__, "--child", str(e), str(f), str(s)], capture_output=True,
                                   text=True, env=dict(os.environ), check=True)
                d = json.loads(r.stdout.strip().splitlines()[-1])
                print(f"| {e:,} | {f} | {s:.0%} | {d['peak_mb']:.0f} | {d['bytes_per_entry']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
