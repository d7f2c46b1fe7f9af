"""Paths that are local files or fsspec URLs (s3://, gs://, file://, memory://), behind one small API.

Why one module: outputs, spills, global-stage intermediates, reports and mixtures must live on
object storage when the nodes of a cluster share no disk, and object stores have no directories
and no atomic rename. Everything that writes or reads a run goes through these functions, which
keep local paths on the fast local code path (plain `open`, `os.replace`) and send URLs to fsspec.
`file://` URLs become plain local paths (`--out file:///data/out` never creates a `file:` folder).

Credentials and endpoints come from each filesystem's own environment and config files (for s3fs:
AWS_ACCESS_KEY_ID, AWS_PROFILE, AWS_ENDPOINT_URL, ~/.aws/...; for gcsfs: GOOGLE_APPLICATION_CREDENTIALS),
never from a recipe.

Writers for other modules (the retune helper, global stages):
  - `parquet_writer(url, schema)` / `write_parquet(url, table)`; `open_parquet(url)` / `read_parquet(url)`
  - `write_bytes(url, data)` / `write_json(url, obj)`: complete or absent (local: temp + rename;
    object store: one PUT, which is atomic for readers)
  - `create_exclusive(url, data)`: False if the object exists (local O_EXCL; S3 If-None-Match)
  - `committed_files(run, subdir)`: the files a finished run's `_SUCCESS` manifest lists
"""
from __future__ import annotations

import json
import logging
import os
import posixpath
import time
import uuid
from typing import IO, Any, Iterable

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

MANIFEST = "_SUCCESS"  # written last by a finished run: every committed output file, relative to OUT


# -- names ----------------------------------------------------------------------------------------
def normalize(path: str) -> str:
    """`file://` URLs and `~` become plain local paths; other URLs are kept as they are."""
    path = str(path)
    if path.startswith("file://"):
        return path[len("file://"):] or "/"
    if "://" in path:
        return path.rstrip("/") if not path.endswith("://") else path
    return os.path.expanduser(path)


def is_url(path: str) -> bool:
    """True for a non-local fsspec URL (s3://, gs://, memory://, ...)."""
    return "://" in normalize(path)


def protocol(path: str) -> str:
    path = normalize(path)
    return path.split("://", 1)[0] if "://" in path else "file"


def join(base: str, *parts: str) -> str:
    base = normalize(base)
    if is_url(base):
        return posixpath.join(base, *parts)
    return os.path.join(base, *parts)


def dirname(path: str) -> str:
    path = normalize(path)
    return posixpath.dirname(path) if is_url(path) else os.path.dirname(path)


def basename(path: str) -> str:
    return posixpath.basename(normalize(path).rstrip("/"))


def relative(path: str, base: str) -> str:
    """`path` below `base`, with `/` separators."""
    path, base = normalize(path), normalize(base).rstrip("/")
    if is_url(path):
        return path[len(base):].lstrip("/")
    return os.path.relpath(path, base).replace(os.sep, "/")


def absolute(path: str) -> str:
    """Local paths made absolute (so workers with another working directory find them)."""
    path = normalize(path)
    return path if is_url(path) else os.path.abspath(path)


def inside(path: str, root: str) -> bool:
    """True when `path` is `root` or below it (same protocol, compared by absolute name)."""
    a, b = absolute(path).rstrip("/"), absolute(root).rstrip("/")
    if protocol(a) != protocol(b):
        return False
    if not is_url(a):
        a, b = os.path.realpath(a), os.path.realpath(b)
    return a == b or a.startswith(b.rstrip("/") + "/")


