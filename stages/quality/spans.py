"""Where in a document a quality rule applies, for the report's audit samples (`Stage.flagged_span`).

Only for rules whose failure has a place: a repeated line or paragraph (the first one that repeats
an earlier one, at its repetition), C4's lorem ipsum and curly bracket (the first line C4 keeps
that holds it). Ratios over the whole text (short lines, word counts, ...) have none.
"""
from __future__ import annotations

import re


def pieces(text: str, sep: re.Pattern) -> list[tuple[int, int]]:
    """(start, end) of each piece of `sep.split(text)`, in `text`'s offsets."""
    out, at = [], 0
    for m in sep.finditer(text):
        out.append((at, m.start()))
        at = m.end()
    out.append((at, len(text)))
    return out


def first_repeat(text: str, spans: list[tuple[int, int]], skip_blank: bool = False) -> tuple[int, int] | None:
    """The first of `spans` whose text equals an earlier one's (its repetition), or None."""
    seen: set[str] = set()
    for s, e in spans:
        piece = text[s:e]
        if skip_blank and not piece.strip():
            continue
        if piece in seen:
            return s, e
        seen.add(piece)
    return None


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of `text.splitlines()`."""
    out, at = [], 0
    for line in text.splitlines(keepends=True):
        body = line.splitlines()[0] if line.splitlines() else ""
        out.append((at, at + len(body)))
        at += len(line)
    return out
