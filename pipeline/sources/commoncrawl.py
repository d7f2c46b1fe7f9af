"""Common Crawl WARC and WET files → documents.

WARC: each `response` record with an HTML payload becomes one document (HTML → main-content text
by the configured extractor). Non-HTML payloads and non-200 responses are read rejects with a
reason, so the ledger says how much of the crawl was never text. `request`, `warcinfo`,
`revisit` records are not documents and are skipped; Common Crawl's `metadata` record that
follows a response is read for its CLD2 language guess. WET: each `conversion` record is already
text and is kept as it is (only NFC-normalised).

The offset of a document is the WARC record's byte offset in the (compressed) file: the same
number Common Crawl's index stores, so a document can be fetched again with a range request.
Parsing is FastWARC's (resiliparse), several times faster than warcio.
"""
from __future__ import annotations

import io
import json
from typing import Any, Callable, Iterator

import fsspec
from fastwarc.warc import ArchiveIterator, WarcRecordType
from pydantic import Field, create_model

from pipeline.sources.encoding import decode_html, nfc, to_text
from pipeline.sources.http_body import BodyError, BodyTooLarge, decode_body
from pipeline.sources.extract import Extractor, ExtractorConfig
from pipeline.sources.sandbox import SandboxCrash, SandboxTimeout
from pipeline.sources.base import Source, SourceConfig, open_binary
from pipeline.sources.url_gate import NOT_EXTRACTED
from pipeline.sources import warc_split
from pipeline.sources.warc_records import Cut, warc_cuts

# Pages sent to the extraction process in one round trip (`CommonCrawlSource.records`): fewer
# sleeps and wake-ups of both processes (docs/sources.md, "Time and memory per page"); the bytes held
# at once stay under PAGE_BATCH_BYTES, plus one page.
PAGE_BATCH = 16
PAGE_BATCH_BYTES = 16 << 20
# Readahead on an object store, where every fetch is one ranged GET of the bytes asked for plus the
# file's block size (s3fs: 50 MiB). A split point's probe reads about 1 MiB: PROBE_BLOCK more.
# A part's reader fetches at most a 16th of its span more (1 to 8 MiB), so it reads little past
# its end; with the 50 MiB default, each part of a 1 GB file read up to 50 MiB beyond it, and
# each probe 50 MiB.
PROBE_BLOCK = 1 << 20

# Read-reject reasons.
NOT_HTML = "not_html"
HTTP_STATUS = "http_status"
NO_TEXT = "no_text"
EXTRACT_ERROR = "extract_error"
EXTRACT_TIMEOUT = "extract_timeout"
TOO_LARGE = "too_large"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/xml+xhtml"})
_DOCUMENT_TYPES = WarcRecordType.response | WarcRecordType.conversion | WarcRecordType.metadata
_WANTED = frozenset({"response", "conversion", "metadata"})


# The extractor's settings (extract.ExtractorConfig) under their recipe names: flat in the source,
# `extract_` before the extractor's own name, the model as `extractor`.
EXTRACTOR_KEYS = {"extractor": "name", "resiliparse": "resiliparse", "trafilatura": "trafilatura",
                  **{f"extract_{k}": k for k in ("fallback", "fallback_below_chars", "fallback_always_below_chars",
                                                 "fallback_max_kept", "fallback_baseline", "time_limit")}}


class _WarcConfig(SourceConfig):
    # Payloads larger than this are rejected unread (Common Crawl truncates at 1 MiB anyway).
    max_payload_bytes: int = Field(default=8 << 20, gt=0)
    split_bytes: int = Field(
        default=128 << 20, ge=0,
        description="a WARC file (uncompressed, or gzipped record by record as Common Crawl's) larger than this "
                    "is read as several parts of about this many bytes, cut at record boundaries, so several "
                    "workers share it; each record is read by exactly one part. 0: never split")

    def extractor_config(self) -> ExtractorConfig:
        return ExtractorConfig(**{mine: getattr(self, key) for key, mine in EXTRACTOR_KEYS.items()})


CommonCrawlConfig = create_model(
    "CommonCrawlConfig", __base__=_WarcConfig, __module__=__name__,
    **{key: (ExtractorConfig.model_fields[mine].annotation, ExtractorConfig.model_fields[mine])
       for key, mine in EXTRACTOR_KEYS.items()})


