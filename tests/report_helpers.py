"""Builds a finished run by hand (part files, ledger.json, recipe.json) for the report's tests, so
signals like lang/lang_score/dup_cluster_size exist without the stages that make them."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.ledger import Ledger
from pipeline.schema import full_schema, make_record

SIGNALS = [
    pa.field("lang", pa.string()),
    pa.field("lang_score", pa.float32()),
    pa.field("dup_cluster_id", pa.string()),
    pa.field("dup_cluster_size", pa.int32()),
]
SCHEMA = full_schema(SIGNALS)
STAGES = ["read", "langid", "dedup"]
RECIPE = {
    "name": "handmade",
    "output": "unused",
    "sources": {"web": {"kind": "jsonl", "paths": ["/nonexistent/web/*.jsonl"]},
                "wiki": {"kind": "jsonl", "paths": ["/nonexistent/wiki/*.jsonl"]}},
    "stages": [{"stage": "langid", "languages": ["en"], "min_score": {"web": 0.5, "*": 0.65}},
               {"stage": "near_dedup", "label": "dedup", "threshold": 0.8}],
}


def doc(source: str, shard: int, i: int, text: str, **signals) -> dict:
    row = make_record(source=source, kind="jsonl", file=f"{shard}.jsonl", offset=i, text=text,
                      url=f"http://{source}/{shard}/{i}")
    row.update(signals)
    return row


def write_run(out: Path, shards: list[dict], recipe: dict | None = None) -> Path:
    """shards: [{"source", "raw_bytes", "kept": [rows], "rejects": {stage: [(row, reason)]}}];
    shard i's files are part-0000i. The ledger is derived from the rows, so it balances."""
    ledger = Ledger(list(STAGES))
    for idx, sh in enumerate(shards):
        part = f"part-{idx:05d}.parquet"
        src = sh["source"]
        ledger.add_input(src, 1, sh["raw_bytes"])
        if sh["kept"]:
            (out / "kept").mkdir(parents=True, exist_ok=True)
            pq.write_table(_table(sh["kept"]), out / "kept" / part, compression="zstd")
        for stage, rows in sh.get("rejects", {}).items():
            (out / "rejects" / stage).mkdir(parents=True, exist_ok=True)
            table = _table([dict(r, drop_stage=stage, drop_reason=reason, drop_detail=None) for r, reason in rows])
            pq.write_table(table, out / "rejects" / stage / part, compression="zstd")
        for k, stage in enumerate(STAGES):
            later = [r for s in STAGES[k + 1:] for r, _ in sh.get("rejects", {}).get(s, [])] + sh["kept"]
            here = sh.get("rejects", {}).get(stage, [])
            rejected: dict[str, list[int]] = {}
            for r, reason in here:
                cur = rejected.setdefault(reason, [0, 0])
                cur[0] += 1
                cur[1] += len(r["text"].encode())
            nbytes = sum(len(r["text"].encode()) for r in later)
            ledger.record(stage, src, docs_in=len(later) + len(here),
                          bytes_in=nbytes + sum(b for _, b in rejected.values()),
                          kept=len(later), kept_bytes=nbytes, rejected=rejected)
    assert ledger.check() == []
    ledger.write(str(out / "ledger.json"))
    (out / "recipe.json").write_text(json.dumps(recipe or RECIPE), encoding="utf-8")
    return out


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCHEMA} for r in rows], schema=SCHEMA)
