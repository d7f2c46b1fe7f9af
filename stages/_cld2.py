"""CLD2 (Google's Compact Language Detector 2, through pycld2) as a second opinion for language ID.

CLD2 is an independent model (naive Bayes over character quadgrams, not a fastText softmax), ships
inside the pycld2 wheel and needs no download. It answers with ISO 639-1 codes like lid.176, except
a few old or regional codes mapped here. It refuses text with C0/C1 control characters ("input
contains invalid UTF-8"; 106 of the 7,413 lingua test documents have a U+0096 or similar), so those
are replaced by spaces first; lone surrogates (which cannot be encoded) are dropped.
"""
from __future__ import annotations

import re

# CLD2 code -> lid.176 label.
_CODES = {"iw": "he", "jw": "jv", "zh-Hant": "zh", "sr-ME": "sr", "in": "id", "tl": "tl"}
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def detect(text: str) -> tuple[str | None, bool]:
    """(language, reliable) from CLD2 for `text`; (None, False) when CLD2 has no answer.

    `bestEffort` makes CLD2 answer short texts too; `reliable` is CLD2's own verdict (enough text,
    a clear margin over the next language).
    """
    import pycld2

    clean = _CONTROL.sub(" ", text)
    try:
        reliable, _, details = pycld2.detect(clean, isPlainText=True, bestEffort=True)
    except pycld2.error:  # residual invalid input: no opinion rather than a crash
        return None, False
    code = details[0][1]
    if code in ("un", "xxx") or code.startswith("xx-"):
        return None, False
    return _CODES.get(code, code), bool(reliable)
