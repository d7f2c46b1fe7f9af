"""Parquet files with a text column (e.g. another pipeline's output, Hugging Face datasets)."""
from __future__ import annotations

import json
import unicodedata
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.sources.base import TOO_LARGE, UNREADABLE, Source, TabularConfig, open_binary, pick_metadata


MAX_LOST_ROWS = 10_000_000
BATCH_BYTES = 64 << 20  # inflated bytes of rows read at once, by the row group's own size


class ParquetConfig(TabularConfig):
    kind: str = "parquet"
    text_column: str = "text"
    url_column: str | None = "url"


class ParquetSource(Source):
    kind = "parquet"
    Config = ParquetConfig

    def records(self, url: str, id_path: str) -> Iterator[dict[str, Any]]:
        cfg: ParquetConfig = self.config  # type: ignore[assignment]
        with open_binary(url) as fh:
            pf = pq.ParquetFile(fh)
            names = pf.schema_arrow.names
            if cfg.text_column not in names:
                yield self.unreadable(
                    id_path, 0, f"{id_path}: wrong schema: no column {cfg.text_column!r} (has {names})"
                )
                return
            columns = None  # named metadata fields: only those columns are read
            if cfg.metadata_fields is not None:
                wanted = {cfg.text_column, cfg.url_column, *cfg.metadata_fields}
                columns = [c for c in names if c in wanted]
            for row, obj, reason, detail in bounded_rows(fh, pf, id_path, cfg.text_column, cfg.max_document_bytes,
                                                         cfg.batch_size, columns):
                yield self._row(id_path, row, obj) if reason is None else self.rejected(id_path, row, reason, detail)

    def _row(self, id_path: str, row: int, obj: dict[str, Any]) -> dict[str, Any]:
        cfg: ParquetConfig = self.config  # type: ignore[assignment]
        text = obj.pop(cfg.text_column)
        if not isinstance(text, str):
            return self.unreadable(id_path, row, f"{id_path}:row {row}: {cfg.text_column} is not a string")
        doc_url = obj.pop(cfg.url_column, None) if cfg.url_column else None
        meta = pick_metadata(json.loads(json.dumps(obj, default=str)), cfg.metadata_fields, cfg.max_metadata_field_bytes)
        return self.record(id_path, row, unicodedata.normalize("NFC", text),
                           url=doc_url if isinstance(doc_url, str) else None, metadata=meta)


def bounded_rows(fh, pf: pq.ParquetFile, id_path: str, text_column: str, cap: int, batch_size: int,
                 columns: list[str] | None = None) -> Iterator[tuple[int, dict | None, str | None, str | None]]:
    """(row number, row as a dict, None, None) for each row of an open Parquet file, or (row, None,
    reason, detail) for one that must not be read: a text over `cap` bytes is `too_large` without
    ever becoming a Python string (nor the other values of its row), a text column that is not a
    string or a row group that does not decode makes its rows `unreadable`, each with its own row
    number so the funnel counts them. Memory is bounded by the text decoded at once
    (BATCH_BYTES), however the file repeats a text through its dictionary (a bomb)."""
    typ = pf.schema_arrow.field(text_column).type
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ) or pa.types.is_dictionary(typ)):
        n = pf.metadata.num_rows  # bad input, not a bug
        detail = f"{id_path}: column {text_column!r} is {typ}, not a string"
        for r in range(n if n <= MAX_LOST_ROWS else 1):
            yield r, None, UNREADABLE, detail
        return
    # The text column read dictionary-encoded: a dictionary page holds each distinct text once, so
    # a few kB can stand for gigabytes once decoded row by row.
    pf = pq.ParquetFile(fh, read_dictionary=[text_column])
    row = 0
    for g in range(pf.num_row_groups):
        md = pf.metadata.row_group(g)
        n, end = md.num_rows, row + md.num_rows
        # Rows per batch from the row group's inflated size (its footer's), so a batch of large
        # rows does not sit in memory whole.
        per_row = md.total_byte_size / max(n, 1)
        size = max(1, min(batch_size, int(BATCH_BYTES // max(per_row, 1))))
        batches = pf.iter_batches(batch_size=size, row_groups=[g], columns=columns)
        while True:
            try:
                batch = next(batches, None)
            except (OSError, ValueError, pa.ArrowException) as exc:
                # Every row of the group not yet read is lost: one row each. A footer claiming
                # absurd counts gets one row.
                detail = f"{id_path}: row group {g} (rows {row}..{end - 1}) unreadable: {type(exc).__name__}: {exc}"
                for r in range(row, end if end - row <= MAX_LOST_ROWS else row + 1):
                    yield r, None, UNREADABLE, detail
                break
            if batch is None:
                break
            yield from _batch_rows(id_path, row, batch, text_column, cap)
            row += batch.num_rows
        row = end


def _batch_rows(id_path: str, row: int, batch: pa.RecordBatch, text_column: str, cap: int):
    col = batch.column(batch.schema.get_field_index(text_column))
    values = col.dictionary if pa.types.is_dictionary(col.type) else col
    n = batch.num_rows
    lens = [0] * n
    if (pa.types.is_string(values.type) or pa.types.is_large_string(values.type) or pa.types.is_binary(values.type)
            or pa.types.is_large_binary(values.type)):
        lengths = pc.binary_length(values)
        if values is not col:
            lengths = lengths.take(col.indices)
        lens = pc.fill_null(lengths, 0).to_pylist()
    # Rows become Python objects a slice at a time, each slice holding at most BATCH_BYTES of text
    # once decoded.
    start, held = 0, 0
    for i in range(n + 1):
        if i < n and lens[i] <= cap and (held + lens[i] <= BATCH_BYTES or i == start):
            held += lens[i]
            continue
        for j, obj in enumerate(pylist_rows(batch.slice(start, i - start)) if i > start else []):
            yield row + start + j, obj, None, None
        if i < n and lens[i] > cap:
            yield row + i, None, TOO_LARGE, f"{id_path}:row {row + i}: text over max_document_bytes ({cap})"
            start, held = i + 1, 0
        else:
            start, held = i, lens[i] if i < n else 0


def pylist_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """The batch's rows as dicts. A column holding a value Python cannot (a timestamp past year
    9999: OverflowError) is given as Arrow's text for each value instead of losing the batch."""
    try:
        return batch.to_pylist()
    except (OverflowError, ValueError, pa.ArrowException):
        pass
    cols = {}
    for name, col in zip(batch.schema.names, batch.columns):
        try:
            cols[name] = col.to_pylist()
        except (OverflowError, ValueError, pa.ArrowException):
            try:
                cols[name] = col.cast(pa.string()).to_pylist()
            except (ValueError, pa.ArrowException):  # a nested column Arrow cannot cast to text
                cols[name] = [None if not col[i].is_valid else col.slice(i, 1).to_string(skip_new_lines=True)
                              for i in range(len(col))]  # Arrow's own printing: it never goes through Python
    return [dict(zip(cols, row)) for row in zip(*cols.values())]
