"""Text to normalised tokens, the same way for benchmark items and for documents.

What the field does (GPT-3's and Llama 2's 13-gram overlap, datatrove's `simplify_text`, NeMo
Curator's task decontamination): Unicode NFKC, lower case, punctuation and whitespace dropped, so
that a test item still matches when a page changed its case, its quotes, its punctuation or its
line breaks. Two tokenisations:
  * `words`: runs of letters, digits and underscores (`\\w+`); punctuation separates words and is
    not a token (prose benchmarks: GSM8K, MMLU, ...).
  * `code`: those runs plus every other non-space character as a token of its own, so `a - b`
    and `a + b` differ and indentation, line breaks and spacing around operators do not matter
    (code benchmarks: HumanEval, MBPP, ...).
Numbers are kept as they are (datatrove maps every number to 0, which makes any two word problems
with the same wording but other numbers match; a GSM8K item is its numbers).

`tokens` is the fast path (no offsets); `token_spans` also gives, for each token, the span of
the original text it came from, for removing an overlap from the text. Both give the same tokens.
"""
from __future__ import annotations

import re
import unicodedata

WORDS = "words"
CODE = "code"
TOKENIZERS = (WORDS, CODE)

_PATTERNS = {WORDS: re.compile(r"\w+"), CODE: re.compile(r"\w+|[^\w\s]")}
_CHUNK = re.compile(r"\S+")


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def tokens(text: str, tokenizer: str = WORDS) -> list[str]:
    """The normalised tokens of `text`."""
    pat = _PATTERNS[tokenizer]
    if text.isascii():
        return pat.findall(text.lower())
    # the same as `token_spans` chunk by chunk: NFKC composition and lower case (final sigma) never
    # look across whitespace
    return pat.findall(_normal(text))


def token_spans(text: str, tokenizer: str = WORDS) -> tuple[list[str], list[tuple[int, int]]]:
    """The normalised tokens of `text` and, for each, the (start, end) of the original text it
    came from: the token itself for ASCII text, else the whitespace-free chunk holding it."""
    pat = _PATTERNS[tokenizer]
    toks: list[str] = []
    spans: list[tuple[int, int]] = []
    if text.isascii():
        for m in pat.finditer(text.lower()):
            toks.append(m.group())
            spans.append(m.span())
        return toks, spans
    for m in _CHUNK.finditer(text):
        span = m.span()
        for t in pat.findall(_normal(m.group())):
            toks.append(t)
            spans.append(span)
    return toks, spans
