"""Common Crawl reader: WARC responses → HTML text, WET as is, every record accounted for."""
from __future__ import annotations

import gzip
import io
import json
import unicodedata
from functools import partial
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from pipeline.sources.base import source_kinds
from pipeline.sources.commoncrawl import TOO_LARGE, CommonCrawlConfig, CommonCrawlSource
from tests.helpers import read_source

ARTICLE = (
    "<html><head><title>T</title>{meta}</head><body>"
    "<nav><a href='/'>Home</a> <a href='/a'>About</a></nav>"
    "<article><h1>Headline</h1><p>{body}</p>"
    "<p>A second paragraph that is long enough to be main content for any extractor at all.</p></article>"
    "<footer>Impressum | Datenschutz</footer></body></html>"
)
LONG = "Dies ist ein langer Absatz über Straßenbahnen in München, der viele Wörter hat und echten Inhalt darstellt."


def page(body: str = LONG, meta: str = "") -> str:
    return ARTICLE.format(body=body, meta=meta)


def write_warc(path: Path, records: list[dict]) -> None:
    """records: dicts with type, uri and (for responses) status, ctype, body bytes."""
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for r in records:
            if r["type"] == "response":
                headers = [("Content-Type", r.get("ctype", "text/html; charset=utf-8"))] + r.get("http", [])
                http = StatusAndHeaders(r.get("status", "200 OK"), headers, protocol="HTTP/1.1")
                rec = w.create_warc_record(r["uri"], "response", payload=io.BytesIO(r["body"]),
                                           http_headers=http)
            elif r["type"] == "request":
                http = StatusAndHeaders("GET / HTTP/1.1", [("Host", "x")], is_http_request=True)
                rec = w.create_warc_record(r["uri"], "request", payload=io.BytesIO(b""), http_headers=http)
            elif r["type"] == "metadata":
                rec = w.create_warc_record(r["uri"], "metadata", payload=io.BytesIO(r["body"]),
                                           warc_content_type="application/warc-fields",
                                           warc_headers_dict={"WARC-Concurrent-To": r["concurrent"]})
            elif r["type"] == "conversion":
                rec = w.create_warc_record(r["uri"], "conversion", payload=io.BytesIO(r["body"]),
                                           warc_content_type="text/plain",
                                           warc_headers_dict=r.get("headers", {}))
            elif r["type"] == "warcinfo":
                rec = w.create_warcinfo_record("x.warc.gz", {"software": "test"})
            w.write_record(rec)
            r["record_id"] = rec.rec_headers.get_header("WARC-Record-ID")


read_all = partial(read_source, "commoncrawl", name="cc")

def warcio_offsets(path: Path, types: set[str]) -> list[int]:
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        return [it.get_record_offset() for rec in it if rec.rec_type in types]


def test_registered():
    assert source_kinds()["commoncrawl"] is CommonCrawlSource


def test_html_response_becomes_document_with_metadata(tmp_path):
    f = tmp_path / "a.warc.gz"
    write_warc(f, [{"type": "warcinfo", "uri": ""},
                   {"type": "request", "uri": "http://ex.de/a"},
                   {"type": "response", "uri": "http://ex.de/a", "body": page().encode("utf-8")}])
    rows = read_all(f)
    assert len(rows) == 1  # request and warcinfo are not documents
    r = rows[0]
    assert r["drop_reason"] is None
    assert "Straßenbahnen in München" in r["text"]
    assert "Datenschutz" not in r["text"] and "About" not in r["text"]  # boilerplate gone
    meta = json.loads(r["metadata"])
    assert meta["url"] == r["url"] == "http://ex.de/a"
    assert meta["warc_record_id"].startswith("<urn:uuid:")
    assert meta["warc_date"] and meta["content_type"] == "text/html"
    assert meta["charset"] == "utf-8" and meta["charset_source"] == "header"
    # the offset is the record's byte offset in the compressed file (Common Crawl's index offset)
    assert r["offset"] == warcio_offsets(f, {"response"})[0]


