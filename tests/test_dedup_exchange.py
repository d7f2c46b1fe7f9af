"""Exchange files (stages/dedup/exchange.py): one file per producer and kind holding all its
partitions; a consumer reads its partition's index entry and bytes and nothing else; a truncated or
corrupt file is an error naming it."""
from __future__ import annotations

import os
import uuid

import numpy as np
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileOpener, LocalFileSystem
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.dedup import exchange, io


class _CountingOpener(LocalFileOpener):
    def read(self, *args, **kwargs):
        data = super().read(*args, **kwargs)
        self.fs.bytes_read += len(data)
        self.fs.reads += 1
        return data


class CountingFS(LocalFileSystem):
    """A local filesystem that counts the bytes read through every file it opens."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, skip_instance_cache=True, **kwargs)
        self.bytes_read = self.reads = 0

    def _open(self, path, mode="rb", block_size=None, **kwargs):
        if "r" in mode:
            return _CountingOpener(self._strip_protocol(path), mode, fs=self, **kwargs)
        return super()._open(path, mode, block_size, **kwargs)


def _files(work: io.Work) -> list[str]:
    return sorted(p for p in work.fs.find(work.root) if p.endswith(exchange.SUFFIX))


@pytest.mark.parametrize("where", ["local", "memory"])
def test_a_producer_writes_one_file_per_kind_whatever_the_partitions(tmp_path, where):
    url = str(tmp_path / "w") if where == "local" else f"memory://refinery-test-{uuid.uuid4().hex}/w"
    work = io.Work(url)
    rec = np.zeros(1000, dtype=io.ASSIGN_DTYPE)
    rec["doc"] = np.arange(1000)
    bucket = (np.arange(1000) * 7919 % 64).astype(np.int64)
    for producer in range(3):
        work.write("assign", producer, rec, bucket, 64)
        with work.writer("cand", producer, 64, exchange.ARROW) as out:
            for b in (3, 17, 40):
                out.arrow(b, [pa.record_batch({"v": pa.array(np.arange(b, dtype=np.int64))})], count=b)
    names = [p.rsplit("/", 2)[-2:] for p in _files(work)]
    assert names == [[k, f"f{i}{exchange.SUFFIX}"] for k in ("assign", "cand") for i in range(3)]  # 6, not 3 x 64 x 2
    for b in range(64):
        got = work.read("assign", b, 3, io.ASSIGN_DTYPE)["doc"]
        assert got.tolist() == np.tile(np.flatnonzero(bucket == b), 3).tolist()
    parts = work.parts("cand", 17, 3, exchange.ARROW)
    assert [p.count for p in parts] == [17] * 3
    assert [b.column(0).to_pylist() for p in parts for b in work.iter_arrow(p)] == [list(range(17))] * 3
    assert all(p.empty for p in work.parts("cand", 4, 3, exchange.ARROW))
    if where == "memory":
        work.fs.rm(work.root, recursive=True)


def test_a_reducer_reads_only_its_partitions_bytes(tmp_path):
    """Through a filesystem counting every byte read: the partition's bytes plus its index
    entries (28 + 16 x (b + 1) bytes), however many partitions the file holds; an empty partition
    costs its index entries only."""
    work = io.Work(str(tmp_path / "w"))
    rng = np.random.default_rng(1)
    n, parts = 200_000, 32
    rec = np.zeros(n, dtype=[("key", "<u8"), ("doc", "<i8")])
    rec["key"] = rng.integers(1, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)
    rec["doc"] = np.arange(n)
    bucket = io.hash_partition(rec["key"], parts)
    bucket[bucket == 5] = 6  # partition 5 empty
    for producer in range(2):
        work.write("entries", producer, rec, bucket, parts)
    size = sum(os.path.getsize(p) for p in _files(work))
    work.fs = CountingFS()
    for b in (0, 13, parts - 1):
        work.fs.bytes_read = work.fs.reads = 0
        located = work.parts("entries", b, 2)
        key, doc = work.read_fields("entries", b, 2, np.dtype(rec.dtype))
        assert np.array_equal(np.sort(doc), np.sort(np.tile(np.flatnonzero(bucket == b), 2)))
        part_bytes = sum(p.end - p.start for p in located)
        index = 2 * (exchange.TRAILER.size + 16 * (b + 1))
        assert work.fs.bytes_read == 2 * index + part_bytes  # `parts` above read the index once more
        assert part_bytes < size / parts * 1.5
    work.fs.bytes_read = work.fs.reads = 0
    assert work.read("entries", 5, 2, np.dtype(rec.dtype)).size == 0
    assert (work.fs.bytes_read, work.fs.reads) == (2 * (exchange.TRAILER.size + 16 * 6), 2)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), parts=st.integers(1, 9), producers=st.integers(1, 3))
def test_every_partition_reads_back_what_was_written(tmp_path_factory, data, parts, producers):
    work = io.Work(str(tmp_path_factory.mktemp("x")))
    written = []
    for i in range(producers):
        n = data.draw(st.integers(0, 40))
        v = np.array(data.draw(st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n)), dtype=np.uint64)
        bucket = np.array(data.draw(st.lists(st.integers(0, parts - 1), min_size=n, max_size=n)), dtype=np.int64)
        work.write("lines", i, v, bucket, parts)
        written.append((v, bucket))
    assert len(_files(work)) == producers
    for b in range(parts):
        want = np.concatenate([v[bk == b] for v, bk in written])
        assert work.read("lines", b, producers, np.dtype("<u8")).tolist() == want.tolist()  # stable, producer order


def _one(tmp_path) -> tuple[io.Work, str]:
    work = io.Work(str(tmp_path / "w"))
    rec = np.arange(5000, dtype=np.int64)
    work.write("scan", 0, rec, rec % 4, 4)
    return work, work.path("scan", 0)


@pytest.mark.parametrize("cut", [1, 28, 100, "half"])
def test_a_truncated_exchange_file_is_an_error_naming_it(tmp_path, cut):
    work, path = _one(tmp_path)
    data = open(path, "rb").read()
    keep = len(data) // 2 if cut == "half" else len(data) - cut
    open(path, "wb").write(data[:keep])
    with pytest.raises(exchange.ExchangeError, match=rf"{path}: .*(truncated|not an exchange file)"):
        work.read("scan", 3, 1, np.dtype("<i8"))


@pytest.mark.parametrize("where", ["data", "index", "trailer"])
def test_a_corrupt_exchange_file_is_an_error_naming_it(tmp_path, where):
    work, path = _one(tmp_path)
    data = bytearray(open(path, "rb").read())
    part = work.parts("scan", 1, 1)[0]
    at = {"data": (part.start + part.end) // 2, "index": len(data) - exchange.TRAILER.size - 16 * 2 + 3, "trailer": len(data) - 20}[where]
    data[at] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(exchange.ExchangeError, match=rf"{path}: .*(corrupt|partition|not an exchange)"):
        work.read("scan", 1, 1, np.dtype("<i8"))


def test_not_an_exchange_file_and_a_missing_one(tmp_path):
    work, path = _one(tmp_path)
    open(path, "wb").write(b"PAR1" + b"\0" * 200)
    with pytest.raises(exchange.ExchangeError, match=rf"{path}: not an exchange file"):
        work.read("scan", 0, 1, np.dtype("<i8"))
    again = _one(tmp_path / "again")[0]
    with pytest.raises(exchange.ExchangeError, match="partition 9 asked, the file holds 4"):
        again.read("scan", 9, 1, np.dtype("<i8"))
    with pytest.raises(FileNotFoundError):
        again.read("scan", 0, 2, np.dtype("<i8"))  # producer 1 never wrote


def test_a_failed_producer_leaves_no_readable_file(tmp_path):
    work = io.Work(str(tmp_path / "w"))
    with pytest.raises(RuntimeError, match="boom"):
        with work.writer("scan", 0, 4) as out:
            out.parquet(0, pa.table({"v": [1, 2]}))
            raise RuntimeError("boom")
    with pytest.raises(exchange.ExchangeError, match="not an exchange file"):
        work.read("scan", 0, 1, np.dtype("<i8"))
    with work.writer("scan", 1, 4) as out:
        out.parquet(2, pa.table({"v": [1]}))
        with pytest.raises(ValueError, match="out of order"):
            out.parquet(1, pa.table({"v": [1]}))
