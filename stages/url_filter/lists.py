"""The URL filter's lists: datatrove's shipped blocklist and word lists, and the user's own files.

Lists are read as datatrove's URLFilter reads them (`datatrove/pipeline/filters/url_filter.py`):
one entry a line, a line starting with `#` is a comment; domains and URLs are kept as written
(surrounding whitespace stripped), words are normalised (every run of characters other than ASCII
letters and digits removed, then lower-cased).

The shipped domain blocklist holds 4.56 million domains, held as a Python set of strings as
datatrove holds it: about 600 MB per process, 50 ns a lookup.
"""
from __future__ import annotations

import io
import os
import re
import tarfile
from typing import Iterable

import fsspec

NON_ALNUM = re.compile(r"[^a-zA-Z0-9]+")

# The categories of datatrove's shipped blocklist (url_filterblacklistsv0_3_0.tar.gz): one
# merged list, the UT1 adult category as datatrove assembled it (its `domains` and `urls` files).
SHIPPED_CATEGORIES = ("adult",)
SHIPPED_ARCHIVE = "url_filterblacklistsv0_3_0.tar.gz"
# datatrove's word lists, in its assets folder
WORD_FILES = {"banned_words": "banned_words.txt", "banned_subwords": "banned_subwords.txt",
              "soft_banned_words": "soft_banned_words.txt"}


def normalize(text: str) -> str:
    """datatrove's `normalize`: non-alphanumeric runs removed, lower-cased."""
    return NON_ALNUM.sub("", text).lower()


def assets_path() -> str:
    from datatrove.utils._import_utils import ASSETS_PATH  # the assets folder of the installed datatrove
    return ASSETS_PATH


def parse_lines(lines: Iterable[str], words: bool) -> set[str]:
    """datatrove's `parse_list`: comment lines out, words normalised, the rest stripped."""
    if words:
        return {normalize(x) for x in lines if x[0] != "#"}
    return {x.strip() for x in lines if x[0] != "#"}


def _lines(data: str) -> list[str]:
    # as iterating over a file opened in text mode gives them (universal newlines)
    return list(io.StringIO(data, newline=None))


# Bytes a line of a plain list holds: printable ASCII but space (`_plain`).
_PLAIN_BYTES = bytes(range(0x21, 0x7F))


def _plain(data: bytes) -> bool:
    """Only printable ASCII lines ending in \\n: each line stripped is the line without its newline."""
    return not data.translate(None, _PLAIN_BYTES + b"\n")


def list_entries(data: bytes) -> set[str]:
    """A domain or URL list file's entries as datatrove reads them (lines stripped, `#` lines out).
    A file of plain ASCII lines (the shipped lists) is split in one call, any other line by line."""
    if _plain(data):
        out = set(data.decode("ascii").split("\n"))
        # split gives "" after a last newline; "" is an entry only where a line is empty
        if data.endswith(b"\n") and b"\n\n" not in data and not data.startswith(b"\n"):
            out.discard("")
        return {x for x in out if not x.startswith("#")} if b"#" in data else out
    return parse_lines(_lines(data.decode("utf-8")), words=False)


def shipped_blocklist() -> tuple[set[str], set[str]]:
    """datatrove's shipped blocklist: (its domains, its URLs), as sets (the 4.56 M domains take
    about 600 MB, as in datatrove's URLFilter). Read from the archive in place (datatrove
    extracts it to a cache folder first; nothing is written here)."""
    found: dict[str, set[str]] = {}
    with tarfile.open(os.path.join(assets_path(), SHIPPED_ARCHIVE), "r:gz") as tar:
        for member in tar:
            if member.isfile() and member.name in ("domains", "urls"):
                found[member.name] = list_entries(tar.extractfile(member).read())
    return found.get("domains", set()), found.get("urls", set())


def read_list_file(path: str, words: bool) -> set[str]:
    """A user's list file (local path or fsspec URL): its entries, the empty one left out (datatrove
    would block every URL without a registered domain for an empty line). Raises ValueError with
    one line when it cannot be read, is not UTF-8 or holds no entry."""
    try:
        with fsspec.open(os.path.expanduser(path) if "://" not in path else path, "rb") as f:
            data = f.read()
    except Exception as exc:  # missing, a directory, no permission, unknown protocol
        raise ValueError(f"cannot read list file {path!r}: {type(exc).__name__}: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"list file {path!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    entries = parse_lines(_lines(text), words) - {""}
    if not entries:
        raise ValueError(f"list file {path!r} holds no entry (empty, or only comments)")
    return entries


def shipped_words(kind: str) -> set[str]:
    """datatrove's banned_words / banned_subwords / soft_banned_words list."""
    with open(os.path.join(assets_path(), WORD_FILES[kind]), encoding="utf-8") as f:
        return parse_lines(f, words=True)
