"""JSONL and Parquet readers: records, ids, and bad input as rejects (never a crash)."""
import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.sources.base import relative_to_root
from pipeline.sources.jsonl import JsonlConfig, JsonlSource
from pipeline.sources.parquet import ParquetConfig, ParquetSource


def read_all(src, url, id_path="f"):
    return pa.concat_tables(list(src.read(url, id_path))).to_pylist()


def test_jsonl_records_metadata_and_bad_lines(tmp_path):
    p = tmp_path / "a.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "Cafe\u0301 ok", "url": "http://u", "lang": "fr"}) + "\n")
        fh.write("\n")
        fh.write("{broken json\n")
        fh.write(json.dumps({"content": "no text field"}) + "\n")
        fh.write(json.dumps(["not", "an", "object"]) + "\n")
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)])), str(p))
    assert len(rows) == 4
    assert rows[0]["text"] == "Caf\u00e9 ok"  # NFC
    assert rows[0]["url"] == "http://u" and json.loads(rows[0]["metadata"]) == {"lang": "fr"}
    assert rows[0]["drop_reason"] is None and rows[0]["offset"] == 1
    assert [r["drop_reason"] for r in rows[1:]] == ["unreadable"] * 3
    assert "f:line 3: invalid JSON" in rows[1]["drop_detail"]
    assert "no string field 'text'" in rows[2]["drop_detail"]


def test_jsonl_truncated_gzip_keeps_what_was_read(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    data = gzip.compress(("".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(2000))).encode())
    p.write_bytes(data[: len(data) // 2])
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)], batch_size=100)), str(p))
    assert rows[-1]["drop_reason"] == "unreadable"
    assert "EOFError" in rows[-1]["drop_detail"] or "Error" in rows[-1]["drop_detail"]
    assert sum(r["drop_reason"] is None for r in rows) > 0


def test_parquet_reader_and_wrong_schema(tmp_path):
    good = tmp_path / "g.parquet"
    pq.write_table(pa.table({"text": ["a b c", None], "url": ["u1", "u2"], "score": [1.0, 2.0]}), good)
    rows = read_all(ParquetSource("p", ParquetConfig(paths=[str(good)])), str(good))
    assert rows[0]["text"] == "a b c" and rows[0]["url"] == "u1" and json.loads(rows[0]["metadata"]) == {"score": 1.0}
    assert rows[1]["drop_reason"] == "unreadable"
    bad = tmp_path / "b.parquet"
    pq.write_table(pa.table({"content": ["x"]}), bad)
    rows = read_all(ParquetSource("p", ParquetConfig(paths=[str(bad)])), str(bad))
    assert len(rows) == 1 and "wrong schema" in rows[0]["drop_detail"]


def test_ids_depend_on_path_below_glob_root():
    assert relative_to_root("/data/x/*.jsonl", "/data/x/a.jsonl") == "a.jsonl"
    assert relative_to_root("/data/**/*.jsonl", "/data/x/a.jsonl") == "x/a.jsonl"
    assert relative_to_root("/data/x", "/data/x/sub/a.jsonl") == "sub/a.jsonl"
    assert relative_to_root("/data/x/a.jsonl", "/data/x/a.jsonl") == "a.jsonl"
    assert relative_to_root("s3://b/p/*.gz", "s3://b/p/q.gz") == "q.gz"


def test_jsonl_zstd_reads_line_by_line(tmp_path):
    import zstandard

    p = tmp_path / "a.jsonl.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress(
        "".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(50)).encode()))
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)])), str(p))
    assert [r["text"] for r in rows] == [f"doc {i}" for i in range(50)]


# -- hostile sizes and broken row groups --------------------------------------------------------
def _rows(kind, path, **cfg):
    from tests.helpers import read_source

    return read_source(kind, path, **cfg)


def test_a_document_over_the_size_limit_is_rejected_within_the_memory_cap(tmp_path):
    import tracemalloc

    cap = 1 << 20
    f = tmp_path / "big.jsonl"
    with open(f, "w") as fh:
        fh.write(json.dumps({"text": "before"}) + "\n")
        fh.write(json.dumps({"text": "word " * (3 * cap)}) + "\n")  # 15 MB on one line
        fh.write(json.dumps({"text": "after"}) + "\n")
    _rows("jsonl", tmp_path / "warm.jsonl" if (tmp_path / "warm.jsonl").write_text('{"text": "w"}\n') else f)
    tracemalloc.start()
    try:
        rows = _rows("jsonl", f, max_document_bytes=cap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r["offset"], r["drop_reason"], r["text"]) for r in rows] == [
        (1, None, "before"), (2, "too_large", None), (3, None, "after")]
    assert "line 2" in rows[1]["drop_detail"]
    assert peak < 2 * cap + (2 << 20), peak  # 2x the cap plus fixed read buffers, not 15 MB


