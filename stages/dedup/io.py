"""Files, keys and orderings shared by the global dedup stages (exact, MinHash, lines).

Why files: the global step fans out over workers with `executor.map`, and what one wave of tasks
produces for the next (band keys per partition, edges, cluster assignments) goes through
exchange files in a work location (`Work`: a local directory or any fsspec URL such as s3://),
never through the driver and never through a shared POSIX directory. Every intermediate is
"bucketed" (a hash-range partition, or an input file): a producer writes one exchange file holding
all its buckets with an index of them (stages/dedup/exchange.py), and a consumer task range-reads
just its bucket from each producer's file.

Documents are addressed by `doc = file_index << 32 | row` (row within its spill file), and ranked
for survivorship by their id, a 32-hex-digit xxh3-128 (pipeline/schema.py), compared as the
128-bit number it spells, which is the same order as comparing the strings.
"""
from __future__ import annotations

import json
import os
import re
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stages._arrow import flat
from stages.dedup import exchange

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


# -- work location and Parquet (fsspec: a local path or any URL, e.g. s3://, memory://) --------
class Work:
    """The work location of one resolve: exchange files written and read with fsspec.

    Why files through fsspec and not memory-mapped numpy: tasks may run on any node of a cluster,
    so intermediates go to the same storage as the run's outputs (an object store needs no shared
    POSIX disk). A producer task writes one exchange file per kind, `KIND/fI.exchange`, holding its
    buckets (each a Parquet file, or Arrow IPC) and their index; the consumer of bucket B reads
    bucket B's index entry and bytes from the N producers' files, so no task argument grows with
    producers x buckets, no file is appended to by two tasks, and the PUTs are one per producer
    and kind, not one per producer and bucket (on an object store a PUT is a request of the
    per-prefix rate limit; stages/dedup/exchange.py).
    """

    def __init__(self, url: str):
        import fsspec

        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url)
        self._dirs: set[str] = set()

    def __reduce__(self):  # tasks get the URL and rebuild the filesystem on their node
        return (Work, (self.url,))

    def path(self, kind: str, producer: int) -> str:
        """Producer `producer`'s exchange file of `kind` (all its partitions, stages/dedup/exchange.py)."""
        return f"{self.root}/{kind}/f{producer}{exchange.SUFFIX}"

    def _folder(self, path: str) -> None:
        """The folder of `path`, once per folder, where folders exist: an object store has none
        (there s3fs's makedirs only asks whether the bucket exists: a request per exchange file)."""
        parent = path.rsplit("/", 1)[0]
        if parent not in self._dirs:
            if not _OBJECT_STORES.intersection(_protocols(self.fs)):
                self.fs.makedirs(parent, exist_ok=True)
            self._dirs.add(parent)

    def write_table(self, path: str, table: pa.Table, dictionary: bool = True, bounds: Sequence[int] | None = None,
                    options: dict | None = None) -> None:
        """`dictionary`: Parquet dictionary encoding. Off for columns of distinct values (texts,
        ids, hashes), where it saves nothing and costs memory: a page's worth of texts goes into a
        dictionary page the reader decodes whole before the first row (measured: reading 3 texts of
        8 MB took 5.6 bytes of RSS per text byte with it, 2.8 without). `bounds`: row offsets
        where a new row group starts (see `text_groups`). `options`: writer options instead of
        `dictionary` (a spill file: `spill_options`)."""
        self._folder(path)
        kw = options if options is not None else {"use_dictionary": dictionary}
        with self.fs.open(path, "wb") as fh:
            if not bounds:
                pq.write_table(table, fh, compression="zstd", **kw)
                return
            with pq.ParquetWriter(fh, table.schema, compression="zstd", **kw) as w:
                cuts = [0] + [int(b) for b in bounds if 0 < b < table.num_rows] + [table.num_rows]
                for a, b in zip(cuts[:-1], cuts[1:]):
                    w.write_table(table.slice(a, b - a))

    def read_table(self, path: str, columns: Sequence[str] | None = None) -> pa.Table:
        self.fs.invalidate_cache(path)  # written by another task after this process may have listed its folder
        with self.fs.open(path, "rb") as fh:  # one file: ParquetFile, not read_table (pyarrow.dataset, pandas)
            return pq.ParquetFile(fh).read(columns=columns)

    def writer(self, kind: str, producer: int, nbuckets: int = 1, fmt: int = exchange.PARQUET) -> exchange.Writer:
        """A writer of producer `producer`'s exchange file of `kind`, partitions in ascending order
        (`with work.writer(...) as x: x.parquet(b, table)` or `x.arrow(b, batches, count)`)."""
        path = self.path(kind, producer)
        self._folder(path)
        return exchange.Writer(self.fs, path, nbuckets, fmt)

    def write_tables(self, kind: str, producer: int, table: pa.Table, bucket: np.ndarray | None, nbuckets: int = 1) -> None:
        """`table` split by `bucket` (stable) into one exchange file: one file per producer and kind
        whatever the buckets (an empty bucket: no bytes)."""
        with self.writer(kind, producer, 1 if bucket is None else nbuckets) as x:
            if bucket is None:
                x.parquet(0, table)
                return
            order = np.argsort(bucket, kind="stable")
            counts = np.bincount(bucket, minlength=nbuckets) if bucket.size else np.zeros(nbuckets, dtype=np.int64)
            off = np.concatenate([[0], np.cumsum(counts)])
            for b in np.flatnonzero(counts).tolist():  # one bucket's rows taken at a time, not a reordered copy
                x.parquet(b, table.take(pa.array(order[off[b] : off[b + 1]])))

    def parts(self, kind: str, b: int, producers: int, fmt: int = exchange.PARQUET) -> list[exchange.Part]:
        """Where bucket b is in each producer's exchange file (one small read of each file's index)."""
        return [exchange.locate(self.fs, self.path(kind, i), b, fmt) for i in range(producers)]

    def iter_arrow(self, part: exchange.Part):
        """The record batches of one producer's bucket of an Arrow IPC exchange file, one at a time."""
        return exchange.iter_batches(self.fs, part)

    def write(self, kind: str, producer: int, records: np.ndarray, bucket: np.ndarray | None = None, nbuckets: int = 1) -> None:
        """A structured (or plain) numpy array, split by bucket."""
        self.write_tables(kind, producer, _to_table(records), bucket, nbuckets)

    def read(self, kind: str, b: int, producers: int, dtype: np.dtype) -> np.ndarray:
        """Bucket b of every producer, as one array (empty buckets are not read)."""
        parts = [_from_table(t, dtype) for p in self.parts(kind, b, producers)
                 if (t := exchange.read_table(self.fs, p)) is not None]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    def read_fields(self, kind: str, b: int, producers: int, dtype: np.dtype) -> list[np.ndarray]:
        """`read` as one array per field of `dtype`, sized from the files' indexes and filled one
        producer at a time: no list of per-file arrays concatenated (twice the records at once) and
        no structured array to copy the fields out of, so the caller holds its records about once."""
        parts = self.parts(kind, b, producers)
        out = [np.empty(sum(p.rows for p in parts), dtype=dtype[n]) for n in dtype.names]
        at = 0
        for p in parts:
            t = exchange.read_table(self.fs, p)
            if t is None:
                continue
            for arr, name in zip(out, dtype.names):
                arr[at : at + p.rows] = t.column(name).to_numpy()
            del t
            at += p.rows
        return out

    def read_one(self, kind: str, producer: int, dtype: np.dtype) -> np.ndarray:
        """What producer `producer` wrote without buckets."""
        t = exchange.read_table(self.fs, exchange.locate(self.fs, self.path(kind, producer), 0, exchange.PARQUET))
        return np.zeros(0, dtype=dtype) if t is None else _from_table(t, dtype)

    def out_path(self, name: str) -> str:
        """A file for the runner (decisions): a plain path on local disk, else a URL."""
        p = f"{self.root}/{name}"
        return p if _is_local(self.fs) else self.fs.unstrip_protocol(p)

    def clean(self) -> None:
        """Delete the intermediate directories the dedup stages write (never anything else in a
        user-given work_dir); the decision files stay, they are what resolve returns."""
        if not self.fs.exists(self.root):
            return
        for entry in self.fs.ls(self.root, detail=False):
            if _INTERMEDIATE.match(entry.rstrip("/").rsplit("/", 1)[-1]):
                self.fs.rm(entry, recursive=True)


