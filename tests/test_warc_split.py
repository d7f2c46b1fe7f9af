"""A large WARC read as several parts (pipeline/sources/warc_split.py, planning.split_shards): every
record read by exactly one part, the same rows as one reader of the whole file, in every layout
that can be split and in hostile files; and a run over split files keeps, rejects and books the
same documents on every executor and across a resume."""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.engine.ledger import Ledger
from pipeline.engine.planning import plan_shards, split_shards
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.sources import warc_split
from pipeline.sources.commoncrawl import CommonCrawlConfig, CommonCrawlSource
from tests.helpers import kept_ids, write_recipe
from tests.test_commoncrawl import LONG, page


def record(i: int, size: int = 0, cl_delta: int = 0, kind: str = "response") -> bytes:
    body = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
            + page(f"{LONG} Nummer {i}. " + "Wort " * size).encode())
    head = (f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{i}>\r\n"
            f"WARC-Target-URI: http://ex.de/{i}\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(body) + cl_delta}\r\n\r\n")
    return head.encode() + body + b"\r\n\r\n"


GARBAGE = b"garbage \x1f\x8b\x08\x00 not a member\r\nWARC/1.0\r\nnot a header either\r\n"


def build(layout: str, sizes: list[int], hostile: dict[int, str] | None = None, truncate: int = 0) -> bytes:
    """A WARC of len(sizes) records; hostile: record number -> 'garbage' (bytes before it),
    'length' (a wrong Content-Length), 'corrupt' (bytes flipped inside its gzip member), 'request'."""
    hostile = hostile or {}
    out = []
    for i, size in enumerate(sizes):
        how = hostile.get(i)
        rec = record(i, size, cl_delta=40 if how == "length" else 0, kind="request" if how == "request" else "response")
        b = gzip.compress(rec, mtime=0) if layout == "gzip" else rec
        if how == "corrupt" and layout == "gzip":
            mid = len(b) // 2
            b = b[:mid] + bytes(x ^ 0x5A for x in b[mid:mid + 8]) + b[mid + 8:]
        if how == "garbage":
            b = GARBAGE + b
        out.append(b)
    data = b"".join(out)
    return data[:len(data) - truncate] if truncate else data


def source(path: Path, split_bytes: int) -> CommonCrawlSource:
    return CommonCrawlSource("cc", CommonCrawlConfig(kind="commoncrawl", paths=[str(path)], split_bytes=split_bytes,
                                                     extract_time_limit=0))


def rows(src: CommonCrawlSource, url: str, span=None) -> list[dict]:
    return [r for t in src.read(url, "a", span) for r in t.to_pylist()]


def split_rows(path: Path, split_bytes: int) -> tuple[list[dict], list[dict], int]:
    url = str(path)
    src = source(path, split_bytes)
    size = path.stat().st_size
    spans = warc_split.spans(size, src.split(url, size))
    return rows(src, url), [r for s in spans for r in rows(src, url, s)], len(spans)


@pytest.mark.parametrize("layout", ["gzip", "plain"])
def test_a_split_file_gives_the_rows_of_the_whole_file(tmp_path, layout):
    path = tmp_path / ("a.warc.gz" if layout == "gzip" else "a.warc")
    path.write_bytes(build(layout, [i % 9 * 40 for i in range(40)]))
    whole, split, n = split_rows(path, 1500)
    assert n >= 5
    assert split == whole and len(whole) == 40
    assert [r["drop_reason"] for r in whole] == [None] * 40


@pytest.mark.parametrize("layout", ["gzip", "plain"])
def test_a_hostile_file_loses_nothing_and_reads_nothing_twice(tmp_path, layout):
    """Garbage between records (with a gzip magic and a `WARC/` line in it), a wrong
    Content-Length, a corrupt gzip member, a request record and a truncated last record."""
    path = tmp_path / ("h.warc.gz" if layout == "gzip" else "h.warc")
    hostile = {3: "garbage", 7: "length", 11: "corrupt", 12: "request", 15: "garbage", 16: "garbage"}
    path.write_bytes(build(layout, [i % 5 * 30 for i in range(24)], hostile, truncate=60))
    for split_bytes in (700, 1100, 2900):
        whole, split, n = split_rows(path, split_bytes)
        assert n > 2
        assert split == whole
    reasons = [r["drop_reason"] for r in whole]
    assert "unreadable" in reasons
    assert len({r["id"] for r in whole}) == len(whole)


def test_a_warc_gzipped_as_one_stream_is_not_split(tmp_path):
    path = tmp_path / "s.warc.gz"
    path.write_bytes(gzip.compress(build("plain", [200] * 30), mtime=0))
    assert source(path, 1000).split(str(path), path.stat().st_size) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(["gzip", "plain"]), sizes=st.lists(st.integers(0, 120), min_size=1, max_size=14),
       hostile=st.dictionaries(st.integers(0, 13), st.sampled_from(["garbage", "length", "corrupt", "request"])),
       truncate=st.sampled_from([0, 0, 3, 70]), split_bytes=st.integers(200, 3000))
def test_any_split_of_any_file_reads_each_record_once(tmp_path, layout, sizes, hostile, truncate, split_bytes):
    path = tmp_path / ("p.warc.gz" if layout == "gzip" else "p.warc")
    path.write_bytes(build(layout, sizes, hostile, truncate))
    whole, split, _ = split_rows(path, split_bytes)
    assert split == whole


