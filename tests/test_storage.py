"""pipeline/storage.py: local paths and fsspec URLs behind one API; the committed-files manifest."""
import json
import os

import pyarrow as pa
import pytest

from pipeline import storage


@pytest.fixture
def mem():
    """A fresh memory:// root (fsspec's in-process filesystem), removed afterwards."""
    import uuid

    root = f"memory://t{uuid.uuid4().hex[:8]}"
    yield root
    storage.rmtree(root)


def test_file_urls_and_home_become_local_paths(tmp_path):
    assert storage.normalize(f"file://{tmp_path}/out") == f"{tmp_path}/out"
    assert not storage.is_url(f"file://{tmp_path}") and storage.is_url("s3://b/run") and storage.is_url("memory://x")
    assert storage.normalize("~/x") == os.path.expanduser("~/x")
    assert storage.join("s3://b/run", "kept", "p.parquet") == "s3://b/run/kept/p.parquet"
    assert storage.relative("s3://b/run/kept/p.parquet", "s3://b/run") == "kept/p.parquet"
    assert storage.protocol("gs://b") == "gs" and storage.protocol("/x") == "file"


def test_inside_compares_resolved_names(tmp_path):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    assert storage.inside(str(tmp_path / "in" / "sub"), str(tmp_path / "in"))
    assert storage.inside(str(tmp_path / "in"), str(tmp_path / "in" / "."))
    assert not storage.inside(str(tmp_path / "input2"), str(tmp_path / "in"))
    assert not storage.inside("s3://b/in/x", str(tmp_path))
    assert storage.inside("s3://b/in/x", "s3://b/in") and not storage.inside("s3://b/inx", "s3://b/in")


@pytest.mark.parametrize("where", ["local", "memory"])
def test_round_trips(tmp_path, mem, where):
    root = str(tmp_path / "r") if where == "local" else mem
    storage.makedirs(root)
    storage.write_json(storage.join(root, "a", "x.json"), {"k": 1})
    assert storage.read_json(storage.join(root, "a", "x.json")) == {"k": 1}
    assert storage.read_json(storage.join(root, "absent.json")) is None
    t = pa.table({"id": ["a", "b"], "n": [1, 2]})
    storage.write_parquet(storage.join(root, "kept", "p.parquet"), t)
    w = storage.parquet_writer(storage.join(root, "kept", "q.parquet"), t.schema)
    w.write_table(t)
    w.write_table(t)
    w.close()
    assert storage.read_parquet(storage.join(root, "kept", "q.parquet")).num_rows == 4
    assert storage.open_parquet(storage.join(root, "kept", "p.parquet")).metadata.num_rows == 2
    assert storage.read_parquet(storage.join(root, "kept", "p.parquet"), filters=[("id", "in", ["b"])]).num_rows == 1
    assert storage.listdir(storage.join(root, "kept")) == ["p.parquet", "q.parquet"]
    assert [storage.basename(f) for f in storage.find(root)] == ["x.json", "p.parquet", "q.parquet"]
    assert storage.create_exclusive(storage.join(root, "lock"), b"1")
    assert not storage.create_exclusive(storage.join(root, "lock"), b"2")
    assert storage.read_bytes(storage.join(root, "lock")) == b"1"
    s1 = storage.stamp(storage.join(root, "lock"))
    storage.write_bytes(storage.join(root, "lock"), b"22")
    assert storage.stamp(storage.join(root, "lock")) != s1
    storage.remove(storage.join(root, "lock"))
    storage.remove(storage.join(root, "lock"))  # absent is fine
    assert not storage.exists(storage.join(root, "lock"))
    big = bytes(range(256)) * 5000  # 1.28 MB: more than one kernel copy call may take
    storage.write_bytes(storage.join(root, "big"), big)
    storage.copy_file(storage.join(root, "big"), storage.join(root, "copy", "big"))
    assert storage.read_bytes(storage.join(root, "copy", "big")) == big
    storage.write_bytes(storage.join(root, "big"), b"changed")  # a copy, not a link
    assert storage.read_bytes(storage.join(root, "copy", "big")) == big
    storage.rmtree(storage.join(root, "kept"))
    assert storage.listdir(storage.join(root, "kept")) == []


def test_local_write_leaves_no_temporary(tmp_path):
    storage.write_text(str(tmp_path / "f.txt"), "x")
    assert os.listdir(tmp_path) == ["f.txt"]


@pytest.mark.parametrize("where", ["local", "memory"])
def test_lines_are_written_as_they_come(tmp_path, mem, where):
    root = str(tmp_path) if where == "local" else mem
    path = storage.join(root, "d", "lines.jsonl")
    storage.write_lines(path, (f"{i}\n" for i in range(1000)))
    assert storage.read_text(path).splitlines() == [str(i) for i in range(1000)]

    def broken():
        yield "a\n"
        raise RuntimeError("cut")

    if where == "local":  # the old file stays whole and no temporary is left
        with pytest.raises(RuntimeError):
            storage.write_lines(path, broken())
        assert storage.read_text(path).splitlines()[-1] == "999"
        assert os.listdir(tmp_path / "d") == ["lines.jsonl"]


def test_committed_files_come_from_the_manifest(tmp_path):
    run = tmp_path / "run"
    (run / "kept").mkdir(parents=True)
    (run / "rejects" / "langid").mkdir(parents=True)
    for n in ("part-00000-aaaaaaaa.parquet", "part-00000-bbbbbbbb.parquet"):
        (run / "kept" / n).write_bytes(b"")
    # a hand-made directory (no runner state): listed as it is
    assert [os.path.basename(f) for f in storage.committed_files(str(run), "kept")] == \
        ["part-00000-aaaaaaaa.parquet", "part-00000-bbbbbbbb.parquet"]
    (run / "_state").mkdir()
    with pytest.raises(OSError, match="not finished"):  # a runner's directory without _SUCCESS
        storage.committed_files(str(run), "kept")
    (run / "_SUCCESS").write_text(json.dumps({"files": ["kept/part-00000-bbbbbbbb.parquet",
                                                         "rejects/langid/part-00000-bbbbbbbb.parquet"]}))
    assert storage.committed_files(str(run), "kept") == [str(run / "kept" / "part-00000-bbbbbbbb.parquet")]
    assert storage.committed_files(str(run), "rejects/langid") == [
        str(run / "rejects" / "langid" / "part-00000-bbbbbbbb.parquet")]
