"""Files, keys and orderings shared by the global dedup stages (exact, MinHash, lines).

Why files: the global step fans out over workers with `executor.map`, and what one wave of tasks
produces for the next (band keys per partition, edges, cluster assignments) goes through numpy
files in a work directory next to the spill files, never through the driver. Every intermediate
file is "bucketed": rows sorted by a bucket number (a hash-range partition, or an input file)
with an offsets array, so a task memory-maps just its bucket from each file.

Documents are addressed by `doc = file_index << 32 | row` (row within its spill file), and ranked
for survivorship by their id, a 32-hex-digit xxh3-128 (pipeline/schema.py), compared as the
128-bit number it spells, which is the same order as comparing the strings.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROW_BITS = 32
ROW_MASK = np.int64((1 << ROW_BITS) - 1)

# Ranking record: one per document that takes part in a cluster.
RANK_DTYPE = np.dtype([("id_hi", "<u8"), ("id_lo", "<u8"), ("q", "<f8")])
# Assignment record: a document in a cluster of size > 1, the cluster's id (its best document's
# id), its size, and the kept document this one duplicates (k = own id: this document is kept).
ASSIGN_DTYPE = np.dtype(
    [("doc", "<i8"), ("c_hi", "<u8"), ("c_lo", "<u8"), ("size", "<i8"), ("k_hi", "<u8"), ("k_lo", "<u8")]
)

_HEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX[_c] = 10 + _i


# -- work directory and Parquet -----------------------------------------------------------------
def work_dir(spill_files: Sequence[str], stage: str, configured: str | None) -> str:
    """Where intermediate files go: `configured`, else `<spill dir>/_<stage>_work`.

    On a multi-node cluster this must be a filesystem every worker sees (as the spill dir is).
    """
    base = configured or os.path.join(os.path.dirname(os.path.abspath(spill_files[0])), f"_{stage}_work")
    os.makedirs(base, exist_ok=True)
    return base


def clean_work_dir(wd: str, keep_prefix: str = "decisions_") -> None:
    """Delete intermediate files once the decision files exist (they are all that is returned)."""
    for name in os.listdir(wd):
        if not name.startswith(keep_prefix):
            os.remove(os.path.join(wd, name))


def work_path(wd: str, kind: str, i: int, ext: str = ".npy") -> str:
    """Deterministic name of intermediate file `i` of a kind. Tasks receive (wd, count) and rebuild
    the names, so no task argument grows with files x partitions."""
    return os.path.join(wd, f"{kind}_{i}{ext}")


def work_paths(wd: str, kind: str, n: int, ext: str = ".npy") -> list[str]:
    return [work_path(wd, kind, i, ext) for i in range(n)]


def read_columns(path: str, columns: Sequence[str]) -> pa.Table:
    """The named columns of a spill file; a column the file lacks comes back as nulls."""
    schema = pq.read_schema(path)
    present = [c for c in columns if c in schema.names]
    t = pq.read_table(path, columns=present)
    for c in columns:
        if c not in present:
            t = t.append_column(c, pa.nulls(t.num_rows))
    return t.select(list(columns))


def require_column(path: str, column: str) -> None:
    """Refuse a non-empty spill file without the column `annotate` added (silent no-dedup otherwise)."""
    meta = pq.read_metadata(path)
    if meta.num_rows and column not in meta.schema.to_arrow_schema().names:
        raise ValueError(
            f"{path}: spill file has no {column!r} column; spill files must keep every column annotate "
            "added (the stage's signal_fields() and spill_fields())"
        )


def num_rows(path: str) -> int:
    return pq.read_metadata(path).num_rows


# -- keys ---------------------------------------------------------------------------------------
def hex128(col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hi, lo, valid) uint64 halves of 32-hex-digit strings; invalid or null entries: valid=False."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], pa.string())
    col = col.cast(pa.string())
    n = len(col)
    hi = np.zeros(n, dtype=np.uint64)
    lo = np.zeros(n, dtype=np.uint64)
    if n == 0:
        return hi, lo, np.zeros(0, dtype=bool)
    ok = (pc.fill_null(pc.equal(pc.binary_length(col), 32), False)).to_numpy(zero_copy_only=False)
    filled = col if ok.all() else pc.if_else(pa.array(ok), col, pa.scalar("0" * 32))
    offsets = np.frombuffer(filled.buffers()[1], dtype=np.int32)[filled.offset : filled.offset + n + 1]
    data = np.frombuffer(filled.buffers()[2], dtype=np.uint8)
    idx = offsets[:-1, None] + np.arange(32)[None, :]
    nib = _HEX[data[idx]]
    ok &= (nib != 255).all(axis=1)
    nib = nib.astype(np.uint64)
    shifts = np.arange(60, -4, -4, dtype=np.uint64)
    hi = np.bitwise_or.reduce(nib[:, :16] << shifts, axis=1)
    lo = np.bitwise_or.reduce(nib[:, 16:] << shifts, axis=1)
    return hi, lo, ok


def to_hex(hi: np.ndarray, lo: np.ndarray) -> list[str]:
    return [f"{int(h):016x}{int(l):016x}" for h, l in zip(hi, lo)]


def ids_hex128(ids: pa.Array | pa.ChunkedArray, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Document ids as 128-bit halves; ids must be the schema's 32-hex-digit xxh3-128."""
    hi, lo, ok = hex128(ids)
    if not ok.all():
        bad = ids[int(np.flatnonzero(~ok)[0])]
        raise ValueError(f"{path}: document id {bad} is not a 32-hex-digit xxh3-128 id (pipeline/schema.py)")
    return hi, lo


