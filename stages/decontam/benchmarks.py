"""Reading a benchmark's test items from the file a recipe names.

A benchmark is a JSONL file (one JSON object per line), a Parquet file, or a plain text file (one
item per non-empty line), at a local path or an fsspec URL (s3://, gs://, https://, memory://...),
compressed or not (.gz, .bz2, .xz, .zst: by the name). For JSONL and Parquet the recipe names the
fields that together are the test item, in order (GSM8K: `question`, `answer`; HumanEval:
`prompt`, `canonical_solution`) and optionally the field that identifies it (`task_id`); without
one an item is named by its row number (0-based), the way papers cite GSM8K items.

Everything that would make the stage silently useless is an error here, at validation: a file that
cannot be read, a file without a single item, a field that no record has, a line that is not a
JSON object. (`BenchmarkError`: one line naming the file and, where it applies, the line.)
"""
from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import Iterator

import fsspec

FORMATS = ("auto", "jsonl", "parquet", "text")
_COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst", ".lz4")


class BenchmarkError(ValueError):
    """A benchmark file that cannot be used: the message is one line for the user."""


@dataclass(frozen=True)
class Item:
    id: str
    text: str


def file_format(path: str, fmt: str = "auto") -> str:
    if fmt != "auto":
        return fmt
    name = path.lower()
    for ext in _COMPRESSIONS:
        name = name.removesuffix(ext)
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith(".txt"):
        return "text"
    raise BenchmarkError(f"cannot tell the format of {path!r} from its name: set format (jsonl, parquet or text)")


def read_items(path: str, fields: list[str], id_field: str | None = None, fmt: str = "auto") -> list[Item]:
    """Every test item of the file, or BenchmarkError. Items whose fields are all empty are left out.

    A local file unchanged since the last read (same size and modification time) is not read again:
    the recipe is validated more than once per process (run, report yields, retune)."""
    try:
        st = os.stat(path) if "://" not in path else None
    except OSError:
        st = None
    if st is None:
        return _read_items(path, tuple(fields), id_field, fmt)
    return list(_read_local(path, tuple(fields), id_field, fmt, st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _read_local(path: str, fields: tuple[str, ...], id_field: str | None, fmt: str, size: int, mtime: int
                ) -> tuple[Item, ...]:
    return tuple(_read_items(path, fields, id_field, fmt))


def _read_items(path: str, fields: tuple[str, ...], id_field: str | None, fmt: str) -> list[Item]:
    fmt = file_format(path, fmt)
    if fmt == "text":
        if fields or id_field:
            raise BenchmarkError(f"{path!r} is plain text (one item per line): it has no fields to name")
        rows = _text_rows(path)
    else:
        if not fields:
            raise BenchmarkError(f"{path!r}: name the fields that make up a test item (fields: [...])")
        rows = _parquet_rows(path) if fmt == "parquet" else _jsonl_rows(path)
    items: list[Item] = []
    wanted = list(fields) + ([id_field] if id_field else [])
    seen_fields = False
    for where, i, rec in rows:
        if fmt == "text":
            text, item_id = rec, str(i)
        else:
            missing = [f for f in wanted if f not in rec]
            if missing:
                have = ", ".join(sorted(map(str, rec))) or "none"
                raise BenchmarkError(f"{path!r} {where}: no field {missing[0]!r} (its fields: {have})")
            seen_fields = True
            parts = [_as_text(rec[f]) for f in fields]
            text = "\n".join(p for p in parts if p)
            item_id = str(rec[id_field]) if id_field else str(i)
        if text.strip():
            items.append(Item(item_id, text))
    if not items:
        what = "items with text in the named fields" if seen_fields else "test items"
        raise BenchmarkError(f"{path!r} holds no {what}")
    return items


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):  # e.g. a list of choices or reference answers
        return "\n".join(_as_text(v) for v in value)
    return str(value)


def _open(path: str, mode: str = "rt"):
    try:
        return fsspec.open(path, mode, compression="infer", **({"encoding": "utf-8-sig"} if "t" in mode else {})).open()
    except Exception as exc:  # missing file, unknown protocol, no credentials, a directory...
        raise BenchmarkError(f"cannot read {path!r}: {_why(exc)}") from None


def _why(exc: Exception) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


def _text_rows(path: str) -> Iterator[tuple[str, int, str]]:
    f = _open(path)
    with f:
        i = 0
        try:
            for n, line in enumerate(f, 1):
                if line.strip():
                    yield f"line {n}", i, line.rstrip("\n")
                    i += 1
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            raise BenchmarkError(f"cannot read {path!r}: {_why(exc)}") from None


def _jsonl_rows(path: str) -> Iterator[tuple[str, int, dict]]:
    f = _open(path)
    with f:
        i = 0
        try:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BenchmarkError(f"{path!r} line {n}: not JSON ({exc.msg})") from None
                if not isinstance(rec, dict):
                    raise BenchmarkError(f"{path!r} line {n}: expected a JSON object, got {type(rec).__name__}")
                yield f"line {n}", i, rec
                i += 1
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            raise BenchmarkError(f"cannot read {path!r}: {_why(exc)}") from None


def _parquet_rows(path: str) -> Iterator[tuple[str, int, dict]]:
    import pyarrow.parquet as pq

    f = _open(path, "rb")
    with f:
        try:
            pf = pq.ParquetFile(f)
        except Exception as exc:
            raise BenchmarkError(f"cannot read {path!r} as Parquet: {_why(exc)}") from None
        i = 0
        for batch in pf.iter_batches(batch_size=4096):
            for rec in batch.to_pylist():
                yield f"row {i}", i, rec
                i += 1