def test_non_html_and_non_200_are_counted_rejects(tmp_path):
    f = tmp_path / "b.warc.gz"
    write_warc(f, [
        {"type": "response", "uri": "http://ex.de/img", "ctype": "image/png", "body": b"\x89PNG...."},
        {"type": "response", "uri": "http://ex.de/gone", "status": "404 Not Found", "body": page().encode()},
        {"type": "response", "uri": "http://ex.de/moved", "status": "301 Moved", "body": b""},
        {"type": "response", "uri": "http://ex.de/pdf", "ctype": "application/pdf", "body": b"%PDF-1.4"},
    ])
    rows = read_all(f)
    got = [(r["url"], r["drop_reason"], r["drop_detail"]) for r in rows]
    assert got == [
        ("http://ex.de/img", "not_html", "image/png"),
        ("http://ex.de/gone", "http_status", "404"),
        ("http://ex.de/moved", "http_status", "301"),
        ("http://ex.de/pdf", "not_html", "application/pdf"),
    ]
    assert len({r["id"] for r in rows}) == 4


def test_charset_from_meta_then_detection(tmp_path):
    ru = "Пожарная безопасность предприятий: проектирование, монтаж и обслуживание систем. " * 3
    de = "Grüße aus München: Straßenbahnen fahren täglich über die Isarbrücke und halten überall. " * 3
    f = tmp_path / "c.warc.gz"
    write_warc(f, [
        {"type": "response", "uri": "http://ex.ru/", "ctype": "text/html",
         "body": page(ru, '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">').encode("cp1251")},
        {"type": "response", "uri": "http://ex.de/", "ctype": "text/html", "body": page(de).encode("latin-1")},
    ])
    rows = read_all(f)
    m0, m1 = (json.loads(r["metadata"]) for r in rows)
    assert "Пожарная безопасность" in rows[0]["text"] and m0["charset"] == "cp1251" and m0["charset_source"] == "meta"
    assert "Grüße aus München" in rows[1]["text"] and m1["charset_source"] == "detected"
    assert m0["replaced_bytes"] == m1["replaced_bytes"] == 0


def test_undecodable_bytes_replaced_and_counted_and_nfc(tmp_path):
    decomposed = unicodedata.normalize("NFD", "Café crème brûlée, a long sentence about desserts in Paris. ")
    body = (page(decomposed * 3).encode("utf-8")).replace(b"Paris", b"Pa\xff\xferis", 1)
    f = tmp_path / "d.warc.gz"
    write_warc(f, [{"type": "response", "uri": "http://ex.fr/", "body": body}])
    (r,) = read_all(f)
    meta = json.loads(r["metadata"])
    assert meta["replaced_bytes"] == 2
    assert "\ufffd" in r["text"]
    assert unicodedata.is_normalized("NFC", r["text"]) and "Café crème brûlée" in r["text"]
    # a combining accent written as an entity is normalised too: the text, not the HTML, is NFC'd
    f = tmp_path / "e.warc.gz"
    write_warc(f, [{"type": "response", "uri": "http://ex.fr/e", "body": page(("Cafe&#769; au lait, a long sentence "
                                                                              "about drinks in Paris. ") * 3).encode()}])
    (r,) = read_all(f)
    assert "Caf\u00e9 au lait" in r["text"] and unicodedata.is_normalized("NFC", r["text"])


