"""An HTTP response body as the page's bytes: its Content-Encoding undone, with a cap.

Crawled bodies lie about their encoding. A server labels raw deflate (or plain HTML) `gzip`, sends
gzip with no Content-Encoding at all, or the crawler cut the body mid-stream. Browsers cope, and so
does this: the declared coding is tried first, then the others the bytes look like, then the bytes
as they are when they already look like markup. What was done is said (`how`) so the reader can
record it in the document's metadata; a body that decodes to more than `cap` bytes is a bomb and is
refused before it is held whole.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import brotli as _brotli

_CHUNK = 1 << 20


class BodyError(ValueError):
    """The body does not decode with any coding it could be in."""


class BodyTooLarge(ValueError):
    """The body decodes to more than the cap."""


@dataclass(frozen=True)
class Body:
    data: bytes
    how: str | None  # None: as declared; "truncated", "mislabelled:<coding>", "undeclared:<coding>", "identity"


# Members of one gzip body followed at most (a body of thousands of empty members is hostile).
MAX_MEMBERS = 1000


def _inflate(data: bytes, wbits: int, cap: int) -> tuple[bytes, bool]:
    """(inflated bytes, complete?) for one zlib stream format. gzip members are followed while the
    bytes after one start with gzip's magic; anything else after a complete member (a chunked
    terminator, padding) is ignored, as zlib and browsers do. Linear in the body."""
    out = bytearray()
    view = memoryview(data)
    pos = members = 0
    while True:
        d = zlib.decompressobj(wbits)
        while pos < len(data):
            chunk = view[pos:pos + _CHUNK]
            out += d.decompress(chunk, cap + 1 - len(out))
            while d.unconsumed_tail and len(out) <= cap:
                out += d.decompress(d.unconsumed_tail, cap + 1 - len(out))
            if len(out) > cap:
                raise BodyTooLarge(f"decodes to more than {cap} bytes")
            if d.eof:  # the member ends inside this chunk: what follows it is unused_data
                pos += len(chunk) - len(d.unused_data)
                break
            pos += len(chunk)
        if not d.eof:
            return bytes(out), False
        members += 1
        if wbits != 31 or data[pos:pos + 2] != b"\x1f\x8b" or members >= MAX_MEMBERS:
            return bytes(out), True


def _brotli_decode(data: bytes, cap: int) -> tuple[bytes, bool]:
    d = _brotli.Decompressor()
    out = bytearray()
    view = memoryview(data)
    for pos in range(0, len(data), _CHUNK):
        out += d.process(bytes(view[pos:pos + _CHUNK]), output_buffer_limit=cap + 1 - len(out))
        while not d.can_accept_more_data() and len(out) <= cap:  # output held back by the limit
            out += d.process(b"", output_buffer_limit=cap + 1 - len(out))
        if len(out) > cap:
            raise BodyTooLarge(f"decodes to more than {cap} bytes")
    return bytes(out), d.is_finished()


def _decode(data: bytes, coding: str, cap: int) -> tuple[bytes, bool]:
    if coding == "gzip":
        return _inflate(data, 31, cap)
    if coding == "deflate":  # RFC 9110 says zlib-wrapped; many servers send raw deflate
        try:
            return _inflate(data, 15, cap)
        except zlib.error:
            return _inflate(data, -15, cap)
    if coding == "br":
        try:
            return _brotli_decode(data, cap)
        except _brotli.error as exc:
            raise zlib.error(str(exc)) from None
    raise BodyError(f"unknown Content-Encoding {coding!r}")


def _looks_like(data: bytes) -> str | None:
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if len(data) > 1 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0:
        return "deflate"
    return None


def _markup(data: bytes) -> bool:
    head = data[:1024].lstrip().lower()
    return head.startswith((b"<", b"\xef\xbb\xbf<")) or b"<html" in head or b"<!doctype" in head


def decode_body(data: bytes, content_encoding: str | None, cap: int) -> Body:
    """The body's bytes with its Content-Encoding undone. Raises BodyError (no coding fits) or
    BodyTooLarge (over `cap` once decoded)."""
    declared = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    declared = ["gzip" if c == "x-gzip" else c for c in declared if c != "identity"]
    if not declared:
        guess = _looks_like(data)
        if guess is None or _markup(data):
            return Body(data, None)
        try:
            out, complete = _decode(data, guess, cap)
        except zlib.error:
            return Body(data, None)  # it only looked compressed
        return Body(out, f"undeclared:{guess}" if complete else "truncated")
    out, how = data, None
    for coding in reversed(declared):  # codings are listed in the order they were applied
        try:
            out, complete = _decode(out, coding, cap)
            if not complete:
                how = "truncated"
            continue
        except zlib.error as first:
            error = first
        for other in ("gzip", "deflate"):  # mislabelled: the bytes tell which
            if other != coding and _looks_like(out) == other:
                try:
                    out, complete = _decode(out, other, cap)
                    how = f"mislabelled:{other}" if complete else "truncated"
                    break
                except zlib.error:
                    pass
        else:
            try:  # raw deflate sent as gzip (a common server bug)
                decoded, complete = _inflate(out, -15, cap)
                if decoded and complete:
                    out, how = decoded, "mislabelled:deflate"
                    continue
            except zlib.error:
                pass
            if _markup(out):  # sent as it is, labelled compressed
                how = "identity"
                continue
            raise BodyError(f"Content-Encoding {coding}: {error}")
    return Body(out, how)
