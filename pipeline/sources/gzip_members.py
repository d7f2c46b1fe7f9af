"""Gzip members one by one, so one corrupt member costs one record, not the rest of the file.

Common Crawl writes every WARC record as its own gzip member. Reading member by member gives each
record's compressed offset (what Common Crawl's index stores) and lets a reader resume after a
corrupt member at the next gzip header instead of stopping.
"""
from __future__ import annotations

import zlib
from typing import BinaryIO, Iterator

GZIP_MAGIC = b"\x1f\x8b\x08"


def gzip_members(fh: BinaryIO, chunk: int = 1 << 20) -> Iterator[tuple[int, bytes | Exception]]:
    """(compressed offset, decompressed bytes) per member; a member that does not decompress
    yields (offset, the error) and reading resumes at the next gzip header after it."""
    buf = bytearray()
    base = 0  # file offset of buf[0]

    def fill() -> bool:
        data = fh.read(chunk)
        buf.extend(data)
        return bool(data)

    while buf or fill():
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        parts: list[bytes] = []
        fed = 0
        err: Exception | None = None
        while not d.eof:
            if fed == len(buf) and not fill():
                err = EOFError("truncated gzip member")
                break
            try:
                parts.append(d.decompress(bytes(buf[fed:])))
            except zlib.error as exc:
                err = exc
                break
            fed = len(buf)
        if err is None:
            used = fed - len(d.unused_data)
            yield base, b"".join(parts)
            del buf[:used]
            base += used
            continue
        yield base, err
        nxt = buf.find(GZIP_MAGIC, 1)
        while nxt < 0 and fill():
            nxt = buf.find(GZIP_MAGIC, 1)
        if nxt < 0:
            return
        del buf[:nxt]
        base += nxt
