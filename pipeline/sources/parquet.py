"""Parquet files with a text column (e.g. another pipeline's output, Hugging Face datasets)."""
from __future__ import annotations

import json
import unicodedata
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.sources.base import Source, SourceConfig, open_binary


MAX_LOST_ROWS = 10_000_000


class ParquetConfig(SourceConfig):
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
            row = 0
            for g in range(pf.num_row_groups):
                n = pf.metadata.row_group(g).num_rows
                try:
                    batches = list(pf.iter_batches(batch_size=self.config.batch_size, row_groups=[g]))
                except (OSError, ValueError, pa.ArrowException) as exc:
                    # Every row the group held is lost: one row each (own id, true row number),
                    # so the funnel counts them. A footer claiming absurd counts gets one row.
                    detail = f"{id_path}: row group {g} (rows {row}..{row + n - 1}) unreadable: {type(exc).__name__}: {exc}"
                    for r in range(row, row + (n if n <= MAX_LOST_ROWS else 1)):
                        yield self.unreadable(id_path, r, detail)
                    row += n
                    continue
                for batch in batches:
                    for obj in pylist_rows(batch):
                        yield self._row(id_path, row, obj)
                        row += 1

    def _row(self, id_path: str, row: int, obj: dict[str, Any]) -> dict[str, Any]:
        cfg: ParquetConfig = self.config  # type: ignore[assignment]
        text = obj.pop(cfg.text_column)
        if not isinstance(text, str):
            return self.unreadable(id_path, row, f"{id_path}:row {row}: {cfg.text_column} is not a string")
        doc_url = obj.pop(cfg.url_column, None) if cfg.url_column else None
        meta = json.loads(json.dumps(obj, default=str))
        return self.record(id_path, row, unicodedata.normalize("NFC", text),
                           url=doc_url if isinstance(doc_url, str) else None, metadata=meta)


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
            cols[name] = col.cast(pa.string()).to_pylist()
    return [dict(zip(cols, row)) for row in zip(*cols.values())]