def test_cld2_language_from_following_metadata_record(tmp_path):
    cld2 = b'languages-cld2: {"reliable":true,"languages":[{"code":"de","text-covered":0.97}]}\r\n'
    f = tmp_path / "e.warc.gz"
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
    with open(f, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for uri, concurrent_to_self in (("http://ex.de/x", True), ("http://ex.de/y", False)):
            resp = w.create_warc_record(uri, "response", payload=io.BytesIO(page().encode()), http_headers=http)
            w.write_record(resp)
            target = resp.rec_headers.get_header("WARC-Record-ID") if concurrent_to_self else "<urn:uuid:other>"
            w.write_record(w.create_warc_record(uri, "metadata", payload=io.BytesIO(cld2),
                                                warc_content_type="application/warc-fields",
                                                warc_headers_dict={"WARC-Concurrent-To": target}))
    x, y = read_all(f)
    mx, my = json.loads(x["metadata"]), json.loads(y["metadata"])
    assert mx["language"] == "de" and mx["languages_cld2"] == [["de", 0.97]]
    assert "language" not in my  # a metadata record about another response is not attached


def test_wet_text_kept_as_is(tmp_path):
    text = "Titel der Seite\nErste Zeile des Textes.\nZweite Zeile."
    f = tmp_path / "x.warc.wet.gz"
    write_warc(f, [{"type": "warcinfo", "uri": ""},
                   {"type": "conversion", "uri": "http://ex.de/w", "body": text.encode(),
                    "headers": {"WARC-Identified-Content-Language": "deu,eng"}}])
    (r,) = read_all(f)
    assert r["text"] == text and r["drop_reason"] is None
    assert json.loads(r["metadata"])["language"] == "deu,eng"


def test_corrupt_tail_keeps_earlier_documents_and_books_the_rest(tmp_path):
    f = tmp_path / "g.warc.gz"
    write_warc(f, [{"type": "response", "uri": f"http://ex.de/{i}", "body": page().encode()} for i in range(3)])
    good = f.read_bytes()
    bad = tmp_path / "h.warc.gz"
    bad.write_bytes(good + gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 99999\r\n\r\nshort") + b"\x1f\x8b\x08garbage")
    rows = read_all(bad)
    assert [r["drop_reason"] for r in rows[:3]] == [None, None, None]
    assert rows[-1]["drop_reason"] == "unreadable" and "h.warc.gz" in rows[-1]["drop_detail"]
    # a file that is not a WARC at all: one unreadable row, no exception
    junk = tmp_path / "junk.warc.gz"
    junk.write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    rows = read_all(junk)
    assert len(rows) == 1 and rows[0]["drop_reason"] == "unreadable"


def test_ids_stable_and_trafilatura_selectable(tmp_path):
    f = tmp_path / "i.warc.gz"
    write_warc(f, [{"type": "response", "uri": "http://ex.de/a", "body": page().encode()}])
    a, b = read_all(f), read_all(f, extractor="trafilatura")
    assert a[0]["id"] == b[0]["id"]
    assert json.loads(b[0]["metadata"])["extractor"] == "trafilatura"
    assert "Straßenbahnen in München" in b[0]["text"]
    with pytest.raises(Exception):
        CommonCrawlConfig(kind="commoncrawl", paths=["x"], extractor="bs4")
    with pytest.raises(Exception):
        CommonCrawlConfig(kind="commoncrawl", paths=["x"], resiliparse={"nope": 1})


def test_the_fallbacks_baseline_is_a_recipe_key():
    def config(**kw):
        return CommonCrawlSource("cc", CommonCrawlConfig(kind="commoncrawl", paths=["x"], extract_time_limit=0,
                                                         **kw)).extract.config
    assert config().fallback_baseline == "filtered"
    assert config(extract_fallback_baseline="whole").fallback_baseline == "whole"
    with pytest.raises(Exception):
        config(extract_fallback_baseline="all")


# -- real data ---------------------------------------------------------------------------------
WARCS = ["resiliparse_CC-MAIN-2020-34_excerpt.warc.gz", "dolma_sample-0000.warc.gz",
         "dolma_sample-0001.warc.gz", "commoncrawl_whirlwind.warc.gz"]


@pytest.mark.parametrize("name", WARCS)
def test_real_warc_every_response_accounted(corpora, name):
    path = corpora / "web" / name
    rows = read_all(path)
    offsets = warcio_offsets(path, {"response"})
    assert [r["offset"] for r in rows] == offsets  # one row per response, at its offset
    kept = [r for r in rows if r["drop_reason"] is None]
    assert len(kept) >= 0.8 * len(rows)
    for r in kept:
        assert r["text"].strip() and unicodedata.is_normalized("NFC", r["text"])
        meta = json.loads(r["metadata"])
        assert meta["url"] and meta["warc_date"] and meta["warc_record_id"]


def test_real_cc_excerpt_charsets_and_languages(corpora):
    rows = read_all(corpora / "web" / "resiliparse_CC-MAIN-2020-34_excerpt.warc.gz")
    metas = [json.loads(r["metadata"]) for r in rows]
    assert all(m.get("language") for m in metas)  # CLD2 guess from the metadata records
    ru = next(r for r, m in zip(rows, metas) if m["url"] == "http://01spb.ru/company/")
    assert "пожарной безопасности" in ru["text"]  # windows-1251 page decoded
    assert sum(m["replaced_bytes"] for m in metas) < 50


def test_real_wet_matches_payload(corpora):
    path = corpora / "web" / "commoncrawl_whirlwind.warc.wet.gz"
    with open(path, "rb") as fh:
        payload = next(r for r in ArchiveIterator(fh) if r.rec_type == "conversion").content_stream().read()
    (r,) = read_all(path)
    assert r["text"] == unicodedata.normalize("NFC", payload.decode("utf-8"))
    assert json.loads(r["metadata"])["language"] == "spa"


def test_uncompressed_warc_offsets(tmp_path):
    f = tmp_path / "plain.warc"
    with open(f, "wb") as fh:
        w = WARCWriter(fh, gzip=False)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        for i in range(2):
            w.write_record(w.create_warc_record(f"http://ex.de/{i}", "response",
                                                payload=io.BytesIO(page().encode()), http_headers=http))
    rows = read_all(f)
    assert [r["drop_reason"] for r in rows] == [None, None]
    assert [r["offset"] for r in rows] == warcio_offsets(f, {"response"})
    assert f.read_bytes()[rows[1]["offset"]:].startswith(b"WARC/1.")


def test_corrupt_record_in_the_middle_costs_only_that_record(tmp_path):
    a, b = tmp_path / "a.warc.gz", tmp_path / "b.warc.gz"
    write_warc(a, [{"type": "response", "uri": f"http://ex.de/a{i}", "body": page().encode()} for i in range(2)])
    write_warc(b, [{"type": "response", "uri": f"http://ex.de/b{i}", "body": page().encode()} for i in range(2)])
    bad = tmp_path / "m.warc.gz"
    lying = gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 99999\r\n\r\nshort")
    bad.write_bytes(a.read_bytes() + lying + b"\x1f\x8b\x08 broken member" + b.read_bytes())
    rows = read_all(bad)
    urls = [r["url"] for r in rows if r["drop_reason"] is None]
    assert urls == ["http://ex.de/a0", "http://ex.de/a1", "http://ex.de/b0", "http://ex.de/b1"]
    broken = [r for r in rows if r["drop_reason"] == "unreadable"]
    # the lying record (its Content-Length runs past its member) and the broken member: one row each
    assert [r["offset"] for r in broken] == [len(a.read_bytes()), len(a.read_bytes()) + len(lying)]
    assert broken[1]["drop_detail"].startswith(f"m.warc.gz@{len(a.read_bytes()) + len(lying)}")


def test_a_page_declaring_a_codec_that_is_no_charset_is_read(tmp_path):
    """`charset=base64` (a bytes-to-bytes codec Python knows) is ignored like an unknown name: the
    page is decoded and extracted, not booked as a refinery bug (internal_error)."""
    path = tmp_path / "odd.warc.gz"
    write_warc(path, [{"type": "response", "uri": f"http://a/{c}", "ctype": f"text/html; charset={c}",
                       "body": page().encode()} for c in ("base64", "idna", "zlib")])
    rows = read_source("commoncrawl", path)
    assert [r["drop_reason"] for r in rows] == [None, None, None]
    assert all(LONG in r["text"] and json.loads(r["metadata"])["charset"] == "utf-8" for r in rows)


def test_a_page_over_the_extraction_time_limit_is_rejected_and_the_shard_goes_on(tmp_path):
    deep = "<html><body>" + "<div>x " * 100_000 + "</div>" * 100_000 + "</body></html>"
    path = tmp_path / "deep.warc.gz"
    write_warc(path, [{"type": "response", "uri": "http://a/deep", "body": deep.encode()},
                      {"type": "response", "uri": "http://a/ok", "body": page().encode()}])
    rows = read_source("commoncrawl", path, extract_time_limit=5.0)
    by_url = {r["url"]: r for r in rows}
    assert by_url["http://a/deep"]["drop_reason"] == "extract_timeout"
    assert "more than 5 s" in by_url["http://a/deep"]["drop_detail"]
    # the page is decoded in the extraction process, which was killed: its charset is still booked
    meta = json.loads(by_url["http://a/deep"]["metadata"])
    assert (meta["charset"], meta["charset_source"], meta["replaced_bytes"]) == ("utf-8", "header", 0)
    assert by_url["http://a/ok"]["drop_reason"] is None and LONG in by_url["http://a/ok"]["text"]


# -- record boundaries and ids in every layout --------------------------------------------------
def _raw_record(i: int, cl_delta: int = 0) -> bytes:
    body = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
            + page(f"{LONG} Nummer {i}.").encode())
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{i}>\r\n"
            f"WARC-Target-URI: http://ex.de/{i}\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(body) + cl_delta}\r\n\r\n")
    return head.encode() + body + b"\r\n\r\n"


