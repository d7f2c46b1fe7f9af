"""spaCy's tokenizer on one whitespace-free chunk, in Python, with spaCy's own rules, 4-5x faster.

On text it has not seen, spaCy's tokenizer spends its time in three regular expressions per
affix step: the prefix, suffix and infix patterns are alternations of 80 to 100 branches, and
`re.search` tries every branch at every position of the chunk (about 30 us for a 26-character
chunk's suffix search alone). `SpacyRules` replays `Tokenizer._split_affixes` and
`_attach_tokens` step by step with the same compiled patterns and special cases, and only skips
searches that cannot match, decided from the patterns themselves (read with CPython's regex
parser, `re._parser`, when the tokenizer is built, so a spaCy version with other rules gets other
shortcuts; Python has no public regex parser, and a Python without this one, or a pattern it
parses into another shape, gets the plain searches: slower, the same tokens). What the private
parser buys, measured on 3.2 MB of unseen forum text (`benchmarks/spacy_rules_shortcuts.py`):
0.25 CPU-s per MB of the word tokenizer (34%), 0.24 CPU-s per MB of the quality stage (18%); a
chunk memo warmed on the crawl so far saves part of it either way:

- prefix: every branch is anchored at the start, so `match` gives what `search` gives; and it
  is only tried when the chunk's first character can begin some branch;
- suffix: only tried when the last character can end some branch; a match of a branch of
  bounded width W starts in the last W characters, so the search starts there; the one
  unbounded English branch (a run of dots, `\\.\\.+$`) is found by counting trailing dots;
- infix: every infix is non-empty and begins with one of a known set of characters, so the
  pattern is only tried (with `match`) at the positions holding one.

A pattern that does not have the shape these shortcuts rely on simply keeps the plain search.

The one step not replayed is spaCy's special-case matcher, which re-joins token sequences such
as ":" ")" into ":)": `tokens` returns None when the tokens contain one of the matcher's
patterns, and the caller asks spaCy. Checked against spaCy on every distinct chunk of every
corpus in ../shared (`benchmarks/quality_tokenizer.py`).
"""
from __future__ import annotations

import re

try:  # only to find the shortcuts: without it every pattern keeps its plain search
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover
    _c = _parser = None

_MAXWIDTH = 1 << 30


def _edge_ranges(items, last: bool) -> list[tuple[int, int]] | None:
    """Code point ranges that the first (or last) character consumed by `items` can take, or
    None when that cannot be told simply (then no shortcut is taken)."""
    seq = list(items)
    if last:
        seq.reverse()
    for op, av in seq:
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue  # zero width
        if op == _c.LITERAL:
            return [(av, av)]
        if op == _c.IN:
            out = []
            for iop, iav in av:
                if iop == _c.LITERAL:
                    out.append((iav, iav))
                elif iop == _c.RANGE:
                    out.append(iav)
                else:  # NEGATE, CATEGORY, ...
                    return None
            return out
        if op == _c.SUBPATTERN:
            _, add_flags, _, sub = av
            if add_flags & re.IGNORECASE or sub.getwidth()[0] == 0:
                return None
            return _edge_ranges(sub, last)
        if op == _c.BRANCH:
            out = []
            for sub in av[1]:
                if sub.getwidth()[0] == 0:
                    return None
                r = _edge_ranges(sub, last)
                if r is None:
                    return None
                out.extend(r)
            return out
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, _, sub = av
            return _edge_ranges(sub, last) if lo >= 1 else None
        return None
    return None


def _char_class(ranges: list[tuple[int, int]]) -> re.Pattern:
    parts = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[{parts}]")


