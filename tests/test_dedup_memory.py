"""Memory of near-dedup: big documents on their way in (the spill files, the runner's and the
in-process path's, and the in-process text column cost about one copy of the texts, not 3-6;
benchmarks/dedup_big_docs.py), and the bucket task, which bounds a worker's memory in the global
step by `partition_entries` (benchmarks/dedup_bucket_memory.py; docs/dedup.md)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.engine.worker import ShardOutputs
from stages.dedup import components as cc
from stages.dedup import in_process, io
from stages.dedup.in_process import text_column
from stages.dedup.near import ENTRY_DTYPE, MinhashDedup, _bucket

NEEDS_PROC = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc peak-RSS reset")


def _spill(tmp_path, texts):
    stage = MinhashDedup()
    t = stage.annotate(pa.table({"id": [f"{k:032x}" for k in range(len(texts))], "text": pa.array(texts, pa.string()),
                                 "lang": ["en"] * len(texts)}))
    outputs = ShardOutputs(str(tmp_path), t.schema)
    outputs.write("_work/minhash_dedup/part-0.parquet", t, t.schema, spill=True)
    outputs.write("kept/part-0.parquet", t)
    return outputs.commit(), t


def test_the_runners_spill_has_no_dictionary_and_no_statistics_on_text(tmp_path):
    files, t = _spill(tmp_path, ["a b c d e", "x y z " * 50, "a b c d e"])
    spill = pq.ParquetFile(tmp_path / files["_work/minhash_dedup/part-0.parquet"])
    cols = {spill.metadata.row_group(0).column(i).path_in_schema: spill.metadata.row_group(0).column(i)
            for i in range(spill.metadata.num_columns)}
    assert not any("DICTIONARY" in e for e in cols["text"].encodings)
    assert not cols["text"].is_stats_set
    assert cols["lang"].is_stats_set and any("DICTIONARY" in e for e in cols["lang"].encodings)  # others keep theirs
    assert spill.read().equals(t)
    kept = pq.ParquetFile(tmp_path / files["kept/part-0.parquet"]).metadata.row_group(0)
    assert kept.column(1).path_in_schema == "text" and kept.column(1).is_stats_set  # only spills change


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=12), big=st.integers(0, 6))
def test_text_column_equals_pa_array(texts, big):
    old = in_process.BIG_TEXT
    in_process.BIG_TEXT = big
    try:
        got = text_column(texts)
    finally:
        in_process.BIG_TEXT = old
    assert got.type == pa.string() and got.to_pylist() == texts
    assert pa.chunked_array([pa.array(texts, pa.string())]).equals(pa.chunked_array([got.combine_chunks()]))


MEASURE = """
import sys, tempfile, numpy as np, pyarrow as pa
from pipeline.engine.worker import ShardOutputs
from stages.dedup import io
from stages.dedup.in_process import text_column
from stages.dedup.near import MinhashDedup
def kb(f):
    for line in open("/proc/self/status"):
        if line.startswith(f + ":"):
            return int(line.split()[1]) * 1024
def reset():
    io.release_memory()
    open("/proc/self/clear_refs", "w").write("5")
    return kb("VmRSS")
rng = np.random.default_rng(0)
vocab = [f"w{k}" for k in range(50_000)]
texts = [" ".join(vocab[k] for k in rng.integers(0, 50_000, 700_000)) for _ in range(3)]
size = sum(map(len, texts))
stage = MinhashDedup()
stage.ensure_setup()
batch = pa.table({"id": [f"{k:032x}" for k in range(3)], "text": pa.array(texts, pa.string())})
t = stage.annotate(batch)
with tempfile.TemporaryDirectory() as tmp:
    base = reset()
    outputs = ShardOutputs(tmp, t.schema)
    outputs.write("_work/x/part-0.parquet", t, t.schema, spill=True)
    outputs.commit()
    print("spill", (kb("VmHWM") - base) / size)
