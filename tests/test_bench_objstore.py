"""benchmarks/objstore_requests.py's counting layer (every request kind, bytes, the `_work` peak) on
moto behind it, and what it found: a large WARC on an object store is read about once, not once
per split point and once more per part."""
from __future__ import annotations

import gzip
import random

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from benchmarks.objstore_requests import CountingMoto, Window, classify  # noqa: E402


@pytest.fixture(scope="module")
def server():
    import fsspec

    fsspec.get_filesystem_class("s3").clear_instance_cache()
    with CountingMoto() as srv:
        yield srv
    fsspec.get_filesystem_class("s3").clear_instance_cache()  # the next server is another endpoint


def test_classify_names_each_kind():
    h = {"range": "bytes=0-9"}
    assert classify("GET", "k", {}, {}) == "GET"
    assert classify("GET", "k", {}, h) == "GET_RANGE"
    assert classify("GET", "", {"list-type": ["2"], "prefix": ["a/"]}, {}) == "LIST"
    assert classify("GET", "k", {"uploadId": ["u"]}, {}) == "LIST"  # ListParts
    assert classify("HEAD", "", {}, {}) == "HEAD"
    assert classify("PUT", "k", {}, {}) == "PUT"
    assert classify("PUT", "k", {"partNumber": ["1"], "uploadId": ["u"]}, {}) == "PART"
    assert classify("PUT", "k", {}, {"x-amz-copy-source": "/b/src"}) == "COPY"
    assert classify("PUT", "", {}, {}) == "OTHER"  # CreateBucket
    assert classify("POST", "k", {"uploads": [""]}, {}) == "MPU_START"
    assert classify("POST", "k", {"uploadId": ["u"]}, {}) == "MPU_COMPLETE"
    assert classify("POST", "", {"delete": [""]}, {}) == "DELETE"
    assert classify("DELETE", "k", {}, {}) == "DELETE"
    assert classify("DELETE", "k", {"uploadId": ["u"]}, {}) == "MPU_ABORT"


def test_every_request_is_counted_with_its_bytes_and_the_work_peak(server):
    fs = server.fs()
    w = Window({"t1/": "run"}, "t1/_work/")
    server.counting.open(w)
    fs.pipe_file("bucket/t1/a.txt", b"hello")
    fs.pipe_file("bucket/t1/_work/x/small", b"x" * 1000)
    with fs.open("bucket/t1/_work/x/big", "wb", block_size=5 << 20) as fh:
        for _ in range(3):
            fh.write(b"y" * (6 << 20))
    assert fs.cat_file("bucket/t1/a.txt") == b"hello"
    with fs.open("bucket/t1/_work/x/big", "rb", block_size=1 << 20) as fh:
        fh.seek(100)
        assert fh.read(10) == b"y" * 10
    fs.invalidate_cache()
    assert sorted(fs.ls("bucket/t1", detail=False)) == ["bucket/t1/_work", "bucket/t1/a.txt"]
    fs.copy("bucket/t1/a.txt", "bucket/t1/b.txt")
    fs.rm("bucket/t1/_work", recursive=True)
    fs.rm_file("bucket/t1/b.txt")
    got = server.counting.close()
    k = got.kinds
    assert (k["PUT"], k["MPU_START"], k["PART"], k["MPU_COMPLETE"], k["COPY"]) == (2, 1, 3, 1, 1)
    assert k["GET"] == 1 and k["GET_RANGE"] >= 1 and k["LIST"] >= 1 and k["HEAD"] >= 1
    assert k["DELETE"] == 2 and got.objects_deleted >= 3  # one batch (2 objects, maybe folder keys) and one single
    assert got.bytes_written == 5 + 1000 + 3 * (6 << 20)
    assert got.bytes_read == 5 + sum(r["got"] for r in got.log if r["kind"] == "GET_RANGE")
    assert got.peak_work == 1000 + 3 * (6 << 20)  # both _work objects at once, the big one as its parts' sum
    assert server.counting.bytes_under("t1/") == 5 and server.counting.bytes_under("t1/_work/") == 0
    assert not got.errors


