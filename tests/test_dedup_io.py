"""Shared dedup plumbing: 128-bit id keys keep string order, bucketed files, decision files."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

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


def test_bucketed_files(tmp_path):
    rec = np.arange(10, dtype=np.int64)
    bucket = np.array([2, 0, 2, 1, 0, 2, 2, 1, 0, 0])
    p = str(tmp_path / "x.npy")
    io.write_bucketed(p, rec, bucket, 4)
    assert io.read_bucket(p, 0).tolist() == [1, 4, 8, 9]  # stable within a bucket
    assert io.read_bucket(p, 2).tolist() == [0, 2, 5, 6]
    assert io.read_bucket(p, 3).tolist() == []
    assert io.read_buckets([p, p], 1, rec.dtype).tolist() == [3, 7, 3, 7]


def test_write_decisions(tmp_path):
    ids = [doc_id("s", "f", k) for k in range(4)]
    spill = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": ids, "text": ["a", "b", "c", "d"]}), spill)
    a = np.zeros(2, dtype=io.ASSIGN_DTYPE)
    a["doc"] = [1, 3]
    hi, lo, _ = io.hex128(pa.array([ids[1]]))
    a["c_hi"], a["c_lo"], a["k_hi"], a["k_lo"], a["size"] = hi[0], lo[0], hi[0], lo[0], 2
    out = io.write_decisions(str(spill), str(tmp_path / "d.parquet"), a, "dup", "n", "cid")
    rows = pq.read_table(out).to_pylist()
    assert [r["id"] for r in rows] == ids
    assert [r["drop_reason"] for r in rows] == [None, None, None, "dup"]
    assert rows[3]["drop_detail"] == ids[1] and rows[3]["cid"] == ids[1] and rows[0]["cid"] == ids[0]
    assert [r["n"] for r in rows] == [1, 2, 1, 2]


def test_clean_work_dir_keeps_decisions(tmp_path):
    for name in ("decisions_0.parquet", "entries_0.npy", "entries_0.npy.off.npy", "sets_1.rows.npy"):
        (tmp_path / name).write_bytes(b"x")
    io.clean_work_dir(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decisions_0.parquet"]
