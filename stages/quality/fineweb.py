"""FineWeb rules (Penedo et al. 2024) with datatrove's FineWebQualityFilter defaults.

Over the non-blank lines of `text.split("\\n")` (lines are not stripped, as in datatrove 0.10):
share of lines ending in terminal punctuation (any script), share of lines of at most 30 chars,
characters in repeated lines over all non-newline characters, and newlines per word.
"""
from __future__ import annotations

import re

import pyarrow as pa
from datatrove.utils.text import TERMINAL_PUNCTUATION

from stages.quality.rules import LangRules, Option, Rule, RuleSet, Signal
from stages.quality.spans import first_repeat, pieces
from stages.quality.text_stats import find_duplicates


class FineWeb(RuleSet):
    """datatrove's parameter names and defaults."""

    name = "fineweb"
    config_name = "FineWebConfig"
    signals_declared = (
        Signal("fineweb_line_punct_ratio", pa.float64(), "share of non-blank lines ending in terminal punctuation"),
        Signal("fineweb_short_line_ratio", pa.float64(), "share of non-blank lines of at most short_line_length chars"),
        Signal("fineweb_char_dup_ratio", pa.float64(), "characters in repeated lines / non-newline characters"),
        Signal("fineweb_new_line_ratio", pa.float64(), "newlines / words"),
    )
    rules = (
        Rule("fineweb_empty", "fineweb_line_punct_ratio", "present", None, None, None, "no line is non-blank", "empty"),
        Rule("fineweb_too_few_punct_lines", "fineweb_line_punct_ratio", "at_least", "line_punct_thr", 0.12, float,
             "the share of lines ending in terminal punctuation is below this", "line_punct_ratio",
             value=lambda v, c: None if v == 0 and c.line_punct_exclude_zero else v),
        Rule("fineweb_too_many_short_lines", "fineweb_short_line_ratio", "at_most", "short_line_thr", 0.67, float,
             "the share of short lines is above this", "short_line_ratio"),
        Rule("fineweb_too_many_dup_line_chars", "fineweb_char_dup_ratio", "at_most", "char_duplicates_ratio", 0.01, float,
             "the share of characters in repeated lines is above this", "char_dup_ratio"),
        Rule("fineweb_too_many_newlines", "fineweb_new_line_ratio", "at_most", "new_line_ratio", 0.3, float,
             "newlines per word are above this (a list, not prose)", "list_ratio", word_rule=True),
    )
    options = (
        Option("line_punct_exclude_zero", bool, False, "documents without any punctuated line skip the punctuation rule"),
        Option("stop_chars", list[str] | None, None, "terminal punctuation; null: datatrove's TERMINAL_PUNCTUATION"),
        Option("short_line_length", int, 30, "a line of at most this many characters is short"),
    )

    def __init__(self, config=None):
        super().__init__(config)
        c = self.config
        self.stop_chars = tuple(c.stop_chars if c.stop_chars is not None else TERMINAL_PUNCTUATION)

    def measure(self, st, lang: LangRules) -> dict:
        lines = st.fw_lines
        if not lines:
            return {f.name: None for f in self.fields()}
        n = len(lines)
        text = st.text
        limit = self.config.short_line_length
        n_words = st.n_words if lang.word_rules else 0
        return {
            "fineweb_line_punct_ratio": sum(1 for s in lines if s.endswith(self.stop_chars)) / n,
            "fineweb_short_line_ratio": sum(1 for s in lines if len(s) <= limit) / n,
            "fineweb_char_dup_ratio": find_duplicates(lines)[1] / (len(text) - text.count("\n")),
            "fineweb_new_line_ratio": text.count("\n") / n_words if n_words else None,
        }

    def flagged_span(self, reason, text, lang, stats):
        """The first non-blank line that repeats an earlier one, for the repeated-line rule."""
        if reason == "fineweb_too_many_dup_line_chars":
            return first_repeat(text, pieces(text, _NEWLINE), skip_blank=True)
        return None


_NEWLINE = re.compile("\n")

FineWebConfig = FineWeb.Config
