"""WARC records cut out of a byte stream with their boundaries checked, for every layout.

FastWARC parses a record well but cannot be trusted with the boundaries of a hostile file
(measured with FastWARC 2.0.1): in a WARC gzipped as one stream (or zstd) every record has the
same `stream_pos`; a wrong Content-Length stops the iteration ("Invalid WARC header") or, in
quirks mode, swallows the next record into the document; a corrupt gzip member ends the file.
So the records are cut here: each record's header is read, its Content-Length checked against
the record boundary (the block must be followed by CRLF CRLF and then the next `WARC/` header or
the end), and a record that fails is reported on its own while reading resumes at the next
header. Only then is FastWARC handed the record's bytes to parse.

Each record's offset is its true location: the compressed offset of its gzip member when it is
the first record of a member (Common Crawl's layout, what its index stores), otherwise the member
offset plus the record's offset in the member's decompressed bytes (one gzip stream, zstd,
uncompressed: the byte offset in the decompressed stream). Records larger than `max_block` are
never held: they are skipped in pieces and reported as too large.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from pipeline.sources.gzip_members import END, member_pieces

MAX_HEADER = 64 << 10
_NEXT = b"\nWARC/"


@dataclass
class Cut:
    """One record: `data` is the whole record (header and block) when it is whole and wanted;
    `error` says why it is not (a bad boundary, a corrupt member); `too_large` when skipped."""

    offset: int
    headers: dict[str, str] = field(default_factory=dict)
    data: bytes | None = None
    error: str | None = None
    too_large: int = 0


class _Bytes:
    """A window over a stream of pieces, with the stream position of its first byte."""

    def __init__(self, pieces: Iterator[bytes]):
        self.pieces = pieces
        self.buf = bytearray()
        self.pos = 0
        self.eof = False

    def fill(self, n: int) -> bool:
        while len(self.buf) < n and not self.eof:
            piece = next(self.pieces, None)
            if piece is None:
                self.eof = True
            else:
                self.buf += piece
        return len(self.buf) >= n

    def drop(self, n: int) -> None:
        del self.buf[:n]
        self.pos += n

    def skip(self, n: int) -> int:
        """Discard n bytes, streaming; returns how many there were."""
        done = 0
        while done < n:
            if not self.buf and not self.fill(1):
                break
            k = min(n - done, len(self.buf))
            self.drop(k)
            done += k
        return done

    def find(self, needle: bytes, start: int, limit: int) -> int:
        """Index of `needle` at or after `start`, filling up to `limit` bytes; -1 if absent."""
        while True:
            i = self.buf.find(needle, start, limit)
            if i >= 0 or len(self.buf) >= limit or self.eof:
                return i
            self.fill(min(limit, len(self.buf) + (1 << 16)))

    def resync(self) -> None:
        """Drop bytes up to the next line that starts a WARC header (or the end)."""
        while True:
            i = self.buf.find(_NEXT)
            if i >= 0:
                self.drop(i + 1)
                return
            if self.eof and not self.fill(len(self.buf) + 1):
                self.drop(len(self.buf))
                return
            keep = len(_NEXT) - 1
            if len(self.buf) > keep:
                self.drop(len(self.buf) - keep)
            self.fill(len(self.buf) + (1 << 16))


def _parse_header(head: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in head.decode("utf-8", "replace").split("\r\n")[1:]:
        name, sep, value = line.partition(":")
        if sep:
            out.setdefault(name.strip().lower(), value.strip())
    return out


def cut_records(pieces: Iterator[bytes], max_block: int, wanted: frozenset[str]) -> Iterator[Cut]:
    """Every record of one decompressed stream, offsets relative to its start. Records whose
    WARC-Type is not in `wanted` are skipped unless their boundary is broken."""
    b = _Bytes(pieces)
    while True:
        while b.fill(1) and b.buf[:1] in (b"\r", b"\n"):  # blank lines between records
            b.drop(1)
        if not b.buf:
            return
        start = b.pos
        end = b.find(b"\r\n\r\n", 0, MAX_HEADER)
        if not b.buf.startswith(b"WARC/") or end < 0:
            yield Cut(start, error="no WARC record header here")
            b.drop(1)
            b.resync()
            continue
        head = bytes(b.buf[:end + 4])
        headers = _parse_header(head[:end])
        b.drop(end + 4)
        try:
            length = int(headers.get("content-length", ""))
            if length < 0:
                raise ValueError
        except ValueError:
            yield Cut(start, headers, error=f"bad Content-Length {headers.get('content-length')!r}")
            b.resync()
            continue
        want = headers.get("warc-type", "").lower() in wanted
        if length > max_block or not want:
            got = b.skip(length)
            ok = got == length and _boundary(b)
            if not ok:
                yield Cut(start, headers, error=f"Content-Length {length} does not end at a record boundary")
                b.resync()
            elif want:
                yield Cut(start, headers, too_large=length)
            continue
        if not _boundary(b, length):
            yield Cut(start, headers, error=f"Content-Length {length} does not end at a record boundary")
            b.resync()
            continue
        data = head + bytes(b.buf[:length]) + b"\r\n\r\n"
        b.drop(length)
        _boundary(b)  # consumes the CRLF CRLF
        yield Cut(start, headers, data=data)


def _boundary(b: _Bytes, at: int = 0) -> bool:
    """True if the block ending at `at` is followed by CRLF CRLF and then a header or the end;
    with at == 0 the CRLF CRLF is consumed."""
    b.fill(at + 4 + 5)
    if bytes(b.buf[at:at + 4]) != b"\r\n\r\n":
        return False
    rest = bytes(b.buf[at + 4:at + 9])
    ok = rest == b"" or rest.startswith(b"WARC/") or rest.startswith(b"\r\n") or rest.startswith(b"\n")
    if ok and at == 0:
        b.drop(4)
    return ok


def warc_cuts(raw: BinaryIO, gzipped: bool, plain: BinaryIO | None, max_block: int,
              wanted: frozenset[str], span: tuple[int, int] | None = None) -> Iterator[Cut]:
    """Records of a whole file with file-level offsets, each offset used once. `raw` is the file's
    bytes (gzip members are cut here); `plain` a decompressed stream for other layouts. With
    `span` (start, end), a split point and the next (pipeline/sources/warc_split.py): the records
    (gzip: members) that start in [start, end) of a gzip-member or uncompressed file."""
    used: set[int] = set()
    start, end = span if span is not None else (0, None)
    if start:
        raw.seek(start)

    def unique(off: int) -> int:
        while off in used:  # only a hand-made file can make two records meet here
            off += 1
        used.add(off)
        return off

    if not gzipped:
        src = plain if plain is not None else raw
        for cut in cut_records(iter(lambda: src.read(1 << 20), b""), max_block, wanted):
            if end is not None and start + cut.offset >= end:
                return
            cut.offset = unique(start + cut.offset)
            yield cut
        return
    for member_off, pieces in _members(raw, start):
        if end is not None and member_off >= end:
            return
        if isinstance(pieces, Exception):
            yield Cut(unique(member_off), error=f"{type(pieces).__name__}: {pieces}")
            continue
        failed = False
        for cut in cut_records(pieces, max_block, wanted):
            cut.offset = unique(member_off + cut.offset)
            failed = cut.error is not None
            yield cut
        for _ in pieces:  # whatever the cutter left of the member
            pass
        if pieces.error is not None and not failed:  # else that record's row already says it
            yield Cut(unique(member_off), error=f"{type(pieces.error).__name__}: {pieces.error}")


class _Member:
    """The pieces of one gzip member, handed out while the member lasts."""

    def __init__(self, it, first):
        self.it, self.first, self.error, self.done = it, first, None, False

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        if self.first is not None:
            piece, self.first = self.first, None
            return piece
        if self.done:
            raise StopIteration
        try:
            _, piece = next(self.it)
        except StopIteration:
            self.done = True
            raise
        if piece is END:
            self.done = True
            raise StopIteration
        if isinstance(piece, Exception):
            self.error, self.done = piece, True
            raise StopIteration
        return piece


def _members(raw: BinaryIO, start: int = 0) -> Iterator[tuple[int, _Member | Exception]]:
    it = member_pieces(raw, start=start)
    for off, piece in it:
        if isinstance(piece, Exception):
            yield off, piece
        elif piece is END:  # an empty member
            continue
        else:
            yield off, _Member(it, piece)