def quality(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Quality scores as float64; null or NaN ranks lowest (-inf)."""
    q = pc.fill_null(col.cast(pa.float64()), float("-inf")).to_numpy(zero_copy_only=False).astype(np.float64)
    q[np.isnan(q)] = -np.inf
    return q


def hash_partition(keys: np.ndarray, partitions: int) -> np.ndarray:
    """Hash-range partition of uniformly distributed uint64 keys: top 32 bits scaled to [0, P)."""
    return ((keys >> np.uint64(32)) * np.uint64(partitions) >> np.uint64(32)).astype(np.int64)


def file_of(doc: np.ndarray) -> np.ndarray:
    return (doc >> ROW_BITS).astype(np.int64)


def row_of(doc: np.ndarray) -> np.ndarray:
    return (doc & ROW_MASK).astype(np.int64)


def rank_positions(id_hi: np.ndarray, id_lo: np.ndarray, q: np.ndarray | None) -> np.ndarray:
    """pos[i] = rank of document i, 0 = best: highest q (if given), then lowest id."""
    keys = [np.ascontiguousarray(id_lo), np.ascontiguousarray(id_hi)]  # strided fields sort ~10x slower
    if q is not None:
        keys.append(-np.ascontiguousarray(q))
    order = np.lexsort(keys)
    pos = np.empty(order.size, dtype=np.int64)
    pos[order] = np.arange(order.size)
    return pos


# -- bucketed numpy files -------------------------------------------------------------------------
def write_bucketed(path: str, records: np.ndarray, bucket: np.ndarray, nbuckets: int) -> None:
    """Save `records` sorted (stably) by `bucket`, plus offsets, as `path` and `path`.off.npy."""
    if bucket.size and (np.diff(bucket) < 0).any():
        records = records[np.argsort(bucket, kind="stable")]
    np.save(path, records)
    counts = np.bincount(bucket, minlength=nbuckets) if bucket.size else np.zeros(nbuckets, dtype=np.int64)
    np.save(path + ".off.npy", np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


def read_bucket(path: str, b: int) -> np.ndarray:
    """Bucket `b` of a file written by `write_bucketed` (memory-mapped: only that bucket is read)."""
    off = np.load(path + ".off.npy", mmap_mode="r")
    arr = np.load(path, mmap_mode="r")
    return np.array(arr[int(off[b]) : int(off[b + 1])])


def read_buckets(paths: Sequence[str], b: int, dtype: np.dtype) -> np.ndarray:
    parts = [read_bucket(p, b) for p in paths]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


# -- decisions ----------------------------------------------------------------------------------
def write_decisions(
    spill_path: str,
    out_path: str,
    assign: np.ndarray,
    reason: str,
    size_col: str,
    cluster_col: str | None = None,
) -> str:
    """One decision Parquet per spill file: same rows, same order.

    `assign` holds this file's documents that are in clusters of size > 1 (ASSIGN_DTYPE). A document
    whose keeper `k` is another document is dropped with `reason`, detail = the keeper's id.
    Everyone else is kept, with cluster id = own id and size 1 when not in a cluster.
    """
    ids = pq.read_table(spill_path, columns=["id"]).column("id").combine_chunks()
    n = len(ids)
    size = np.ones(n, dtype=np.int64)
    rows = row_of(assign["doc"])
    size[rows] = assign["size"]
    id_list = ids.to_pylist()
    cluster = list(id_list)
    keeper = list(id_list)
    for r, c, k in zip(rows.tolist(), to_hex(assign["c_hi"], assign["c_lo"]), to_hex(assign["k_hi"], assign["k_lo"])):
        cluster[r], keeper[r] = c, k
    drop = [None if k == i else reason for k, i in zip(keeper, id_list)]
    detail = [None if d is None else k for d, k in zip(drop, keeper)]
    cols = {
        "id": ids,
        "drop_reason": pa.array(drop, pa.string()),
        "drop_detail": pa.array(detail, pa.string()),
    }
    if cluster_col:
        cols[cluster_col] = pa.array(cluster, pa.string())
    cols[size_col] = pa.array(size.astype(np.int32), pa.int32())
    pq.write_table(pa.table(cols), out_path)
    return out_path
