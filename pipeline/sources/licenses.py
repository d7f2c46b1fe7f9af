"""SPDX id of a repository's licence from its LICENSE / COPYING file, by key phrases.

Key phrases, not a full text match: licence files are often reformatted, prefixed with a
copyright line, or concatenated, and the phrases below survive all of that.
"""
from __future__ import annotations

import posixpath
import re

LICENSE_FILES = re.compile(r"^(?:un)?licen[cs]e(?:[.-][\w.-]*)?$|^copying(?:[.-][\w.-]*)?$|^copyright(?:\.\w+)?$", re.I)

# (spdx, all phrases that must appear), checked in order: the first match wins.
_RULES: list[tuple[str, tuple[str, ...]]] = [
    ("AGPL-3.0", ("gnu affero general public license",)),
    ("LGPL-3.0", ("gnu lesser general public license", "version 3")),
    ("LGPL-2.1", ("gnu lesser general public license",)),
    ("LGPL-2.0", ("gnu library general public license",)),
    ("GPL-3.0", ("gnu general public license", "version 3")),
    ("GPL-2.0", ("gnu general public license", "version 2")),
    ("GPL", ("gnu general public license",)),
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("Apache-2.0", ("licensed under the apache license, version 2.0",)),
    ("MPL-2.0", ("mozilla public license", "2.0")),
    ("EPL-2.0", ("eclipse public license", "2.0")),
    ("EPL-1.0", ("eclipse public license",)),
    ("BSL-1.0", ("boost software license",)),
    ("Unlicense", ("this is free and unencumbered software released into the public domain",)),
    ("CC0-1.0", ("cc0 1.0 universal",)),
    ("ISC", ("permission to use, copy, modify, and/or distribute this software for any purpose",)),
    ("ISC", ("isc license",)),
    ("MIT", ("permission is hereby granted, free of charge",)),
    ("MIT", ("mit license",)),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "names of its contributors")),
    ("BSD-2-Clause", ("redistribution and use in source and binary forms",)),
    ("Zlib", ("this software is provided 'as-is'", "altered source versions must be plainly marked")),
    ("WTFPL", ("do what the fuck you want to",)),
]


def is_license_file(path: str) -> bool:
    return bool(LICENSE_FILES.match(posixpath.basename(path)))


def detect_license(text: str) -> str | None:
    """SPDX id, "unknown" for a licence file we cannot name, None for empty text."""
    if not text.strip():
        return None
    t = " ".join(text.lower().split())  # reflowed licence texts still match
    # The rule whose first phrase comes earliest wins: a licence names itself in its title,
    # and mentions others (the GPL's text recommends the Lesser GPL) only further down.
    best: tuple[int, int, str] | None = None
    for order, (spdx, phrases) in enumerate(_RULES):
        if all(p in t for p in phrases):
            key = (t.index(phrases[0]), order, spdx)
            best = key if best is None or key < best else best
    return best[2] if best else "unknown"
