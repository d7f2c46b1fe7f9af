"""Exact document deduplication: one survivor per normalised text, across every shard and source.

annotate: `text_hash` = xxh3-128 (hex) of the text after NFC and whitespace collapsing (optionally
lowercased). resolve, in three waves of parallel tasks that never gather all hashes in one place:
  1. per spill file: (hash, quality, id, doc) records, bucketed by hash range into P partitions;
  2. per partition: sort, group equal hashes, pick the survivor (highest quality if asked, then
     lowest id), write assignments of documents in groups of size > 1 bucketed by spill file;
  3. per spill file: the decision file (same rows, same order as the spill file).
Memory per partition task: 48 bytes x (documents / P), plus the sort's copy.
"""
from __future__ import annotations

import math
import unicodedata
from typing import Literal, Sequence

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import Field

from stages.dedup import io
from stages._arrow import set_column
from stages.base import Executor, GlobalStage, StageConfig
from stages.dedup.in_process import Duplicates, run_in_process

ENTRY_DTYPE = np.dtype(
    [("h_hi", "<u8"), ("h_lo", "<u8"), ("q", "<f8"), ("id_hi", "<u8"), ("id_lo", "<u8"), ("doc", "<i8")]
)


class ExactDedupConfig(StageConfig):
    keep: Literal["lowest_id", "highest_quality"] = Field("lowest_id", description=(
        "survivor of a group of identical texts: the lowest id, or the highest `quality_column` "
        "(documents without a score rank last), ties broken by lowest id"))
    quality_column: str = Field("quality_score", description="the score `keep: highest_quality` ranks by")
    lowercase: bool = Field(False, description="also lowercase before hashing (NFC and whitespace collapsing always)")
    partitions: int | None = Field(None, gt=0, description=(
        "hash-range partitions of the grouping wave; null: about partition_docs documents each, at least the parallelism"))
    partition_docs: int = Field(4_000_000, gt=0, description="documents per partition when partitions is null")
    work_dir: str | None = Field(None, description=(
        "intermediate files: a local path or fsspec URL (s3://...); null: `_exact_dedup_work` next to the spill files"))


def normalise(text: str, lowercase: bool = False) -> str:
    """NFC, runs of whitespace collapsed to one space, ends stripped; optionally lowercased."""
    text = " ".join(unicodedata.normalize("NFC", text).split())
    return text.lower() if lowercase else text


def text_hash(text: str | None, lowercase: bool = False) -> str | None:
    if text is None:
        return None
    return xxhash.xxh3_128_hexdigest(normalise(text, lowercase).encode("utf-8"))


class ExactDedup(GlobalStage):
    name = "exact_dedup"
    Config = ExactDedupConfig
    reasons = ("exact_duplicate",)
    decision_keys = ("keep", "quality_column")
    accepts_dropped_before = True

    def group_keys(self) -> list[str]:
        return ["text_hash"]

    def ranks_by(self) -> str | None:
        return self.config.quality_column if self.config.keep == "highest_quality" else None

    def signal_fields(self) -> list[pa.Field]:
        return [pa.field("text_hash", pa.string()), pa.field("exact_dup_count", pa.int32())]

    def signal_descriptions(self) -> dict[str, str]:
        return {"text_hash": "xxh3-128 of the normalised text", "exact_dup_count": "size of the document's group of identical texts"}

    def annotate(self, batch: pa.Table) -> pa.Table:
        low = self.config.lowercase
        hashes = [text_hash(t, low) for t in batch.column("text").to_pylist()]
        col = pa.array(hashes, pa.string())
        return set_column(batch, "text_hash", col)

    def resolve(self, spill_files: list[str], executor: Executor) -> list[str]:
        cfg = self.config
        if not spill_files:
            return []
        wd = io.work_dir(spill_files, self.name, cfg.work_dir or self.work_url)
        wd.clean()
        total = sum(io.num_rows(p) for p in spill_files)
        parts = cfg.partitions or max(executor.parallelism, math.ceil(total / cfg.partition_docs), 1)
        qcol = cfg.quality_column if cfg.keep == "highest_quality" else None
        nfiles = len(spill_files)
        executor.map(_scan, [(i, p, wd, parts, qcol, io.before(self, i)) for i, p in enumerate(spill_files)])
        executor.map(_group, [(p, wd, nfiles, qcol is not None) for p in range(parts)])
        files = executor.map(_decide, [(i, p, wd, parts) for i, p in enumerate(spill_files)])
        wd.clean()
        return files


