"""Megatron-LM indexed dataset (.bin + .idx, "MMIDIDX"), the format Megatron-LM and NeMo train from.

Layout, as megatron/core/datasets/indexed_dataset.py writes and reads it (little-endian):

  .idx  b"MMIDIDX\\x00\\x00"  (9 bytes)
        <Q version = 1
        <B dtype code  (Megatron's DType enum: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                        6 float64, 7 float32, 8 uint16 -- there is no code for uint32)
        <Q sequence count S
        <Q document count = len(document_indices) = documents + 1
        int32[S]   sequence lengths (tokens)
        int64[S]   sequence pointers (byte offsets into .bin)
        int64[D+1] document indices (sequence index where each document ends; starts at 0)
  .bin  the token ids of every sequence, back to back, in the dtype above.

We write one sequence per document (as Megatron's preprocess_data.py does without sentence
splitting), so document indices are 0..S. Token ids use uint16 when every id fits, else int32
(Megatron's own choice for large vocabularies, since it has no uint32 code).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES: dict[type, int] = {
    np.uint8: 1,
    np.int8: 2,
    np.int16: 3,
    np.int32: 4,
    np.int64: 5,
    np.float64: 6,
    np.float32: 7,
    np.uint16: 8,
}
CODE_DTYPES = {code: dt for dt, code in DTYPE_CODES.items()}


def token_dtype(vocab_size: int) -> type:
    """uint16 when all ids (0..vocab_size-1) fit in 16 bits, else int32."""
    return np.uint16 if vocab_size <= 65536 else np.int32


class IndexedDatasetWriter:
    """Streams documents into PREFIX.bin and writes PREFIX.idx on close (one sequence per doc)."""

    def __init__(self, prefix: str | os.PathLike, dtype: type):
        if dtype not in DTYPE_CODES:
            raise ValueError(f"dtype {dtype} has no Megatron code")
        self.prefix = str(prefix)
        self.dtype = np.dtype(dtype)
        self._code = DTYPE_CODES[dtype]
        Path(self.prefix).parent.mkdir(parents=True, exist_ok=True)
        self._bin = open(self.prefix + ".bin", "wb")
        self._lengths: list[int] = []
        self.tokens = 0

    def add_document(self, tokens: np.ndarray) -> None:
        arr = np.asarray(tokens)
        if arr.dtype != self.dtype:
            arr = arr.astype(self.dtype)
        self._bin.write(arr.tobytes(order="C"))
        self._lengths.append(int(arr.size))
        self.tokens += int(arr.size)

    def close(self) -> None:
        self._bin.close()
        lengths = np.asarray(self._lengths, dtype=np.int64)
        if lengths.size and lengths.max() > np.iinfo(np.int32).max:
            raise ValueError("a document longer than 2^31-1 tokens cannot be indexed")
        pointers = np.zeros(lengths.size, dtype=np.int64)
        if lengths.size > 1:
            np.cumsum(lengths[:-1] * self.dtype.itemsize, out=pointers[1:])
        doc_idx = np.arange(lengths.size + 1, dtype=np.int64)
        with open(self.prefix + ".idx", "wb") as f:
            f.write(MAGIC)
            f.write(struct.pack("<Q", VERSION))
            f.write(struct.pack("<B", self._code))
            f.write(struct.pack("<Q", lengths.size))
            f.write(struct.pack("<Q", doc_idx.size))
            f.write(lengths.astype(np.int32).tobytes(order="C"))
            f.write(pointers.tobytes(order="C"))
            f.write(doc_idx.tobytes(order="C"))

    def __enter__(self) -> "IndexedDatasetWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class IndexedDataset:
    """Memory-mapped reader of PREFIX.idx/.bin; `ds[i]` is sequence i's token array."""

    def __init__(self, prefix: str | os.PathLike):
        prefix = str(prefix)
        with open(prefix + ".idx", "rb") as f:
            if f.read(9) != MAGIC:
                raise ValueError(f"{prefix}.idx: not a Megatron MMIDIDX index")
            (version,) = struct.unpack("<Q", f.read(8))
            if version != VERSION:
                raise ValueError(f"{prefix}.idx: unsupported version {version}")
            (code,) = struct.unpack("<B", f.read(1))
            (n_seq,) = struct.unpack("<Q", f.read(8))
            (n_doc,) = struct.unpack("<Q", f.read(8))
            offset = f.tell()
        self.dtype = np.dtype(CODE_DTYPES[code])
        idx = np.memmap(prefix + ".idx", mode="r", dtype=np.uint8)
        self.lengths = np.frombuffer(idx, dtype=np.int32, count=n_seq, offset=offset)
        offset += 4 * n_seq
        self.pointers = np.frombuffer(idx, dtype=np.int64, count=n_seq, offset=offset)
        offset += 8 * n_seq
        self.document_indices = np.frombuffer(idx, dtype=np.int64, count=n_doc, offset=offset)
        size = os.path.getsize(prefix + ".bin")
        self._bin = np.memmap(prefix + ".bin", mode="r", dtype=np.uint8) if size else np.zeros(0, np.uint8)

    def __len__(self) -> int:
        return int(self.lengths.size)

    def __getitem__(self, i: int) -> np.ndarray:
        return np.frombuffer(
            self._bin, dtype=self.dtype, count=int(self.lengths[i]), offset=int(self.pointers[i])
        )