def test_the_size_limit_applies_to_every_kind(tmp_path):
    pq.write_table(pa.table({"text": ["short", "x" * 5000]}), tmp_path / "a.parquet")
    rows = _rows("parquet", tmp_path / "a.parquet", max_document_bytes=1000)
    assert [r["drop_reason"] for r in rows] == [None, "too_large"]


def test_a_corrupt_row_group_books_every_row_it_held(tmp_path):
    f = tmp_path / "g.parquet"
    pq.write_table(pa.table({"text": [f"doc {i}" for i in range(30)]}), f, row_group_size=10)
    data = bytearray(f.read_bytes())
    meta = pq.ParquetFile(f).metadata
    col = meta.row_group(1).column(0)
    start = col.dictionary_page_offset or col.data_page_offset
    for i in range(start, start + col.total_compressed_size):
        data[i] = 0xFF  # the second row group's pages are garbage; the footer is intact
    f.write_bytes(bytes(data))
    rows = _rows("parquet", f)
    assert len(rows) == 30 and len({r["id"] for r in rows}) == 30
    assert [r["offset"] for r in rows] == list(range(30))
    assert [r["drop_reason"] for r in rows] == [None] * 10 + ["unreadable"] * 10 + [None] * 10
    assert "row group 1" in rows[10]["drop_detail"]


def test_a_bug_in_a_reader_is_an_internal_error_not_bad_input(tmp_path, monkeypatch):
    import pipeline.sources.jsonl as jsonl

    (tmp_path / "a.jsonl").write_text(json.dumps({"text": "fine"}) + "\n")

    def buggy(*a, **k):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(jsonl.unicodedata, "normalize", buggy)
    (row,) = _rows("jsonl", tmp_path / "a.jsonl")
    assert row["drop_reason"] == "internal_error"
    assert "refinery bug: TypeError: unsupported operand at " in row["drop_detail"]
    (tmp_path / "b.jsonl").write_bytes(b"\x1f\x8b\x08\x00 not gzip really")
    monkeypatch.undo()
    (tmp_path / "b.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00 not gzip really")
    rows = _rows("jsonl", tmp_path / "b.jsonl.gz")
    assert [r["drop_reason"] for r in rows] == ["unreadable"]  # bad bytes stay bad input


def test_jsonl_lone_surrogate_escapes_become_replacement_characters(tmp_path):
    """A JSON escape for half a surrogate pair (a cut emoji, common in scraped JSON) decodes to a
    string Arrow cannot encode; it used to crash the whole run with a traceback."""
    p = tmp_path / "s.jsonl"
    p.write_text('{"text": "cut \\ud83d emoji", "url": "http://u/\\udc00", "note": "\\ud800"}\n'
                 '{"text": "pair \\ud83d\\ude00 ok"}\n')
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)])), str(p))
    assert [r["drop_reason"] for r in rows] == [None, None]
    assert rows[0]["text"] == "cut \ufffd emoji" and rows[0]["url"] == "http://u/\ufffd"
    assert json.loads(rows[0]["metadata"]) == {"note": "\ufffd"}
    assert rows[1]["text"] == "pair \U0001F600 ok"


def test_jsonl_a_line_too_deep_or_with_a_huge_number_loses_only_itself(tmp_path):
    """json.loads raises RecursionError for deep nesting and a plain ValueError for an integer over
    4,300 digits; neither is a JSONDecodeError, and both used to end the file at that line."""
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"text": "first"}) + "\n"
                 + '{"text": "deep", "m": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
                 + '{"text": "big", "n": ' + "9" * 5000 + "}\n"
                 + json.dumps({"text": "last"}) + "\n")
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)])), str(p))
    assert [(r["offset"], r["drop_reason"]) for r in rows] == [(1, None), (2, "unreadable"), (3, "unreadable"), (4, None)]
    assert rows[-1]["text"] == "last"
    assert "f:line 2" in rows[1]["drop_detail"] and "f:line 3" in rows[2]["drop_detail"]


