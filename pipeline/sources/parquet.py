"""Parquet files with a text column (e.g. another pipeline's output, Hugging Face datasets)."""
from __future__ import annotations

import json
import unicodedata
from typing import Any, Iterator

import pyarrow.parquet as pq

from pipeline.sources.base import Source, SourceConfig, open_binary


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
            for batch in pf.iter_batches(batch_size=self.config.batch_size):
                for obj in batch.to_pylist():
                    text = obj.pop(cfg.text_column)
                    if not isinstance(text, str):
                        yield self.unreadable(id_path, row, f"{id_path}:row {row}: {cfg.text_column} is not a string")
                    else:
                        doc_url = obj.pop(cfg.url_column, None) if cfg.url_column else None
                        meta = json.loads(json.dumps(obj, default=str))
                        yield self.record(
                            id_path, row, unicodedata.normalize("NFC", text),
                            url=doc_url if isinstance(doc_url, str) else None, metadata=meta,
                        )
                    row += 1
