"""Inflated: a seekable decompressed stream that stops at a cap while inflating."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma

import pytest
import zstandard

from pipeline.sources.inflate import Inflated, OverCap, codec


def test_inflated_stream_seeks_back_and_stops_at_the_cap():
    data = bytes(range(256)) * 4096  # 1 MiB
    for blob in (data, gzip.compress(data), zstandard.ZstdCompressor().compress(data), bz2.compress(data),
                 lzma.compress(data)):
        with Inflated(lambda: io.BytesIO(blob), cap=len(data)) as s:
            assert s.read(10) == data[:10]
            s.seek(500_000)
            assert s.read(5) == data[500_000:500_005]
            s.seek(3)
            assert s.read() == data[3:]
        with Inflated(lambda: io.BytesIO(blob), cap=len(data) - 1) as s, pytest.raises(OverCap):
            s.read()
    with Inflated(lambda: io.BytesIO(data), cap=10, cap_plain=False) as s:
        assert s.codec is None and len(s.read()) == len(data)


def test_codec_is_told_by_magic_bytes():
    assert codec(gzip.compress(b"x")) == "gzip" and codec(b"\\documentclass") is None
    assert codec(zstandard.ZstdCompressor().compress(b"x")) == "zstd"


def test_a_bomb_costs_one_buffer_not_its_size():
    import tracemalloc

    blob = gzip.compress(bytes(64 << 20), compresslevel=1)
    tracemalloc.start()
    try:
        with Inflated(lambda: io.BytesIO(blob), cap=32 << 20) as s, pytest.raises(OverCap):
            while s.read(1 << 16):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
