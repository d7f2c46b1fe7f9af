"""The one document model every source produces and every stage reads.

A document is a row of an Arrow table. The base columns are filled by the readers; each stage
adds its own signal columns (declared by the stage, so every output shard has one schema) and the
runner fills the decision columns. Signals stay on rejected rows too, so thresholds can be re-tuned
later without recomputing them.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable

import pyarrow as pa
import xxhash

BASE_FIELDS: list[pa.Field] = [
    pa.field("id", pa.string(), nullable=False),  # stable: hash of source, file and offset
    pa.field("source", pa.string(), nullable=False),  # the recipe's source name
    pa.field("kind", pa.string(), nullable=False),  # commoncrawl | jsonl | parquet | arxiv | code
    pa.field("url", pa.string()),  # url for web pages, path for files
    pa.field("text", pa.string()),
    pa.field("file", pa.string()),  # input file, relative to the source's root
    pa.field("offset", pa.int64()),  # byte offset (WARC, tar), line number (JSONL) or row (Parquet)
    pa.field("metadata", pa.string()),  # JSON object: WARC date, record id, content type, ...
]

DECISION_FIELDS: list[pa.Field] = [
    pa.field("drop_stage", pa.string()),  # null on kept documents
    pa.field("drop_reason", pa.string()),
    pa.field("drop_detail", pa.string()),  # e.g. the survivor's id, or where a record broke
]

BASE_SCHEMA = pa.schema(BASE_FIELDS)
BASE_NAMES = [f.name for f in BASE_FIELDS]


def doc_id(source: str, file: str, offset: int) -> str:
    """Stable 128-bit id: the same input gives the same id on every run and every machine."""
    # surrogatepass: a file name that is not UTF-8 (Python keeps its bytes as lone surrogates) still
    # has an id; a valid name's bytes, and so its id, are unchanged
    return xxhash.xxh3_128_hexdigest(f"{source}\x1f{file}\x1f{offset}".encode("utf-8", "surrogatepass"))


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_utf8(s: str | None) -> str | None:
    """`s` with every lone surrogate (a JSON escape like "\\ud83d" for half an emoji) replaced by
    U+FFFD: Arrow stores only valid UTF-8 and refuses the whole batch otherwise."""
    if s is None or s.isascii() or not _SURROGATE.search(s):
        return s
    return _SURROGATE.sub("\ufffd", s)


def make_record(
    *,
    source: str,
    kind: str,
    file: str,
    offset: int,
    text: str | None,
    url: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row of the base schema, as readers build them."""
    return {
        "id": doc_id(source, file, offset),
        "source": source,
        "kind": kind,
        "url": valid_utf8(url),
        "text": valid_utf8(text),
        "file": valid_utf8(file),
        "offset": int(offset),
        "metadata": valid_utf8(json.dumps(metadata or {}, ensure_ascii=False, sort_keys=True)),
    }


def records_to_table(records: Iterable[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(records), schema=BASE_SCHEMA)


def full_schema(signal_fields: Iterable[pa.Field]) -> pa.Schema:
    """Base columns, then every stage's signals in pipeline order, then the decision columns."""
    fields = list(BASE_FIELDS)
    seen = set(BASE_NAMES)
    for f in signal_fields:
        if f.name in seen:
            continue
        seen.add(f.name)
        fields.append(f.with_nullable(True))
    fields.extend(DECISION_FIELDS)
    return pa.schema(fields)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Add missing columns as nulls and order/cast to `schema`, so every shard has one schema."""
    n = table.num_rows
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                col = col.cast(f.type)
            cols.append(col)
        else:
            cols.append(pa.nulls(n, type=f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def text_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of the text column (the unit the funnel is measured in)."""
    if table.num_rows == 0:
        return 0
    import pyarrow.compute as pc

    lengths = pc.binary_length(table.column("text"))
    total = pc.sum(lengths).as_py()
    return int(total or 0)