class CommonCrawlSource(Source):
    kind = "commoncrawl"
    Config = CommonCrawlConfig
    # url -> True when the first stage rejects the page whatever its text (pipeline/sources/url_gate.py)
    url_gate: Callable[[str | None], bool] | None = None

    def __init__(self, name: str, config: CommonCrawlConfig):
        super().__init__(name, config)
        self._extract: Extractor | None = None

    @property
    def extract(self) -> Extractor:
        if self._extract is None:  # built lazily: the source object is pickled to Ray workers
            self._extract = Extractor(self.config.extractor_config())
        return self._extract

    def split(self, url: str, size: int) -> list[int]:
        """Split points of a file larger than `split_bytes` (pipeline/sources/warc_split.py)."""
        layout = warc_split.splittable(url)
        if layout is None or not self.config.split_bytes or size <= self.config.split_bytes:
            return []
        fs, path = fsspec.core.url_to_fs(url)
        return warc_split.split_points(lambda: fs.open(path, "rb", block_size=PROBE_BLOCK), size, layout,
                                       self.config.split_bytes)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_extract"] = None
        state.pop("url_gate", None)  # the stage it holds stays in the worker that built it
        return state

    def records(self, url: str, id_path: str, span: tuple[int, int] | None = None) -> Iterator[dict[str, Any]]:
        """The file's rows in order (with `span`, those of the records that start in it). Pages are extracted a batch at a time (`_Page`, one round trip
        to the extraction process per batch: `Extractor.extract_payloads`), at most PAGE_BATCH pages
        or PAGE_BATCH_BYTES of payload held at once; each gets exactly the row it would get alone."""
        held: list[dict[str, Any] | _Page] = []
        pages = size = 0
        for out in self._rows(url, id_path, span):
            if not pages and not isinstance(out, _Page):  # nothing to wait for
                yield out
                continue
            held.append(out)
            if isinstance(out, _Page):
                pages += 1
                size += len(out.payload)
            if pages >= PAGE_BATCH or size >= PAGE_BATCH_BYTES or len(held) >= 8 * PAGE_BATCH:
                yield from self._extracted(held)
                held, pages, size = [], 0, 0
        yield from self._extracted(held)

    def _extracted(self, held: list[dict[str, Any] | _Page]) -> Iterator[dict[str, Any]]:
        todo = [out for out in held if isinstance(out, _Page)]
        results = iter(self.extract.extract_payloads([(p.payload, p.http_charset) for p in todo]) if todo else ())
        for out in held:
            yield self._page_row(out, next(results)) if isinstance(out, _Page) else out

    def _page_row(self, page: _Page, result: Any) -> dict[str, Any]:
        """A page's row from its extraction's result (or the exception it gave), as `_response`
        would have made it with `html_to_text`, and the CLD2 guess of its metadata record."""
        try:
            text, reason, detail, found = page_outcome(self.extract, page.payload, page.http_charset, result)
            page.meta.update(found)
            if reason is not None:
                out = self.rejected(page.id_path, page.pos, reason, detail, url=page.url, metadata=page.meta)
            else:
                out = self.record(page.id_path, page.pos, text, url=page.url, metadata=page.meta)
        except Exception as exc:
            return self.failed(page.id_path, page.pos, f"{page.id_path}@{page.pos}", exc)
        if out["drop_reason"] not in ("unreadable", "internal_error"):  # else its metadata record is skipped
            if page.cld2:
                _apply_cld2(out, page.cld2)
        return out

    def _rows(self, url: str, id_path: str, span: tuple[int, int] | None = None) -> Iterator[dict[str, Any] | _Page]:
        """The file's rows in order, a page to extract as a `_Page` (the row `records` makes of it)."""
        pending: dict[str, Any] | _Page | None = None  # a response waiting for its metadata record
        pending_id: str | None = None
        for pos, rec in _warc_records(url, self.config.max_payload_bytes, span):
            if isinstance(rec, Cut):  # a broken or oversized record: booked, and reading goes on
                if rec.headers.get("warc-type", "").lower() == "metadata" and not rec.error:
                    continue
                if pending is not None:
                    yield pending
                    pending = None
                uri = rec.headers.get("warc-target-uri")
                if rec.error:
                    yield self.rejected(id_path, pos, "unreadable", f"{id_path}@{pos}: {rec.error}", url=uri)
                else:
                    yield self.rejected(id_path, pos, TOO_LARGE, f"{rec.too_large} bytes", url=uri)
                continue
            rtype = rec.record_type
            if rtype == WarcRecordType.metadata:
                if pending is not None and rec.headers.get("WARC-Concurrent-To") == pending_id:
                    _attach_cld2(pending, rec)
                continue
            if pending is not None:
                yield pending
                pending = None
            try:
                out = (self._convert(rec, id_path, pos) if rtype == WarcRecordType.conversion
                       else self._response(rec, id_path, pos))
            except Exception as exc:
                out = self.failed(id_path, pos, f"{id_path}@{pos}", exc)
            if rtype == WarcRecordType.response and (
                    isinstance(out, _Page) or out["drop_reason"] not in ("unreadable", "internal_error")):
                pending, pending_id = out, rec.record_id
            else:
                yield out
        if pending is not None:
            yield pending

    # -- record kinds ---------------------------------------------------------------------
    def _base_meta(self, rec) -> dict[str, Any]:
        h = rec.headers
        meta = {
            "url": h.get("WARC-Target-URI"),
            "warc_date": h.get("WARC-Date"),
            "warc_record_id": h.get("WARC-Record-ID"),
            "warc_type": str(rec.record_type),
        }
        lang = h.get("WARC-Identified-Content-Language")
        if lang:
            meta["language"] = lang
        if h.get("WARC-Truncated"):
            meta["truncated"] = h.get("WARC-Truncated")
        return meta

    def _convert(self, rec, id_path: str, pos: int) -> dict[str, Any]:
        """WET conversion record: the text Common Crawl extracted, kept as it is."""
        meta = self._base_meta(rec)
        meta["content_type"] = rec.headers.get("Content-Type")
        meta["charset"] = "utf-8"
        text, replaced = to_text(rec.reader.read())
        meta["replaced_bytes"] = replaced
        url = meta["url"]
        if not text.strip():
            return self.rejected(id_path, pos, NO_TEXT, "empty WET record", url=url, metadata=meta)
        return self.record(id_path, pos, text, url=url, metadata=meta)

    def _response(self, rec, id_path: str, pos: int) -> dict[str, Any] | _Page:
        meta = self._base_meta(rec)
        url = meta["url"]
        if not rec.is_http:
            return self.rejected(id_path, pos, NOT_HTML, "response without HTTP headers", url=url, metadata=meta)
        status = rec.http_headers.status_code
        ctype = (rec.http_content_type or "").lower().strip()
        meta["http_status"] = status
        meta["content_type"] = ctype or None
        if status != 200:
            return self.rejected(id_path, pos, HTTP_STATUS, str(status), url=url, metadata=meta)
        if rec.content_length > self.config.max_payload_bytes:
            return self.rejected(id_path, pos, TOO_LARGE, f"{rec.content_length} bytes", url=url, metadata=meta)
        try:  # Content-Encoding undone here, not by FastWARC: bodies lie about it, and a bomb is capped
            body = decode_body(rec.reader.read(), rec.http_headers.get("Content-Encoding"), self.config.max_payload_bytes)
        except BodyTooLarge as exc:
            return self.rejected(id_path, pos, TOO_LARGE, f"{id_path}@{pos}: body {exc}", url=url, metadata=meta)
        except BodyError as exc:
            return self.rejected(id_path, pos, "unreadable", f"{id_path}@{pos}: {exc}", url=url, metadata=meta)
        payload = body.data
        if body.how:
            meta["content_decoding"] = body.how
        if ctype not in HTML_TYPES and not (not ctype and _looks_like_html(payload)):
            return self.rejected(id_path, pos, NOT_HTML, ctype or "no content type", url=url, metadata=meta)
        if self.url_gate is not None and self.url_gate(url):  # the URL stage rejects it: not extracted
            meta[NOT_EXTRACTED] = True
            return self.record(id_path, pos, "", url=url, metadata=meta)
        return _Page(id_path, pos, url, meta, payload, rec.http_charset)


