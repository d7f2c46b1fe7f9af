"""FineWeb rules (Penedo et al. 2024) with datatrove's FineWebQualityFilter defaults.

Over the non-blank lines of `text.split("\\n")` (lines are not stripped, as in datatrove 0.10):
share of lines ending in terminal punctuation (any script), share of lines of at most 30 chars,
characters in repeated lines over all non-newline characters, and newlines per word.
"""
from __future__ import annotations

import pyarrow as pa
from datatrove.utils.text import TERMINAL_PUNCTUATION

from stages.quality.rules import Check, LangRules, RuleSet, RuleSetConfig, at_least, at_most, flag
from stages.quality.text_stats import find_duplicates


class FineWebConfig(RuleSetConfig):
    """datatrove's parameter names and defaults."""

    line_punct_thr: float = 0.12
    line_punct_exclude_zero: bool = False
    stop_chars: list[str] | None = None  # None: datatrove's TERMINAL_PUNCTUATION
    short_line_thr: float = 0.67
    short_line_length: int = 30
    char_duplicates_ratio: float = 0.01
    new_line_ratio: float = 0.3


class FineWeb(RuleSet):
    Config = FineWebConfig

    def __init__(self, config: FineWebConfig):
        super().__init__(config)
        self.stop_chars = tuple(config.stop_chars if config.stop_chars is not None else TERMINAL_PUNCTUATION)

    def fields(self) -> list[pa.Field]:
        return [
            pa.field("fineweb_line_punct_ratio", pa.float64()),
            pa.field("fineweb_short_line_ratio", pa.float64()),
            pa.field("fineweb_char_dup_ratio", pa.float64()),
            pa.field("fineweb_new_line_ratio", pa.float64()),
        ]

    def reasons(self) -> list[str]:
        return list(self.datatrove_reasons())

    def datatrove_reasons(self) -> dict[str, str]:
        """Our reason -> datatrove's, for the parity benchmarks."""
        return {
            "fineweb_empty": "empty",
            "fineweb_too_few_punct_lines": "line_punct_ratio",
            "fineweb_too_many_short_lines": "short_line_ratio",
            "fineweb_too_many_dup_line_chars": "char_dup_ratio",
            "fineweb_too_many_newlines": "list_ratio",
        }

    def signals(self, st, lang: LangRules) -> dict:
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

    def checks(self, sig: dict, lang: LangRules) -> list[Check]:
        c = self.config
        punct = sig["fineweb_line_punct_ratio"]
        if punct is None:
            return [flag("fineweb_empty", True)]
        if punct == 0 and c.line_punct_exclude_zero:
            first = None
        else:
            first = at_least("fineweb_too_few_punct_lines", punct, c.line_punct_thr)
        out = [
            first,
            at_most("fineweb_too_many_short_lines", sig["fineweb_short_line_ratio"], c.short_line_thr),
            at_most("fineweb_too_many_dup_line_chars", sig["fineweb_char_dup_ratio"], c.char_duplicates_ratio),
        ]
        if lang.word_rules:
            out.append(at_most("fineweb_too_many_newlines", sig["fineweb_new_line_ratio"], c.new_line_ratio))
        return [x for x in out if x is not None]
