"""Decompressed reading with a cap applied while inflating, so a bomb never sits in memory.

`Inflated` is a seekable, read-only stream of a file's decompressed bytes (gzip, zstd, bzip2, xz
or none, told by the magic bytes, not the name). Nothing is read ahead beyond one buffer: a tar
can be listed and its members read through it without the archive ever being held whole. Seeking
back re-opens and re-inflates (a tar read in offset order after listing rewinds once). A read past
`cap` decompressed bytes raises `OverCap`, so a file that inflates to gigabytes costs at most one
buffer of memory and the time to inflate `cap` bytes.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
from typing import BinaryIO, Callable

_CHUNK = 1 << 20


class OverCap(Exception):
    """More than `cap` bytes once inflated."""


def codec(head: bytes) -> str | None:
    """The compression told by a file's first bytes, or None for plain bytes."""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:4] == b"\x28\xb5\x2f\xfd":
        return "zstd"
    if head[:3] == b"BZh":
        return "bzip2"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    return None


class _Raw(io.RawIOBase):
    def __init__(self, open_raw: Callable[[], BinaryIO], cap: int | None, cap_plain: bool):
        self._open_raw, self._cap, self._cap_plain = open_raw, cap, cap_plain
        self.cap: int | None = None
        self._raw: BinaryIO | None = None
        self._fh: BinaryIO | None = None
        self._pos = 0
        self.codec: str | None = None
        self._reopen()

    def _reopen(self) -> None:
        self._close_handles()
        raw = self._open_raw()
        head = raw.read(8)
        raw.seek(0)
        self.codec = codec(head)
        self._raw = raw
        if self.codec == "gzip":
            self._fh = gzip.GzipFile(fileobj=raw, mode="rb")
        elif self.codec == "zstd":
            import zstandard

            self._fh = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        elif self.codec == "bzip2":
            self._fh = bz2.BZ2File(raw)
        elif self.codec == "xz":
            self._fh = lzma.LZMAFile(raw)
        else:
            self._fh = raw
        self.cap = self._cap if self.codec or self._cap_plain else None
        self._pos = 0

    def _close_handles(self) -> None:
        for h in (self._fh, self._raw):
            if h is not None:
                try:
                    h.close()
                except Exception:  # closing a half-read stream: nothing to keep
                    pass
        self._fh = self._raw = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def readinto(self, b) -> int:
        n = min(len(b), _CHUNK)  # the codecs' own read(n) holds about 3n at once
        if self.cap is not None and self._pos + n > self.cap:
            n = self.cap - self._pos
            if n <= 0:  # at the cap: one more byte means the stream is over it
                if self._fh.read(1):
                    raise OverCap(f"more than {self.cap} bytes once inflated")
                return 0
        data = self._fh.read(n)
        b[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self._pos
        elif whence == 2:
            raise io.UnsupportedOperation("seek from the end of an inflated stream")
        if offset < self._pos:
            if self.codec is None:
                self._fh.seek(offset)
                self._pos = offset
                return offset
            self._reopen()
        if self.codec is None and (self.cap is None or offset <= self.cap):
            self._fh.seek(offset)
            self._pos = offset
            return offset
        buf = bytearray(_CHUNK)
        while self._pos < offset:
            view = memoryview(buf)[: min(_CHUNK, offset - self._pos)]
            if not self.readinto(view):
                break
        return self._pos

    def close(self) -> None:
        self._close_handles()
        super().close()


class Inflated(io.BufferedReader):
    """The decompressed bytes of what `open_raw()` returns (called again to rewind). With
    `cap_plain=False` the cap binds compressed input only (a plain file's size is on disk)."""

    def __init__(self, open_raw: Callable[[], BinaryIO], cap: int | None = None, cap_plain: bool = True):
        self._inner = _Raw(open_raw, cap, cap_plain)
        super().__init__(self._inner, 1 << 16)

    @property
    def codec(self) -> str | None:
        return self._inner.codec
