"""Bad input never crashes a reader or a run: every record is kept or rejected with a location."""
import gzip
import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.sources.base import READ_SCHEMA, source_kinds
from tests.helpers import write_jsonl, write_recipe

# A file name each reader accepts, per kind (readers pick their parser by extension).
SUFFIX = {"jsonl": ".jsonl", "parquet": ".parquet", "commoncrawl": ".warc.gz", "arxiv": ".tar.gz", "code": ".tar.gz"}


def read_everything(kind: str, path: str) -> pa.Table:
    cls = source_kinds()[kind]
    src = cls("s", cls.Config(kind=kind, paths=[path]))
    tables = list(src.read(path, "f"))
    return pa.concat_tables(tables) if tables else READ_SCHEMA.empty_table()


@pytest.mark.parametrize("kind", sorted(source_kinds()))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2000), gz=st.booleans())
def test_random_bytes_never_crash_a_reader(kind, data, gz, tmp_path):
    path = tmp_path / ("fuzz" + SUFFIX.get(kind, ".bin"))
    payload = gzip.compress(data, mtime=0) if gz and path.suffix == ".gz" else data
    path.write_bytes(payload)
    table = read_everything(kind, str(path))
    for row in table.to_pylist():
        assert (row["text"] is not None) or row["drop_reason"], row
        if row["drop_reason"] == "unreadable":
            assert row["drop_detail"], "an unreadable record names where it broke"


@pytest.mark.slow
def test_empty_documents_invalid_utf8_and_a_50mb_document_run_through(tmp_path):
    inp = tmp_path / "in"
    big = "word " * (10 * 1024 * 1024)  # 50 MB of text in one document
    write_jsonl(inp / "a.jsonl", [{"text": ""}, {"text": big}, {"text": "fine document here"}])
    with open(inp / "b.jsonl", "wb") as fh:
        fh.write(b'{"text": "bad \xff\xfe bytes"}\n')
        fh.write(b"\x00\x01\x02 binary junk\n")
        fh.write(json.dumps({"text": "last good one"}).encode() + b"\n")
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"]}}
stages:
  - stage: test_min_words
    min_words: 1
""")
    res = run(load_recipe(str(path)), executor="local", progress=False)
    read = res.ledger.total("read")
    assert read.docs_in == 6
    assert res.ledger.check() == []
    assert res.ledger.total("test_min_words").rejected["too_few_words"][0] == 1  # the empty one
    assert res.ledger.total("test_min_words").kept_bytes >= len(big)
