"""Readers: one class per source kind, each turning its input files into base-schema batches.

A reader never raises on bad input. A record it cannot parse, or one it must not pass on
(a non-HTML response, a non-200 status), becomes a row with `drop_reason` set (and
`drop_detail` saying where and why); the runner books it under the "read" stage of the ledger.
A file that cannot be opened at all yields one such row for the whole file.
"""
from __future__ import annotations

import fnmatch
import glob as _glob
import io
import json
import os
import stat
import struct
import tarfile
import traceback
import zlib
from typing import Any, ClassVar, Iterator

import fsspec
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import ConfigError
from pipeline.schema import BASE_FIELDS, make_record
from pipeline.sources import walk as _walk
from pipeline.sources.gzip_members import CorruptMember, MemberStream

READ_SCHEMA = pa.schema(
    BASE_FIELDS + [pa.field("drop_reason", pa.string()), pa.field("drop_detail", pa.string())]
)

# Reasons a reader may give.
UNREADABLE = "unreadable"
TOO_LARGE = "too_large"
INTERNAL_ERROR = "internal_error"  # a bug in refinery met while reading, not bad input

# What bad bytes raise while being parsed (decoders, archives, JSON, Arrow): anything else a reader
# raises is refinery's own bug and is booked as INTERNAL_ERROR with where it happened.
BAD_INPUT_ERRORS: tuple[type[BaseException], ...] = (
    OSError, EOFError, ValueError, zlib.error, tarfile.TarError, pa.ArrowException, struct.error,
    MemoryError, RecursionError,
)


def file_spans(files: list[tuple["Source", str, int]]) -> list[list[tuple[int, int]]]:
    """(source, url, size) -> the [start, end) spans its source cuts the file into (`Source.split`;
    [] to read it whole). Files on an object store are looked at 16 at a time (a ranged read or two
    per split point)."""
    from concurrent.futures import ThreadPoolExecutor

    def spans(item: tuple["Source", str, int]) -> list[tuple[int, int]]:
        source, url, size = item
        edges = [0] + (source.split(url, size) if size else []) + [size]
        return list(zip(edges, edges[1:])) if len(edges) > 2 else []

    with ThreadPoolExecutor(16 if any("://" in url for _, url, _ in files) else 1) as pool:
        return list(pool.map(spans, files))


def is_bad_input(exc: BaseException) -> bool:
    return isinstance(exc, BAD_INPUT_ERRORS)


def bug_detail(exc: BaseException) -> str:
    """The exception and the innermost frame it came from, for an internal-error row."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno} ({tb[-1].name})" if tb else ""
    return f"refinery bug: {type(exc).__name__}: {exc}{where}"


# A batch of read records is handed on once it holds this much text, whatever its row count.
READ_BATCH_CHARS = 64 << 20


class SourceConfig(BaseModel):
    """What every source has; each kind subclasses it with its own options."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    # Local paths, globs or fsspec URLs (s3://..., gs://..., https://...).
    paths: list[str] = Field(min_length=1)
    # Documents per Arrow batch handed to the stages.
    batch_size: int = Field(default=1000, gt=0)
    # A document larger than this (UTF-8 bytes of its text) is a `too_large` reject; readers that
    # can (JSONL) stop reading it at this size, so one huge line never sits in memory.
    max_document_bytes: int = Field(default=64 << 20, gt=0)
    # The run fails (exit 1, after writing everything) when more than this fraction of the
    # source's documents hit a refinery bug while being read (`internal_error` rows).
    max_internal_error_rate: float = Field(default=0.0001, ge=0, le=1)


class TabularConfig(SourceConfig):
    """Sources whose records carry fields of their own (JSONL, Parquet): which become metadata."""

    metadata_fields: list[str] | None = Field(
        None, description="fields kept as the document's metadata (besides text and url); null: every "
                          "field whose JSON value is at most max_metadata_field_bytes")
    max_metadata_field_bytes: int = Field(
        4096, gt=0, description="with metadata_fields null, a field larger than this (JSON bytes) is left "
                                "out and its name listed under `_omitted`, so raw HTML or embeddings in a "
                                "dataset's rows do not bloat every output file")