def _branches(pattern: re.Pattern) -> tuple[list, list] | None:
    """(leading zero-width items, branches) of a pattern that is one alternation, else None."""
    if _parser is None or pattern.flags & (re.IGNORECASE | re.MULTILINE | re.VERBOSE):
        return None
    try:
        parsed = list(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # a parser of another shape: the plain search
        return None
    lead = []
    while parsed and parsed[0][0] == _c.AT:
        lead.append(parsed.pop(0))
    if len(parsed) == 1 and parsed[0][0] == _c.BRANCH:
        return lead, parsed[0][1][1]
    return None  # not one alternation


class _Prefix:
    def __init__(self, pattern: re.Pattern):
        self.search = pattern.search
        self.first = None
        parts = _branches(pattern)
        if parts is None:
            return
        lead, branches = parts
        anchored = lead == [(_c.AT, _c.AT_BEGINNING)] or all(
            b and b[0] == (_c.AT, _c.AT_BEGINNING) for b in branches)
        ranges = []
        for b in branches:
            r = _edge_ranges(b, last=False)
            if r is None:
                return
            ranges.extend(r)
        if anchored:
            self.search = pattern.match  # `^` only matches at 0 (no MULTILINE): same match
            self.first = _char_class(ranges).match

    def __call__(self, s: str) -> int:
        if self.first is not None and self.first(s) is None:
            return 0
        m = self.search(s)
        return m.end() - m.start() if m is not None else 0


class _Suffix:
    def __init__(self, pattern: re.Pattern):
        self.search = pattern.search
        self.last = None
        self.width = None
        self.runs: list[str] = []  # chars c with a branch `cc+$`
        parts = _branches(pattern)
        if parts is None or parts[0]:
            return
        ranges, width = [], 0
        for b in parts[1]:
            items = list(b)
            if not items or items[-1] != (_c.AT, _c.AT_END):
                return
            r = _edge_ranges(items, last=True)
            if r is None:
                return
            ranges.extend(r)
            hi = b.getwidth()[1]
            if hi < _MAXWIDTH:
                width = max(width, hi)
            elif (len(items) == 3 and items[0][0] == _c.LITERAL and items[1][0] == _c.MAX_REPEAT
                  and items[1][1][0] == 1 and list(items[1][1][2]) == [items[0]]):
                self.runs.append(chr(items[0][1]))  # `cc+$`: a run of two or more c at the end
            else:
                return
        self.last = _char_class(ranges).match
        self.width = width

    def __call__(self, s: str) -> int:
        if not s:
            return 0
        if self.last is None:
            m = self.search(s)
            return m.end() - m.start() if m is not None else 0
        if self.last(s[-1]) is None:
            return 0
        n = len(s)
        start = n - self.width
        if start > 0:
            for c in self.runs:  # leftmost match wins: a long run starts before the window
                if s[-1] == c:
                    run = n - len(s.rstrip(c))
                    if run >= 2 and n - run < start:
                        return run
            m = self.search(s, start)  # lookbehinds still see the characters before `start`
        else:
            m = self.search(s)
        return m.end() - m.start() if m is not None else 0


class _Infix:
    def __init__(self, finditer):
        self.finditer = finditer
        self.first = None
        self.match = None
        pattern = getattr(finditer, "__self__", None)
        if not isinstance(pattern, re.Pattern):
            return
        parts = _branches(pattern)
        if parts is None or parts[0]:
            return
        ranges = []
        for b in parts[1]:
            if b.getwidth()[0] == 0:
                return  # an empty infix could match anywhere
            r = _edge_ranges(b, last=False)
            if r is None:
                return
            ranges.extend(r)
        self.first = _char_class(ranges).search
        self.match = pattern.match

    def __call__(self, s: str) -> list:
        """What `finditer` gives: every match is non-empty and begins with a character of
        `first`, so only those positions are tried (lookbehinds still see what precedes them)."""
        if self.first is None:
            return list(self.finditer(s))
        first, match = self.first, self.match
        c = first(s)
        if c is None:
            return []
        out = []
        while c is not None:
            m = match(s, c.start())
            if m is None:
                c = first(s, c.start() + 1)
            else:
                out.append(m)
                c = first(s, m.end())
        return out


class SpacyRules:
    """spaCy's tokenizer on one whitespace-free chunk. `tokens(chunk)` returns spaCy's tokens, or
    None when spaCy's special-case matcher could change them (the caller then asks spaCy)."""

    def __init__(self, tokenizer):
        none = lambda s: None  # noqa: E731  (a missing pattern never matches)
        self._prefix = _Prefix(tokenizer.prefix_search.__self__) if tokenizer.prefix_search else (lambda s: 0)
        self._suffix = _Suffix(tokenizer.suffix_search.__self__) if tokenizer.suffix_search else (lambda s: 0)
        self._infix = _Infix(tokenizer.infix_finditer) if tokenizer.infix_finditer else (lambda s: [])
        self._url = tokenizer.url_match or none
        self._token_match = tokenizer.token_match  # None for English
        self._specials: dict[str, tuple[str, ...]] = {}
        for key, subs in tokenizer.rules.items():
            self._specials[key] = tuple(next(v for k, v in d.items() if k in (65, "ORTH")) for d in subs)
        # spaCy's matcher patterns: special cases its affix rules would split (with
        # faster_heuristics; all of them without), as the tokens those rules give them.
        self._patterns: set[tuple[str, ...]] = set()
        for key in self._specials:
            if (self._prefix(key) or self._suffix(key) or any(True for _ in self._infix(key)) or " " in key
                    or not getattr(tokenizer, "faster_heuristics", True)):
                pat = tuple(t for part in key.split(" ") for t in self._split(part, False))
                if pat:
                    self._patterns.add(pat)
        self._pattern_sizes = sorted({len(p) for p in self._patterns})
        self._pattern_tokens = frozenset(t for p in self._patterns for t in p)

    def tokens(self, chunk: str) -> tuple[str, ...] | None:
        toks = self._split(chunk, True)
        if self._pattern_tokens.isdisjoint(toks):
            return toks
        patterns = self._patterns
        n = len(toks)
        for size in self._pattern_sizes:
            if size > n:
                break
            for i in range(n - size + 1):
                if toks[i : i + size] in patterns:
                    return None
        return toks

    def suffix_length(self, s: str) -> int:
        """Length of the suffix spaCy's suffix rules split off s (0: none)."""
        return self._suffix(s)

    def affix_tokens(self, chunk: str) -> tuple[str, ...]:
        """spaCy's tokens of a chunk before its special-case matcher runs."""
        return self._split(chunk, True)

    def _split(self, string: str, special: bool) -> tuple[str, ...]:
        if self._token_match is not None:  # never for English; spaCy's loop checks it first
            raise NotImplementedError("token_match")
        specials = self._specials if special else {}
        if string in specials:
            return specials[string]
        find_prefix, find_suffix = self._prefix, self._suffix
        prefixes: list[str] = []
        suffixes: list[str] = []
        last_size = 0
        while string and len(string) != last_size:  # Tokenizer._split_affixes
            if string in specials:
                break
            last_size = len(string)
            pre_len = find_prefix(string)
            if pre_len:
                prefix, minus_pre = string[:pre_len], string[pre_len:]
                if minus_pre and minus_pre in specials:
                    string = minus_pre
                    prefixes.append(prefix)
                    break
            suf_len = find_suffix(string[pre_len:])
            if suf_len:
                suffix, minus_suf = string[-suf_len:], string[:-suf_len]
                if minus_suf and minus_suf in specials:
                    string = minus_suf
                    suffixes.append(suffix)
                    break
            if pre_len and suf_len and pre_len + suf_len <= len(string):
                string = string[pre_len:-suf_len]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif pre_len:
                string = minus_pre
                prefixes.append(prefix)
            elif suf_len:
                string = minus_suf
                suffixes.append(suffix)
        out = prefixes  # Tokenizer._attach_tokens
        if string:
            if string in specials:
                out.extend(specials[string])
            else:
                # spaCy asks the URL pattern first; it only matters when infixes would split
                infixes = self._infix(string)
                if not infixes or self._url(string):
                    out.append(string)
                else:
                    start = 0
                    for m in infixes:
                        a, b = m.start(), m.end()
                        if a == 0:
                            continue
                        if a != start:
                            out.append(string[start:a])
                        if a != b:
                            out.append(string[a:b])
                        start = b
                    if string[start:]:
                        out.append(string[start:])
        out.extend(reversed(suffixes))
        return tuple(out)
