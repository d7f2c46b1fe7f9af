"""Shared dedup plumbing: 128-bit id keys keep string order, bucketed files, decision files."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.schema import doc_id
from stages.dedup import io
def test_hex128_round_trip_and_order():
    ids = [doc_id("s", "f", k) for k in range(200)] + ["0" * 32, "f" * 32]
    hi, lo, ok = io.hex128(pa.chunked_array([pa.array(ids[:50]), pa.array(ids[50:])]))
    assert ok.all() and io.to_hex(hi, lo) == ids
    order = np.lexsort([lo, hi])
    assert [ids[k] for k in order] == sorted(ids)


def test_hex128_invalid_and_sliced():
    arr = pa.array(["A" * 32, None, "xyz", "g" * 32, "0123456789abcdef0123456789ABCDEF"])
    hi, lo, ok = io.hex128(arr)
    assert ok.tolist() == [True, False, False, False, True]
    assert io.to_hex(hi[:1], lo[:1]) == ["a" * 32]
    sl = pa.array(["1" * 32, "2" * 32, "3" * 32]).slice(1)
    assert io.to_hex(*io.hex128(sl)[:2]) == ["2" * 32, "3" * 32]
    with pytest.raises(ValueError, match="32-hex"):
        io.ids_hex128(pa.array(["nope"]), "x.parquet")


def test_quality_and_partition():
    q = io.quality(pa.array([1.0, None, float("nan"), -2.0]))
    assert q.tolist() == [1.0, float("-inf"), float("-inf"), -2.0]
    keys = np.array([0, 2**63, 2**64 - 1], dtype=np.uint64)
    assert io.hash_partition(keys, 4).tolist() == [0, 2, 3]
    doc = (np.int64(7) << io.ROW_BITS) | np.int64(12345)
    assert io.file_of(np.array([doc])).tolist() == [7] and io.row_of(np.array([doc])).tolist() == [12345]


@pytest.mark.parametrize("where", ["local", "memory"])
def test_bucketed_files(tmp_path, where):
    import uuid

    url = str(tmp_path / "w") if where == "local" else f"memory://refinery-test-{uuid.uuid4().hex}/w"
    work = io.Work(url)
    rec = np.zeros(10, dtype=io.ASSIGN_DTYPE)
    rec["doc"] = np.arange(10)
    bucket = np.array([2, 0, 2, 1, 0, 2, 2, 1, 0, 0])
    work.write("assign", 0, rec, bucket, 4)
    work.write("assign", 1, rec[:4], bucket[:4], 4)
    assert work.read("assign", 0, 1, io.ASSIGN_DTYPE)["doc"].tolist() == [1, 4, 8, 9]  # stable within a bucket
    assert work.read("assign", 2, 2, io.ASSIGN_DTYPE)["doc"].tolist() == [0, 2, 5, 6, 0, 2]
    assert work.read("assign", 3, 2, io.ASSIGN_DTYPE).size == 0
    plain = np.arange(5, dtype=np.uint64)
    work.write("lines", 3, plain)
    assert work.read_one("lines", 3, np.dtype("<u8")).tolist() == plain.tolist()
    import pickle

    assert pickle.loads(pickle.dumps(work)).read_one("lines", 3, np.dtype("<u8")).size == 5
    work.write_table(f"{work.root}/decisions/f0.parquet", pa.table({"a": [1]}))
    work.write_table(f"{work.root}/users_file.parquet", pa.table({"a": [1]}))  # not ours: stays
    work.clean()
    assert sorted(p.rsplit("/", 1)[-1] for p in work.fs.ls(work.root, detail=False)) == ["decisions", "users_file.parquet"]
    if where == "memory":
        work.fs.rm(work.root, recursive=True)


def test_write_decisions(tmp_path):
    ids = [doc_id("s", "f", k) for k in range(4)]
    spill = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": ids, "text": ["a", "b", "c", "d"]}), spill)
    a = np.zeros(2, dtype=io.ASSIGN_DTYPE)
    a["doc"] = [1, 3]
    hi, lo, _ = io.hex128(pa.array([ids[1]]))
    a["c_hi"], a["c_lo"], a["k_hi"], a["k_lo"], a["size"] = hi[0], lo[0], hi[0], lo[0], 2
    out = io.write_decisions(str(spill), io.Work(str(tmp_path / "w")), "d.parquet", a, "dup", "n", "cid")
    assert out == str(tmp_path / "w" / "decisions" / "d.parquet")
    rows = pq.read_table(out).to_pylist()
    assert [r["id"] for r in rows] == ids
    assert [r["drop_reason"] for r in rows] == [None, None, None, "dup"]
    assert rows[3]["drop_detail"] == ids[1] and rows[3]["cid"] == ids[1] and rows[0]["cid"] == ids[0]
    assert [r["n"] for r in rows] == [1, 2, 1, 2]


def test_read_columns_through_an_overlay(tmp_path):
    """An overlay (a later barrier-group member's keys after per-document stages) reads the spill
    beneath for columns it lacks, and `text` through the rewriting stages' files, the latest on top."""
    import json

    spill, older, newer, overlay = (str(tmp_path / f"{n}.parquet") for n in ("spill", "older", "newer", "overlay"))
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": ["t0", "t1", "t2"], "q": [1.0, 2.0, 3.0]}), spill)
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": pa.array(["old-a", "old-b", None], pa.string())}), older)
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": pa.array([None, "new-b", None], pa.string())}), newer)
    schema = pa.schema([pa.field("id", pa.string()), pa.field("k", pa.int64())],
                       metadata={io.OVERLAY_BASE: spill.encode(), io.OVERLAY_TEXT: json.dumps([newer, older]).encode()})
    pq.write_table(pa.table({"id": ["a", "b", "c"], "k": [7, None, 9]}, schema=schema), overlay)
    t = io.read_columns(overlay, ["id", "k", "q", "text", "absent"])
    assert t.column("text").to_pylist() == ["old-a", "new-b", "t2"]
    assert t.column("k").to_pylist() == [7, None, 9] and t.column("q").to_pylist() == [1.0, 2.0, 3.0]
    assert t.column("absent").null_count == 3
    assert io.read_columns(spill, ["text"]).column(0).to_pylist() == ["t0", "t1", "t2"]
    assert list(io.iter_texts(overlay, [0, 2])) == [(0, "old-a"), (2, "t2")]  # an overlay: through read_columns


@settings(max_examples=40, deadline=None)
@given(lens=st.lists(st.integers(0, 40), min_size=1, max_size=30), limit=st.integers(1, 60),
       batch=st.integers(1, 5), data=st.data())
def test_iter_texts_streams_the_wanted_rows_by_row_group(tmp_path_factory, lens, limit, batch, data):
    """Spill files cut into row groups by text bytes (`text_groups`: a text over the limit alone),
    read back row group by row group: exactly the wanted rows, in order, nulls included."""
    texts = [None if n == 7 else "x" * n for n in lens]
    rows = sorted(data.draw(st.sets(st.integers(0, len(texts) - 1))))
    table = pa.table({"id": [str(k) for k in range(len(texts))], "text": pa.array(texts, pa.string())})
    cuts = io.text_groups(table.column("text"), limit)
    sizes = np.diff([0] + cuts + [len(texts)])
    assert (sizes > 0).all()
    for a, b in zip([0] + cuts, cuts + [len(texts)]):  # a group over the limit is one text
        assert sum(len(t or "") for t in texts[a:b]) <= limit or b - a == 1
    path = str(tmp_path_factory.mktemp("it") / "s.parquet")
    io.Work(str(tmp_path_factory.mktemp("w"))).write_table(path, table, dictionary=False, bounds=cuts)
    assert pq.ParquetFile(path).metadata.num_row_groups == len(cuts) + 1
    assert list(io.iter_texts(path, rows, batch)) == [(r, texts[r]) for r in rows]


def test_cand_files_in_many_record_batches_give_the_same_decisions(monkeypatch):
    """The candidates' shingle sets go from gather to keepers as Arrow IPC record batches of about
    CAND_BATCH_VALUES hashes: cut into batches of a few hashes, the decisions are unchanged."""
    from stages.dedup import near

    rng = np.random.default_rng(3)
    base = [" ".join(f"w{x}" for x in rng.integers(0, 500, 60)) for _ in range(40)]
    texts = [b if k % 3 else b + " extra" for k, b in enumerate(base)] + base[:15]
    want = near.near_duplicates(texts, shard_size=7, partitions=3)
    monkeypatch.setattr(near, "CAND_BATCH_VALUES", 5)
    got = near.near_duplicates(texts, shard_size=7, partitions=3)
    assert got == want and len(want.kept) < len(texts)