def pick_metadata(obj: dict[str, Any], fields: list[str] | None, cap: int) -> dict[str, Any]:
    """A record's other fields as metadata: the named ones, or (no names) those of at most `cap`
    JSON bytes, the others' names listed under `_omitted`."""
    if fields is not None:
        return {k: obj[k] for k in fields if k in obj}
    meta: dict[str, Any] = {}
    omitted = []
    for k, v in obj.items():
        if isinstance(v, str):
            small = len(v) * 6 + 2 <= cap or len(json.dumps(v)) <= cap  # most strings: no encoding
        elif v is None or isinstance(v, (bool, int, float)):
            small = True
        else:
            small = len(json.dumps(v, default=str)) <= cap
        if small:
            meta[k] = v
        else:
            omitted.append(k)
    if omitted:
        meta["_omitted"] = omitted
    return meta


class Source:
    kind: ClassVar[str] = ""
    Config: ClassVar[type[SourceConfig]] = SourceConfig

    def __init__(self, name: str, config: SourceConfig):
        self.name = name
        self.config = config

    # -- files ------------------------------------------------------------------------------
    def files(self) -> list[tuple[str, str]]:
        """(url, id_path) for every input file, sorted. `id_path` is relative to the glob's root,
        so document ids do not depend on where the data is mounted."""
        out: dict[str, str] = {}
        for pattern in self.config.paths:
            for url in expand(pattern):
                out[url] = relative_to_root(pattern, url)
        return sorted(out.items())

    def units(self, pattern: str) -> list[str]:
        """What one `paths` entry names (the recipe checks each names something)."""
        return expand(pattern)

    # -- refusals: what a folder or glob input must not read --------------------------------
    # Kinds whose units may be folders (a repository, an arXiv submission).
    folder_units: ClassVar[bool] = False

    def root_of(self, url: str) -> str | None:
        """The input root `url` was found below (the folder, or a glob's fixed folder), or None
        for a path named as it is in the recipe (the user chose that file, links included)."""
        best = None
        for pattern in self.config.paths:
            if "://" in pattern:
                continue
            p = os.path.expanduser(pattern)
            if p.rstrip("/") == url.rstrip("/"):
                return None
            if has_glob(p):
                root = _glob_root(p) or "."
            elif os.path.isdir(p):
                root = p.rstrip("/") or "/"
            else:
                continue
            if (url.startswith(root.rstrip("/") + "/") or root == ".") and (best is None or len(root) > len(best)):
                best = root
        return best

    def _named_link(self, url: str, root: str) -> bool:
        """True for a link to a regular file that a glob of `paths` matches itself (datasets linked
        in from shared storage), reached through no link to a folder. Links met inside a folder
        the glob matched, links to folders, and anything below a linked folder stay refused."""
        try:
            if not (os.path.islink(url) and stat.S_ISREG(os.stat(url).st_mode)):
                return False
        except OSError:
            return False
        if not _walk.inside(os.path.realpath(root), os.path.realpath(os.path.dirname(url) or ".")):
            return False
        return any(has_glob(p) and glob_names(os.path.expanduser(p), url)
                   for p in self.config.paths if "://" not in p)

    def refusal(self, url: str) -> tuple[str, str] | None:
        """(reason, detail) when a local unit must not be read: a link out of its input root, a
        link to a folder, a named pipe or device, a folder that cannot be listed."""
        if "://" in url:
            return None
        root = self.root_of(url)
        if root is not None:
            reason, detail, _ = _walk.classify(url, root)
            if reason == _walk.OUTSIDE_ROOT and self._named_link(url, root):
                reason = None  # a link to a file that the user's own glob names: their choice
            if reason is not None:
                return reason, f"{url}: {detail}"
        else:  # named in the recipe: links are the user's choice, pipes and devices still block
            try:
                mode = os.stat(url).st_mode
            except OSError:
                return None  # the reader says what is wrong with it
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return _walk.NOT_A_FILE, f"{url}: not a regular file ({_walk.kind_of(mode)})"
        if os.path.isdir(url):
            try:
                with os.scandir(url):
                    pass
            except OSError as exc:
                return UNREADABLE, f"{url}/: cannot list: {exc.strerror or exc}"
            if not self.folder_units:
                return _walk.NOT_A_FILE, f"{url}: a folder"
        return None

    # -- reading ----------------------------------------------------------------------------
    def split(self, url: str, size: int) -> list[int]:
        """Byte offsets where the file may be cut into parts read apart (sorted, inside the file);
        [] (the default): the file is read whole."""
        return []

    def read(self, url: str, id_path: str, span: tuple[int, int] | None = None) -> Iterator[pa.Table]:
        """Yield READ_SCHEMA batches of at most `batch_size` rows and about READ_BATCH_CHARS of text.
        `span`: the [start, end) bytes of a file cut at `split`'s offsets (its records that start there)."""
        batch: list[dict[str, Any]] = []
        refused = self.refusal(url)
        if refused is not None:
            yield to_read_table([self.rejected(id_path, 0, refused[0], refused[1], url=id_path)])
            return
        held = 0  # characters of text in `batch`: large documents make a batch of fewer rows
        try:
            for rec in (self.records(url, id_path) if span is None else self.records(url, id_path, span=span)):
                batch.append(rec)
                held += len(rec.get("text") or "")
                if len(batch) >= self.config.batch_size or held >= READ_BATCH_CHARS:
                    yield to_read_table(batch)
                    batch, held = [], 0
        except Exception as exc:  # a broken file ends here, after what it gave so far
            offset = batch[-1]["offset"] + 1 if batch else (span[0] if span else 0)
            if is_bad_input(exc):
                batch.append(self.unreadable(id_path, offset, f"{url}: {type(exc).__name__}: {exc}"))
            else:
                batch.append(self.rejected(id_path, offset, INTERNAL_ERROR, f"{url}: {bug_detail(exc)}"))
        if batch:
            yield to_read_table(batch)

    def records(self, url: str, id_path: str) -> Iterator[dict[str, Any]]:
        """Yield one dict per record: `self.record(...)` or `self.unreadable(...)`."""
        raise NotImplementedError

    def record(self, id_path: str, offset: int, text: str | None, **kw: Any) -> dict[str, Any]:
        cap = self.config.max_document_bytes
        if text is not None and len(text) * 4 > cap and len(text.encode("utf-8", "surrogatepass")) > cap:
            return self.rejected(id_path, offset, TOO_LARGE, f"{id_path}@{offset}: text over"
                                 f" max_document_bytes ({cap})", **kw)
        rec = make_record(source=self.name, kind=self.kind, file=id_path, offset=offset, text=text, **kw)
        rec["drop_reason"] = None
        rec["drop_detail"] = None
        return rec

    def rejected(self, id_path: str, offset: int, reason: str, detail: str, **kw: Any) -> dict[str, Any]:
        rec = make_record(source=self.name, kind=self.kind, file=id_path, offset=offset, text=kw.pop("text", None), **kw)
        rec["drop_reason"] = reason
        rec["drop_detail"] = detail
        return rec

    def unreadable(self, id_path: str, offset: int, detail: str) -> dict[str, Any]:
        return self.rejected(id_path, offset, UNREADABLE, detail)

    def failed(self, id_path: str, offset: int, where: str, exc: BaseException) -> dict[str, Any]:
        """An `unreadable` row for bad bytes, an `internal_error` row (with the frame) for a bug."""
        if is_bad_input(exc):
            return self.unreadable(id_path, offset, f"{where}: {type(exc).__name__}: {exc}")
        return self.rejected(id_path, offset, INTERNAL_ERROR, f"{where}: {bug_detail(exc)}")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("kind"):
            _KINDS[cls.kind] = cls