def test_split_points_are_record_starts_in_order(tmp_path):
    data = build("gzip", [50] * 30)
    path = tmp_path / "o.warc.gz"
    path.write_bytes(data)
    starts = []
    at = 0
    for i in range(30):
        starts.append(at)
        at += len(gzip.compress(record(i, 50), mtime=0))
    points = source(path, 2000).split(str(path), len(data))
    assert points == sorted(set(points)) and set(points) <= set(starts[1:])


# -- runs ------------------------------------------------------------------------------------
def crawl(tmp_path: Path, n_files: int = 2) -> Path:
    inp = tmp_path / "in"
    inp.mkdir()
    rnd = random.Random(3)
    for f in range(n_files):
        layout = "gzip" if f % 2 == 0 else "plain"
        sizes = [rnd.randrange(0, 200) for _ in range(60)]
        hostile = {5: "garbage", 20: "length", 33: "corrupt", 41: "request"}
        data = build(layout, sizes, hostile, truncate=30)
        # the same pages in both files (ids differ by file), and a duplicate inside each: dedup crosses parts
        (inp / (f"f{f}.warc.gz" if layout == "gzip" else f"f{f}.warc")).write_bytes(data)
    return inp


def recipe(tmp_path: Path, name: str, split_bytes: int) -> str:
    return str(write_recipe(tmp_path / f"{name}.yaml", f"""
output: {tmp_path / name}
keep_work: true
sources:
  cc: {{kind: commoncrawl, paths: ["{tmp_path / 'in'}/*"], split_bytes: {split_bytes}, extract_time_limit: 0,
        batch_size: 7}}
stages:
  - stage: test_min_words
    min_words: 5
  - stage: test_exact
"""))


def outcome(out: Path) -> tuple:
    def table(sub: str) -> list:
        files = sorted((out / sub).rglob("*.parquet"))
        if not files:
            return []
        t = pa.concat_tables([pq.read_table(f) for f in files])
        return sorted(zip(t.column("id").to_pylist(), t.column("offset").to_pylist(),
                          t.column("drop_reason").to_pylist() if "drop_reason" in t.column_names else [None] * t.num_rows))
    led = Ledger.read(str(out / "ledger.json")).to_dict(times=False)
    return kept_ids(out), table("kept"), table("rejects"), led


@pytest.mark.slow
def test_a_run_over_split_files_keeps_and_books_the_same_on_every_executor_and_after_a_resume(tmp_path):
    import tests.helpers  # noqa: F401  (registers the test stages)

    crawl(tmp_path)
    whole = run(load_recipe(recipe(tmp_path, "whole", 0)), executor="local", progress=False)
    shards = split_shards(load_recipe(recipe(tmp_path, "probe", 3000)),
                          [s for s in plan_shards(load_recipe(recipe(tmp_path, "probe", 3000)))])
    assert len(shards) == 2  # sizes unknown (0) until the run stamps them: not split
    ref = outcome(tmp_path / "whole")
    assert ref[3]["inputs"]["cc"]["files"] == 2
    for name, kw in (("local", {"executor": "local"}), ("procs", {"executor": "processes", "workers": 2})):
        res = run(load_recipe(recipe(tmp_path, name, 3000)), progress=False, **kw)
        lines = [json.loads(x) for x in (tmp_path / name / "shards.jsonl").read_text().splitlines()]
        assert len(lines) > 2, "the files were read in several parts"
        assert outcome(tmp_path / name) == ref, name
        assert res.ledger.to_dict(times=False)["unreadable_files"] == whole.ledger.to_dict(times=False)["unreadable_files"]

    # resume: forget the last phase's records of half the parts and the end of the run
    out = tmp_path / "procs"
    for f in ("_SUCCESS", "ledger.json"):
        (out / f).unlink(missing_ok=True)
    last = sorted((out / "_state").glob("p*"))[-1]
    for rec in sorted(last.glob("part-*.json"))[::2]:
        rec.unlink()
    again = run(load_recipe(recipe(tmp_path, "procs", 3000)), executor="processes", workers=2, progress=False)
    assert again.resumed
    assert outcome(out) == ref


@pytest.mark.slow
def test_a_run_over_split_files_on_ray_keeps_and_books_the_same(tmp_path, ray_local):
    import tests.helpers  # noqa: F401  (registers the test stages)

    crawl(tmp_path)
    run(load_recipe(recipe(tmp_path, "whole", 0)), executor="local", progress=False)
    run(load_recipe(recipe(tmp_path, "ray", 3000)), executor="ray", workers=2, progress=False)
    assert len((tmp_path / "ray" / "shards.jsonl").read_text().splitlines()) > 2
    assert outcome(tmp_path / "ray") == outcome(tmp_path / "whole")


def test_a_record_larger_than_one_inflated_piece_keeps_every_offset_and_split_true(tmp_path):
    """A member inflating to more than 1 MiB once made every later offset too low, and the first
    span read on past its end into the second span's records."""
    sizes = [10, 300_000, 10, 20, 30, 300_000, 5, 5, 5]
    members = [gzip.compress(record(i, s), mtime=0) for i, s in enumerate(sizes)]
    path = tmp_path / "big.warc.gz"
    path.write_bytes(b"".join(members))
    whole, split, n = split_rows(path, 3000)
    assert n > 2 and split == whole
    assert [r["offset"] for r in whole] == [sum(map(len, members[:i])) for i in range(len(members))]
