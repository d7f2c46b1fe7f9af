"""Line dedup: frequent lines leave every document; rare lines, short lines and texts stay."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.schema import doc_id, make_record, records_to_table
from stages.base import LocalExecutor
from stages.dedup.lines import LineDedup, line_hashes
from stages.registry import get


def run(stage, tmp_path, shards, name="s"):
    d = tmp_path / name
    d.mkdir()
    paths = []
    for k, shard in enumerate(shards):
        t = records_to_table(make_record(source="s", kind="jsonl", file="f", offset=o, text=x) for o, x in shard)
        p = d / f"{k}.parquet"
        pq.write_table(stage.annotate(t), p)
        paths.append(str(p))
    files = stage.resolve(paths, LocalExecutor())
    for f, p in zip(files, paths):
        assert pq.read_table(f).column("id").to_pylist() == pq.read_table(p).column("id").to_pylist()
    return {r["id"]: r for r in pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()}


def test_line_hashes():
    assert get("line_dedup") is LineDedup
    h = line_hashes("Menu\n  menu \n\nMenu  ", min_chars=1)
    assert h[0] == h[2 + 1] and h[2] is None and len(h) == 4
    assert line_hashes("A\na", lowercase=True)[0] == line_hashes("A\na", lowercase=True)[1]
    assert line_hashes(None) == [] and line_hashes("") == []


def test_frequent_lines_removed_globally(tmp_path):
    stage = LineDedup(max_count=2, min_chars=3)
    footer = "Copyright 2024 Example Inc."
    shards = [
        [(0, f"First story line.\n{footer}"), (1, f"Second story.\n{footer}\nok"), (2, None)],
        [(3, f"{footer}\n  Copyright   2024 Example Inc. "), (4, "Unique text\nok"), (5, "Rare line\nRare line")],
    ]
    rows = run(stage, tmp_path, shards)
    assert rows[doc_id("s", "f", 0)]["text"] == "First story line."
    assert rows[doc_id("s", "f", 1)]["text"] == "Second story.\nok"  # "ok" is under min_chars: never removed
    assert rows[doc_id("s", "f", 1)]["lines_removed"] == 1
    assert rows[doc_id("s", "f", 3)]["drop_reason"] == "only_duplicate_lines"
    assert rows[doc_id("s", "f", 4)]["text"] == "Unique text\nok" and rows[doc_id("s", "f", 4)]["lines_removed"] == 0
    # a line repeated inside one document counts once
    assert rows[doc_id("s", "f", 5)]["text"] == "Rare line\nRare line"
    assert rows[doc_id("s", "f", 2)]["text"] is None and rows[doc_id("s", "f", 2)]["drop_reason"] is None


def test_partitions_do_not_change_result(tmp_path):
    shards = [[(k, f"line {k % 7}\nshared header\nbody {k}") for k in range(50)]]
    a = run(LineDedup(max_count=6, partitions=1), tmp_path, shards, "a")
    b = run(LineDedup(max_count=6, partitions=5), tmp_path, shards, "b")
    assert a == b
    r = a[doc_id("s", "f", 0)]
    assert r["text"] == "body 0" and r["lines_removed"] == 2  # "line 0" is in 8 documents (> 6)


def test_empty_spill_files(tmp_path):
    rows = run(LineDedup(), tmp_path, [[], [(0, None), (1, "")], []])
    assert len(rows) == 2 and all(r["drop_reason"] is None and r["lines_removed"] == 0 for r in rows.values())