def _scan(args) -> int:
    """Wave 1 (per spill file): hash-range bucketed records of the documents that have a hash."""
    i, path, wd, parts, qcol, dropped_before = args
    io.require_column(path, "text_hash")
    t = io.read_columns(path, ["id", "text_hash"] + ([qcol] if qcol else []))
    id_hi, id_lo = io.ids_hex128(t.column("id"), path)
    h_hi, h_lo, ok = io.hex128(t.column("text_hash"))
    ok &= io.live_rows(dropped_before, t.num_rows, path)
    rec = np.zeros(int(ok.sum()), dtype=ENTRY_DTYPE)
    rec["h_hi"], rec["h_lo"] = h_hi[ok], h_lo[ok]
    rec["id_hi"], rec["id_lo"] = id_hi[ok], id_lo[ok]
    rec["q"] = io.quality(t.column(qcol))[ok] if qcol else 0.0
    rec["doc"] = (np.int64(i) << io.ROW_BITS) | np.flatnonzero(ok).astype(np.int64)
    wd.write("scan", i, rec, io.hash_partition(rec["h_hi"], parts), parts)
    return int(rec.size)


def _group(args) -> int:
    """Wave 2 (per hash partition): survivors of equal-hash groups, assignments by spill file."""
    p, wd, nfiles, by_quality = args
    rec = wd.read("scan", p, nfiles, ENTRY_DTYPE)
    assign = np.zeros(0, dtype=io.ASSIGN_DTYPE)
    if rec.size:
        keys = ["id_lo", "id_hi"] + (["q"] if by_quality else []) + ["h_lo", "h_hi"]
        cols = [np.ascontiguousarray(rec[k]) for k in keys]  # strided fields sort much slower
        if by_quality:
            cols[2] = -cols[2]
        rec = rec[np.lexsort(cols)]
        new = np.ones(rec.size, dtype=bool)
        new[1:] = (rec["h_hi"][1:] != rec["h_hi"][:-1]) | (rec["h_lo"][1:] != rec["h_lo"][:-1])
        start = np.flatnonzero(new)
        size = np.diff(np.append(start, rec.size))
        gid = np.cumsum(new) - 1
        in_dup = size[gid] > 1
        first = start[gid][in_dup]
        assign = np.zeros(int(in_dup.sum()), dtype=io.ASSIGN_DTYPE)
        assign["doc"] = rec["doc"][in_dup]
        assign["c_hi"], assign["c_lo"] = rec["id_hi"][first], rec["id_lo"][first]
        assign["k_hi"], assign["k_lo"] = assign["c_hi"], assign["c_lo"]
        assign["size"] = size[gid][in_dup]
    wd.write("assign", p, assign, io.file_of(assign["doc"]), nfiles)
    return int(assign.size)


def _decide(args) -> str:
    """Wave 3 (per spill file): the decision file."""
    i, path, wd, parts = args
    assign = wd.read("assign", i, parts, io.ASSIGN_DTYPE)
    return io.write_decisions(path, wd, f"f{i}.parquet", assign, "exact_duplicate", size_col="exact_dup_count")


def exact_duplicates(texts: Sequence[str | None], executor: Executor | None = None, *,
                     quality: Sequence[float] | None = None, work_dir: str | None = None,
                     shard_size: int = 100_000, **config) -> Duplicates:
    """Groups of identical (normalised) texts by the pipeline's own `exact_dedup` code."""
    return run_in_process(ExactDedup(**config), texts, executor, work_dir, shard_size, None,
                          "exact_dup_count", quality)
