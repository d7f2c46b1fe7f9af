"""datatrove's word tokenisation (spaCy's blank English tokenizer), memoised per whitespace chunk.

datatrove's quality filters split text into words with `SpaCyTokenizer("en")`, then drop empty and
whitespace tokens. spaCy tokenizes every whitespace-delimited chunk on its own (prefix, suffix,
infix and exception rules never look across whitespace), so the words of a document are the
concatenation of the tokens of its `str.split()` chunks. We tokenize each distinct chunk once,
in one spaCy call per batch of unseen chunks, and keep the result in a bounded memo: the same
tokens as datatrove, at dictionary-lookup speed for the words that recur in real text.

Chunks that are not plain words (numbers, URLs, "don't", "(word),", "U.S.-made", ...) are split by
`SpacyRules` (spaCy's own algorithm and rules, without spaCy's per-string costs; see there), or by
spaCy itself where spaCy's special-case matcher could apply.

For every token we also keep the flags the rules need, so no rule looks at characters again:
NON_SYMBOL (a char outside datatrove's PUNCTUATION_SET), ALPHA (a letter), PUNCT_CHAR (the token
is one of spaCy's sentencizer punctuation marks) and IS_PUNCT (every char is Unicode P*).
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from itertools import chain

from stages.quality.spacy_rules import SpacyRules

_TRAILING = frozenset(",;:!?")
_SPACE = re.compile(r"\s")
# Per-chunk counts packed in one int: non-symbol words | alpha words << 21 | their chars << 42. The
# two lower fields count tokens, at most one per character, so a document of fewer than 2**21
# characters sums them without carries, and the sum stays a machine-size int (Python's `sum` fast
# path). Longer documents are counted from the tokens' flags.
_BITS = 21
_MASK = (1 << _BITS) - 1
_SHORT = 1 << _BITS
_SPACY_BATCH = 4096
# spaCy's Doc costs about 100 bytes per token: a text the matcher may change is tokenized by spaCy
# in pieces of about this many characters, cut where spaCy cannot tell (see `ChunkTokenizer.pieces`)
SLICE = 1 << 18
# within a piece that holds such a chunk, the part spaCy tokenizes: spaCy's cost is per call and per
# character, so the smaller the slices around a changed chunk, the less text spaCy sees (256 against
# 4,096: the same signals on every document of benchmarks/quality_parity.py, ~20% less quality CPU on
# crawl pages, docs/quality.md); the cut is still made out of the matcher's reach (`pieces`)
_SMALL_SLICE = 1 << 8
_CUT = re.compile(r"(?<=\S)[ \n](?=\S)")  # one space or newline between two chunks
# The memo also starts again past this many characters of chunks: its number of chunks alone does not
# bound its bytes (documents that each hold a distinct 1 MB chunk would all stay in it, up to 500,000)
MEMO_CHARS = 1 << 26
# `_matched` outlives the memo's restarts (a chunk learned before a restart, in an earlier segment of
# the same long text, must still count as changed when the whole text is cut into pieces): an extra
# entry only sends more text to spaCy itself, never changes tokens. Its own bound, in characters:
MATCHED_CHARS = 1 << 22
# A cut's window reaches as far as the longest chunk the matcher changed (`pieces`); one such chunk
# longer than this (a hostile "''aaaa…''", kept in the memo for every later text) is found by its
# place in the text instead: a window of its length at every cut candidate was time quadratic in it
_LONG_CHUNK = 64
_LONG_RUN = re.compile(r"\S{%d,}" % (_LONG_CHUNK + 1))


def _is_p(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "P"


def _overlaps(ends: list[tuple[int, int]], lo: int, hi: int) -> bool:
    """Whether one of the (end, start) spans, sorted and apart, overlaps [lo, hi)."""
    i = bisect.bisect_right(ends, (lo, 1 << 62))
    return i < len(ends) and ends[i][1] < hi


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


def _packed_counts(tok: str, flags: int) -> int:
    """A token's share of its chunk's packed counts (non-symbol words | alpha words | their chars)."""
    out = 0
    if flags & NON_SYMBOL:
        out += 1 + (len(tok) << 2 * _BITS)
    if flags & ALPHA:
        out += 1 << _BITS
    return out


_SHARED: "ChunkTokenizer | None" = None


def shared_tokenizer() -> "ChunkTokenizer":
    """One tokenizer per process. Building spaCy's blank English pipeline costs about 0.4 s (its
    special cases), and the memo is a pure cache (the tokens of a chunk never depend on what was
    seen before), so every quality stage of a process can share it: the report's yield section
    builds one stage per setting it tries, `refinery retune` one per recipe it compares."""
    global _SHARED
    if _SHARED is None:
        _SHARED = ChunkTokenizer()
    return _SHARED


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
        self._rules = SpacyRules(nlp.tokenizer)
        self._special = frozenset(self._tokenizer.rules)  # exceptions: "cannot", "dont", "a.", ...
        self._reach = 2 + max(map(len, self._special), default=0)  # a special-case match spans fewer chars
        self._attrs = [IDX, LENGTH]
        self._punctuation = frozenset(PUNCTUATION_SET)
        self._sent_punct = frozenset(Sentencizer.default_punct_chars)
        # a plain word's flags, when no letter is in either punctuation set (true for datatrove 0.10
        # and spaCy 3.8; otherwise every word's flags are computed)
        plain = not any(ch.isalpha() for ch in self._punctuation) and not any(p.isalpha() for p in self._sent_punct)
        self._word_flags = bytes([NON_SYMBOL | ALPHA]) if plain else None
        self._tokens: dict[str, tuple[str, ...]] = {}  # the memo, split in three so callers can map
        self._flags: dict[str, bytes] = {}  # chunks to tokens at C speed (flags as bytes)
        self._counts: dict[str, int] = {}  # packed per-chunk counts, summed per document
        self._token_flags: dict[str, int] = {}  # flags per distinct token
        # chunks whose tokens spaCy's special-case matcher changed ("(''" -> "(", "''"): in a whole
        # document a match across a single space can shadow that change (see `words`)
        self._matched: set[str] = set()
        self._matched_chars = 0
        # letters after which spaCy's suffix rules split a final "." (its lowercase class, which is
        # not str.islower: Georgian and Armenian letters are lowercase to Python but not to spaCy)
        self._dot_after: dict[str, bool] = {}
        self._max_memo = max_memo
        self._chars = 0  # characters of the memoised chunks (MEMO_CHARS)

    def chunks(self, chunks: list[str]) -> list[tuple[tuple[str, ...], tuple[int, ...]]]:
        """Tokens and flags of each chunk (chunks contain no whitespace)."""
        self.learn(chunks)
        return [(self._tokens[c], tuple(self._flags[c])) for c in chunks]

    def learn(self, chunks: list[str]) -> None:
        """Make sure every chunk is memoised."""
        missing = set(chunks).difference(self._tokens)
        if not missing:
            return
        size = sum(map(len, missing))
        if len(self._tokens) + len(missing) > self._max_memo or self._chars + size > MEMO_CHARS:
            # bounded memory; the hot words come back within a few documents
            self.clear()
            missing = set(chunks)
            size = sum(map(len, missing))
        self._chars += size
        self._learn(list(missing))

    def clear(self) -> None:
        self._chars = 0
        self._tokens.clear()
        self._flags.clear()
        self._counts.clear()
        self._token_flags.clear()
        if self._matched_chars > MATCHED_CHARS:  # only past its own bound (see MATCHED_CHARS)
            self._matched.clear()
            self._matched_chars = 0

    def words(self, chunks: list[str], chars: int) -> tuple[list[str], tuple[int, int, int]]:
        """All tokens of the chunks (of a text of `chars` characters), in order, and the document's
        (words with a non-punctuation char, their total length, words with a letter), summed from
        per-chunk packed counts. Exact unless `needs_whole(chunks)`: then use `whole_words`."""
        try:
            words = list(chain.from_iterable(map(self._tokens.__getitem__, chunks)))
        except KeyError:  # some chunk not seen yet: learn them all, then it cannot fail
            self.learn(chunks)
            words = list(chain.from_iterable(map(self._tokens.__getitem__, chunks)))
        if chars < _SHORT:
            packed = sum(map(self._counts.__getitem__, chunks))
            return words, (packed & _MASK, packed >> (2 * _BITS), (packed >> _BITS) & _MASK)
        flags = self.flags(chunks)  # one chunk alone may hold 2**21 tokens: count from the flags
        nonsym = [w for w, f in zip(words, flags) if f & NON_SYMBOL]
        return words, (len(nonsym), sum(map(len, nonsym)), sum(1 for f in flags if f & ALPHA))

    def flags(self, chunks: list[str]) -> bytes:
        """Flags of all tokens of the chunks, one byte per token."""
        try:
            return b"".join(map(self._flags.__getitem__, chunks))
        except KeyError:
            self.learn(chunks)
            return b"".join(map(self._flags.__getitem__, chunks))

    def needs_whole(self, chunks: list[str]) -> bool:
        """True when spaCy on the chunks' whole text could give other tokens than chunk by chunk:
        some chunk's tokens were changed by spaCy's special-case matcher. The matcher runs over the
        whole token sequence, and a match across a single space (`'` + `'`, `he` + `'s`) has no
        rule, so it changes nothing itself, but it wins over an overlapping match inside a chunk
        (spaCy keeps the longest, then the last) and so undoes that chunk's special case."""
        # Call after `words` or `flags` of these chunks (which learn them): an unseen chunk is
        # not in `_matched` yet. Both callers do (DocStats, then C4 on lines of the same text).
        return bool(self._matched) and not self._matched.isdisjoint(chunks)

    def pieces(self, text: str, size: int | None = None, force: bool = True):
        """`text` in pieces whose spaCy tokens, joined, are spaCy's tokens of the whole text, so a
        long text never becomes one spaCy Doc (about 100 bytes per token: 96x the text on a 6 MB
        book). A piece ends at one space between two chunks (dropped: spaCy keeps it as the
        previous token's trailing space, not as a token) or after one newline between two chunks
        (kept: it is a token). The cut must also be out of reach of the special-case matcher, whose
        match across the cut could shadow a change inside a chunk (`needs_whole`): no chunk the
        matcher changed lies within the longest special case's length of it. Learn the text's
        chunks first (`words`, `flags`). Only if no such cut exists within 4 pieces' length (a
        text made of nothing but such chunks) is the text cut at the next space anyway (`force`,
        which bounds a piece's memory); without `force` the piece grows to the next safe cut, so
        the tokens are always spaCy's (the sub-pieces of a piece, `whole_words`: a short piece of
        quote runs has no safe cut within 4 sub-pieces' length, tests/test_word_tokenizer.py)."""
        size = size or SLICE
        start, n = 0, len(text)
        matched = self._matched
        longest = max(map(len, matched), default=0)
        reach = self._reach + longest
        ends = []  # (end, start) of the text's matched chunks longer than _LONG_CHUNK, in order
        if longest > _LONG_CHUNK and n > size:
            reach = self._reach + max((len(c) for c in matched if len(c) <= _LONG_CHUNK), default=0)
            ends = [(m.end(), m.start()) for m in _LONG_RUN.finditer(text) if m.group() in matched]
        while n - start > size:
            cut = first = None
            for m in _CUT.finditer(text, start + size, min(n, start + 4 * size) if force else n):
                p = m.start()
                if first is None:
                    first = p
                if matched.isdisjoint(text[max(start, p - reach) : p + reach].split()) and not (
                        ends and _overlaps(ends, p - reach, p + reach)):
                    cut = p
                    break
            if cut is None:
                if not force:
                    break
                m = _CUT.search(text, start + 4 * size) if first is None else None
                cut = first if first is not None else (m.start() if m else None)
                if cut is None:
                    break
            end = cut + 1 if text[cut] == "\n" else cut
            yield text[start:end]
            start = cut + 1
        yield text[start:]

    def whole_flags(self, text: str) -> bytes:
        """Flags of spaCy's tokens of a whole text (whitespace tokens other than one space are
        kept, with flags 0, as spaCy's sentencizer sees them)."""
        known = self._token_flags
        out = bytearray()
        for piece in self.pieces(text):
            for t in self._tokenizer(piece):
                s = t.text
                if not s.strip():
                    out.append(0)
                    continue
                f = known.get(s)
                if f is None:
                    f = known[s] = _token_flags(s, self._punctuation, self._sent_punct)
                out.append(f)
        return bytes(out)

    def whole_words(self, text: str) -> tuple[list[str], tuple[int, int, int]]:
        """`words` of a whole text, as spaCy gives them (rare: see `needs_whole`), a piece at a time:
        spaCy itself only on the pieces that hold a chunk its matcher changed; the others from the
        memo (exact there: see `pieces`), whose token strings are shared rather than copied."""
        words: list[str] = []
        counts = [0, 0, 0]

        def add(w: list[str], c: tuple[int, int, int]) -> None:
            words.extend(w)
            for k in range(3):
                counts[k] += c[k]

        for piece in self.pieces(text):
            if self._matched.isdisjoint(piece.split()):
                add(*self.words(piece.split(), len(piece)))
                continue
            for small in self.pieces(piece, _SMALL_SLICE, force=False):  # spaCy only near the changed chunks
                chunks = small.split()
                if self._matched.isdisjoint(chunks):
                    add(*self.words(chunks, len(small)))
                else:
                    w = [t.text for t in self._tokenizer(small) if t.text.strip()]
                    add(w, self._word_counts(w))
        return words, (counts[0], counts[1], counts[2])

    def _word_counts(self, words: list[str]) -> tuple[int, int, int]:
        known = self._token_flags
        nonsym = nonsym_chars = alpha = 0
        for w in words:
            f = known.get(w)
            if f is None:
                f = known[w] = _token_flags(w, self._punctuation, self._sent_punct)
            if f & NON_SYMBOL:
                nonsym += 1
                nonsym_chars += len(w)
            if f & ALPHA:
                alpha += 1
        return nonsym, nonsym_chars, alpha

    def _learn(self, missing: list[str]) -> None:
        # spaCy never splits a run of letters unless it is a special case; it splits one trailing
        # , ; : ! ? off such a run, and a trailing "." after a lowercase letter (its suffix rules),
        # unless the run is a special case ("wont.", "id,"). Those chunks, about 60% of the distinct
        # chunks of web text, need no rule at all; `SpacyRules` splits the others, and spaCy itself
        # the few where its special-case matcher could apply.
        special, rules = self._special, self._rules
        tokens, flags, counts, word_flags = self._tokens, self._flags, self._counts, self._word_flags
        one_word = 1 | 1 << _BITS
        rest = []
        for c in missing:
            if c.isalpha() and c not in special:
                if word_flags is not None:
                    tokens[c] = (c,)
                    flags[c] = word_flags
                    counts[c] = one_word | len(c) << (2 * _BITS)
                else:
                    self._store(c, (c,))
            elif not c:  # "" from splitting a line that starts with a space: no token
                self._store(c, ())
            elif (
                (c[-1] in _TRAILING or (c[-1] == "." and len(c) > 1 and self._splits_dot(c[-2])))
                and c[:-1].isalpha()
                and c not in special
                and c[:-1] not in special
            ):
                mark = c[-1]
                mflags = self._token_flags.get(mark)
                if mflags is None or word_flags is None:
                    self._store(c, (c[:-1], mark))
                else:  # a plain word and one mark
                    tokens[c] = (c[:-1], mark)
                    flags[c] = word_flags + bytes([mflags])
                    counts[c] = one_word + (len(c) - 1 << 2 * _BITS) + _packed_counts(mark, mflags)
            else:
                toks = None if _SPACE.search(c) else rules.tokens(c)
                if toks is None:
                    rest.append(c)
                else:
                    self._store(c, toks)
        # in bounded batches: a spaCy Doc costs ~100 bytes per token outside Python's heap
        for i in range(0, len(rest), _SPACY_BATCH):
            self._learn_spacy(rest[i : i + _SPACY_BATCH])

    def _splits_dot(self, ch: str) -> bool:
        """Does spaCy split a final "." after the letter ch, whatever precedes ch? True when its
        suffix rules split "." off ch + "." alone (a one-character lookbehind: the lowercase
        class); False sends the chunk to `SpacyRules` (e.g. after two uppercase letters)."""
        ok = self._dot_after.get(ch)
        if ok is None:
            ok = self._dot_after[ch] = self._rules.suffix_length(ch + ".") == 1
        return ok

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
        k = 0
        cur: list[str] = []
        for idx, length in arr:
            while idx >= ends[k]:
                self._store(missing[k], cur)
                cur = []
                k += 1
            cur.append(joined[idx : idx + length])
        while k < len(missing):
            self._store(missing[k], cur)
            cur = []
            k += 1
        rules = self._rules
        for c in missing:  # the matcher changed these: see needs_whole
            if self._tokens[c] != tuple(t for t in rules.affix_tokens(c) if t.strip()) and c not in self._matched:
                self._matched.add(c)
                self._matched_chars += len(c)

    def _store(self, chunk: str, toks) -> None:
        toks = tuple(t for t in toks if t.strip())
        known = self._token_flags
        flags = []
        for t in toks:
            f = known.get(t)
            if f is None:
                f = known[t] = _token_flags(t, self._punctuation, self._sent_punct)
            flags.append(f)
        self._tokens[chunk] = toks
        self._flags[chunk] = bytes(flags)
        self._counts[chunk] = sum(map(_packed_counts, toks, flags))