class _Page:
    """A response whose payload is still to be extracted: what its row needs, and the CLD2 guess of
    the metadata records that follow it (the last one's, as applying each in turn gives; applied once
    the row exists)."""

    __slots__ = ("id_path", "pos", "url", "meta", "payload", "http_charset", "cld2")

    def __init__(self, id_path: str, pos: int, url: str | None, meta: dict[str, Any], payload: bytes,
                 http_charset: str | None):
        self.id_path, self.pos, self.url, self.meta = id_path, pos, url, meta
        self.payload, self.http_charset = payload, http_charset
        self.cld2: list[dict[str, Any]] | None = None


def html_to_text(extract: Extractor, payload: bytes, http_charset: str | None = None
                 ) -> tuple[str | None, str | None, str | None, dict[str, Any]]:
    """An HTML payload -> (text, reject reason, detail, metadata), as the reader decides a page:
    charset (HTTP header, BOM, <meta>, detection), extraction (under its time limit), NFC.
    Text is None when the page is rejected. Shared with pipeline/api.py's `extract`.
    The payload is decoded where it is extracted (`Extractor.extract_payload`); only a page whose
    extraction was stopped is decoded here, for its charset in the reject's metadata."""
    try:
        result = extract.extract_payload(payload, http_charset)
    except (SandboxTimeout, SandboxCrash) as exc:
        result = exc
    return page_outcome(extract, payload, http_charset, result)