_INTERMEDIATE = re.compile(r"^(meta|entries|star|members|labels|cand|assign|scan|lines|lineparts|frequent|sweep|cc\d+[ls])$")


_OBJECT_STORES = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl"}  # no folders to create


def _protocols(fs) -> tuple[str, ...]:
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


def _is_local(fs) -> bool:
    return _protocols(fs)[0] in ("file", "local")


def _to_table(records: np.ndarray) -> pa.Table:
    if records.dtype.names is None:
        return pa.table({"v": np.ascontiguousarray(records)})
    return pa.table({n: np.ascontiguousarray(records[n]) for n in records.dtype.names})


def _from_table(t: pa.Table, dtype: np.dtype) -> np.ndarray:
    out = np.zeros(t.num_rows, dtype=dtype)
    if dtype.names is None:
        if t.num_rows:
            out[:] = t.column("v").to_numpy()
        return out
    for n in dtype.names:
        if t.num_rows:
            out[n] = t.column(n).to_numpy()
    return out


def work_dir(spill_files: Sequence[str], stage: str, configured: str | None) -> Work:
    """Where intermediate files go: `configured` (the recipe's work_dir, else the runner's fresh
    `work_url`), else `<spill dir>/_<stage>_work` (local or URL).

    On a multi-node cluster it must be storage every worker reaches (as the spill files are): an
    object store URL works; no shared POSIX directory is needed.
    """
    if configured:
        return Work(configured)
    first = spill_files[0]
    if "://" in first:
        return Work(first.rsplit("/", 1)[0] + f"/_{stage}_work")
    return Work(os.path.join(os.path.dirname(os.path.abspath(first)), f"_{stage}_work"))