del t, batch
base = reset()
col = text_column(texts)
print("column", (kb("VmHWM") - base) / size)
"""


@pytest.mark.slow
@NEEDS_PROC
def test_big_texts_cost_about_their_size_to_spill_and_to_hold_as_arrow():
    """Three 4.8 MB texts in a fresh process, peak RSS above what is held, per text byte: the
    runner's spill write (5.5 with Parquet's defaults: statistics copy the biggest texts, 1,024
    values per page; now 1.4) and the in-process text column (2.2 with `pa.array`; now 1.0)."""
    out = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, check=True,
                         env=dict(os.environ)).stdout.split()
    got = dict(zip(out[::2], map(float, out[1::2])))
    assert got["spill"] < 2 and got["column"] < 1.6, got


def _reference_bucket(key, doc):
    """The bucket wave as a textbook: (key, doc) pairs sorted and deduplicated; per key with two or
    more documents, every member after the first linked both ways to the first (an edge per
    bucket: two documents sharing two buckets are linked twice)."""
    pairs = sorted(set(zip(key.tolist(), doc.tolist())))
    groups: dict[int, list[int]] = {}
    for k, d in pairs:
        groups.setdefault(k, []).append(d)
    star, members = [], set()
    for k, ds in groups.items():
        if len(ds) > 1:
            members |= {(k, d) for d in ds}
            star += [(ds[0], d) for d in ds[1:]] + [(d, ds[0]) for d in ds[1:]]
    largest = max((len(v) for v in groups.values()), default=0)
    return sorted(star), members, sum(len(v) > 1 for v in groups.values()), largest


@settings(max_examples=60, deadline=None)
@given(data=st.data(), files=st.integers(1, 4), parts=st.integers(1, 3), ordered=st.booleans())
def test_bucket_wave_equals_the_textbook(tmp_path_factory, data, files, parts, ordered):
    """Star edges and memberships of one key partition, whether the producers' docs come ascending
    (as `_scan` writes them: a stable sort by key) or not (the full sort by key and doc)."""
    work = io.Work(str(tmp_path_factory.mktemp("bucket")))
    keys, docs = [], []
    for i in range(files):
        n = data.draw(st.integers(0, 30))
        k = np.array(data.draw(st.lists(st.integers(1, 8), min_size=n, max_size=n)), dtype=np.uint64)
        rows = np.array(data.draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), dtype=np.int64)
        d = (np.int64(i) << io.ROW_BITS) | (np.sort(rows) if ordered else rows)
        rec = np.zeros(n, dtype=ENTRY_DTYPE)
        rec["key"], rec["doc"] = k, d
        work.write("entries", i, rec)
        keys.append(k)
        docs.append(d)
    nb, largest = _bucket((0, work, files, parts))
    star = np.concatenate([work.read("star", b, 1, cc.EDGE_DTYPE) for b in range(parts)])
    mem = np.concatenate([work.read("members", f, 1, ENTRY_DTYPE) for f in range(files)])
    want_star, want_mem, want_nb, want_largest = _reference_bucket(np.concatenate(keys), np.concatenate(docs))
    assert sorted(zip(star["a"].tolist(), star["b"].tolist())) == want_star
    assert set(zip(mem["key"].tolist(), mem["doc"].tolist())) == want_mem and mem.size == len(want_mem)
    assert (nb, largest) == (want_nb, want_largest)


@pytest.mark.slow
@NEEDS_PROC
def test_a_bucket_task_holds_its_partition_in_about_50_bytes_per_entry():
    """One bucket task on 2M entries from 10 producer files, 10% of them in shared buckets, fresh
    process: 113 bytes of RSS per entry before (per-file arrays concatenated, a structured copy, a
    full lexsort, per-entry group arrays, a reordered copy of each table written), ~50 now."""
    bench = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "dedup_bucket_memory.py")
    out = subprocess.run([sys.executable, bench, "--entries", "2000000", "--files", "10", "--shared", "0.1"],
                         capture_output=True, text=True, check=True, env=dict(os.environ)).stdout
    per_entry = float(out.strip().splitlines()[-1].strip("|").split("|")[-1])
    assert per_entry < 75, out
