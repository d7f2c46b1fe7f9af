"""C4 rules (Raffel et al. 2020) with datatrove's C4QualityFilter defaults.

Line by line as datatrove 0.10 does: a line is dropped if a word is longer than 1000 chars, if it
does not end in terminal punctuation (or ends in "..."), if it has fewer than 3 words, if it
mentions javascript or a cookie/terms policy; the document is dropped if a surviving line says
"lorem ipsum" or has a "{", or if the surviving lines hold fewer than 5 sentences. Sentences are
counted as datatrove does, with spaCy's sentencizer rule over the line's spaCy tokens.

The signals are computed for every rule independently (each as if the other document-level rules
were off); the drop reason follows datatrove's order except that lorem ipsum is reported before a
curly bracket even when the bracket's line comes first.

With `remove_lines` (the default, as datatrove) C4 also rewrites: `scan` returns the text datatrove's
filter leaves, the surviving lines (citations stripped) joined by "\n" and stripped. The quality
stage hands that text to the rules that follow C4 in FineWeb's pipeline and stores it on the
documents it keeps. Not for unspaced languages: C4's terminal punctuation has no "。", so it
would delete every line of text whose sentence rule is off anyway (see stages/quality/stage.py).
"""
from __future__ import annotations

import re

import pyarrow as pa

from stages.quality.rules import LangRules, Option, Rule, RuleSet, Signal
from stages.quality.spans import line_spans
from stages.quality.word_tokenizer import IS_PUNCT, PUNCT_CHAR

CITATION_REGEX = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'")
ELLIPSIS = "..."
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
_POLICY = re.compile("|".join(re.escape(p) for p in POLICY_SUBSTRINGS))
_WS_RUN = re.compile(r"(\s+)")
_ODD_WS = re.compile(r"[^\S ]| {2}")  # whitespace that spaCy turns into a token