def open_spill(path: str):
    """(filesystem, path) of a spill file given as a local path or URL. Spill files are written by
    workers while this process may hold a cached listing of their folder (s3fs answers `open` from
    it and would not find a newer file), so the listing cache of the path is dropped first."""
    import fsspec

    fs, p = fsspec.core.url_to_fs(path)
    fs.invalidate_cache(p)
    return fs, p


OVERLAY_BASE = b"refinery.base"  # an overlay's spill file
OVERLAY_TEXT = b"refinery.text"  # JSON list: files whose `text` (same rows) was rewritten, the latest first


def read_columns(path: str, columns: Sequence[str]) -> pa.Table:
    """The named columns of a spill file; a column the file lacks comes back as nulls.

    `path` may be an overlay of a spill (a later member of a barrier group after a per-document
    stage, pipeline/engine/worker.py `ShardWorker.wave`): same rows, its keys; its schema names
    the spill beneath (`refinery.base`), which gives the columns the overlay lacks, and the
    decision files of the stages that rewrote `text` (`refinery.text`): a row's text is the latest
    rewrite, else the spilled one."""
    fs, p = open_spill(path)
    with fs.open(p, "rb") as fh:
        f = pq.ParquetFile(fh)
        present = [c for c in columns if c in f.schema_arrow.names]
        meta = f.schema_arrow.metadata or {}
        t = f.read(columns=present)
    base = meta.get(OVERLAY_BASE)
    if base:
        below = [c for c in columns if c not in present]
        if below:
            b = read_columns(base.decode(), below)
            for c in below:
                col = b.column(c)
                if c == "text":
                    for layer in reversed(json.loads(meta.get(OVERLAY_TEXT, b"[]"))):  # the latest on top
                        col = pc.coalesce(read_columns(layer, ["text"]).column(0), col)
                t = t.append_column(c, col)
            present = list(columns)
    for c in columns:
        if c not in present:
            t = t.append_column(c, pa.nulls(t.num_rows))
    return t.select(list(columns))


def spill_options(schema: pa.Schema) -> dict:
    """Parquet writer options of a spill file (the runner's spill writer and `run_in_process`'s):
    the `text` column without dictionary encoding (distinct values: a page's worth of texts would
    sit in one dictionary page, decoded whole before the first row) and without statistics (its
    min and max are two more copies of its biggest texts, held while the row group is written;
    nothing filters on text), and one value per write batch, so that a data page is cut after any
    text that fills it (by default after 1,024 values: a batch's big texts in one page, buffered and
    compressed whole). Measured on three 30 MB texts: ~0.9 bytes of RSS per text byte to write
    them, against 4.3 with the defaults (benchmarks/dedup_big_docs.py). Other columns keep both
    (nested ones, the band keys, get neither: random hashes gain nothing from them)."""
    rest = [f.name for f in schema if f.name != "text"]
    return {"use_dictionary": rest, "write_statistics": rest, "write_batch_size": 1}


GROUP_TEXT_BYTES = 4 << 20  # text bytes per row group of a spill file `run_in_process` writes


