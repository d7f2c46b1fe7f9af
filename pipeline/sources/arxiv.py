"""arXiv LaTeX sources → one document per submission (the cleaned LaTeX body).

Accepts arXiv source in every shape it is distributed in: a submission's .tar.gz / .tgz / .tar,
a gzipped single .tex (arXiv's `.gz` without a tar inside), a plain .tex, a directory holding one
submission, and bulk tars (arXiv's requester-pays `arXiv_src_YYMM_NNN.tar`) holding many
submissions as members `YYMM.NNNNN.gz` (or `.pdf` for PDF-only ones). LaTeX handling lives in
pipeline/sources/latex.py. macOS `._*` resource forks, `__MACOSX/` and `.DS_Store` are ignored.

The offset is 0 for a single submission and the member's header offset in a bulk tar.
"""
from __future__ import annotations

import glob
import gzip
import io
import os
import posixpath
import re
import tarfile
import zlib
from typing import Any, Iterator

from pydantic import Field

from pipeline.sources.encoding import decode_counted, detect_charset, nfc
from pipeline.sources.latex import clean_submission
from pipeline.sources.base import TOO_LARGE, Source, SourceConfig, expand, has_glob, open_binary, relative_to_root
from pipeline.sources.walk import MAX_DEPTH, PRUNED, classify, read_regular, walk

NO_TEX = "no_tex_source"
NO_MAIN = "no_main_file"
NO_TEXT = "no_text"

_ARXIV_ID = re.compile(r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z][a-z\-]+(?:\.[A-Z]{2})?/?\d{7}(?:v\d+)?)")
_BULK_MEMBER = re.compile(r"(?:^|/)(\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+(?:\.[A-Z]{2})?\d{7}(?:v\d+)?)\.(gz|tar\.gz|tgz|tar|pdf)$")
_TEXT_EXT = (".tex", ".ltx", ".latex", ".bbl", ".sty", ".cls", ".def", ".cfg", ".txt", ".tikz", ".pgf")
_MAX_TEXT_FILE = 8 << 20
# Files that can hold a submission; anything else met while walking folders (README, SOURCE.txt,
# checksums) is not arXiv source and is not listed.
_UNIT_EXT = (".tar", ".tar.gz", ".tgz", ".gz", ".tex", ".ltx", ".latex", ".pdf", ".tar.zst", ".zst")


class ArxivConfig(SourceConfig):
    # Cut everything after \appendix (appendices are often tables and proofs; off by default).
    drop_appendix: bool = False
    # Expand argument-free \newcommand / \def macros in the body.
    expand_macros: bool = True
    max_submission_bytes: int = Field(default=512 << 20, gt=0)


