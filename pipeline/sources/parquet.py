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
READ_BUFFER = 1 << 20  # a column chunk is read through a buffer of this size, a page at a time, not whole


class _OverCap:
    """A row's value too large for metadata by size, left in Arrow (its name goes to `_omitted`)."""

    def __repr__(self) -> str:
        return "OVER_CAP"


OVER_CAP = _OverCap()


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
            # no names: metadata by size, so a value too large to keep is never turned into Python
            by_size = cfg.max_metadata_field_bytes if cfg.metadata_fields is None else None
            for row, obj, reason, detail in bounded_rows(fh, pf, id_path, cfg.text_column, cfg.max_document_bytes,
                                                         cfg.batch_size, columns, by_size, keep=cfg.url_column):
                yield self._row(id_path, row, obj) if reason is None else self.rejected(id_path, row, reason, detail)

    def _row(self, id_path: str, row: int, obj: dict[str, Any]) -> dict[str, Any]:
        cfg: ParquetConfig = self.config  # type: ignore[assignment]
        names = list(obj)
        text = obj.pop(cfg.text_column)
        if not isinstance(text, str):
            return self.unreadable(id_path, row, f"{id_path}:row {row}: {cfg.text_column} is not a string")
        doc_url = obj.pop(cfg.url_column, None) if cfg.url_column else None
        over = {k for k, v in obj.items() if v is OVER_CAP}
        if over:
            obj = {k: v for k, v in obj.items() if v is not OVER_CAP}
        meta = pick_metadata(json.loads(json.dumps(obj, default=str)), cfg.metadata_fields, cfg.max_metadata_field_bytes)
        if over:  # named in column order, as pick_metadata names the others
            omitted = over | set(meta.pop("_omitted", ()))
            meta["_omitted"] = [k for k in names if k in omitted]
        return self.record(id_path, row, unicodedata.normalize("NFC", text),
                           url=doc_url if isinstance(doc_url, str) else None, metadata=meta)


def bounded_rows(fh, pf: pq.ParquetFile, id_path: str, text_column: str, cap: int, batch_size: int,
                 columns: list[str] | None = None, meta_cap: int | None = None,
                 keep: str | None = None) -> Iterator[tuple[int, dict | None, str | None, str | None]]:
    """(row number, row as a dict, None, None) for each row of an open Parquet file, or (row, None,
    reason, detail) for one that must not be read: a text over `cap` bytes is `too_large` without
    ever becoming a Python string (nor the other values of its row), a text column that is not a
    string or a row group that does not decode makes its rows `unreadable`, each with its own row
    number so the funnel counts them. Memory is bounded by the text decoded at once
    (BATCH_BYTES), however the file repeats a text through its dictionary (a bomb).

    `meta_cap` (metadata chosen by size): a string or binary value of another column (but `keep`)
    whose bytes alone make its JSON longer than `meta_cap` is OVER_CAP in its row, never a Python
    object; those columns are read dictionary-encoded too, so a value repeated through a
    dictionary is held once, and column chunks are read a page at a time (READ_BUFFER), so a huge
    column is never in memory whole."""
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
    others = [] if meta_cap is None else [
        f.name for f in pf.schema_arrow if f.name not in (text_column, keep) and (columns is None or f.name in columns)
        and _is_bytes(f.type)]
    pf = pq.ParquetFile(fh, read_dictionary=[text_column, *others], buffer_size=READ_BUFFER, pre_buffer=False)
    order = columns if columns is not None else pf.schema_arrow.names
    leaf = {pf.metadata.schema.column(i).path: i for i in range(pf.metadata.num_columns)}
    row = 0
    for g in range(pf.num_row_groups):
        md = pf.metadata.row_group(g)
        n, end = md.num_rows, row + md.num_rows
        # Rows per batch from the row group's inflated size (its footer's), so a batch of large
        # rows does not sit in memory whole.
        per_row = md.total_byte_size / max(n, 1)
        size = max(1, min(batch_size, int(BATCH_BYTES // max(per_row, 1))))
        # A column too large to decode at once whose values average over meta_cap is not read in
        # this row group (a page can hold all its values: it would be decoded whole).
        skipped = [name for name in others if name in leaf and _too_big(md.column(leaf[name]), n, meta_cap)]  # type: ignore[arg-type]
        read = [c for c in order if c not in skipped] if skipped else columns
        batches = pf.iter_batches(batch_size=size, row_groups=[g], columns=read)
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
            over = {}
            for name in others:
                if name not in skipped:
                    batch, over[name] = _without_big(batch, name, meta_cap)  # type: ignore[arg-type]
            if skipped or any(m is not None for m in over.values()):
                for r, obj, reason, detail in _batch_rows(id_path, row, batch, text_column, cap):
                    if obj is not None:
                        for name, mask in over.items():
                            if mask is not None and mask[r - row]:
                                obj[name] = OVER_CAP
                        if skipped:
                            obj = {k: obj.get(k, OVER_CAP) for k in order}
                    yield r, obj, reason, detail
            else:
                yield from _batch_rows(id_path, row, batch, text_column, cap)
            row += batch.num_rows
        row = end


def _is_bytes(typ: pa.DataType) -> bool:
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ))


def _too_big(chunk: pq.ColumnChunkMetaData, rows: int, meta_cap: int) -> bool:
    """A column chunk over BATCH_BYTES once decompressed whose values average over `meta_cap`
    bytes: its values are, but for a few, too large for metadata by size."""
    return chunk.total_uncompressed_size > BATCH_BYTES and chunk.total_uncompressed_size > meta_cap * max(rows, 1)


def _without_big(batch: pa.RecordBatch, name: str, meta_cap: int) -> tuple[pa.RecordBatch, list[bool] | None]:
    """The batch with column `name`'s values too large for metadata made null, and which rows
    they were (None: no such value). A value of n bytes is at least n + 2 bytes of JSON (a string's
    escapes only lengthen it; bytes are written as their Python repr), so it is over `meta_cap`
    whatever its content: decided from its length, without a Python object."""
    i = batch.schema.get_field_index(name)
    col = batch.column(i)
    dictionary = pa.types.is_dictionary(col.type)
    lengths = pc.binary_length(col.dictionary if dictionary else col)
    if dictionary:
        lengths = lengths.take(col.indices)
    big = pc.fill_null(pc.greater(lengths, meta_cap - 2), False)
    if not pc.any(big).as_py():
        return batch, None
    if dictionary:
        # the indices of the big values nulled; then the dictionary is cut to the values still named
        kept = pa.DictionaryArray.from_arrays(pc.if_else(big, pa.scalar(None, col.indices.type), col.indices),
                                              col.dictionary)
        kept = pc.cast(kept, col.type.value_type)  # every value now small: decoded, under meta_cap each
    else:
        kept = pc.if_else(big, pa.scalar(None, col.type), col)
    return batch.set_column(i, batch.schema.field(i).with_type(kept.type), kept), big.to_pylist()


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