def text_groups(text: pa.ChunkedArray | pa.Array, limit: int = GROUP_TEXT_BYTES) -> list[int]:
    """Row offsets cutting a text column into row groups of about `limit` bytes (a bigger text
    alone): Parquet encodes, compresses and decodes a row group's page whole, at 3-5x its size."""
    n = np.asarray(pc.fill_null(pc.binary_length(text), 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    cuts, acc, first = [], 0, 0
    for r, x in enumerate(n.tolist()):
        if r > first and (acc + x > limit or x > limit):
            cuts.append(r)
            acc, first = 0, r
        acc += x
        if x > limit and r + 1 < n.size:  # a text over the limit: a group of its own
            cuts.append(r + 1)
            acc, first = 0, r + 1
    return cuts


def iter_texts(path: str, rows: Sequence[int], batch_rows: int = 64):
    """(row, text as str) for the given ascending rows of a spill file, streaming its `text` column
    one row group at a time (only those holding a wanted row) in batches of `batch_rows` rows
    with buffered reads, so memory follows a row group's page and the biggest text, not the
    column: decoding a column of a few huge documents at once takes 3-5x its size at peak. An
    overlay (rewritten texts, `read_columns`) is read whole."""
    rows = list(rows)
    if not rows:
        return
    fs, p = open_spill(path)
    local = _is_local(fs)  # a local path is read by Arrow itself; a Python file object copies every read
    with (open(os.devnull, "rb") if local else fs.open(p, "rb")) as fh:
        f = pq.ParquetFile(p if local else fh, buffer_size=1 << 20)
        names = f.schema_arrow.names
        overlay = (f.schema_arrow.metadata or {}).get(OVERLAY_BASE)
        if not overlay and "text" in names:
            k, start = 0, 0
            for g in range(f.metadata.num_row_groups):  # a batch never spans row groups; skip those without rows
                end = start + f.metadata.row_group(g).num_rows
                if k < len(rows) and rows[k] < end:
                    at = start
                    for batch in f.iter_batches(batch_size=batch_rows, row_groups=[g], columns=["text"]):
                        col, at_end = batch.column(0), at + batch.num_rows
                        while k < len(rows) and rows[k] < at_end:
                            yield rows[k], col[rows[k] - at].as_py()
                            k += 1
                        del col, batch
                        at = at_end
                if k == len(rows):
                    return
                start = end
            return
    col = read_columns(path, ["text"]).column("text")
    for r in rows:
        yield r, col[r].as_py()


def release_memory() -> None:
    """Give freed memory back to the operating system: Arrow's pool (mimalloc/jemalloc keep freed
    pages for reuse by Arrow only) and glibc's heap (numpy's arrays below its dynamic mmap
    threshold). Called after a task that held big documents' data, so that the next task's numpy
    arrays and Arrow buffers do not stack on memory the other allocator keeps."""
    pa.default_memory_pool().release_unused()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def require_column(path: str, column: str) -> None:
    """Refuse a non-empty spill file without the column `annotate` added (silent no-dedup otherwise)."""
    fs, p = open_spill(path)
    with fs.open(p, "rb") as fh:
        meta = pq.read_metadata(fh)
    if meta.num_rows and column not in meta.schema.to_arrow_schema().names:
        raise ValueError(
            f"{path}: spill file has no {column!r} column; spill files must keep every column annotate "
            "added (the stage's signal_fields() and spill_fields())"
        )


def live_rows(dropped_before: Sequence[str] | None, n: int, path: str = "") -> np.ndarray:
    """Which rows of a spill file are live for a later member of a barrier group: not dropped by
    any earlier member's decision file (same rows, same order as the spill file)."""
    live = np.ones(n, dtype=bool)
    for f in dropped_before or ():
        reasons = read_columns(f, ["drop_reason"]).column(0)
        if len(reasons) != n:
            raise ValueError(f"{f}: {len(reasons)} decisions for the {n} rows of the spill file {path}")
        live &= ~np.asarray(reasons.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return live


def before(stage, i: int) -> list[str]:
    """Spill file i's decision files of the earlier members of the stage's barrier group."""
    d = getattr(stage, "dropped_before", None)
    return list(d[i]) if d else []


def keys_path(stage, i: int, path: str) -> str:
    """Where spill file i's own keys of the stage are: its key file when the runner computed them
    after the earlier members of a barrier group resolved (same rows as the spill), else the spill."""
    k = getattr(stage, "key_files", None)
    return k[i] if k else path


def num_rows(path: str) -> int:
    fs, p = open_spill(path)
    with fs.open(p, "rb") as fh:
        return pq.read_metadata(fh).num_rows


# -- keys ---------------------------------------------------------------------------------------
def hex128(col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hi, lo, valid) uint64 halves of 32-hex-digit strings; invalid or null entries: valid=False."""
    col = flat(col).cast(pa.string())
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


def mix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: spreads document numbers (not uniform) over the key space."""
    h = x.astype(np.uint64)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def node_partition(doc: np.ndarray, partitions: int) -> np.ndarray:
    return hash_partition(mix64(doc), partitions)


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


# -- decisions ----------------------------------------------------------------------------------
def write_decisions(
    spill_path: str,
    work: "Work",
    name: str,
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
    ids = read_columns(spill_path, ["id"]).column("id").combine_chunks()
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
    work.write_table(f"{work.root}/decisions/{name}", pa.table(cols))
    return work.out_path(f"decisions/{name}")
