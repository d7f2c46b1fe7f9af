"""Line-level exact dedup (Llama 3 style): lines found in more than `max_count` documents of the
whole corpus (navigation, cookie banners, footers) are removed from every document.

annotate: the distinct xxh3-64 hashes of a document's normalised lines (NFC, whitespace collapsed,
optionally lowercased; lines shorter than `min_chars` are never counted or removed), spilled as
`line_hashes`. resolve, in three waves that never hold all hashes in one place:
  1. per spill file: line hashes bucketed by hash range into P partitions;
  2. per partition: count documents per hash, keep the hashes seen in more than `max_count`;
  3. per spill file: re-read the text, drop frequent lines. The decision file carries the new
     `text` (the runner replaces the document's text with it) and `lines_removed`; a document
     left with no text is dropped as `only_duplicate_lines`.
Memory: wave 2 holds 8 bytes x (distinct lines per document summed over the corpus / P); wave 3
holds the frequent hashes (8 bytes each), usually a small fraction of all lines.
"""
from __future__ import annotations

import math
import unicodedata

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import Field

from stages.dedup import io
from stages._arrow import set_column
from stages.base import Executor, GlobalStage, StageConfig

HASHES_COLUMN = "line_hashes"


class LineDedupConfig(StageConfig):
    max_count: int = Field(
        6, ge=1, description="a line in more than this many documents is boilerplate (Llama 3: 6 per 30M docs)")
    min_chars: int = Field(1, ge=0, description="shorter (normalised) lines are left alone")
    lowercase: bool = Field(False, description="also lowercase lines before hashing")
    partitions: int | None = Field(gt=0, default=
        None, description="partitions of the counting wave; null: about partition_entries line entries each, at least the parallelism")
    partition_entries: int = Field(32_000_000, gt=0, description="line entries per partition when partitions is null (8 B each)")
    work_dir: str | None = Field(
        None, description="intermediate files (shared storage); null: `_line_dedup_work` next to the spill files")


def normalise_line(line: str, lowercase: bool = False) -> str:
    line = " ".join(unicodedata.normalize("NFC", line).split())
    return line.lower() if lowercase else line


def line_hashes(text: str | None, min_chars: int = 1, lowercase: bool = False) -> list[int | None]:
    """One hash per line of `text` (None for lines too short to count), in line order."""
    if not text:
        return []
    out: list[int | None] = []
    for line in text.split("\n"):
        n = normalise_line(line, lowercase)
        out.append(xxhash.xxh3_64_intdigest(n.encode("utf-8")) if len(n) >= min_chars else None)
    return out


class LineDedup(GlobalStage):
    name = "line_dedup"
    Config = LineDedupConfig
    reasons = ("only_duplicate_lines",)
    accepts_dropped_before = True
    rewrites_text = True  # ends a barrier group: later stages' keys need the rewritten text
    keys_private = True

    def signal_fields(self) -> list[pa.Field]:
        return [pa.field("lines_removed", pa.int32())]

    def signal_descriptions(self) -> dict[str, str]:
        return {"lines_removed": "boilerplate lines removed from the document"}

    def spill_fields(self) -> list[pa.Field]:
        return [pa.field(HASHES_COLUMN, pa.list_(pa.uint64()))]

    def annotate(self, batch: pa.Table) -> pa.Table:
        c = self.config
        hashes = [
            sorted({h for h in line_hashes(t, c.min_chars, c.lowercase) if h is not None})
            for t in batch.column("text").to_pylist()
        ]
        col = pa.array(hashes, pa.list_(pa.uint64()))
        return set_column(batch, HASHES_COLUMN, col)

    def resolve(self, spill_files: list[str], executor: Executor) -> list[str]:
        c = self.config
        if not spill_files:
            return []
        wd = io.work_dir(spill_files, self.name, c.work_dir or self.work_url)
        wd.clean()
        nfiles = len(spill_files)
        total = sum(executor.map(_scan, [(i, io.keys_path(self, i, p), wd, io.before(self, i))
                                        for i, p in enumerate(spill_files)]))
        parts = c.partitions or max(executor.parallelism, math.ceil(total / c.partition_entries), 1)
        executor.map(_partition, [(i, wd, parts) for i in range(nfiles)])
        executor.map(_count, [(p, wd, nfiles, c.max_count) for p in range(parts)])
        files = executor.map(
            _rewrite, [(i, p, wd, parts, c.min_chars, c.lowercase, io.before(self, i))
                       for i, p in enumerate(spill_files)]
        )
        wd.clean()
        return files


def _scan(args) -> int:
    """Wave 1a (per spill file): the flat array of its documents' distinct line hashes."""
    i, path, wd, dropped_before = args
    io.require_column(path, HASHES_COLUMN)
    col = io.read_columns(path, [HASHES_COLUMN]).column(0).combine_chunks()
    live = io.live_rows(dropped_before, len(col), path)
    if not live.all():  # documents an earlier stage of the group dropped are not counted
        col = col.filter(pa.array(live))
    flat = col.flatten() if len(col) and pa.types.is_list(col.type) else pa.array([], pa.uint64())
    arr = np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.uint64)
    wd.write("lines", i, arr)
    return int(arr.size)


def _partition(args) -> int:
    """Wave 1b (per spill file): its line hashes bucketed by hash range."""
    i, wd, parts = args
    arr = wd.read_one("lines", i, np.dtype("<u8"))
    wd.write("lineparts", i, arr, io.hash_partition(arr, parts), parts)
    return int(arr.size)


def _count(args) -> int:
    """Wave 2 (per partition): the sorted hashes found in more than max_count documents."""
    p, wd, nfiles, max_count = args
    arr = wd.read("lineparts", p, nfiles, np.dtype("<u8"))
    uniq, counts = np.unique(arr, return_counts=True)
    frequent = uniq[counts > max_count]
    wd.write("frequent", p, frequent)
    return int(frequent.size)


def _rewrite(args) -> str:
    """Wave 3 (per spill file): texts without their frequent lines, as the decision file."""
    i, path, wd, parts, min_chars, lowercase, dropped_before = args
    frequent = np.unique(np.concatenate([wd.read_one("frequent", p, np.dtype("<u8")) for p in range(parts)]))
    t = io.read_columns(path, ["id", "text"])
    live = io.live_rows(dropped_before, t.num_rows, path).tolist()
    texts, removed, drop = [], [], []
    for text, alive in zip(t.column("text").to_pylist(), live):
        if not text or not alive:
            texts.append(text if alive else None)  # dropped earlier in the group: its text is not needed
            removed.append(0)
            drop.append(None)
            continue
        lines = text.split("\n")
        hs = line_hashes(text, min_chars, lowercase)
        hv = np.array([h if h is not None else 0 for h in hs], dtype=np.uint64)
        hit = np.isin(hv, frequent, assume_unique=False) & np.array([h is not None for h in hs], dtype=bool)
        kept = [line for line, h in zip(lines, hit) if not h]
        new = "\n".join(kept)
        texts.append(new)
        removed.append(int(hit.sum()))
        drop.append("only_duplicate_lines" if not new.strip() else None)
    name = f"f{i}.parquet"
    wd.write_table(f"{wd.root}/decisions/{name}", pa.table({
        "id": t.column("id"),
        "drop_reason": pa.array(drop, pa.string()),
        "drop_detail": pa.array([None] * t.num_rows, pa.string()),
        "text": pa.array(texts, pa.string()),
        "lines_removed": pa.array(removed, pa.int32()),
    }))
    return wd.out_path(f"decisions/{name}")