def test_parquet_a_value_python_cannot_hold_keeps_the_documents(tmp_path):
    """A timestamp past year 9999 in a metadata column cannot become a Python datetime; it used to
    lose every row of the file as one internal_error row (and fail the run)."""
    p = tmp_path / "t.parquet"
    ts = pa.array([0, 253402300800 * 10, 0], type=pa.timestamp("s"))
    pq.write_table(pa.table({"text": ["a", "b", "c"], "ts": ts}), p)
    rows = read_all(ParquetSource("p", ParquetConfig(paths=[str(p)])), str(p))
    assert [(r["offset"], r["drop_reason"], r["text"]) for r in rows] == [(0, None, "a"), (1, None, "b"), (2, None, "c")]
    assert json.loads(rows[0]["metadata"])["ts"].startswith("1970-01-01 00:00:00")
    assert "out of range" in json.loads(rows[1]["metadata"])["ts"]


def test_jsonl_gz_a_corrupt_member_costs_its_own_lines_not_the_file(tmp_path):
    """Concatenated gzip members (`cat a.gz b.gz`, how many crawls ship JSONL): one corrupt member
    lost every line of the file, those read before it included, as one unreadable row."""
    members = [gzip.compress("".join(json.dumps({"text": f"m{m} d{i}"}) + "\n" for i in range(50)).encode())
               for m in range(4)]
    bad = bytearray(members[1])
    bad[len(bad) // 2] ^= 0xFF
    bad[len(bad) // 2 + 1] ^= 0xFF
    p = tmp_path / "c.jsonl.gz"
    p.write_bytes(members[0] + bytes(bad) + members[2] + members[3] + b"\0" * 512)  # padded with zeros
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)], batch_size=7)), str(p))
    kept = [r["text"] for r in rows if r["drop_reason"] is None]
    assert kept == [f"m{m} d{i}" for m in (0, 2, 3) for i in range(50)]
    lost = [r for r in rows if r["drop_reason"]]
    assert len(lost) == 1 and lost[0]["offset"] == 51 and "gzip member at byte" in lost[0]["drop_detail"]
    assert len({r["id"] for r in rows}) == len(rows)  # every row its own id