class C4(RuleSet):
    """datatrove's parameter names and defaults (-1 / false disables)."""

    name = "c4"
    config_name = "C4Config"
    signals_declared = (
        Signal("c4_kept_lines", pa.int32(), "lines C4 keeps"),
        Signal("c4_removed_lines", pa.int32(), "lines C4 deletes"),
        Signal("c4_num_sentences", pa.int32(), "sentences in the kept lines (spaCy's sentencizer rule)"),
        Signal("c4_javascript_lines", pa.int32(), "lines deleted for mentioning javascript"),
        Signal("c4_policy_lines", pa.int32(), "lines deleted for a cookie / terms policy"),
        Signal("c4_lorem_ipsum", pa.bool_(), "a kept line says 'lorem ipsum'"),
        Signal("c4_curly_bracket", pa.bool_(), "a kept line has a '{'"),
    )
    rules = (
        Rule("c4_lorem_ipsum", "c4_lorem_ipsum", "flag", "filter_lorem_ipsum", True, bool,
             "a line C4 keeps says 'lorem ipsum' (false: rule off)", "lorem_ipsum"),
        Rule("c4_curly_bracket", "c4_curly_bracket", "flag", "filter_curly_bracket", True, bool,
             "a line C4 keeps has a '{' (false: rule off)", "curly_bracket"),
        Rule("c4_too_few_sentences", "c4_num_sentences", "at_least", "min_num_sentences", 5, int,
             "the kept lines hold fewer sentences than this (-1: rule off)", "too_few_sentences",
             word_rule=True, off=lambda t: t <= 0),
    )
    options = (
        Option("remove_citations", bool, True, "strip [1], [edit], [citation needed] from lines"),
        Option("filter_no_terminal_punct", bool, True, "delete lines not ending in terminal punctuation (or ending in '...')"),
        Option("min_words_per_line", int, 3, "delete lines with fewer words (-1: off)"),
        Option("max_word_length", int, 1000, "delete lines with a longer word (-1: off)"),
        Option("filter_javascript", bool, True, "delete lines mentioning javascript"),
        Option("filter_policy", bool, True, "delete lines mentioning a cookie / terms policy"),
        Option("remove_lines", bool, True,
               "kept documents lose the lines C4 deletes (datatrove); false: measure only"),
    )

    def measure(self, st, lang: LangRules) -> dict:
        return self.scan(st, lang)[0]

    def scan(self, st, lang: LangRules) -> tuple[dict, str | None]:
        """Signals, and the text datatrove's filter would leave (None: no rewrite, or no change)."""
        c = self.config
        min_words = c.min_words_per_line if lang.word_rules else -1
        kept = sentences = js = policy = 0
        kept_lines: list[str] | None = [] if c.remove_lines and lang.word_rules else None
        lorem = curly = False
        tok = st._tok
        whole = st.needs_whole
        for line in st.splitlines:
            line = line.strip()
            # datatrove's order is: long word, citation, punctuation, words per line; all four only
            # drop the line, so the cheap punctuation test goes first and words are split only after
            stripped = line
            if c.remove_citations and "[" in line:
                line = CITATION_REGEX.sub("", line)
            if c.filter_no_terminal_punct and (not line.endswith(END_PUNCTUATION) or line.endswith(ELLIPSIS)):
                continue
            if min_words > 0 and len(stripped.split()) < min_words:
                continue
            limit = c.max_word_length
            if limit != -1 and len(stripped) > limit and any(len(w) > limit for w in stripped.split()):
                continue
            line_l = line.lower()
            if "lorem ipsum" in line_l:
                lorem = True
            if c.filter_javascript and "javascript" in line_l:
                js += 1
                continue
            if "{" in line:
                curly = True
            if c.filter_policy and _POLICY.search(line_l):
                policy += 1
                continue
            kept += 1
            sentences += count_sentences(line, tok, whole)
            if kept_lines is not None:
                kept_lines.append(line)
        cleaned = None
        if kept_lines is not None:
            cleaned = "\n".join(kept_lines).strip()
            if cleaned == st.text:
                cleaned = None
        return {
            "c4_kept_lines": kept,
            "c4_removed_lines": len(st.splitlines) - kept,
            "c4_num_sentences": sentences,
            "c4_javascript_lines": js,
            "c4_policy_lines": policy,
            "c4_lorem_ipsum": lorem,
            "c4_curly_bracket": curly,
        }, cleaned

    def flagged_span(self, reason, text, lang, stats):
        """The first line C4 keeps that says lorem ipsum / holds a '{': each line is kept or
        deleted on its own, so a line is flagged when `scan` of that line alone flags it."""
        signal = {"c4_lorem_ipsum": "c4_lorem_ipsum", "c4_curly_bracket": "c4_curly_bracket"}.get(reason)
        if signal is None:
            return None
        needle = "lorem ipsum" if signal == "c4_lorem_ipsum" else "{"
        for s, e in line_spans(text):
            line = text[s:e]
            if needle in (line.lower() if needle == "lorem ipsum" else line) and self.scan(stats(line), lang)[0][signal]:
                return s, e
        return None


C4Config = C4.Config


def count_sentences(line: str, tok, whole: bool = False) -> int:
    """Sentences spaCy's sentencizer finds in a (stripped) line: a new one starts at the first
    token that is not punctuation after a sentence-final mark. A whitespace run other than one
    space is a token of its own in spaCy (and not punctuation), so it is kept here too.
    datatrove counts a line without any token (only reachable with the line filters off) as one.
    `whole`: the document holds a chunk spaCy's special-case matcher changed (DocStats.needs_whole),
    so a line holding one is tokenized by spaCy itself."""
    if not line:
        return 1
    if whole and tok.needs_whole(line.split()):
        flags = tok.whole_flags(line)  # spaCy's matcher could work across chunks here
    elif _ODD_WS.search(line):
        parts = _WS_RUN.split(line)
        flags: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:
                if part != " ":
                    flags.append(0)
            elif part:
                flags.extend(tok.flags([part]))
    else:
        flags = tok.flags(line.split(" "))
    n, seen = 1, False
    for f in flags:
        if f & PUNCT_CHAR:
            seen = True
        elif seen and not f & IS_PUNCT:
            n += 1
            seen = False
    return n
