"""Memory of near-dedup on big documents: peak RSS per input byte, in a fresh process per size.

Three generated texts of `--mb` MB each (words `w0`-`w49999`, 6.9 bytes per word with its
space; the second a copy of the first with 1% of its words replaced, so one near-duplicate pair
that the global step verifies), held by the process; every figure is the peak RSS above the RSS
with the texts held (Linux VmHWM after `clear_refs`), divided by the texts' bytes:

- `runner annotate (+ spill write)`: `minhash_dedup.annotate` on the three texts as one Arrow
  batch (held before, as the runner's reader gives it), then the runner's spill writer
  (`pipeline.engine.worker.ShardOutputs`, `spill=True`) writing it;
- `near_duplicates`: the whole in-process path (annotate, spill files, every wave of the global
  step with the sweep, decision files), as `stages.dedup.near.near_duplicates`, after a first
  call on two tiny texts (the modules it imports on first use, ~50 MB, are not per byte);
- per wave: the same path again with the peak reset before each wave task (`LocalExecutor`'s
  tasks, in this process), and once before the global step (annotate + spill).

    PYTHONPATH=. python benchmarks/dedup_big_docs.py --mb 8 30
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _memory import status_bytes  # noqa: E402  (run as a script, with or without PYTHONPATH)


def _reset() -> int:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status_bytes("VmRSS")


def texts(mb: float) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(0)
    vocab = [f"w{k}" for k in range(50_000)]
    n = int(mb * 1_000_000 / 6.9)
    words = [vocab[k] for k in rng.integers(0, 50_000, n)]
    copy = list(words)
    for j in rng.choice(len(copy), len(copy) // 100, replace=False):
        copy[j] = "zz"
    out = [" ".join(words), " ".join(copy), " ".join(vocab[k] for k in rng.integers(0, 50_000, n))]
    return out


def child(mb: float) -> dict:
    import pyarrow as pa

    from pipeline.engine.worker import ShardOutputs
    from stages.base import Executor
    from stages.dedup import io
    from stages.dedup.near import MinhashDedup, near_duplicates

    docs = texts(mb)
    size = sum(len(t.encode()) for t in docs)
    io.release_memory()
    out: dict = {"mb": mb, "input_bytes": size}

    # the runner's spill: annotate one batch, write it with the spill writer's options
    with tempfile.TemporaryDirectory(prefix="bigdocs-") as tmp:
        stage = MinhashDedup()
        stage.ensure_setup()
        batch = pa.table({"id": [f"{k:032x}" for k in range(3)], "text": pa.array(docs, pa.string())})
        io.release_memory()
        base = _reset()  # the batch as the runner holds it (its reader's Arrow table) is in the base
        t = stage.annotate(batch)
        annotated = (status_bytes("VmHWM") - base) / size
        outputs = ShardOutputs(tmp, t.schema)
        outputs.write("spill/part-0.parquet", t, t.schema, spill=True)
        outputs.commit()
        out["runner annotate"] = round(annotated, 2)
        out["runner annotate + spill write"] = round((status_bytes("VmHWM") - base) / size, 2)
        del t, outputs, batch
    io.release_memory()

    near_duplicates(["a b c d e f g", "a b c d e f g"])  # modules the path imports on first use: not per byte
    io.release_memory()
    base = _reset()
    res = near_duplicates(docs)
    out["near_duplicates"] = round((status_bytes("VmHWM") - base) / size, 2)
    out["kept"] = res.kept
    del res
    io.release_memory()

    class PerWave(Executor):
        """In this process, like LocalExecutor; the peak reset before each task."""

        def __init__(self):
            self.peaks: dict[str, float] = defaultdict(float)
            self.first = True

        def map(self, fn, items):
            if self.first:  # annotate + the spill files, before the global step's first wave
                self.peaks["annotate + spill files"] = (status_bytes("VmHWM") - base) / size
                self.first = False
            res = []
            for x in items:
                b = _reset()
                res.append(fn(x))
                self.peaks[fn.__name__.strip("_")] = max(self.peaks[fn.__name__.strip("_")], (status_bytes("VmHWM") - base) / size)
                del b
            return res

        @property
        def parallelism(self) -> int:
            return 1

    ex = PerWave()
    base = _reset()
    near_duplicates(docs, executor=ex)
    out["waves"] = {k: round(v, 2) for k, v in ex.peaks.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, nargs="+", default=[8, 30], help="size of each of the three texts, MB")
    ap.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        print(json.dumps(child(a.child)))
        return
    for mb in a.mb:
        r = subprocess.run([sys.executable, __file__, "--child", str(mb)], capture_output=True, text=True,
                           env=dict(os.environ), check=True)
        d = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"three texts of {mb:g} MB ({d['input_bytes'] / 1e6:.1f} MB), peak RSS above the texts per input byte; kept {d['kept']}")
        for k in ("runner annotate", "runner annotate + spill write", "near_duplicates"):
            print(f"  {k:32s} {d[k]:6.2f}")
        for k, v in d["waves"].items():
            print(f"  wave {k:27s} {v:6.2f}")


if __name__ == "__main__":
    main()