def test_parquet_a_dictionary_bomb_is_too_large_without_being_decoded(tmp_path):
    """40 rows of one 20 MB text, dictionary-encoded: a 1 kB file. Decoded row by row it was 800 MB
    of Arrow and Python strings at once (3.1 GB peak for a 1 MiB max_document_bytes)."""
    import subprocess
    import sys

    p = tmp_path / "bomb.parquet"
    text = pa.DictionaryArray.from_arrays(pa.array([0] * 40, pa.int32()), pa.array(["a" * (20 << 20)], pa.large_string()))
    pq.write_table(pa.table({"text": text, "n": list(range(40))}), p, compression="zstd")
    assert p.stat().st_size < 10_000
    # VmHWM: this process's peak, reset by exec (ru_maxrss would carry pytest's own over)
    prog = (f"import json; from tests.test_sources_tabular import read_all, ParquetSource, ParquetConfig; "
            f"rows = read_all(ParquetSource('p', ParquetConfig(paths=[{str(p)!r}], max_document_bytes=1 << 20)), {str(p)!r}); "
            f"print(json.dumps([[r['offset'], r['drop_reason']] for r in rows])); "
            f"print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, check=True).stdout.splitlines()
    assert json.loads(out[0]) == [[i, "too_large"] for i in range(40)]
    assert int(out[1]) < 600 << 10, out[1]  # kB: one 20 MB dictionary and the imports, not 800 MB of rows


def test_a_nested_value_python_cannot_hold_keeps_the_row():
    """A struct holding a timestamp past year 9999 cannot be cast to text by Arrow: printed instead."""
    import pyarrow as pa

    from pipeline.sources.parquet import pylist_rows

    ts = pa.array([300000000000 * 10**6], pa.int64()).cast(pa.timestamp("us"))
    batch = pa.RecordBatch.from_arrays([pa.array(["x"]), pa.StructArray.from_arrays([ts], names=["t"])],
                                       names=["text", "meta"])
    rows = pylist_rows(batch)
    assert rows[0]["text"] == "x" and "11476-08-15" in rows[0]["meta"]


def test_parquet_rows_under_the_cap_that_share_one_text_are_decoded_a_slice_at_a_time(tmp_path, monkeypatch):
    """200 rows pointing at one 1 MiB dictionary text, each under max_document_bytes: no more than
    BATCH_BYTES of text becomes Python strings at once (here 3 MiB, so slices of 3 rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import pipeline.sources.parquet as P

    text = "x" * (1 << 20)
    path = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"text": pa.array([text] * 200).dictionary_encode()}), path, use_dictionary=True)
    sizes = []
    real = P.pylist_rows
    monkeypatch.setattr(P, "BATCH_BYTES", 3 << 20)
    monkeypatch.setattr(P, "pylist_rows", lambda b: sizes.append(b.num_rows) or real(b))
    from tests.helpers import read_source

    rows = read_source("parquet", path)
    assert len(rows) == 200 and all(r["text"] == text for r in rows)
    assert max(sizes) == 3


def test_big_fields_stay_out_of_metadata_unless_named(tmp_path):
    p = tmp_path / "hplt.jsonl"
    html = "<html>" + "x" * 50_000 + "</html>"
    p.write_text(json.dumps({"text": "page text", "url": "http://u", "h": html, "lang": "en", "ids": [1, 2]}) + "\n")
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)])), str(p))
    assert json.loads(rows[0]["metadata"]) == {"lang": "en", "ids": [1, 2], "_omitted": ["h"]}
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)], metadata_fields=["h", "nosuch"])), str(p))
    assert json.loads(rows[0]["metadata"]) == {"h": html}
    q = tmp_path / "hplt.parquet"
    pq.write_table(pa.table({"text": ["page text"], "url": ["u"], "h": [html], "lang": ["en"]}), q)
    rows = read_all(ParquetSource("p", ParquetConfig(paths=[str(q)])), str(q))
    assert json.loads(rows[0]["metadata"]) == {"lang": "en", "_omitted": ["h"]}
    rows = read_all(ParquetSource("p", ParquetConfig(paths=[str(q)], metadata_fields=["lang"])), str(q))
    assert json.loads(rows[0]["metadata"]) == {"lang": "en"} and rows[0]["url"] == "u"


def test_jsonl_an_undecodable_byte_keeps_the_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(json.dumps({"text": "caf_ ok"}).encode().replace(b"_", b"\xe9") + b"\n"
                  + json.dumps({"text": "next"}).encode() + b"\n")
    rows = read_all(JsonlSource("w", JsonlConfig(paths=[str(p)])), str(p))
    assert [r["drop_reason"] for r in rows] == [None, None]
    assert rows[0]["text"] == "caf\ufffd ok" and json.loads(rows[0]["metadata"]) == {"replaced_bytes": 1}


def test_parquet_a_text_column_that_is_not_a_string_is_one_reject_per_row(tmp_path):
    for name, col in (("list", [["a", "b"], ["c"], None]), ("struct", [{"x": 1}, {"x": 2}, {"x": 3}])):
        p = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"text": col}), p)
        rows = read_all(ParquetSource("p", ParquetConfig(paths=[str(p)])), str(p))
        assert [r["drop_reason"] for r in rows] == ["unreadable"] * 3
        assert [r["offset"] for r in rows] == [0, 1, 2] and len({r["id"] for r in rows}) == 3
        assert "not a string" in rows[0]["drop_detail"]


@pytest.mark.slow
def test_the_code_sources_parquet_rows_are_bounded_as_the_parquet_sources_are(tmp_path, monkeypatch):
    """The Stack's layout in Parquet: one 1 MiB content repeated through the dictionary in 60 rows is
    decoded a slice at a time, and a content over max_document_bytes is too_large undecoded."""
    import pipeline.sources.parquet as P
    from tests.helpers import read_source

    code = "x = 1\n" * (1 << 17)  # 768 KiB
    path = tmp_path / "stack.parquet"
    pq.write_table(pa.table({"content": pa.array([code] * 60).dictionary_encode(), "path": ["a.py"] * 60,
                             "repo": ["r"] * 60}), path, use_dictionary=True)
    sizes = []
    real = P.pylist_rows
    monkeypatch.setattr(P, "BATCH_BYTES", 2 << 20)
    monkeypatch.setattr(P, "pylist_rows", lambda b: sizes.append(b.num_rows) or real(b))
    rows = read_source("code", path, rules={"max_line_length": 10**6})
    assert len(rows) == 60 and max(sizes) <= 2 and len({r["id"] for r in rows}) == 60
    rows = read_source("code", path, max_document_bytes=1000)
    assert [r["drop_reason"] for r in rows] == ["too_large"] * 60


def test_the_worker_hands_on_read_batches_bounded_by_text_not_only_rows(tmp_path, monkeypatch):
    import pipeline.engine.worker as W
    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.runner import run
    from tests.helpers import write_recipe

    path = tmp_path / "in" / "big.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"text": pa.array(["word " * 40_000] * 50).dictionary_encode()}), path, use_dictionary=True)
    import pipeline.sources.base as B

    monkeypatch.setattr(W, "READ_BATCH_CHARS", 1 << 20)  # 5 rows of 200 kB
    monkeypatch.setattr(B, "READ_BATCH_CHARS", 1 << 20)  # the reader's batches: the worker must not rejoin them
    seen = []
    real = W.ShardWorker._admit
    monkeypatch.setattr(W.ShardWorker, "_admit", lambda self, part, t, *a: seen.append(t.num_rows) or real(self, part, t, *a))
    recipe = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  p: {{kind: parquet, paths: ["{tmp_path}/in/*.parquet"]}}
""")
    res = run(load_recipe(str(recipe)), executor="local", progress=False)
    assert res.ledger.check() == [] and sum(seen) == 50 and max(seen) <= 6, seen


