"""Exchange files: one file per producer holding all its partitions, read a partition at a time.

A producer task of a global dedup step splits what it writes by partition (a hash range or an input
file); the consumer of partition b reads partition b from every producer. One file per producer
and partition costs a PUT each (M producers x R partitions: 166 million at 4.3 TB on 10 nodes,
several times an object store's per-prefix PUT rate), so a producer writes one file holding its
partitions one after the other, with an index at its end; a consumer range-reads its partition's
entry in the index and then its partition's bytes, and nothing else.

Layout:

    [part 0][part 1]...[part R-1]   each a whole Parquet (or Arrow IPC) file; an empty partition: no bytes
    entry R-1, ..., entry 1, entry 0   ENTRY (16 B): length u64, crc32 u32, rows u32 (+ count u64 for IPC)
    trailer (28 B): data length u64, R u32, format u8, entry size u8, 0 u16, crc32 of those 16 B, magic b"RFXCHG01"

The entries are stored last partition first, so that partition b's entry sits 28 + E x (b + 1)
bytes before the end whatever R is: the consumer asks for that suffix of the file (one request,
no size lookup: an HTTP suffix range on an object store), which holds entries 0..b (the offset of
b is the sum of the lengths before it), then for the partition's byte range (a second request,
none when the partition is empty). Each part is checked against its crc32, so a truncated or
corrupt file is an error naming the file, never wrong rows.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

MAGIC = b"RFXCHG01"
TRAILER = struct.Struct("<QIBBHI8s")  # data length, partitions, format, entry size, 0, crc32 of the 16 bytes before, magic
_FIELDS = struct.Struct("<QIBBH")
PARQUET, ARROW = 1, 2
ENTRY = {PARQUET: struct.Struct("<QII"), ARROW: struct.Struct("<QIIQ")}  # length, crc32, rows (, count)
FORMAT_NAME = {PARQUET: "Parquet", ARROW: "Arrow IPC"}
SUFFIX = ".exchange"


class ExchangeError(ValueError):
    """An exchange file that is not one, is truncated, or does not hold what its index says."""


@dataclass(frozen=True)
class Part:
    """Where one partition of one exchange file is: bytes [start, end), its rows, its crc32 and
    (Arrow IPC files) the count its writer gave."""

    path: str
    b: int
    fmt: int
    start: int
    end: int
    rows: int
    crc: int
    count: int = 0

    @property
    def empty(self) -> bool:
        return self.end == self.start


class _Counted:
    """A write-only file object over the exchange file's stream: the bytes of one part, its length
    (`tell`, which Parquet's writer takes for its offsets: relative to the part, so each part is a
    whole file of its own) and crc32. `close` does not close the stream."""

    def __init__(self, fh):
        self.fh, self.n, self.crc, self.closed = fh, 0, 0, False

    def write(self, data) -> int:
        self.fh.write(data)
        m = memoryview(data).nbytes
        self.crc = zlib.crc32(data, self.crc)
        self.n += m
        return m

    def tell(self) -> int:
        return self.n

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False


class Writer:
    """Writes one exchange file: `parquet(b, table)` or `arrow(b, batches)` for ascending partitions
    (one format per file); partitions not written are empty. The index goes at the end on close."""

    def __init__(self, fs, path: str, partitions: int, fmt: int = PARQUET):
        if partitions < 1 or partitions >= 1 << 32:
            raise ValueError(f"{path}: {partitions} partitions (1 to 2^32 - 1)")
        self.path, self.partitions, self.fmt = path, partitions, fmt
        self.entry = ENTRY[fmt]
        self.entries: list[tuple] = [(0, 0, 0) + ((0,) if fmt == ARROW else ())] * partitions
        self.next = 0  # partitions below this one are written (or empty)
        self.fh = fs.open(path, "wb")

    def _part(self, b: int) -> _Counted:
        if not self.next <= b < self.partitions:
            raise ValueError(f"{self.path}: partition {b} written out of order or out of range "
                             f"(next {self.next}, {self.partitions} partitions)")
        self.next = b + 1
        return _Counted(self.fh)

    def _book(self, b: int, out: _Counted, rows: int, count: int = 0) -> None:
        if rows >= 1 << 32:
            raise ValueError(f"{self.path}: partition {b} has {rows} rows, over an exchange file's 2^32 - 1")
        self.entries[b] = (out.n, out.crc & 0xFFFFFFFF, rows) + ((count,) if self.fmt == ARROW else ())

    def parquet(self, b: int, table: pa.Table, **options) -> None:
        """Partition b as a Parquet file (zstd; `options`: writer options). An empty table: nothing."""
        if self.fmt != PARQUET:
            raise ValueError(f"{self.path}: an {FORMAT_NAME[self.fmt]} exchange file")
        out = self._part(b)
        if table.num_rows:
            pq.write_table(table, out, compression="zstd", **options)
            self._book(b, out, table.num_rows)

    def arrow(self, b: int, batches: Iterable[pa.RecordBatch], count: int = 0) -> None:
        """Partition b as an uncompressed Arrow IPC file of `batches` (one schema), written as they
        come; `count`: an integer the reader gets from the index without reading the part. No
        rows: nothing."""
        if self.fmt != ARROW:
            raise ValueError(f"{self.path}: a {FORMAT_NAME[self.fmt]} exchange file")
        out = self._part(b)
        rows, w = 0, None
        for batch in batches:
            if not batch.num_rows:
                continue
            if w is None:
                w = pa.ipc.new_file(out, batch.schema)
            w.write_batch(batch)
            rows += batch.num_rows
            del batch
        if w is not None:
            w.close()
            self._book(b, out, rows, count)

    def close(self) -> None:
        data = sum(e[0] for e in self.entries)
        self.fh.write(b"".join(self.entry.pack(*e) for e in reversed(self.entries)))
        fields = (data, self.partitions, self.fmt, self.entry.size, 0)
        self.fh.write(TRAILER.pack(*fields, zlib.crc32(_FIELDS.pack(*fields)), MAGIC))
        self.fh.close()

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:  # an object store: nothing stored; a file elsewhere has no index, so readers refuse it
            for end in (self.fh.discard, self.fh.close):
                try:
                    end()
                except Exception:  # noqa: BLE001 - the exception on its way out is the one to see
                    pass


def locate(fs, path: str, b: int, fmt: int) -> Part:
    """Partition b's place in the exchange file `path`: one read of the file's last
    28 + E x (b + 1) bytes."""
    entry = ENTRY[fmt]
    want = TRAILER.size + entry.size * (b + 1)
    try:
        tail = fs.cat_file(path, start=-want)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise ExchangeError(f"{path}: cannot read the exchange file's index ({e})") from e
    if len(tail) < TRAILER.size or tail[-8:] != MAGIC:
        raise ExchangeError(f"{path}: not an exchange file or truncated (no index at its end; "
                            f"{len(tail)} bytes read of its last {want})")
    data, parts, f, esize, zero, crc, _ = TRAILER.unpack(tail[-TRAILER.size:])
    if zlib.crc32(_FIELDS.pack(data, parts, f, esize, zero)) != crc:
        raise ExchangeError(f"{path}: corrupt (the index's trailer fails its crc32)")
    if f != fmt or esize != entry.size:
        raise ExchangeError(f"{path}: a {FORMAT_NAME.get(f, f'format {f}')} exchange file with {esize}-byte "
                            f"entries, read as {FORMAT_NAME[fmt]} ({entry.size}-byte entries): corrupt")
    if not 0 <= b < parts:
        raise ExchangeError(f"{path}: partition {b} asked, the file holds {parts}")
    if len(tail) < want:
        raise ExchangeError(f"{path}: truncated ({len(tail)} bytes, its index alone takes "
                            f"{TRAILER.size + entry.size * parts})")
    end = len(tail) - TRAILER.size
    start = 0
    for k in range(b + 1):
        e = entry.unpack(tail[end - entry.size * (k + 1) : end - entry.size * k])
        if k < b:
            start += e[0]
    length, crc, rows = e[:3]
    if start + length > data or (length == 0) != (rows == 0):
        raise ExchangeError(f"{path}: corrupt index (partition {b}: bytes {start}+{length} of {data}, {rows} rows)")
    return Part(path, b, fmt, start, start + length, rows, crc, e[3] if fmt == ARROW else 0)


def fetch(fs, part: Part) -> bytes:
    """The bytes of a partition: one ranged read, checked against its length and crc32."""
    if part.empty:
        return b""
    try:
        got = fs.cat_file(part.path, start=part.start, end=part.end)
    except OSError as e:
        raise ExchangeError(f"{part.path}: cannot read partition {part.b} (bytes {part.start}-{part.end}): {e}") from e
    if len(got) != part.end - part.start:
        raise ExchangeError(f"{part.path}: truncated (partition {part.b}: {len(got)} of {part.end - part.start} bytes)")
    if zlib.crc32(got) & 0xFFFFFFFF != part.crc:
        raise ExchangeError(f"{part.path}: corrupt (partition {part.b}: crc32 mismatch)")
    return got


def read_table(fs, part: Part, columns=None) -> pa.Table | None:
    """A Parquet partition as a table; None when empty (the caller knows its schema)."""
    if part.empty:
        return None
    blob = fetch(fs, part)
    try:
        t = pq.ParquetFile(pa.BufferReader(blob)).read(columns=columns)
    except (pa.ArrowException, OSError) as e:
        raise ExchangeError(f"{part.path}: partition {part.b} is not readable Parquet ({e})") from e
    if t.num_rows != part.rows:
        raise ExchangeError(f"{part.path}: partition {part.b} holds {t.num_rows} rows, its index says {part.rows}")
    return t


def iter_batches(fs, part: Part):
    """An Arrow IPC partition's record batches, one at a time (none when empty)."""
    if part.empty:
        return
    blob = pa.py_buffer(fetch(fs, part))
    try:
        reader = pa.ipc.open_file(blob)
        n = reader.num_record_batches
    except (pa.ArrowException, OSError) as e:
        raise ExchangeError(f"{part.path}: partition {part.b} is not a readable Arrow IPC file ({e})") from e
    del blob
    for k in range(n):
        try:
            batch = reader.get_batch(k)
        except (pa.ArrowException, OSError) as e:
            raise ExchangeError(f"{part.path}: partition {part.b} is not a readable Arrow IPC file ({e})") from e
        yield batch
