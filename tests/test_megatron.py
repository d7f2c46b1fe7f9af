"""The .bin/.idx files, read back with an independent reader written from the format description."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from pipeline.mixture.megatron import IndexedDataset, IndexedDatasetWriter, token_dtype


def read_mmidx(prefix):
    """Independent reader: header fields by struct, arrays by numpy.memmap at computed offsets."""
    with open(f"{prefix}.idx", "rb") as f:
        head = f.read(9 + 8 + 1 + 8 + 8)
    assert head[:9] == b"MMIDIDX\x00\x00"
    version, code, n_seq, n_doc = struct.unpack("<QBQQ", head[9:])
    assert version == 1
    dtype = {8: np.uint16, 4: np.int32}[code]
    off = 34
    lengths = np.memmap(f"{prefix}.idx", dtype="<i4", mode="r", offset=off, shape=(n_seq,))
    off += 4 * n_seq
    pointers = np.memmap(f"{prefix}.idx", dtype="<i8", mode="r", offset=off, shape=(n_seq,))
    off += 8 * n_seq
    doc_idx = np.memmap(f"{prefix}.idx", dtype="<i8", mode="r", offset=off, shape=(n_doc,))
    import os

    assert os.path.getsize(f"{prefix}.idx") == off + 8 * n_doc  # nothing after the document indices
    tokens = np.memmap(f"{prefix}.bin", dtype=dtype, mode="r") if n_seq and lengths.sum() else np.zeros(0, dtype)
    item = np.dtype(dtype).itemsize
    docs = [np.asarray(tokens[p // item : p // item + n]) for p, n in zip(pointers, lengths)]
    return code, docs, np.asarray(doc_idx)


@pytest.mark.parametrize("dtype,code,top", [(np.uint16, 8, 65535), (np.int32, 4, 100276)])
def test_roundtrip_with_independent_reader(tmp_path, dtype, code, top):
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, top + 1, size=n) for n in (5, 1, 0, 300, 17)]
    docs[0][0] = top  # the largest id survives
    with IndexedDatasetWriter(tmp_path / "d", dtype) as w:
        for d in docs:
            w.add_document(d)
    got_code, got, doc_idx = read_mmidx(tmp_path / "d")
    assert got_code == code
    assert len(got) == len(docs)
    for a, b in zip(got, docs):
        assert a.tolist() == b.tolist()
    assert doc_idx.tolist() == list(range(len(docs) + 1))
    assert (tmp_path / "d.bin").stat().st_size == sum(map(len, docs)) * np.dtype(dtype).itemsize
    ours = IndexedDataset(tmp_path / "d")  # our own reader agrees too
    assert [ours[i].tolist() for i in range(len(ours))] == [d.tolist() for d in docs]


def test_header_bytes_exact(tmp_path):
    with IndexedDatasetWriter(tmp_path / "h", np.uint16) as w:
        w.add_document(np.array([1, 2, 3]))
        w.add_document(np.array([4]))
    raw = (tmp_path / "h.idx").read_bytes()
    expected = (
        b"MMIDIDX\x00\x00"
        + struct.pack("<Q", 1)
        + struct.pack("<B", 8)
        + struct.pack("<QQ", 2, 3)
        + np.array([3, 1], "<i4").tobytes()
        + np.array([0, 6], "<i8").tobytes()  # byte offsets: 3 uint16 tokens = 6 bytes
        + np.array([0, 1, 2], "<i8").tobytes()
    )
    assert raw == expected
    assert (tmp_path / "h.bin").read_bytes() == np.array([1, 2, 3, 4], "<u2").tobytes()


def test_empty_dataset(tmp_path):
    with IndexedDatasetWriter(tmp_path / "e", np.int32):
        pass
    code, docs, doc_idx = read_mmidx(tmp_path / "e")
    assert code == 4 and docs == [] and doc_idx.tolist() == [0]


def test_token_dtype_boundary():
    assert token_dtype(50257) is np.uint16
    assert token_dtype(65536) is np.uint16  # ids 0..65535 fit
    assert token_dtype(65537) is np.int32  # Megatron has no uint32 code
    assert token_dtype(100277) is np.int32


def test_rejects_non_megatron_dtype(tmp_path):
    with pytest.raises(ValueError):
        IndexedDatasetWriter(tmp_path / "x", np.uint32)