_BIG_COLUMN = """
import sys
import pyarrow as pa, pyarrow.parquet as pq
path, kind = sys.argv[1], sys.argv[2]
rows = 150
if kind == "repeated":  # one 4 MiB value through the column's dictionary: 4 MiB in the footer's sizes
    blob = pa.array([bytes(range(256)) * (1 << 14)] * rows, pa.binary())
else:  # 150 distinct values in one row group: the writer puts them in one page
    blob = pa.array([bytes([i]) * (4 << 20) for i in range(rows)], pa.binary())
pq.write_table(pa.table({"text": [f"document {i}" for i in range(rows)], "lang": ["en"] * rows, "blob": blob,
                         "note": ["x" * 5000 if i % 2 else "small" for i in range(rows)]}), path, compression="zstd")
"""

_READ_PEAK = """
import json, resource, sys
from pipeline.sources.parquet import ParquetConfig, ParquetSource
path = sys.argv[1]
src = ParquetSource("p", ParquetConfig(paths=[path]))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
metas = [json.loads(m) for b in src.read(path, "f") for m in b.column("metadata").to_pylist()]
print(json.dumps({"grew_mib": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024, "metas": metas}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["distinct", "repeated"])
def test_a_huge_column_left_out_of_metadata_is_never_decoded_whole(tmp_path, kind):
    """150 rows x 4 MiB in a binary column (600 MiB decoded, a few kB on disk): metadata by size
    leaves it out of every row, named in `_omitted`, while the reader's peak memory grows by far
    less than the column (it grew by 1.5 GiB and more when the column was read and then dropped)."""
    import os
    import subprocess
    import sys

    path = tmp_path / "big.parquet"
    subprocess.run([sys.executable, "-c", _BIG_COLUMN, str(path), kind], check=True)
    assert path.stat().st_size < 8 << 20
    out = subprocess.run([sys.executable, "-c", _READ_PEAK, str(path)], check=True, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    r = json.loads(out.stdout)
    assert len(r["metas"]) == 150
    # the rules as before: a value over max_metadata_field_bytes is named in _omitted, the others kept
    assert r["metas"][0] == {"lang": "en", "note": "small", "_omitted": ["blob"]}
    assert r["metas"][1] == {"lang": "en", "_omitted": ["blob", "note"]}
    assert r["grew_mib"] < 200, r["grew_mib"]


def test_metadata_by_size_decides_each_value_of_a_column_it_reads(tmp_path):
    """A column read (not too large to decode) is still decided value by value: long values
    omitted without becoming Python objects, short ones kept, binary ones as before (their repr)."""
    q = tmp_path / "mixed.parquet"
    pq.write_table(pa.table({"text": ["a", "b", "c"], "s": ["é" * 700, "é" * 600, None],
                             "b": pa.array([b"\x00" * 5000, b"ok", b"\x01" * 1000], pa.binary())}), q)
    metas = [json.loads(r["metadata"]) for r in read_all(ParquetSource("p", ParquetConfig(paths=[str(q)])), str(q))]
    # "é" is 2 bytes and 6 of JSON: 700 of them are 4,202 bytes of JSON (over 4,096), 600 are 3,602
    assert metas[0] == {"_omitted": ["s", "b"]}
    assert metas[1] == {"s": "é" * 600, "b": "b'ok'"}
    assert metas[2] == {"s": None, "_omitted": ["b"]}  # 1,000 bytes, but 8,000+ of JSON once written as their repr
