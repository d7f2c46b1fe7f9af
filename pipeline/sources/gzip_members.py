"""Gzip members one by one, streamed, so one corrupt member costs one record, not the rest of the file.

Common Crawl writes every WARC record as its own gzip member. Reading member by member gives each
record's compressed offset (what Common Crawl's index stores) and lets a reader resume after a
corrupt member at the next gzip header instead of stopping. Members are inflated piece by piece
(at most `out` bytes at a time), so a small member that inflates to gigabytes (a bomb, or a whole
WARC gzipped as one stream) never sits in memory whole: the caller decides what to keep.

Inflation is zlib-ng's (`zlib-ng`, the same API and the same bytes as zlib) when it is installed:
it inflates Common Crawl's members in about half zlib's CPU time (0.12 against 0.25 CPU-s for the
117 MB of one 50 MB benchmark shard, BENCHMARKS.md, "Where refinery's CPU goes at 50 MB"); zlib otherwise.
"""
from __future__ import annotations

import io
import zlib
from typing import BinaryIO, Iterator

try:
    from zlib_ng import zlib_ng as _inflate
except ImportError:  # pragma: no cover - zlib-ng is a dependency; zlib gives the same bytes
    _inflate = zlib

# What a member that does not decompress raises; zlib-ng's error (not a subclass of zlib's) is
# handed on as zlib.error with the same message, so callers see what zlib would have raised.
_INFLATE_ERRORS: tuple[type[Exception], ...] = tuple({zlib.error, _inflate.error})

GZIP_MAGIC = b"\x1f\x8b\x08"
END = None  # the piece that closes a member


def member_pieces(fh: BinaryIO, chunk: int = 1 << 20, out: int = 1 << 20, start: int = 0
                  ) -> Iterator[tuple[int, bytes | Exception | None]]:
    """(compressed offset of the member, piece): decompressed bytes (at most `out` per piece), then
    END when the member closes; or the error where a member does not decompress, after which
    reading resumes at the next gzip header. `start`: the file offset `fh` is positioned at."""
    pos = start  # file offset of data[0]
    data = b""
    while True:
        if not data:
            data = fh.read(chunk)
            if not data:
                return
        if data[:1] == b"\0":  # zeros padding the file (tape blocks), as gzip itself skips them
            kept = data.lstrip(b"\0")
            pos += len(data) - len(kept)
            data = kept
            continue
        start = pos
        d = _inflate.decompressobj(16 + zlib.MAX_WBITS)
        err: Exception | None = None
        while True:
            try:
                piece = d.decompress(data, out)
            except _INFLATE_ERRORS as exc:
                err = exc if isinstance(exc, zlib.error) else zlib.error(*exc.args)
                break
            # At the end of the member, unused_data holds every byte after it, and unconsumed_tail
            # may hold the same bytes again (when the output limit was reached in the same call):
            # counting both put every later member's offset too low.
            pos += len(data) - (len(d.unused_data) if d.eof else len(d.unconsumed_tail))
            if piece:
                yield start, piece
            if d.eof:
                data = d.unused_data
                yield start, END
                break
            data = d.unconsumed_tail or fh.read(chunk)
            if not data:
                err = EOFError("truncated gzip member")
                break
        if err is None:
            continue
        yield start, err
        # Resume at the next gzip header after the member's start (or after the failing bytes).
        skip = 1 if pos == start else 0
        while True:
            nxt = data.find(GZIP_MAGIC, skip)
            if nxt >= 0:
                pos += nxt
                data = data[nxt:]
                break
            keep = data[-(len(GZIP_MAGIC) - 1):] if len(data) >= len(GZIP_MAGIC) else data
            pos += len(data) - len(keep)
            more = fh.read(chunk)
            if not more:
                return
            data, skip = keep + more, 0


def gzip_members(fh: BinaryIO, chunk: int = 1 << 20) -> Iterator[tuple[int, bytes | Exception]]:
    """(compressed offset, decompressed bytes) per member, whole; a member that does not decompress
    yields (offset, the error). For small members only: `member_pieces` streams."""
    parts: list[bytes] = []
    for off, piece in member_pieces(fh, chunk):
        if isinstance(piece, Exception):
            parts = []
            yield off, piece
        elif piece is END:
            yield off, b"".join(parts)
            parts = []
        else:
            parts.append(piece)


class CorruptMember(Exception):
    """Raised by `MemberStream` where a member does not decompress; reading on resumes at the next."""

    def __init__(self, offset: int, error: Exception):
        super().__init__(f"gzip member at byte {offset} does not decompress: {type(error).__name__}: {error}")
        self.offset = offset


class MemberStream(io.RawIOBase):
    """The decompressed bytes of every member as one stream, for line readers. Where a member does
    not decompress, `readinto` raises CorruptMember once (a BufferedReader above holds only the
    partial line before it then) and the next read goes on at the next member: a corrupt member in
    a concatenated .jsonl.gz costs its own lines, not every line after it."""

    def __init__(self, fh: BinaryIO):
        self._fh = fh
        self._pieces = member_pieces(fh)
        self._left = memoryview(b"")

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()

    def readinto(self, b) -> int:
        while not self._left:
            nxt = next(self._pieces, None)
            if nxt is None:
                return 0
            off, piece = nxt
            if isinstance(piece, Exception):
                raise CorruptMember(off, piece)
            if piece is not END:
                self._left = memoryview(piece)
        n = min(len(b), len(self._left))
        b[:n] = self._left[:n]
        self._left = self._left[n:]
        return n