_KINDS: dict[str, type[Source]] = {}


def to_read_table(records: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(records, schema=READ_SCHEMA)


def has_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def glob_names(pattern: str, path: str) -> bool:
    """True when the glob `pattern` itself matches `path` (not a file found by walking a folder it
    matched): segment by segment, `**` standing for any number of folders, as `glob.glob(...,
    recursive=True)` reads it."""
    def parts(p: str) -> list[str]:
        return [x for x in os.path.normpath(p).split(os.sep) if x not in ("", ".")]

    pat, name = parts(pattern), parts(path)
    if os.path.isabs(pattern) != os.path.isabs(path):
        return False

    def match(i: int, j: int) -> bool:
        if i == len(pat):
            return j == len(name)
        if pat[i] == "**":
            return any(match(i + 1, k) for k in range(j, len(name) + 1))
        return j < len(name) and fnmatch.fnmatchcase(name[j], pat[i]) and match(i + 1, j + 1)

    return match(0, 0)


def _glob_root(pattern: str) -> str:
    root = pattern[: min(pattern.index(c) for c in "*?[" if c in pattern)]
    return root.rsplit("/", 1)[0] if "/" in root else ""


def expand(pattern: str) -> list[str]:
    """Files matching a local path, glob, directory or fsspec URL (directories expand recursively,
    by `walk`: links to folders are not followed). Entries a walk could not read (a link out of
    the input root, a named pipe, a folder that cannot be listed) are listed too: reading them
    gives one reject row with the reason (`Source.refusal`), so nothing is skipped silently."""
    if "://" not in pattern:
        pattern = os.path.expanduser(pattern)
        if has_glob(pattern):
            out = []
            for p in sorted(_glob.glob(pattern, recursive=True)):
                if os.path.isdir(p) and not os.path.islink(p):
                    out.extend(_walk_files(p, _glob_root(pattern) or "."))
                else:
                    out.append(p)
            return sorted(set(out))
        if os.path.isdir(pattern):
            return _walk_files(pattern, pattern)
        return [pattern] if os.path.lexists(pattern) else []
    fs, _, paths = fsspec.get_fs_token_paths(pattern)
    protocol = pattern.split("://", 1)[0]
    out = []
    for p in paths:
        if fs.isdir(p):
            out.extend(f for f in fs.find(p))
        elif fs.exists(p):
            out.append(p)
    return sorted(p if "://" in p else f"{protocol}://{p}" for p in out)


def _walk_files(top: str, root: str) -> list[str]:
    out = []
    for e in _walk.walk(top, root):
        if e.reason == _walk.WALK_LIMIT:
            raise ConfigError(f"{top}: {e.rel or top}: {e.detail}; name smaller folders in `paths`")
        out.append(os.path.join(top, e.rel) if e.rel else top)
    return sorted(out)


def relative_to_root(pattern: str, url: str) -> str:
    """The part of `url` below the pattern's fixed prefix (the directory before any glob)."""
    root = pattern
    if has_glob(root):
        root = root[: min(root.index(c) for c in "*?[" if c in root)]
        root = root.rsplit("/", 1)[0] if "/" in root else ""
    elif not url.rstrip("/") == pattern.rstrip("/"):
        root = pattern.rstrip("/")
    else:
        root = pattern.rsplit("/", 1)[0] if "/" in pattern else ""
    if "://" not in pattern:
        root = os.path.expanduser(root)
    rel = url[len(root):].lstrip("/") if root and url.startswith(root) else os.path.basename(url)
    return rel or os.path.basename(url)


def open_binary(url: str):
    """Open a local path or fsspec URL for reading bytes, decompressing by extension
    (.gz, .zst, .bz2, .xz). Buffered, so every codec's stream iterates by line."""
    return io.BufferedReader(fsspec.open(url, "rb", compression="infer").open())


def capped_lines(fh, cap: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number from 1, line) for every line; None for a line longer than `cap` bytes, which is
    skipped in pieces and never held whole."""
    lineno = 0
    while True:
        raw = fh.readline(cap + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > cap and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(1 << 20)
            yield lineno, None
            continue
        yield lineno, raw


def numbered_lines(url: str, cap: int) -> Iterator[tuple[int, bytes | None | CorruptMember]]:
    """`capped_lines` of a file. A .gz is read member by member: a member that does not decompress
    comes as its CorruptMember (taking one line number) and reading goes on at the next member, so
    in a concatenated file (`cat a.gz b.gz`) it costs its own lines, not every line of the file."""
    gz = url.lower().endswith((".gz", ".gzip"))
    with (io.BufferedReader(MemberStream(fsspec.open(url, "rb").open())) if gz else open_binary(url)) as fh:
        base = 0  # line numbers before the latest corrupt member
        while True:
            last = base
            try:
                for lineno, raw in capped_lines(fh, cap):
                    last = base + lineno
                    yield last, raw
                return
            except CorruptMember as exc:
                base = last + 1
                yield base, exc


def source_kinds() -> dict[str, type[Source]]:
    import importlib
    import pkgutil

    import pipeline.sources as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name != "base" and not mod.name.startswith("_"):
            importlib.import_module(f"pipeline.sources.{mod.name}")
    return dict(sorted(_KINDS.items()))