def _warc(n: int, payload: int) -> bytes:
    """A WARC of `n` records, each its own gzip member, of incompressible payloads (Common Crawl's
    layout, sized like its files' records without their cost to extract)."""
    rng = random.Random(0)
    out = []
    for i in range(n):
        body = rng.randbytes(payload)
        head = (f"WARC/1.0\r\nWARC-Type: metadata\r\nWARC-Record-ID: <urn:uuid:{i}>\r\n"
                f"WARC-Target-URI: http://ex.de/{i}\r\nContent-Type: application/warc-fields\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        out.append(gzip.compress(head + body + b"\r\n\r\n", compresslevel=0, mtime=0))
    return b"".join(out)


def test_a_split_warc_on_an_object_store_is_read_about_once(server):
    """Finding split points reads a little at each (not the object store's default 50 MiB
    readahead per probe), and each part reads little past its end (not up to 50 MiB more)."""
    from pipeline.sources import warc_split
    from pipeline.sources.commoncrawl import CommonCrawlConfig, CommonCrawlSource, _warc_records

    data = _warc(200, 120_000)
    fs = server.fs()
    fs.pipe_file("bucket/t2/big.warc.gz", data)
    url = "s3://bucket/t2/big.warc.gz"
    src = CommonCrawlSource("cc", CommonCrawlConfig(kind="commoncrawl", paths=[url], split_bytes=8_000_000,
                                                    extract_time_limit=0))
    w = Window({"t2/": "input"}, None)
    server.counting.open(w)
    points = src.split(url, len(data))
    probe = server.counting.close()
    assert len(points) >= 2
    assert probe.bytes_read <= (len(points) + 1) * (3 << 20)

    w = Window({"t2/": "input"}, None)
    server.counting.open(w)
    offsets = [off for span in warc_split.spans(len(data), points) for off, _ in _warc_records(url, 1 << 30, span)]
    parts = server.counting.close()
    assert len(offsets) == len(set(offsets)) == 200  # every record once
    assert parts.bytes_read <= 1.3 * len(data)


def test_an_exchange_file_on_an_object_store_costs_one_put(server):
    """The dedup stages' exchange files (stages/dedup/io.py, exchange.py) are one per producer and
    kind, whatever the partitions, written with one PUT each: no folder to create on an object store,
    so no request to create one (s3fs's makedirs asks for the bucket: one HEAD per folder per task).
    A consumer reads its partition with two ranged GETs (its index entries, then its bytes) and
    nothing more; an empty partition with one."""
    import numpy as np
    import pyarrow as pa

    from stages.dedup import exchange, io

    work = io.Work("s3://bucket/t3/work")
    w = Window({"t3/": "run"}, "t3/work/")
    server.counting.open(w)
    records = np.arange(100_000, dtype=np.int64)
    bucket = (records % 8).astype(np.int64)
    bucket[bucket == 5] = 4  # partition 5 empty
    work.write("entries", 0, records, bucket, 8)
    with work.writer("cand", 0, 4, exchange.ARROW) as out:
        out.arrow(1, [pa.record_batch({"v": [1, 2]})], count=2)
    got = server.counting.close()
    assert dict(got.kinds) == {"PUT": 2}  # was 9: one per producer and partition
    size = server.counting.sizes["t3/work/entries/f0.exchange"]
    located = [work.parts("entries", b, 1)[0] for b in range(8)]
    for b, part in enumerate(located):
        w = Window({"t3/": "run"}, "t3/work/")
        server.counting.open(w)
        values = work.read("entries", b, 1, np.dtype("<i8"))
        got = server.counting.close()
        assert np.array_equal(values, records[bucket == b])
        index = exchange.TRAILER.size + 16 * (b + 1)
        if b == 5:
            assert dict(got.kinds) == {"GET_RANGE": 1} and got.bytes_read == index
        else:
            assert dict(got.kinds) == {"GET_RANGE": 2} and got.bytes_read == index + part.end - part.start
            assert part.end - part.start < 0.3 * size  # a partition's bytes, not the file's (1/8 or 2/8 of it)
    assert [b.column(0).to_pylist() for b in work.iter_arrow(work.parts("cand", 1, 1, exchange.ARROW)[0])] == [[1, 2]]

def test_the_exchange_files_are_counted_in_both_layouts():
    """benchmarks/objstore_requests.py counts exchange files, producers and (one file per bucket,
    the layout before) buckets from the keys written; the formula of files per producer and kind
    is the pairs' formula with each product M x R or R x R cut to its producers."""
    from benchmarks.objstore_requests import layout, shuffle_files, shuffle_formula, shuffle_pairs

    w = Window({}, None)
    keys = ["r/_work/minhash_dedup/resolve-1/entries/f0.exchange", "r/_work/minhash_dedup/resolve-1/entries/f1.exchange",
            "r/_work/minhash_dedup/resolve-1/sweep/cand/f0.exchange", "r/_work/exact_dedup/resolve-2/scan/b3/f0.parquet",
            "r/_work/exact_dedup/resolve-2/scan/b4/f0.parquet", "r/_work/exact_dedup/part-0.parquet",
            "r/_work/exact_dedup/resolve-2/decisions/f0.parquet"]
    w.log = [{"kind": "PUT", "status": 200, "key": k} for k in keys]
    got = shuffle_files(w)
    assert got == {"minhash_dedup/entries": {"files": 2, "buckets": 0, "producers": 2},
                   "minhash_dedup/sweep/cand": {"files": 1, "buckets": 0, "producers": 1},
                   "exact_dedup/scan": {"files": 2, "buckets": 2, "producers": 1}}
    assert layout({"commands": {"run": {"shuffle_files": got}}}) == "per bucket"
    assert shuffle_pairs(1, 1, 1, 1, 1) == shuffle_formula(1, 1, 1, 1, 1)  # one producer, one bucket: the same
    assert shuffle_formula(34400, 320, 320, 498, 2) == 7 * 34400 + 320 + 9 * (320 + 498)
