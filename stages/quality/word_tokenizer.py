"""datatrove's word tokenisation (spaCy's blank English tokenizer), memoised per whitespace chunk.

datatrove's quality filters split text into words with `SpaCyTokenizer("en")`, then drop empty and
whitespace tokens. spaCy tokenizes every whitespace-delimited chunk on its own (prefix, suffix,
infix and exception rules never look across whitespace), so the words of a document are the
concatenation of the tokens of its `str.split()` chunks. We tokenize each distinct chunk once,
in one spaCy call per batch of unseen chunks, and keep the result in a bounded memo: the same
tokens as datatrove, at dictionary-lookup speed for the words that recur in real text.

For every token we also keep the flags the rules need, so no rule looks at characters again:
NON_SYMBOL (a char outside datatrove's PUNCTUATION_SET), ALPHA (a letter), PUNCT_CHAR (the token
is one of spaCy's sentencizer punctuation marks) and IS_PUNCT (every char is Unicode P*).
"""
from __future__ import annotations

import unicodedata
from itertools import chain

_TRAILING = frozenset(",;:!?")
_BITS = 48  # per-chunk counts packed in one int: non-symbol words | alpha words << 48 | chars << 96
_MASK = (1 << _BITS) - 1


def _is_p(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "P"

NON_SYMBOL = 1
ALPHA = 2
PUNCT_CHAR = 4
IS_PUNCT = 8


def _token_flags(tok: str, punctuation: frozenset[str], sent_punct: frozenset[str]) -> int:
    f = 0
    if not punctuation.issuperset(tok):
        f |= NON_SYMBOL
    if tok.isalpha() or any(map(str.isalpha, tok)):
        f |= ALPHA
    if tok in sent_punct:
        f |= PUNCT_CHAR
    if not tok.isalnum() and all(map(_is_p, tok)):  # spaCy's is_punct
        f |= IS_PUNCT
    return f


class ChunkTokenizer:
    """Maps a whitespace chunk to (tokens, flags), as datatrove's English word tokenizer splits it."""

    def __init__(self, max_memo: int = 500_000):
        import spacy
        from datatrove.utils.text import PUNCTUATION_SET
        from spacy.attrs import IDX, LENGTH
        from spacy.pipeline.sentencizer import Sentencizer

        nlp = spacy.blank("en")
        nlp.vocab.lex_attr_getters = {}  # only token boundaries are needed, not lexical attributes
        self._tokenizer = nlp.tokenizer
        self._special = frozenset(self._tokenizer.rules)  # exceptions: "cannot", "dont", "a.", ...
        self._attrs = [IDX, LENGTH]
        self._punctuation = frozenset(PUNCTUATION_SET)
        self._sent_punct = frozenset(Sentencizer.default_punct_chars)
        self._memo: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {}
        self._tokens: dict[str, tuple[str, ...]] = {}  # the same memo split in two, so callers
        self._flags: dict[str, bytes] = {}  # can map chunks to tokens at C speed (flags as bytes)
        self._counts: dict[str, int] = {}  # packed per-chunk counts, summed per document
        self._max_memo = max_memo

    def chunks(self, chunks: list[str]) -> list[tuple[tuple[str, ...], tuple[int, ...]]]:
        """Tokens and flags of each chunk (chunks contain no whitespace)."""
        self.learn(chunks)
        return list(map(self._memo.__getitem__, chunks))

    def learn(self, chunks: list[str]) -> None:
        """Make sure every chunk is memoised (one spaCy call for all unseen ones)."""
        missing = set(chunks).difference(self._memo)
        if missing and len(self._memo) + len(missing) > self._max_memo:
            # bounded memory; the hot words come back within a few documents
            self._memo.clear()
            self._tokens.clear()
            self._flags.clear()
            self._counts.clear()
            missing = set(chunks)
        if missing:
            self._learn(list(missing))

    def words(self, chunks: list[str]) -> tuple[list[str], tuple[int, int, int]]:
        """All tokens of the chunks, in order, and the document's (words with a non-punctuation
        char, their total length, words with a letter), summed from per-chunk packed counts."""
        try:
            words = list(chain.from_iterable(map(self._tokens.__getitem__, chunks)))
        except KeyError:  # some chunk not seen yet: learn them all, then it cannot fail
            self.learn(chunks)
            words = list(chain.from_iterable(map(self._tokens.__getitem__, chunks)))
        packed = sum(map(self._counts.__getitem__, chunks))
        return words, (packed & _MASK, packed >> (2 * _BITS), (packed >> _BITS) & _MASK)

    def flags(self, chunks: list[str]) -> bytes:
        """Flags of all tokens of the chunks, one byte per token."""
        try:
            return b"".join(map(self._flags.__getitem__, chunks))
        except KeyError:
            self.learn(chunks)
            return b"".join(map(self._flags.__getitem__, chunks))

    def _learn(self, missing: list[str]) -> None:
        # spaCy never splits a run of letters unless it is a special case; it splits one trailing
        # , ; : ! ? off such a run, and a trailing "." after a lowercase letter (its suffix rules),
        # unless the run is a special case ("wont.", "id,"). Those chunks, about 60% of the distinct
        # chunks of web text (all checked on the benchmark corpora), need no spaCy call.
        punct, sent, special = self._punctuation, self._sent_punct, self._special
        rest = []
        for c in missing:
            if not c:  # "" from splitting a line that starts with a space: no token
                self._store(c, [], punct, sent)
            elif c.isalpha() and c not in special:
                self._store(c, [c], punct, sent)
            elif (
                (c[-1] in _TRAILING or (c[-1] == "." and len(c) > 1 and c[-2].islower()))
                and c[:-1].isalpha()
                and c not in special
                and c[:-1] not in special
            ):
                self._store(c, [c[:-1], c[-1]], punct, sent)
            else:
                rest.append(c)
        if rest:
            self._learn_spacy(rest)

    def _learn_spacy(self, missing: list[str]) -> None:
        # "\n" between chunks becomes a whitespace token of its own, so spaCy's special-case matcher
        # (which runs over the token sequence: ":" ")" -> ":)") cannot join or shadow across chunks
        joined = "\n".join(missing)
        doc = self._tokenizer(joined)
        arr = doc.to_array(self._attrs).tolist() if len(doc) else []
        ends, pos = [], 0
        for c in missing:
            pos += len(c)
            ends.append(pos)
            pos += 1
        punct, sent = self._punctuation, self._sent_punct
        k = 0
        cur: list[str] = []
        for idx, length in arr:
            while idx >= ends[k]:
                self._store(missing[k], cur, punct, sent)
                cur = []
                k += 1
            cur.append(joined[idx : idx + length])
        while k < len(missing):
            self._store(missing[k], cur, punct, sent)
            cur = []
            k += 1

    def _store(self, chunk: str, toks: list[str], punct, sent) -> None:
        toks = tuple(t for t in toks if t.strip())
        flags = tuple(_token_flags(t, punct, sent) for t in toks)
        self._memo[chunk] = (toks, flags)
        self._tokens[chunk] = toks
        self._flags[chunk] = bytes(flags)
        nonsym = [t for t, f in zip(toks, flags) if f & NON_SYMBOL]
        alpha = sum(1 for f in flags if f & ALPHA)
        self._counts[chunk] = len(nonsym) | alpha << _BITS | sum(map(len, nonsym)) << (2 * _BITS)