class ArxivSource(Source):
    kind = "arxiv"
    Config = ArxivConfig

    # -- units: a directory holding .tex files is ONE submission, not many files -------------
    def files(self) -> list[tuple[str, str]]:
        out: dict[str, str] = {}
        for pattern in self.config.paths:
            for unit in self.units(pattern):
                out[unit] = relative_to_root(pattern, unit)
        return sorted(out.items())

    folder_units = True

    def units(self, pattern: str) -> list[str]:
        if "://" in pattern:
            return expand(pattern)
        pat = os.path.expanduser(pattern)
        tops = sorted(glob.glob(pat, recursive=True)) if has_glob(pat) else [pat]
        return [u for top in tops for u in _units(top, top == pat)]

    def records(self, url: str, id_path: str) -> Iterator[dict[str, Any]]:
        if os.path.isdir(url):
            files, skipped = _read_dir(url)
            yield self._submission(id_path, 0, files, _arxiv_id(id_path), skipped=skipped)
            return
        name = url.lower()
        if name.endswith(".pdf"):
            yield self.rejected(id_path, 0, NO_TEX, "PDF file", url=id_path, metadata={"arxiv_id": _arxiv_id(id_path)})
            return
        try:
            with open_binary(url) as fh:  # .gz / .tgz are decompressed here
                data = fh.read(self.config.max_submission_bytes + 1)
        except Exception as exc:
            yield self.failed(id_path, 0, id_path, exc)
            return
        if len(data) > self.config.max_submission_bytes:
            yield self.rejected(id_path, 0, TOO_LARGE, f"> {self.config.max_submission_bytes} bytes", url=id_path)
            return
        tar = _open_tar(data)
        if tar is None:
            if name.endswith((".tar", ".tgz", ".tar.gz")):
                yield self.unreadable(id_path, 0, f"{id_path}: not a readable tar archive")
                return
            if _looks_binary(data):
                yield self.rejected(id_path, 0, NO_TEX, "not LaTeX (binary content)", url=id_path)
                return
            # a gzipped (or plain) single .tex file
            base = posixpath.basename(id_path)
            for ext in (".gz", ".z"):
                if base.lower().endswith(ext):
                    base = base[: -len(ext)]
            if not base.lower().endswith((".tex", ".ltx", ".latex")):
                base += ".tex"
            yield self._submission(id_path, 0, {base: data}, _arxiv_id(id_path))
            return
        with tar:
            try:
                members = [m for m in tar.getmembers() if m.isfile()]
            except Exception as exc:
                yield self.failed(id_path, 0, f"{id_path}: corrupt tar", exc)
                return
            bulk = [m for m in members if _BULK_MEMBER.search(m.name)]
            if bulk and len(bulk) >= max(1, len(members) // 2):
                yield from self._bulk(tar, bulk, id_path)
            else:
                yield self._submission(id_path, 0, _read_tar(tar, members), _arxiv_id(id_path))

    # -- one submission -----------------------------------------------------------------------
    def _bulk(self, tar: tarfile.TarFile, members: list[tarfile.TarInfo], id_path: str) -> Iterator[dict[str, Any]]:
        for m in members:
            sub_path = f"{id_path}/{m.name}"
            aid = _arxiv_id(posixpath.basename(m.name))
            if m.name.lower().endswith(".pdf"):
                yield self.rejected(id_path, m.offset, NO_TEX, "PDF-only submission", url=sub_path, metadata={"arxiv_id": aid})
                continue
            cap = self.config.max_submission_bytes
            try:
                f = tar.extractfile(m)
                raw = f.read(cap + 1) if f else b""
                data = None if len(raw) > cap else _inflate_capped(raw, cap) if raw[:2] == b"\x1f\x8b" else raw
            except Exception as exc:
                yield self.failed(id_path, m.offset, sub_path, exc)
                continue
            if data is None or len(data) > cap:  # a bomb: stopped inflating at the cap
                yield self.rejected(id_path, m.offset, TOO_LARGE, f"{sub_path}: more than max_submission_bytes"
                                    f" ({cap}) once inflated", url=sub_path, metadata={"arxiv_id": aid})
                continue
            inner = _open_tar(data)
            if inner is None:
                if _looks_binary(data):
                    yield self.rejected(id_path, m.offset, NO_TEX, "not LaTeX (binary content)", url=sub_path, metadata={"arxiv_id": aid})
                    continue
                files = {f"{aid or 'main'}.tex": data}
            else:
                with inner:
                    try:
                        files = _read_tar(inner, [x for x in inner.getmembers() if x.isfile()])
                    except Exception as exc:
                        yield self.failed(id_path, m.offset, f"{sub_path}: corrupt tar", exc)
                        continue
            yield self._submission(id_path, m.offset, files, aid, url=sub_path)

    def _submission(self, id_path: str, offset: int, raw: dict[str, bytes], arxiv_id: str | None,
                    url: str | None = None, skipped: list[list[str]] | None = None) -> dict[str, Any]:
        url = url or id_path
        texts: dict[str, str] = {}
        replaced = 0
        for path, data in raw.items():
            if path.lower().endswith(_TEXT_EXT) or "." not in posixpath.basename(path):
                if len(data) > _MAX_TEXT_FILE or _looks_binary(data):
                    continue
                text, bad = _decode_tex(data)
                texts[path] = text
                if path.lower().endswith((".tex", ".ltx", ".latex")):
                    replaced += bad
        meta: dict[str, Any] = {"arxiv_id": arxiv_id, "n_files": len(raw)}
        if skipped:  # files of a folder submission not read (links out, pipes, unlistable folders)
            meta["skipped_files"] = skipped
        res = clean_submission(texts, drop_appendix=self.config.drop_appendix, expand=self.config.expand_macros)
        meta.update(
            main_file=res.main_file, files_used=res.files_used, missing_inputs=res.missing_inputs,
            macros_expanded=res.macros_expanded, appendix_removed=res.appendix_removed, replaced_bytes=replaced,
        )
        if res.text is None:
            detail = res.detail
            if res.reason == NO_TEX and not any(p.lower().endswith((".tex", ".ltx", ".latex")) for p in raw):
                kinds = sorted({posixpath.splitext(p)[1].lower() or "(none)" for p in raw})
                detail = f"no .tex file; files: {', '.join(kinds) or 'none'}"
            return self.rejected(id_path, offset, res.reason, detail, url=url, metadata=meta)
        return self.record(id_path, offset, nfc(res.text), url=url, metadata=meta)


# -- helpers --------------------------------------------------------------------------------------
def _units(top: str, named: bool = True, depth: int = 0) -> list[str]:
    """A file is a unit; a directory with .tex files directly inside is one submission; any other
    directory is a folder of units. Links to folders are never followed and entries that cannot
    be read (links, pipes, unlistable folders) are units too, so reading them books a reject."""
    if not named:
        reason = classify(top, os.path.dirname(top))[0]
        if reason is not None:
            return [] if _ignored(top) else [top]
    if os.path.isfile(top):
        return [] if _ignored(top) or not top.lower().endswith(_UNIT_EXT) else [top]
    if not os.path.isdir(top):
        return [top] if not named and os.path.lexists(top) and top.lower().endswith(_UNIT_EXT) else []
    try:
        entries = sorted(os.listdir(top))
    except OSError:
        return [top]
    if any(e.lower().endswith((".tex", ".ltx", ".latex")) and not _ignored(e) for e in entries):
        return [top]
    if depth >= MAX_DEPTH:
        return [top]
    out = []
    for e in entries:
        if not _ignored(e):
            out.extend(_units(os.path.join(top, e), False, depth + 1))
    return out


def _ignored(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    return any(p.startswith("._") or p == "__MACOSX" or p == ".DS_Store" for p in parts)


def _read_dir(root: str) -> tuple[dict[str, bytes], list[list[str]]]:
    """The files of a folder submission, and [path, reason] for each entry not read: nothing
    whose real path is outside the folder is read (an `\\input` of a link to a secret)."""
    out: dict[str, bytes] = {}
    skipped: list[list[str]] = []
    for e in walk(root, prune=lambda rel: _ignored(rel) or posixpath.basename(rel) == ".git"):
        if e.reason == PRUNED or _ignored(e.rel):
            continue
        if e.reason is not None:
            skipped.append([e.rel or ".", e.reason])
            continue
        name = posixpath.basename(e.rel)
        if e.rel.lower().endswith(_TEXT_EXT) or "." not in name:
            try:
                out[e.rel] = read_regular(e.path, _MAX_TEXT_FILE + 1)
            except OSError:
                skipped.append([e.rel, "unreadable"])
        else:
            out[e.rel] = b""  # only its name matters (figures, PDFs)
    return out, skipped


def _read_tar(tar: tarfile.TarFile, members: list[tarfile.TarInfo]) -> dict[str, bytes]:
    out = {}
    for m in members:
        name = posixpath.normpath(m.name.lstrip("/"))
        if name.startswith("./"):
            name = name[2:]
        if _ignored(name):
            continue
        if name.lower().endswith(_TEXT_EXT) or "." not in posixpath.basename(name):
            if m.size > _MAX_TEXT_FILE:
                out[name] = b""
                continue
            f = tar.extractfile(m)
            out[name] = f.read() if f else b""
        else:
            out[name] = b""
    return out


def _open_tar(data: bytes) -> tarfile.TarFile | None:
    if len(data) < 512:
        return None
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, EOFError, OSError, ValueError):
        return None
    return tar


def _inflate_capped(raw: bytes, cap: int) -> bytes | None:
    """A gzip member's bytes, or None once they pass `cap`: inflation stops there, so a member
    that inflates to gigabytes never does."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(raw, cap + 1)
    if len(out) > cap:
        return None
    if not d.eof:
        raise EOFError("truncated gzip member")
    return out


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    return b"\x00" in head or head.startswith((b"%PDF", b"%!PS", b"\x89PNG", b"PK\x03\x04"))


def _decode_tex(data: bytes) -> tuple[str, int]:
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        pass
    charset = detect_charset(data) or "latin-1"  # old submissions are mostly latin-1
    return decode_counted(data, charset)


def _arxiv_id(name: str) -> str | None:
    m = _ARXIV_ID.search(name)
    return m.group(1) if m else None
