"""JSON Lines documents (.jsonl, .jsonl.gz, .jsonl.zst, ...), one document per line."""
from __future__ import annotations

import json
import unicodedata
from typing import Any, Iterator

from pipeline.sources.base import TOO_LARGE, Source, SourceConfig, capped_lines, open_binary


class JsonlConfig(SourceConfig):
    kind: str = "jsonl"
    text_field: str = "text"
    url_field: str | None = "url"


class JsonlSource(Source):
    kind = "jsonl"
    Config = JsonlConfig

    def records(self, url: str, id_path: str) -> Iterator[dict[str, Any]]:
        cfg: JsonlConfig = self.config  # type: ignore[assignment]
        cap = cfg.max_document_bytes
        with open_binary(url) as fh:
            for lineno, raw in capped_lines(fh, cap):
                where = f"{id_path}:line {lineno}"
                if raw is None:
                    yield self.rejected(id_path, lineno, TOO_LARGE, f"{where}: longer than max_document_bytes ({cap})")
                    continue
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError) as exc:  # also nesting too deep, an int over 4,300 digits
                    yield self.unreadable(id_path, lineno, f"{where}: invalid JSON: {type(exc).__name__}: {exc}")
                    continue
                if not isinstance(obj, dict) or not isinstance(obj.get(cfg.text_field), str):
                    yield self.unreadable(id_path, lineno, f"{where}: no string field {cfg.text_field!r}")
                    continue
                text = unicodedata.normalize("NFC", obj.pop(cfg.text_field))
                doc_url = obj.get(cfg.url_field) if cfg.url_field else None
                meta = {k: v for k, v in obj.items() if k != cfg.url_field}
                try:
                    rec = self.record(id_path, lineno, text, url=doc_url if isinstance(doc_url, str) else None,
                                      metadata=meta)
                except RecursionError as exc:  # metadata nested too deep to write back as JSON
                    rec = self.unreadable(id_path, lineno, f"{where}: metadata nested too deep: {exc}")
                yield rec