@pytest.mark.parametrize("layout", ["members", "one-stream", "plain", "zstd"])
def test_every_record_has_its_own_id_in_every_layout(tmp_path, layout):
    import zstandard

    recs = [_raw_record(i) for i in range(4)]
    data = {"members": b"".join(gzip.compress(r, mtime=0) for r in recs),
            "one-stream": gzip.compress(b"".join(recs), mtime=0),
            "plain": b"".join(recs),
            "zstd": zstandard.ZstdCompressor().compress(b"".join(recs))}[layout]
    name = {"members": "a.warc.gz", "one-stream": "a.warc.gz", "plain": "a.warc", "zstd": "a.warc.zst"}[layout]
    (tmp_path / name).write_bytes(data)
    rows = read_all(tmp_path / name)
    assert [r["url"] for r in rows] == [f"http://ex.de/{i}" for i in range(4)]
    assert [r["drop_reason"] for r in rows] == [None] * 4
    assert len({r["id"] for r in rows}) == 4 and len({r["offset"] for r in rows}) == 4
    if layout == "members":  # Common Crawl's layout: each record's compressed member offset
        assert [r["offset"] for r in rows] == [sum(len(gzip.compress(r, mtime=0)) for r in recs[:i]) for i in range(4)]
    if layout == "plain":
        assert [r["offset"] for r in rows] == [sum(map(len, recs[:i])) for i in range(4)]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("delta", [+60, -25])
