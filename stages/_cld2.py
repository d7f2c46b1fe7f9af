"""CLD2 (Google's Compact Language Detector 2, through pycld2) as a second opinion for language ID.

CLD2 is an independent model (naive Bayes over character quadgrams, not a fastText softmax), ships
inside the pycld2 wheel and needs no download. It answers with ISO 639-1 codes like lid.176, except
a few old or regional codes mapped here. It refuses text with C0/C1 control characters ("input
contains invalid UTF-8"; 106 of the 7,413 lingua test documents have a U+0096 or similar), so those
are replaced by spaces first; lone surrogates (which cannot be encoded) are dropped.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

# CLD2 code -> lid.176 label.
_CODES = {"iw": "he", "jw": "jv", "zh-Hant": "zh", "sr-ME": "sr", "in": "id", "tl": "tl"}
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class Answer(NamedTuple):
    lang: str | None  # lid.176-style code; None: no answer
    reliable: bool  # CLD2's own verdict (enough text, a clear margin over the next language)
    percent: int  # share of the text (in bytes) CLD2 gives to `lang`: low for mixed-language text
    score: float  # CLD2's normalised score of `lang` (how well the text fits it): low for garbled text


def analyse(text: str) -> Answer:
    """CLD2's top language for `text`, whether it calls it reliable, and its share of the text.

    `bestEffort` makes CLD2 answer short texts too.
    """
    import pycld2

    clean = _CONTROL.sub(" ", text)
    try:
        reliable, _, details = pycld2.detect(clean, isPlainText=True, bestEffort=True)
    except pycld2.error:  # residual invalid input: no opinion rather than a crash
        return Answer(None, False, 0, 0.0)
    code = details[0][1]
    if code in ("un", "xxx") or code.startswith("xx-"):
        return Answer(None, False, 0, 0.0)
    return Answer(_CODES.get(code, code), bool(reliable), int(details[0][2]), float(details[0][3]))


def detect(text: str) -> tuple[str | None, bool]:
    """(language, reliable) from CLD2 for `text`; (None, False) when CLD2 has no answer."""
    a = analyse(text)
    return a.lang, a.reliable


@lru_cache(maxsize=1)
def known() -> frozenset[str]:
    """The languages CLD2 can answer, as lid.176 codes (112 of lid.176's 176: not Upper Sorbian, Asturian,
    Ilocano, Yakut, Western Panjabi, Low German, ...). For a text in any other language CLD2 names a
    neighbour (Upper Sorbian: `pl`), so its answer says nothing against such a label."""
    import pycld2

    detected = set(pycld2.DETECTED_LANGUAGES)
    return frozenset(_CODES.get(code, code) for name, code in pycld2.LANGUAGES if name in detected)
