"""Bytes to NFC text, the one way every reader decodes input.

Readers must never crash on bad bytes and never hide them: undecodable bytes become U+FFFD and
the number of replaced bytes is returned so the reader can record it in the document metadata.
For HTML the charset comes from the HTTP header, then the document's own <meta> declaration
(first 4 KiB, as browsers prescan), then statistical detection (faust-cchardet).
"""
from __future__ import annotations

import codecs
import functools
import re
import threading
import unicodedata
from dataclasses import dataclass

try:  # faust-cchardet: C, ~100x faster than charset-normalizer
    import cchardet as _chardet
except ImportError:  # pragma: no cover - fallback when the wheel is missing
    _chardet = None

_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)
_PRESCAN_BYTES = 4096


@dataclass(frozen=True)
class Decoded:
    text: str
    charset: str  # the codec actually used (Python name)
    charset_source: str  # "header" | "meta" | "bom" | "detected" | "utf-8" (the fallback)
    replaced: int  # undecodable bytes replaced by U+FFFD


def normalize_charset(name: str | None) -> str | None:
    """Python codec name for a declared charset, or None if unknown. Follows the WHATWG rule that
    latin-1/ascii declarations mean windows-1252, which is what browsers (and pages) actually use.
    A name Python knows but that is not a charset for bytes of text (`base64`, `zlib`, `rot13`: not
    text encodings; `idna`, `punycode`: no error handler) is unknown too: decoding a page with it
    raises, and a page's header must not be able to make the reader fail."""
    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    return _codec(name) if name else None


@functools.lru_cache(maxsize=512)
def _codec(name: str) -> str | None:
    try:
        codec = codecs.lookup(name).name
        "\ufffd<".encode("utf-8").decode(codec, "replace")  # a text codec that takes an error handler
    except (LookupError, UnicodeError, ValueError, TypeError):
        return None
    if codec in ("latin-1", "iso8859-1", "ascii"):
        return "cp1252"
    if codec in ("gb2312", "gbk"):  # pages labelled gb2312 routinely contain GBK/GB18030 characters
        return "gb18030"
    return codec


def meta_charset(data: bytes) -> str | None:
    """Charset declared by <meta charset> or <meta http-equiv=Content-Type> in the first 4 KiB."""
    m = _META_CHARSET.search(data[:_PRESCAN_BYTES])
    return normalize_charset(m.group(1).decode("ascii", "ignore")) if m else None


def detect_charset(data: bytes) -> str | None:
    if _chardet is not None:
        guess = _chardet.detect(data[:65536]).get("encoding")
    else:  # pragma: no cover
        from charset_normalizer import from_bytes

        best = from_bytes(data[:65536]).best()
        guess = best.encoding if best else None
    return normalize_charset(guess)


def _bom(data: bytes) -> str | None:
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # before UTF-16: FF FE 00 00 starts both
        return "utf-32"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def _utf16_without_bom(data: bytes) -> str | None:
    """UTF-16 told by its NUL bytes (ASCII-range text has one in every other position), or None."""
    head = data[:4096]
    if len(head) < 16 or head.count(0) * 4 < len(head):
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    if odd > 3 * max(even, 1):
        return "utf-16-le"
    if even > 3 * max(odd, 1):
        return "utf-16-be"
    return None


# Single-byte charsets a page may be mislabelled with while its bytes are UTF-8: a text in any of
# them that also decodes as UTF-8, multi-byte sequences included, is all but certainly UTF-8.
_SINGLE_BYTE = re.compile(r"cp125\d|iso8859-\d+|latin.*|mac-roman|koi8-[ru]")


class _Counter(threading.local):
    n = 0


_COUNTER = _Counter()


def _count_and_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):  # pragma: no cover - only decoding uses it
        raise exc
    _COUNTER.n += exc.end - exc.start
    return "\ufffd", exc.end


codecs.register_error("refinery-count", _count_and_replace)


def decode_counted(data: bytes, charset: str) -> tuple[str, int]:
    """Decode with replacement, returning (text, number of undecodable bytes)."""
    try:
        return data.decode(charset), 0  # fast path: clean input
    except UnicodeDecodeError:
        pass
    _COUNTER.n = 0
    text = data.decode(charset, "refinery-count")
    return text, _COUNTER.n


def to_text(data: bytes, charset: str = "utf-8") -> tuple[str, int]:
    """NFC text from bytes in a known charset (UTF-8 by default), with the replaced-byte count.
    Bytes that carry a UTF-16/32 byte-order mark, or UTF-16's NULs, are read as such (a WET block
    that is UTF-16 would otherwise keep a NUL between every two letters)."""
    charset = _bom(data) or _utf16_without_bom(data) or normalize_charset(charset) or "utf-8"
    text, replaced = decode_counted(data, charset)
    return nfc(text), replaced


def nfc(text: str) -> str:
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def decode_html(data: bytes, header_charset: str | None = None) -> Decoded:
    """Decode an HTML payload: BOM, HTTP header, <meta>, then detection; UTF-8 as the last resort.

    Not NFC-normalised: the extracted text is (`nfc` on ~5 KB of text rather than ~100 KB of HTML,
    and characters written as entities are normalised too)."""
    for source, charset in (
        ("bom", _bom(data)),
        ("header", normalize_charset(header_charset)),
        ("meta", meta_charset(data)),
    ):
        if charset:
            if source != "bom" and _SINGLE_BYTE.fullmatch(charset) and not data.isascii():
                try:  # valid UTF-8 labelled as a single-byte charset: mojibake if taken at its word
                    return Decoded(data.decode("utf-8"), "utf-8", "utf-8", 0)
                except UnicodeDecodeError:
                    pass
            text, replaced = decode_counted(data, charset)
            # A declared charset that is plainly wrong (many errors) falls through to detection.
            if replaced == 0 or replaced * 100 < len(data) or source == "bom":
                return Decoded(text, charset, source, replaced)
            break
    try:
        return Decoded(data.decode("utf-8"), "utf-8", "utf-8", 0)
    except UnicodeDecodeError:
        pass
    detected = detect_charset(data)
    if detected:
        text, replaced = decode_counted(data, detected)
        return Decoded(text, detected, "detected", replaced)
    text, replaced = decode_counted(data, "utf-8")
    return Decoded(text, "utf-8", "utf-8", replaced)
