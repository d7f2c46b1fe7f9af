"""Bytes → NFC text: charset chain, counted replacement."""
from __future__ import annotations

import unicodedata

from pipeline.sources.encoding import decode_counted, decode_html, meta_charset, normalize_charset, to_text


def test_decode_counted_counts_bad_bytes():
    assert decode_counted(b"ab\xff\xfecd", "utf-8") == ("ab\ufffd\ufffdcd", 2)
    assert decode_counted("ok".encode(), "utf-8") == ("ok", 0)
    text, n = decode_counted(b"\xe4\xb8", "utf-8")  # truncated multi-byte sequence at the end
    assert n == 2 and text == "\ufffd"


def test_charset_names():
    assert normalize_charset("ISO-8859-1") == "cp1252"  # WHATWG: latin-1 means windows-1252
    assert normalize_charset("GB2312") == "gb18030"
    assert normalize_charset("utf8") == "utf-8"
    assert normalize_charset("x-unknown-charset") is None
    assert normalize_charset(None) is None


def test_meta_charset_forms():
    assert meta_charset(b'<meta charset="koi8-r">') == "koi8-r"
    assert meta_charset(b"<META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=Shift_JIS'>") == "shift_jis"
    assert meta_charset(b"<p>no meta</p>") is None


def test_order_header_then_meta_then_detection():
    body = "<meta charset='windows-1251'><p>Привет, мир! Это тестовая страница на русском языке.</p>"
    raw = body.encode("cp1251")
    assert decode_html(raw, "windows-1251").charset_source == "header"
    d = decode_html(raw)
    assert d.charset_source == "meta" and "Привет" in d.text
    # a wrong header (utf-8 for cp1251 bytes) falls through to the meta tag
    d = decode_html(raw, "utf-8")
    assert "Привет" in d.text and d.replaced == 0
    latin = "<p>Grüße aus der Straße, schöne Äpfel und Öfen für München.</p>".encode("latin-1")
    d = decode_html(latin)
    assert d.charset_source == "detected" and "Grüße" in d.text


def test_bom_and_nfc():
    d = decode_html("\ufeff<p>e\u0301</p>".encode("utf-8"))
    assert d.text == "<p>e\u0301</p>" and d.charset_source == "bom"  # HTML as served: the text is normalised
    assert to_text("A\u030a".encode()) == ("\u00c5", 0)


def test_a_codec_name_that_is_no_charset_is_ignored_not_raised():
    """Python knows `base64`, `zlib`, `rot13` (bytes-to-bytes codecs) and `idna`, `punycode`,
    `undefined` (no error handler): a page declaring one of them must decode as if it declared
    nothing (they used to raise out of the reader, booking the page as a refinery bug)."""
    page = "<html><body>Grüße</body></html>".encode("utf-8")
    for name in ("base64", "zlib", "rot13", "hex", "uu", "quopri", "idna", "punycode", "undefined"):
        assert normalize_charset(name) is None
        d = decode_html(page, name)
        assert (d.text, d.charset, d.charset_source, d.replaced) == (page.decode(), "utf-8", "utf-8", 0)
        d = decode_html(page.replace(b"<body>", f'<meta charset="{name}"><body>'.encode()))
        assert d.charset == "utf-8" and d.charset_source == "utf-8"
    assert normalize_charset("ISO-8859-1") == "cp1252" and normalize_charset("utf-16") == "utf-16"
