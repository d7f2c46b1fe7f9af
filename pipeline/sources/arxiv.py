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
import os
import posixpath
import re
import tarfile
from typing import Any, Iterator

import fsspec
from pydantic import Field

from pipeline.sources.encoding import decode_counted, detect_charset, nfc
from pipeline.sources.latex import clean_submission
from pipeline.sources.base import TOO_LARGE, Source, SourceConfig, expand, has_glob, relative_to_root
from pipeline.sources.inflate import Inflated, OverCap
from pipeline.sources.walk import MAX_DEPTH, PRUNED, classify, read_regular, walk

NO_TEX = "no_tex_source"
NO_MAIN = "no_main_file"
NO_TEXT = "no_text"

_ARXIV_ID = re.compile(r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z][a-z\-]+(?:\.[A-Z]{2})?/?\d{7}(?:v\d+)?)")
_BULK_MEMBER = re.compile(r"(?:^|/)(\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+(?:\.[A-Z]{2})?\d{7}(?:v\d+)?)\.(gz|tar\.gz|tgz|tar|pdf)$")
_TEXT_EXT = (".tex", ".ltx", ".latex", ".bbl", ".sty", ".cls", ".def", ".cfg", ".txt", ".tikz", ".pgf")
_MAX_TEXT_FILE = 8 << 20
_MAX_MEMBERS = 100_000  # arXiv's bulk tars hold a few thousand; each listed member costs ~0.5 kB
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
        yield from self._file(url, id_path, name)

    # -- a submission file or a bulk tar: streamed, the cap applied while inflating -------------
    def _file(self, url: str, id_path: str, name: str) -> Iterator[dict[str, Any]]:
        cap = self.config.max_submission_bytes
        aid = _arxiv_id(id_path)
        try:
            # A plain .tar is not capped as a whole: a bulk tar's members are capped one by one,
            # and a plain single submission is checked by its members' sizes below.
            stream = Inflated(lambda: fsspec.open(url, "rb").open(), cap, cap_plain=False)
        except Exception as exc:
            yield self.failed(id_path, 0, id_path, exc)
            return
        with stream:
            try:
                listed = _list_tar(stream)
                if listed is None:
                    if name.endswith((".tar", ".tgz", ".tar.gz")):
                        yield self.unreadable(id_path, 0, f"{id_path}: not a readable tar archive")
                    else:
                        yield self._single(stream, id_path, 0, posixpath.basename(id_path), aid, id_path)
                    return
                tar, members = listed
                bulk = [m for m in members if _BULK_MEMBER.search(m.name)]
                if bulk and len(bulk) >= max(1, len(members) // 2):
                    yield from self._bulk(tar, bulk, id_path)
                    return
                if sum(m.size for m in members) > cap:
                    raise OverCap(f"members of more than {cap} bytes")
                files = _read_tar(tar, members)
            except (OverCap, _TooManyMembers) as exc:
                yield self.rejected(id_path, 0, TOO_LARGE, f"{id_path}: {exc} (max_submission_bytes {cap})",
                                    url=id_path, metadata={"arxiv_id": aid})
                return
            except Exception as exc:
                yield self.failed(id_path, 0, f"{id_path}: corrupt archive", exc)
                return
        yield self._submission(id_path, 0, files, aid)

    def _single(self, stream: Inflated, id_path: str, offset: int, base: str, aid: str | None, url: str
                ) -> dict[str, Any]:
        """A gzipped (or plain) single .tex file, read no further than the largest file kept."""
        limit = min(self.config.max_submission_bytes, _MAX_TEXT_FILE)
        stream.seek(0)
        data = stream.read(limit + 1)  # OverCap is raised only past max_submission_bytes >= limit
        if _looks_binary(data):
            return self.rejected(id_path, offset, NO_TEX, "not LaTeX (binary content)", url=url,
                                 metadata={"arxiv_id": aid})
        if len(data) > limit:
            return self.rejected(id_path, offset, TOO_LARGE, f"{url}: a single LaTeX file of more than {limit}"
                                 " bytes once inflated", url=url, metadata={"arxiv_id": aid})
        for ext in (".gz", ".z", ".zst", ".bz2", ".xz"):
            if base.lower().endswith(ext):
                base = base[: -len(ext)]
        if not base.lower().endswith((".tex", ".ltx", ".latex")):
            base += ".tex"
        return self._submission(id_path, offset, {base: data}, aid, url=url)

    # -- one submission -----------------------------------------------------------------------
    def _bulk(self, tar: tarfile.TarFile, members: list[tarfile.TarInfo], id_path: str) -> Iterator[dict[str, Any]]:
        cap = self.config.max_submission_bytes
        for m in members:
            sub_path = f"{id_path}/{m.name}"
            aid = _arxiv_id(posixpath.basename(m.name))
            if m.name.lower().endswith(".pdf"):
                yield self.rejected(id_path, m.offset, NO_TEX, "PDF-only submission", url=sub_path, metadata={"arxiv_id": aid})
                continue
            try:
                with Inflated(lambda m=m: tar.extractfile(m), cap) as sub:
                    listed = _list_tar(sub)
                    if listed is None:
                        yield self._single(sub, id_path, m.offset, f"{aid or 'main'}.tex", aid, sub_path)
                        continue
                    files = _read_tar(*listed)
            except (OverCap, _TooManyMembers) as exc:  # a bomb: stopped inflating at the cap
                yield self.rejected(id_path, m.offset, TOO_LARGE, f"{sub_path}: {exc} (max_submission_bytes"
                                    f" {cap})", url=sub_path, metadata={"arxiv_id": aid})
                continue
            except Exception as exc:
                yield self.failed(id_path, m.offset, f"{sub_path}: corrupt archive", exc)
                continue
            yield self._submission(id_path, m.offset, files, aid, url=sub_path)

    def _submission(self, id_path: str, offset: int, raw: dict[str, bytes | None], arxiv_id: str | None,
                    url: str | None = None, skipped: list[list[str]] | None = None) -> dict[str, Any]:
        url = url or id_path
        texts: dict[str, str] = {}
        replaced = 0
        oversize = []
        for path, data in raw.items():
            if path.lower().endswith(_TEXT_EXT) or "." not in posixpath.basename(path):
                if data is None or len(data) > _MAX_TEXT_FILE:
                    oversize.append(path)
                    continue
                if _looks_binary(data):
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
            if oversize and any(p.lower().endswith((".tex", ".ltx", ".latex")) for p in oversize):
                # the text may have been in a file too large to read: say so, not "no .tex file"
                return self.rejected(id_path, offset, TOO_LARGE, f"{url}: LaTeX file(s) over {_MAX_TEXT_FILE}"
                                     f" bytes not read: {', '.join(sorted(oversize)[:5])}", url=url, metadata=meta)
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


def _read_tar(tar: tarfile.TarFile, members: list[tarfile.TarInfo]) -> dict[str, bytes | None]:
    """Text members' bytes; None for one too large to read; b"" for others (only names matter)."""
    out = {}
    for m in members:
        name = posixpath.normpath(m.name.lstrip("/"))
        if name.startswith("./"):
            name = name[2:]
        if _ignored(name):
            continue
        if name.lower().endswith(_TEXT_EXT) or "." not in posixpath.basename(name):
            if m.size > _MAX_TEXT_FILE:
                out[name] = None
                continue
            f = tar.extractfile(m)
            out[name] = f.read() if f else b""
        else:
            out[name] = b""
    return out


class _TooManyMembers(Exception):
    """A tar listing more members than any submission or bulk tar holds (a header bomb)."""


def _list_tar(stream: Inflated) -> tuple[tarfile.TarFile, list[tarfile.TarInfo]] | None:
    """The tar read through `stream` and its file members, or None when it is not a tar.
    Listing reads headers only (members' data is skipped, or inflated and dropped)."""
    stream.seek(0)
    try:
        tar = tarfile.open(fileobj=stream, mode="r:")
    except tarfile.ReadError:
        return None
    files = []
    for i, m in enumerate(tar):
        if i >= _MAX_MEMBERS:
            raise _TooManyMembers(f"more than {_MAX_MEMBERS} tar members")
        if m.isfile():
            files.append(m)
    return tar, files


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
