"""How the report behaves on a bigger run: wall time, peak memory, and the sampled token estimate
against the exact count.

Builds a synthetic finished run (part files, ledger.json, recipe.json) from real text (WikiText-2
paragraphs, HPLT web pages, 4chan threads from ../shared/corpora, drawn with replacement), with
per-shard keep rates that vary, then runs write_report on it with sampled token counts (the
default at this size; once per sampling seed) and with exact counts.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/report_scale.py --shards 24 --docs 2500
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import resource
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from pipeline.engine.ledger import Ledger
from pipeline.report.build import write_report
from pipeline.schema import full_schema, make_record

CORPORA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpora")
SCHEMA = full_schema([pa.field("lang", pa.string()), pa.field("lang_score", pa.float32()),
                      pa.field("quality_score", pa.float32()), pa.field("dup_cluster_size", pa.int32())])
STAGES = ["read", "langid", "quality", "dedup"]


def hplt(path: str) -> list[dict]:
    """HPLT's .jsonl.zst (a few raw-HTML fields hold invalid UTF-8: replaced)."""
    with open(path, "rb") as raw, io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw)) as fh:
        return [json.loads(ln.decode("utf-8", "replace")) for ln in fh if ln.strip()]


def texts() -> list[str]:
    out = []
    with open(os.path.join(CORPORA, "quality", "wikitext2_valid.tokens.txt"), encoding="utf-8") as fh:
        out += [ln.strip() for ln in fh if len(ln) > 200]
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        out += [r["t"] for r in hplt(os.path.join(CORPORA, "web", name))]
    with gzip.open(os.path.join(CORPORA, "quality", "paloma_4chan_val.jsonl.gz"), "rt", encoding="utf-8") as fh:
        out += [json.loads(ln)["text"] for ln in fh]
    return [t for t in out if t]


def build(out: str, shards: int, docs: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    pool = texts()
    ledger = Ledger(list(STAGES))
    for s in range(shards):
        src = "web" if s % 4 else "forum"
        idx = rng.integers(0, len(pool), docs)
        rows = [make_record(source=src, kind="jsonl", file=f"{s}.jsonl", offset=i, text=pool[j], url=f"http://x/{s}/{i}")
                for i, j in enumerate(idx)]
        # each row's fate: 0 read-reject, 1 langid, 2 quality, 3 dedup, 4 kept; keep rates vary per shard
        p = rng.dirichlet([0.3, 3, 3, 2, 6])
        fate = rng.choice(5, size=docs, p=p)
        for r in rows:
            r.update(lang=str(rng.choice(["en", "de", "fr", "ru", "zh"], p=[.6, .1, .1, .1, .1])),
                     lang_score=float(rng.beta(5, 1.5)), quality_score=float(rng.beta(2, 2)),
                     dup_cluster_size=int(rng.geometric(0.6)))
        groups = {k: [r for r, f in zip(rows, fate) if f == k] for k in range(5)}
        part = f"part-{s:05d}.parquet"
        raw = 0
        for k, stage in enumerate(STAGES):
            rej = [dict(r, drop_stage=stage, drop_reason=f"{stage}_reject", drop_detail=None) for r in groups[k]]
            if rej:
                os.makedirs(os.path.join(out, "rejects", stage), exist_ok=True)
                pq.write_table(pa.Table.from_pylist(rej, schema=SCHEMA), os.path.join(out, "rejects", stage, part),
                               compression="zstd")
            later = [r for kk in range(k + 1, 5) for r in groups[kk]]
            nb = sum(len(r["text"].encode()) for r in later)
            rb = sum(len(r["text"].encode()) for r in groups[k])
            if k == 0:
                raw = int((nb + rb) * 3.1)  # WARC-like: markup and headers around the text
            ledger.record(stage, src, docs_in=len(later) + len(groups[k]), bytes_in=nb + rb, kept=len(later),
                          kept_bytes=nb, rejected={f"{stage}_reject": [len(groups[k]), rb]} if groups[k] else {})
        os.makedirs(os.path.join(out, "kept"), exist_ok=True)
        pq.write_table(pa.Table.from_pylist(groups[4], schema=SCHEMA), os.path.join(out, "kept", part), compression="zstd")
        ledger.add_input(src, 1, raw)
    ledger.write(os.path.join(out, "ledger.json"))
    with open(os.path.join(out, "recipe.json"), "w") as fh:
        json.dump({"name": "scale", "sources": {}, "stages": [{"stage": "langid", "min_score": 0.65},
                                                              {"stage": "quality", "min_score": 0.3}]}, fh)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--docs", type=int, default=2500)
    ap.add_argument("--seeds", type=int, default=3, help="sampled-token reports, one per sampling seed")
    ap.add_argument("--subset", type=int, default=8, help="also a report scanning only this many shards")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="report_scale_")
    try:
        build(tmp, args.shards, args.docs)
        led = Ledger.read(os.path.join(tmp, "ledger.json"))
        read = led.total("read")
        disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp) for f in fs if f.endswith(".parquet"))
        print(f"run: {args.shards} shards, {read.docs_in:,} documents, {read.bytes_in / 1e6:.0f} MB text, "
              f"{disk / 1e6:.0f} MB zstd Parquet")
        res = {}
        runs = [(f"sampled (seed {s})", 0, s, None) for s in range(args.seeds)]
        runs += [(f"sampled, {args.subset} shards", 0, 0, args.subset)] if args.subset else []
        runs += [("exact", 10**15, 0, None)]
        for mode, limit, seed, max_shards in runs:
            t = time.time()
            r = write_report(tmp, "4.3TB", scan_kwargs={"exact_token_limit": limit, "seed": seed,
                                                        "max_shards": max_shards})
            res[mode] = r.projection.to_dict()
            kept_tokens = res[mode]["projected_clean_tokens"] / res[mode]["raw_bytes"]
            print(f"{mode:20s} tokens: report {time.time() - t:6.1f} s, peak RSS so far "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
                  f"clean tokens per raw byte {kept_tokens:.5f}, 90% interval "
                  f"[{res[mode]['interval'][0] / 1e9:.0f}B, {res[mode]['interval'][1] / 1e9:.0f}B] at 4.3 TB")
        b = res["exact"]["projected_clean_tokens"]
        for k, v in res.items():
            if k != "exact":
                print(f"{k:20s} vs exact, projected clean tokens: {100 * (v['projected_clean_tokens'] - b) / b:+.2f}%")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