def test_a_wrong_content_length_costs_that_record_only(tmp_path, gz, delta):
    recs = [_raw_record(0), _raw_record(1, delta), _raw_record(2), _raw_record(3)]
    f = tmp_path / ("b.warc.gz" if gz else "b.warc")
    f.write_bytes(b"".join(gzip.compress(r, mtime=0) for r in recs) if gz else b"".join(recs))
    rows = read_all(f)
    got = [(r["drop_reason"], r["url"]) for r in rows]
    assert [u for reason, u in got if reason is None] == ["http://ex.de/0", "http://ex.de/2", "http://ex.de/3"]
    bad = [r for r in rows if r["drop_reason"] == "unreadable"]
    assert len(bad) == 1 and "Content-Length" in bad[0]["drop_detail"]
    assert len({r["id"] for r in rows}) == len(rows) == 4
    assert not any("WARC/1.0" in (r["text"] or "") for r in rows)


def test_a_gzip_bomb_record_is_rejected_within_the_memory_cap(tmp_path):
    import tracemalloc
    import zlib

    cap = 1 << 20
    huge = 48 << 20
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://ex.de/bomb\r\n"
            f"Content-Length: {huge}\r\n\r\n").encode()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    bomb = c.compress(head) + b"".join(c.compress(zeros) for _ in range(huge >> 20)) + c.compress(b"\r\n\r\n") + c.flush()
    assert len(bomb) < 100_000
    f = tmp_path / "bomb.warc.gz"
    f.write_bytes(bomb + gzip.compress(_raw_record(1), mtime=0) + gzip.compress(b"\0" * huge, mtime=0))
    warm = tmp_path / "warm.warc.gz"  # imports and the extractor are not the reader's memory
    warm.write_bytes(gzip.compress(_raw_record(0), mtime=0))
    read_all(warm, max_payload_bytes=cap)
    tracemalloc.start()
    try:
        rows = read_all(f, max_payload_bytes=cap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r["url"], r["drop_reason"]) for r in rows] == [
        ("http://ex.de/bomb", TOO_LARGE), ("http://ex.de/1", None), (None, "unreadable")]
    assert peak < 2 * cap + (4 << 20), peak  # pieces of 1 MiB, never the inflated member