def page_outcome(extract: Extractor, payload: bytes, http_charset: str | None, result: Any
                 ) -> tuple[str | None, str | None, str | None, dict[str, Any]]:
    """`html_to_text`'s answer from the extraction's result: (text, extractor, charset found), or
    the SandboxTimeout / SandboxCrash that stopped it; any other exception is raised."""
    if isinstance(result, (SandboxTimeout, SandboxCrash)):
        reason = EXTRACT_TIMEOUT if isinstance(result, SandboxTimeout) else EXTRACT_ERROR
        decoded = decode_html(payload, http_charset)
        return None, reason, f"{extract.name}: {result}", _page_meta(
            decoded.charset, decoded.charset_source, decoded.replaced, extract.name)
    if isinstance(result, BaseException):
        raise result
    text, used, (charset, source, replaced) = result
    meta = _page_meta(charset, source, replaced, used)
    if text is None:
        return None, EXTRACT_ERROR, f"{extract.name} failed", meta
    if not text:
        return None, NO_TEXT, "no main content", meta
    return nfc(text), None, None, meta


def _page_meta(charset: str, source: str, replaced: int, extractor: str) -> dict[str, Any]:
    return {"charset": charset, "charset_source": source, "replaced_bytes": replaced, "extractor": extractor}


def _looks_like_html(payload: bytes) -> bool:
    head = payload[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<?xml")) and b"<html" in payload[:4096].lower()


def _attach_cld2(doc: dict[str, Any] | _Page, meta_rec) -> None:
    """Copy Common Crawl's CLD2 guess (`languages-cld2` in the metadata record) into the document
    (a page still to be extracted keeps the guess for its row: one, however many records follow)."""
    try:
        langs = _cld2_languages(meta_rec.reader.read().decode("utf-8", "replace"))
    except Exception:
        return
    if not langs:
        return
    if isinstance(doc, _Page):
        doc.cld2 = langs
    else:
        _apply_cld2(doc, langs)


def _cld2_languages(body: str) -> list[dict[str, Any]] | None:
    """The languages of a metadata record's first `languages-cld2:` line; None without one, or when
    it is not a list of objects (a hostile record once made its whole file an internal_error)."""
    for line in body.splitlines():
        if line.startswith("languages-cld2:"):
            try:
                langs = json.loads(line.split(":", 1)[1]).get("languages")
            except (ValueError, AttributeError):
                return None
            return langs if isinstance(langs, list) and all(isinstance(x, dict) for x in langs) else None
    return None


def _apply_cld2(doc: dict[str, Any], langs: list[dict[str, Any]]) -> None:
    meta = json.loads(doc["metadata"])
    meta["language"] = langs[0].get("code")
    meta["languages_cld2"] = [[x.get("code"), x.get("text-covered")] for x in langs]
    doc["metadata"] = json.dumps(meta, ensure_ascii=False, sort_keys=True)


def _records_of(stream) -> Iterator:
    return iter(ArchiveIterator(stream, record_types=_DOCUMENT_TYPES, parse_http=True, auto_decode="transfer"))


def _warc_records(url: str, max_block: int, span: tuple[int, int] | None = None) -> Iterator[tuple[int, Any]]:
    """(offset, record) for every document-type record, or (offset, Cut) for a record that is
    broken (`Cut.error`) or too large to hold (`Cut.too_large`). Boundaries and offsets come from
    warc_records.py (every layout, each record its own offset); FastWARC parses each record."""
    low = url.lower()
    fs, path = fsspec.core.url_to_fs(url)
    block = {"block_size": min(8 << 20, max(PROBE_BLOCK, (span[1] - span[0]) // 16))} if span else {}
    with fs.open(path, "rb", **block) as raw:  # raw bytes: gzip offsets are compressed offsets
        plain = open_binary(url) if low.endswith((".zst", ".zstd", ".bz2", ".xz")) else None
        try:
            for cut in warc_cuts(raw, low.endswith(".gz"), plain, max_block, _WANTED, span):
                if cut.data is None:
                    yield cut.offset, cut
                    continue
                it = _records_of(io.BytesIO(cut.data))
                handed = False
                while True:  # lazily: a record's reader is valid until the iterator moves on
                    try:
                        rec = next(it)
                    except StopIteration:
                        break
                    except Exception as exc:  # FastWARC refused the record's header or HTTP part
                        if not handed:  # else the record has its row already: one row per record
                            cut.error = f"{type(exc).__name__}: {exc}"
                            yield cut.offset, cut
                        break
                    handed = True
                    yield cut.offset, rec
        finally:
            if plain is not None:
                plain.close()
