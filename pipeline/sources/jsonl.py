"""JSON Lines documents (.jsonl, .jsonl.gz, .jsonl.zst, ...), one document per line."""
from __future__ import annotations

import json
import unicodedata
from typing import Any, Iterator

from pipeline.sources.base import TOO_LARGE, Source, TabularConfig, numbered_lines, pick_metadata
from pipeline.sources.gzip_members import CorruptMember


class JsonlConfig(TabularConfig):
    kind: str = "jsonl"
    text_field: str = "text"
    url_field: str | None = "url"


class JsonlSource(Source):
    kind = "jsonl"
    Config = JsonlConfig

    def records(self, url: str, id_path: str) -> Iterator[dict[str, Any]]:
        for lineno, raw in numbered_lines(url, self.config.max_document_bytes):
            if isinstance(raw, CorruptMember):
                yield self.unreadable(id_path, lineno, f"{id_path}: after line {lineno - 1}: {raw}")
                continue
            rec = self._line(id_path, lineno, raw)
            if rec is not None:
                yield rec

    def _line(self, id_path: str, lineno: int, raw: bytes | None) -> dict[str, Any] | None:
        cfg: JsonlConfig = self.config  # type: ignore[assignment]
        cap = cfg.max_document_bytes
        where = f"{id_path}:line {lineno}"
        if raw is None:
            return self.rejected(id_path, lineno, TOO_LARGE, f"{where}: longer than max_document_bytes ({cap})")
        if not raw.strip():
            return None
        replaced = 0
        try:  # utf-8-sig: a byte-order mark before a line is not part of its JSON
            line = raw.decode("utf-8-sig")
        except UnicodeDecodeError:  # JSON Lines is UTF-8: a byte that does not decode becomes U+FFFD
            line = raw.decode("utf-8-sig", "replace")
            replaced = len(raw) - len(raw.decode("utf-8", "ignore").encode("utf-8"))
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:  # also nesting too deep, an int over 4,300 digits
            return self.unreadable(id_path, lineno, f"{where}: invalid JSON: {type(exc).__name__}: {exc}")
        if not isinstance(obj, dict) or not isinstance(obj.get(cfg.text_field), str):
            return self.unreadable(id_path, lineno, f"{where}: no string field {cfg.text_field!r}")
        text = unicodedata.normalize("NFC", obj.pop(cfg.text_field))
        doc_url = obj.pop(cfg.url_field, None) if cfg.url_field else None
        meta = pick_metadata(obj, cfg.metadata_fields, cfg.max_metadata_field_bytes)
        if replaced:
            meta["replaced_bytes"] = replaced
        try:
            return self.record(id_path, lineno, text, url=doc_url if isinstance(doc_url, str) else None,
                               metadata=meta)
        except RecursionError as exc:  # metadata nested too deep to write back as JSON
            return self.unreadable(id_path, lineno, f"{where}: metadata nested too deep: {exc}")