# -- pages extracted a batch at a time ---------------------------------------------------------------
def test_pages_are_extracted_in_batches_and_every_row_is_as_one_page_at_a_time_gives(tmp_path, monkeypatch):
    """Rows (texts, metadata with the CLD2 guess of the metadata record that follows a page,
    reasons, order) do not depend on the batch size; a batch is one call to the extraction process."""
    from pipeline.sources import commoncrawl
    from pipeline.sources.extract import Extractor

    cld2 = b'languages-cld2: {"reliable":true,"languages":[{"code":"de","text-covered":0.97}]}\r\n'
    f = tmp_path / "mixed.warc.gz"
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
    with open(f, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for i in range(7):
            resp = w.create_warc_record(f"http://ex.de/{i}", "response", http_headers=http,
                                        payload=io.BytesIO(page(f"{LONG} Seite {i}.").encode()))
            w.write_record(resp)
            if i % 2 == 0:  # CLD2's guess about this page, as Common Crawl writes it after the response
                w.write_record(w.create_warc_record(
                    f"http://ex.de/{i}", "metadata", payload=io.BytesIO(cld2), warc_content_type="application/warc-fields",
                    warc_headers_dict={"WARC-Concurrent-To": resp.rec_headers.get_header("WARC-Record-ID")}))
            if i == 3:
                png = StatusAndHeaders("200 OK", [("Content-Type", "image/png")], protocol="HTTP/1.1")
                w.write_record(w.create_warc_record("http://ex.de/img", "response", http_headers=png,
                                                    payload=io.BytesIO(b"\x89PNG")))
                gone = StatusAndHeaders("404 Not Found", [("Content-Type", "text/html")], protocol="HTTP/1.1")
                w.write_record(w.create_warc_record("http://ex.de/gone", "response", http_headers=gone,
                                                    payload=io.BytesIO(b"x")))
                w.write_record(w.create_warc_record("http://ex.de/empty", "response", http_headers=http,
                                                    payload=io.BytesIO(b"<html><body></body></html>")))

    sizes: list[int] = []
    batched = Extractor.extract_payloads

    def counting(self, pages):
        sizes.append(len(pages))
        return batched(self, pages)

    monkeypatch.setattr(Extractor, "extract_payloads", counting)
    by_size = {}
    for n in (1, 3, 16):
        monkeypatch.setattr(commoncrawl, "PAGE_BATCH", n)
        sizes.clear()
        by_size[n] = read_all(f)
        assert max(sizes) == min(n, 8) and sum(sizes) == 8  # 7 pages and the empty one
    assert by_size[1] == by_size[3] == by_size[16]
    rows = by_size[16]
    assert [r["url"] for r in rows] == [f"http://ex.de/{i}" for i in range(4)] + [
        "http://ex.de/img", "http://ex.de/gone", "http://ex.de/empty"] + [f"http://ex.de/{i}" for i in range(4, 7)]
    assert [json.loads(r["metadata"]).get("language") for r in rows if r["drop_reason"] is None] == [
        "de", None, "de", None, "de", None, "de"]
    assert [r["drop_reason"] for r in rows[4:7]] == ["not_html", "http_status", "no_text"]


def test_metadata_records_after_a_page_hold_one_guess_and_a_hostile_one_is_ignored(tmp_path, monkeypatch):
    """Hostile input: a page followed by many metadata records about it, some not a list of objects
    (`{"languages":[1]}` made the whole file an internal_error). A page waiting for extraction
    keeps one CLD2 guess, the last valid one (as applying each in turn gives), not every body."""
    from pipeline.sources import commoncrawl

    f = tmp_path / "meta.warc.gz"
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
    guess = b'languages-cld2: {"reliable":true,"languages":[{"code":"%s","text-covered":0.9}]}\r\n'
    bodies = [guess % b"de", b'languages-cld2: {"languages":[1]}\r\n', b'languages-cld2: {"languages":"x"}\r\n',
              b"languages-cld2: [1]\r\n", b"languages-cld2: {bad\r\n", b"other: 1\r\n"]
    bodies += [guess % b"fr"] * 30 + [b'languages-cld2: {"languages":[]}\r\n', b'languages-cld2: {"languages":[7]}\r\n']
    with open(f, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for i in range(2):
            resp = w.create_warc_record(f"http://ex.de/{i}", "response", payload=io.BytesIO(page().encode()),
                                        http_headers=http)
            w.write_record(resp)
            for body in bodies[: None if i == 0 else 2]:
                w.write_record(w.create_warc_record(
                    f"http://ex.de/{i}", "metadata", payload=io.BytesIO(body), warc_content_type="application/warc-fields",
                    warc_headers_dict={"WARC-Concurrent-To": resp.rec_headers.get_header("WARC-Record-ID")}))
    applied = []
    apply = commoncrawl._apply_cld2
    monkeypatch.setattr(commoncrawl, "_apply_cld2", lambda doc, *a: applied.append(doc["url"]) or apply(doc, *a))
    rows = read_all(f)
    assert [r["drop_reason"] for r in rows] == [None, None]
    assert [json.loads(r["metadata"]).get("language") for r in rows] == ["fr", "de"]
    assert applied == ["http://ex.de/0", "http://ex.de/1"]  # once per page


def test_bodies_that_lie_about_their_encoding_are_one_row_each_and_decoded_where_they_can_be(tmp_path):
    import random
    import zlib

    html = page(LONG * 3).encode()
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = raw.compress(html) + raw.flush()
    rnd = random.Random(0)
    noisy = page(" ".join(f"w{rnd.randrange(10**9)}" for _ in range(3000))).encode()
    cut = gzip.compress(noisy)[:2000]
    f = tmp_path / "enc.warc.gz"
    write_warc(f, [
        {"type": "response", "uri": "http://a/", "body": deflated, "http": [("Content-Encoding", "gzip")]},
        {"type": "response", "uri": "http://b/", "body": bytes(rnd.randrange(256) for _ in range(3000)),
         "http": [("Content-Encoding", "gzip")]},
        {"type": "response", "uri": "http://c/", "body": gzip.compress(html)},  # no Content-Encoding
        {"type": "response", "uri": "http://d/", "body": cut, "http": [("Content-Encoding", "gzip")]},
        {"type": "response", "uri": "http://e/", "body": html, "http": [("Content-Encoding", "gzip")]},
    ])
    rows = read_all(f)
    assert [r["url"] for r in rows] == ["http://a/", "http://b/", "http://c/", "http://d/", "http://e/"]
    assert len({r["id"] for r in rows}) == 5  # one row per record, docs_in counts 5
    how = [json.loads(r["metadata"]).get("content_decoding") for r in rows]
    assert [r["drop_reason"] for r in rows] == [None, "unreadable", None, None, None]
    assert "Content-Encoding gzip" in rows[1]["drop_detail"]
    assert how[0] == "mislabelled:deflate" and how[2] == "undeclared:gzip" and how[3] == "truncated"
    assert how[4] == "identity"
    assert "Straßenbahnen" in rows[0]["text"] and "Straßenbahnen" in rows[2]["text"] and "Straßenbahnen" in rows[4]["text"]


def test_a_gzip_bomb_body_is_too_large_not_held(tmp_path):
    bomb = gzip.compress(b"<html>" + b"a" * (40 << 20))
    f = tmp_path / "bomb.warc.gz"
    write_warc(f, [{"type": "response", "uri": "http://bomb/", "body": bomb, "http": [("Content-Encoding", "gzip")]}])
    (r,) = read_all(f)
    assert r["drop_reason"] == TOO_LARGE and "more than" in r["drop_detail"]


def test_charsets_that_lie(tmp_path):
    de = "Grüße aus München: Straßenbahnen fahren täglich über die Isarbrücke und halten überall. " * 3
    f = tmp_path / "cs.warc.gz"
    write_warc(f, [
        {"type": "response", "uri": "http://utf8-as-latin1/", "ctype": "text/html; charset=ISO-8859-1",
         "body": page(de).encode("utf-8")},
        {"type": "response", "uri": "http://utf32/", "ctype": "text/html", "body": page(de).encode("utf-32")},
        {"type": "conversion", "uri": "http://wet16/", "body": de.encode("utf-16-le")},
    ])
    rows = read_all(f)
    assert all(r["drop_reason"] is None for r in rows), [r["drop_detail"] for r in rows]
    for r in rows:
        assert "Grüße aus München" in r["text"] and "\x00" not in r["text"] and "Ã" not in r["text"], r["url"]