def filesystem(path: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """(fsspec filesystem, path within it) for a URL or a local path."""
    fs, p = fsspec.core.url_to_fs(normalize(path))
    return fs, p


def _fresh(path: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """Like `filesystem`, with fsspec's listing cache for `path` dropped: other processes (workers,
    another run) change the store, and a stale listing would hide their files."""
    fs, p = filesystem(path)
    fs.invalidate_cache(p)
    return fs, p


def _forget(fs: fsspec.AbstractFileSystem, p: str) -> None:
    """Drop the listing fsspec cached while listing `p`. The filesystem object is shared by the
    whole process (fsspec caches instances), and s3fs answers `open` and `info` of a file from a
    cached listing of its folder when there is one: a file written after the listing (by a worker,
    a task) would be "not found" until the cache expires. refinery lists its outputs only to act
    on them at once, so it keeps no listing (below `p` either: `find` caches every folder it met)."""
    cache = getattr(fs, "dircache", None)
    if cache is not None:
        below = p.rstrip("/") + "/"
        for key in [k for k in list(cache) if k.startswith(below)]:
            cache.pop(key, None)
    fs.invalidate_cache(p)


def _url(fs: fsspec.AbstractFileSystem, p: str, like: str) -> str:
    """A path fsspec returned, as a URL of the same protocol as `like` (local: a plain path)."""
    if not is_url(like):
        return p
    return p if "://" in p else f"{protocol(like)}://{p}"


# -- queries --------------------------------------------------------------------------------------
def exists(path: str) -> bool:
    path = normalize(path)
    if not is_url(path):
        return os.path.exists(path)
    fs, p = _fresh(path)
    return fs.exists(p)


def isdir(path: str) -> bool:
    path = normalize(path)
    if not is_url(path):
        return os.path.isdir(path)
    fs, p = _fresh(path)
    return fs.isdir(p)


def isfile(path: str) -> bool:
    path = normalize(path)
    if not is_url(path):
        return os.path.isfile(path)
    fs, p = _fresh(path)
    return fs.isfile(p)


def info(path: str) -> dict[str, Any]:
    fs, p = _fresh(path)
    return fs.info(p)


def size(path: str) -> int:
    path = normalize(path)
    if not is_url(path):
        return os.path.getsize(path)
    return int(info(path).get("size") or 0)


def stamp(path: str) -> str:
    """What changes when a file is replaced: size and mtime locally, size and ETag (or generation,
    or mtime) on object stores."""
    path = normalize(path)
    if not is_url(path):
        st = os.stat(path)
        return f"size={st.st_size} mtime={st.st_mtime_ns}"
    fs, p = filesystem(path)  # listing cache kept: the inputs were just listed (no HEAD per file)
    i = fs.info(p)
    tag = i.get("ETag") or i.get("etag") or i.get("generation") or i.get("md5Hash") or i.get("mtime") \
        or i.get("LastModified") or i.get("created")
    return f"size={i.get('size')} etag={str(tag).strip(chr(34))}"


def listdir(path: str) -> list[str]:
    """Names (not paths) directly below `path`; [] when it does not exist."""
    path = normalize(path)
    if not is_url(path):
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError:
            return []
    fs, p = _fresh(path)
    try:
        return sorted(posixpath.basename(x.rstrip("/")) for x in fs.ls(p, detail=False))
    except FileNotFoundError:
        return []
    finally:
        _forget(fs, p)


def find(path: str) -> list[str]:
    """Every file below `path`, recursively, as paths/URLs like `path`."""
    path = normalize(path)
    if not is_url(path):
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
    fs, p = _fresh(path)
    try:
        return sorted(_url(fs, x, path) for x in fs.find(p))
    except FileNotFoundError:
        return []
    finally:
        _forget(fs, p)


# -- reading and writing --------------------------------------------------------------------------
def makedirs(path: str) -> None:
    """Create a local directory (object stores have none: a no-op there)."""
    path = normalize(path)
    if not is_url(path):
        os.makedirs(path, exist_ok=True)
    elif protocol(path) == "memory":
        filesystem(path)[0].makedirs(filesystem(path)[1], exist_ok=True)


def open_file(path: str, mode: str = "rb", **kw: Any) -> IO:
    path = normalize(path)
    if not is_url(path):
        if "w" in mode or "a" in mode or "x" in mode:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        return open(path, mode, **kw)
    fs, p = filesystem(path) if "r" not in mode else _fresh(path)  # a file just written by another process
    return fs.open(p, mode, **kw)


def read_bytes(path: str) -> bytes:
    with open_file(path, "rb") as fh:
        return fh.read()


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8")


def write_bytes(path: str, data: bytes) -> None:
    """Readers see the old content or the whole new one, never a part: locally a temporary name
    renamed into place; on an object store one PUT (atomic for readers)."""
    path = normalize(path)
    if not is_url(path):
        def put(fh):
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _replace_local(path, put)
        return
    fs, p = filesystem(path)
    fs.pipe_file(p, data)


def _replace_local(path: str, write) -> None:
    """Write a local file under a temporary name with `write(binary file)`, then rename it into
    place, so a reader sees the whole file or none; the temporary is removed on any failure."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}-{uuid.uuid4().hex[:6]}"
    try:
        with open(tmp, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_lines(path: str, lines: Iterable[str]) -> None:
    """Write text lines as they come (no whole copy in memory): locally a temporary renamed into
    place (complete or absent); on an object store one streamed upload, which readers see once it
    is closed (an error while writing may leave a partial object: write it before a manifest)."""
    path = normalize(path)
    if not is_url(path):
        _replace_local(path, lambda fh: fh.writelines(line.encode("utf-8") for line in lines))
        return
    fs, p = filesystem(path)
    with fs.open(p, "wb") as fh:
        for line in lines:
            fh.write(line.encode("utf-8"))


def write_json(path: str, obj: Any, indent: int | None = 1) -> None:
    write_bytes(path, (json.dumps(obj, indent=indent, default=str) + "\n").encode("utf-8"))


def read_json(path: str) -> Any | None:
    """The JSON at `path`, or None when it is absent or unreadable."""
    try:
        return json.loads(read_bytes(path))
    except (OSError, ValueError):
        return None


def create_exclusive(path: str, data: bytes) -> bool:
    """Write `path` only if nothing is there; False if it exists. Local: O_EXCL; S3: a conditional
    PUT (If-None-Match), which s3fs sends for mode "xb"."""
    path = normalize(path)
    if not is_url(path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True
    fs, p = _fresh(path)
    if not conditional_writes(path):
        # the store ignores If-None-Match (s3rver, some gateways): look, write, read back. Two
        # writers at the same instant can still both see their own bytes: callers say so.
        if fs.exists(p):
            return False
        fs.pipe_file(p, data)
        fs.invalidate_cache(p)
        return fs.cat_file(p) == data
    try:
        with fs.open(p, "xb") as fh:
            fh.write(data)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if _precondition_failed(exc):
            return False
        raise


def _precondition_failed(exc: BaseException) -> bool:
    """True for an object store's refusal of a conditional PUT because the object exists: HTTP 412
    (PreconditionFailed) or 409 (ConditionalRequestConflict: another conditional write to the same
    key is in flight). s3fs makes it FileExistsError only when the reply names the condition
    (`<Condition>If-None-Match</Condition>`), which SeaweedFS's does not: then it is an
    OSError(EINVAL) whose cause is the store's reply."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            code = str((response.get("Error") or {}).get("Code", ""))
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "412", "ConditionalRequestConflict") or status in (409, 412):
                return True
        exc = exc.__cause__ or exc.__context__
    return False


_CONDITIONAL: dict[tuple[str, str], bool] = {}


def conditional_writes(path: str) -> bool:
    """Whether the store at `path` refuses an exclusive create of an existing object. Local disk
    and stores fsspec says nothing about: True. Object stores are probed once per bucket and process
    (a probe object below `path`'s folder is created twice, then deleted): a store that silently
    overwrites gives False."""
    path = normalize(path)
    if not is_url(path) or protocol(path) == "memory":
        return True
    fs, p = filesystem(path)
    key = (protocol(path), getattr(fs, "_fs_token", ""), os.environ.get("AWS_ENDPOINT_URL", ""), p.split("/", 1)[0])
    if key not in _CONDITIONAL:
        probe = posixpath.join(posixpath.dirname(p), f".refinery-probe-{uuid.uuid4().hex[:12]}")
        try:
            with fs.open(probe, "xb") as fh:
                fh.write(b"1")
            try:
                with fs.open(probe, "xb") as fh:
                    fh.write(b"2")
                honoured = False
            except FileExistsError:
                honoured = True
            except OSError as exc:
                if not _precondition_failed(exc):
                    raise
                honoured = True
        except (ValueError, NotImplementedError):  # a filesystem without mode "xb"
            honoured = False
        finally:
            try:
                fs.rm_file(probe)
            except FileNotFoundError:
                pass
        _CONDITIONAL[key] = honoured
    return _CONDITIONAL[key]


def remove(path: str) -> None:
    """Delete one file; absent is fine."""
    path = normalize(path)
    try:
        if not is_url(path):
            os.remove(path)
        else:
            fs, p = filesystem(path)
            fs.rm_file(p)
    except FileNotFoundError:
        pass


def remove_many(paths: Iterable[str]) -> int:
    n = 0
    for p in paths:
        remove(p)
        n += 1
    return n


def rmtree(path: str) -> None:
    """Delete a directory tree (callers decide it holds only what refinery wrote); absent is fine."""
    path = normalize(path)
    if not is_url(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    fs, p = filesystem(path)
    try:
        fs.rm(p, recursive=True)
    except FileNotFoundError:
        pass


def copy_file(src: str, dst: str) -> None:
    """The bytes of `src` at `dst`, without passing them through Python where the store allows:
    locally the kernel copies (copy_file_range) into a temporary name renamed into place; within
    one object store, the store's own copy. Never a hard link: a later rewrite of one file in place
    must not change the other."""
    src, dst = normalize(src), normalize(dst)
    if not is_url(src) and not is_url(dst):
        _replace_local(dst, lambda fh: _copy_into(src, fh))
        return
    if protocol(src) == protocol(dst):
        fs, s_ = filesystem(src)
        fs.copy(s_, filesystem(dst)[1])
        return
    write_bytes(dst, read_bytes(src))


def _copy_into(src: str, fh: IO) -> None:
    import shutil

    with open(src, "rb") as inp:
        size = os.fstat(inp.fileno()).st_size
        done = 0
        try:
            while done < size:
                n = os.copy_file_range(inp.fileno(), fh.fileno(), size - done)
                if n <= 0:
                    break
                done += n
        except (AttributeError, OSError):  # no copy_file_range here (or across these filesystems)
            pass
        if done < size:
            inp.seek(done)
            fh.seek(done)
            shutil.copyfileobj(inp, fh, 1 << 20)
    fh.flush()
    os.fsync(fh.fileno())


def upload_dir(local_dir: str, url: str) -> None:
    """Copy a local directory tree to `url` (a local path or URL)."""
    for f in find(local_dir):
        dest = join(url, relative(f, local_dir))
        if is_url(url):
            fs, p = filesystem(dest)
            fs.put_file(f, p)
        else:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            import shutil

            shutil.copyfile(f, dest)


# -- Parquet --------------------------------------------------------------------------------------
class _ClosingWriter(pq.ParquetWriter):
    """A ParquetWriter that closes the fsspec file it writes to."""

    def __init__(self, fh: IO, schema: pa.Schema, **kw: Any):
        super().__init__(fh, schema, **kw)
        self._fh = fh

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._fh.close()


def parquet_writer(path: str, schema: pa.Schema, compression: str = "zstd", **kw: Any) -> pq.ParquetWriter:
    path = normalize(path)
    if not is_url(path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        return pq.ParquetWriter(path, schema, compression=compression, **kw)
    return _ClosingWriter(open_file(path, "wb"), schema, compression=compression, **kw)


def write_parquet(path: str, table: pa.Table, compression: str = "zstd", **kw: Any) -> None:
    w = parquet_writer(path, table.schema, compression=compression, **kw)
    try:
        w.write_table(table)
    finally:
        w.close()


def open_parquet(path: str) -> pq.ParquetFile:
    path = normalize(path)
    if not is_url(path):
        return pq.ParquetFile(path)
    return pq.ParquetFile(open_file(path, "rb"))


def read_parquet(path: str, columns: list[str] | None = None, filters: Any = None) -> pa.Table:
    path = normalize(path)
    if filters is None and not is_url(path) and os.path.isfile(path):
        # one local file: read it directly; pq.read_table goes through pyarrow.dataset, whose import
        # (it imports pandas) costs about 0.3 CPU-s in every command that reads a Parquet file
        with pq.ParquetFile(path) as pf:
            return pf.read(columns=columns)
    if not is_url(path):
        return pq.read_table(path, columns=columns, filters=filters)
    fs, p = filesystem(path)
    return pq.read_table(p, columns=columns, filters=filters, filesystem=fs)


def read_parquet_schema(path: str) -> pa.Schema:
    return open_parquet(path).schema_arrow


# -- what a finished run committed ------------------------------------------------------------------
def committed_files(run: str, subdir: str) -> list[str]:
    """The committed Parquet files of a run below `subdir` (e.g. "kept", "rejects/langid"), from
    its `_SUCCESS` manifest, so a reader never counts a file of a killed or retried attempt.

    A directory without a manifest that was not written by the runner (no `_state`; e.g. files put
    there by hand) is listed as it is. A runner's directory without a manifest is an unfinished run:
    OSError."""
    manifest = read_json(join(run, MANIFEST))
    prefix = subdir.strip("/") + "/"
    if manifest is not None:
        return [join(run, f) for f in manifest.get("files", []) if f.startswith(prefix) and "/" not in f[len(prefix):]]
    if exists(join(run, "_state")):
        raise OSError(f"{run}: the run is not finished (no {MANIFEST}); rerun it to complete")
    return sorted(f for f in find(join(run, subdir)) if f.endswith(".parquet") and dirname(f) == join(run, subdir).rstrip("/"))


def log_handler(path: str) -> logging.Handler:
    """A logging handler that appends to the text file `path`: a FileHandler for a local path; on an
    object store, which cannot append, one that keeps the lines and rewrites the object at most
    every few seconds and when it is closed."""
    if not is_url(path):
        return logging.FileHandler(normalize(path), encoding="utf-8", errors="backslashreplace")
    return _ObjectLog(path)


class _ObjectLog(logging.Handler):
    def __init__(self, url: str, every: float = 5.0):
        super().__init__()
        self.url, self.every, self.last = url, every, 0.0
        prev = read_bytes(url).decode("utf-8", "replace") if exists(url) else ""
        self.lines = [prev] if prev else []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + "\n")
        if time.time() - self.last > self.every:
            self.flush()

    def flush(self) -> None:
        try:
            write_text(self.url, "".join(self.lines))
            self.last = time.time()
        except Exception:
            pass

    def close(self) -> None:
        self.flush()
        super().close()
