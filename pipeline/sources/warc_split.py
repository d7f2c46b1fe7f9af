"""Split points of a large WARC file: byte offsets where a record starts, so one file is read as
several parts (by several workers) and every record by exactly one of them.

A split point is found the way Hadoop-style readers of Common Crawl find one: from a nominal
offset, scan forward to the next place a record can start and check that a record really starts
there. Two layouts can be split:

  gzip members   (Common Crawl's `.warc.gz`: every record its own gzip member) a candidate is a
                 gzip header (1f 8b 08); it counts only when the member there inflates, whole, to
                 bytes that begin with `WARC/`. Deflate output is not searchable for these bytes, so a
                 false candidate inside another member's compressed data fails the check (a random
                 position would have to be a valid gzip header, a valid deflate stream, a `WARC/`
                 header and a matching CRC-32).
  uncompressed   a candidate is a `WARC/` line right after the CRLF CRLF that ends a record; it counts
                 only when the record there is whole as the reader cuts it (pipeline/sources/warc_records.py: a header, a
                 Content-Length that ends at CRLF CRLF and then another header or the end).

A part then reads from its start to the first record (or member) that starts at or after its end:
the reader's state at a record boundary is only the byte position, so a part started at a split
point reads exactly the records a reader of the whole file reads there, with the same offsets,
rejects and errors (garbage or a broken member before the split point belongs to the part before).
The one case this cannot see is a file crafted so that a record's payload holds a whole record
(uncompressed) or a stored deflate block holds a whole member exactly at a split point; the
embedded record is then read once more, as its own document.

A gzip file whose first member does not end within FIRST_MEMBER_BYTES (a WARC gzipped as one
stream) and zstd/bz2/xz files are not split: they have no boundaries to seek to.
"""
from __future__ import annotations

import zlib
from typing import BinaryIO, Callable

from pipeline.sources.gzip_members import END, GZIP_MAGIC, member_pieces
from pipeline.sources.warc_records import cut_records

FIRST_MEMBER_BYTES = 16 << 20  # a gzip member longer than this at the start: one stream, not per record
VERIFY_OUTPUT = 64 << 20  # a candidate member that inflates this far without error counts as whole
_SCAN = 1 << 20
# Uncompressed, a split point follows the CRLF CRLF that ends a record: a `WARC/` line after
# anything else (garbage, a line of a broken header) may be read by the reader as the inside of a
# header that starts earlier, and the record would then be read by two parts.
_AFTER_RECORD = b"\r\n\r\nWARC/"

Opener = Callable[[], BinaryIO]


def splittable(url: str) -> str | None:
    """'gzip' or 'plain' for a layout that can be split, None otherwise (by name, as the reader)."""
    low = url.lower()
    if low.endswith(".gz"):
        return "gzip"
    if low.endswith((".zst", ".zstd", ".bz2", ".xz")):
        return None
    return "plain"


def per_record_members(fh: BinaryIO) -> bool:
    """True when the file's first gzip member ends within FIRST_MEMBER_BYTES of compressed bytes."""
    fh.seek(0)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    read = 0
    while read < FIRST_MEMBER_BYTES:
        data = fh.read(_SCAN)
        if not data:
            return False
        read += len(data)
        try:
            while data and not d.eof:
                d.decompress(data, 1 << 20)
                data = d.unconsumed_tail
        except zlib.error:
            return False
        if d.eof:
            return True
    return False


def _member_starts_record(fh: BinaryIO, at: int) -> bool:
    fh.seek(at)
    first = True
    out = 0
    for off, piece in member_pieces(fh, chunk=1 << 16, start=at):
        if off != at or isinstance(piece, Exception):
            return False
        if piece is END:
            return not first
        if first:
            if not piece.lstrip(b"\r\n").startswith(b"WARC/"):
                return False
            first = False
        out += len(piece)
        if out >= VERIFY_OUTPUT:
            return True
    return False


class _Every(frozenset):
    """Every WARC-Type is wanted: the cutter then reports the first record, whole or not."""

    def __contains__(self, item: object) -> bool:
        return True


def _record_starts(fh: BinaryIO, at: int) -> bool:
    fh.seek(at)
    # max_block 0: the block is skipped (streamed), not held, and its boundary still checked
    cut = next(cut_records(iter(lambda: fh.read(1 << 16), b""), 0, _Every()), None)
    return cut is not None and cut.offset == 0 and cut.error is None


def next_boundary(fh: BinaryIO, at: int, size: int, layout: str) -> int:
    """The first offset >= `at` where a record (gzip: its member) verifiably starts; `size` if none."""
    needle = GZIP_MAGIC if layout == "gzip" else _AFTER_RECORD
    shift = 0 if layout == "gzip" else len(_AFTER_RECORD) - len(b"WARC/")  # a record starts after the CRLF CRLF
    pos = max(0, at - shift)
    check = _member_starts_record if layout == "gzip" else _record_starts
    if layout == "plain" and at == 0:
        return 0
    while pos < size:
        fh.seek(pos)
        data = fh.read(_SCAN + len(needle))
        if not data:
            break
        i = data.find(needle)
        while i >= 0:
            cand = pos + i + shift
            if cand >= at and check(fh, cand):
                return cand
            i = data.find(needle, i + 1)
        if len(data) < len(needle):
            break
        pos += len(data) - len(needle) + 1
    return size


def split_points(open_file: Opener, size: int, layout: str, target: int) -> list[int]:
    """Interior split points (sorted, distinct, 0 < p < size) of a file of `size` bytes cut into
    parts of about `target` bytes; [] when it is not worth or not possible to split."""
    if target <= 0 or size <= target:
        return []
    with open_file() as fh:
        if layout == "gzip" and not per_record_members(fh):
            return []
        points: list[int] = []
        n = -(-size // target)
        step = size / n
        for k in range(1, n):
            nominal = int(k * step)
            if points and points[-1] >= nominal:
                continue
            p = next_boundary(fh, nominal, size, layout)
            if p >= size:
                break
            if p > 0:
                points.append(p)
    return points


def spans(size: int, points: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each part for these split points."""
    edges = [0] + points + [size]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]
