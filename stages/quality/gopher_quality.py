"""Gopher quality rules (Rae et al. 2021, Table A1) with datatrove's GopherQualityFilter defaults.

Same arithmetic as datatrove 0.10: word counts and lengths over datatrove's words (spaCy English
tokens) that contain a non-punctuation character; '#' and ellipsis counts over all words; bullet and
ellipsis lines over `str.splitlines()`; stop words are the distinct stop words present (case-sensitive).
"""
from __future__ import annotations

import pyarrow as pa

from stages.quality.rules import Check, LangRules, RuleSet, RuleSetConfig, at_least, at_most


class GopherQualityConfig(RuleSetConfig):
    """datatrove's parameter names and defaults; null disables a rule."""

    min_doc_words: int | None = 50
    max_doc_words: int | None = 100_000
    min_avg_word_length: float | None = 3
    max_avg_word_length: float | None = 10
    max_symbol_word_ratio: float | None = 0.1
    max_bullet_lines_ratio: float | None = 0.9
    max_ellipsis_lines_ratio: float | None = 0.3
    max_non_alpha_words_ratio: float | None = 0.8  # datatrove's name: minimum share of words with a letter
    min_stop_words: int | None = 2


class GopherQuality(RuleSet):
    Config = GopherQualityConfig

    def fields(self) -> list[pa.Field]:
        return [
            pa.field("rps_doc_word_count", pa.int32()),
            pa.field("rps_doc_mean_word_length", pa.float64()),
            pa.field("rps_doc_hash_to_word_ratio", pa.float64()),
            pa.field("rps_doc_ellipsis_to_word_ratio", pa.float64()),
            pa.field("rps_doc_frac_lines_start_with_bullet", pa.float64()),
            pa.field("rps_doc_frac_lines_end_with_ellipsis", pa.float64()),
            pa.field("rps_doc_frac_no_alph_words", pa.float64()),
            pa.field("rps_doc_stop_word_count", pa.int32()),
        ]

    def reasons(self) -> list[str]:
        return list(self.datatrove_reasons())

    def datatrove_reasons(self) -> dict[str, str]:
        """Our reason -> datatrove's, for the parity benchmarks."""
        return {
            "gopher_quality_too_few_words": "gopher_short_doc",
            "gopher_quality_too_many_words": "gopher_long_doc",
            "gopher_quality_mean_word_too_short": "gopher_below_avg_threshold",
            "gopher_quality_mean_word_too_long": "gopher_above_avg_threshold",
            "gopher_quality_too_many_hashes": "gopher_too_many_hashes",
            "gopher_quality_too_many_ellipses": "gopher_too_many_ellipsis",
            "gopher_quality_too_many_bullet_lines": "gopher_too_many_bullets",
            "gopher_quality_too_many_ellipsis_lines": "gopher_too_many_end_ellipsis",
            "gopher_quality_too_few_alpha_words": "gopher_below_alpha_threshold",
            "gopher_quality_too_few_stop_words": "gopher_enough_stop_words",
        }

    def signals(self, st, lang: LangRules) -> dict:
        text = st.text
        n_kept = st.n_non_symbol_words
        n_words = st.n_words
        lines = st.splitlines
        n_lines = len(lines)
        bullets = sum(1 for s in lines if s.lstrip().startswith(("•", "-"))) if n_lines else 0
        ellipsis_lines = sum(1 for s in lines if s.rstrip().endswith(("...", "…"))) if n_lines else 0
        stop = lang.stop_words
        return {
            "rps_doc_word_count": n_kept,
            "rps_doc_mean_word_length": st.non_symbol_chars / n_kept if n_kept else None,
            "rps_doc_hash_to_word_ratio": text.count("#") / n_words if n_words else None,
            "rps_doc_ellipsis_to_word_ratio": (text.count("...") + text.count("…")) / n_words if n_words else None,
            "rps_doc_frac_lines_start_with_bullet": bullets / n_lines if n_lines else None,
            "rps_doc_frac_lines_end_with_ellipsis": ellipsis_lines / n_lines if n_lines else None,
            "rps_doc_frac_no_alph_words": 1.0 - st.n_alpha_words / n_words if n_words else None,
            "rps_doc_stop_word_count": len(stop & st.word_set) if stop is not None else None,
        }

    def checks(self, sig: dict, lang: LangRules) -> list[Check]:
        c = self.config
        out = []
        if lang.word_rules:
            alpha = sig["rps_doc_frac_no_alph_words"]
            out += [
                at_least("gopher_quality_too_few_words", sig["rps_doc_word_count"], c.min_doc_words),
                at_most("gopher_quality_too_many_words", sig["rps_doc_word_count"], c.max_doc_words),
                at_least("gopher_quality_mean_word_too_short", sig["rps_doc_mean_word_length"], c.min_avg_word_length),
                at_most("gopher_quality_mean_word_too_long", sig["rps_doc_mean_word_length"], c.max_avg_word_length),
                at_most("gopher_quality_too_many_hashes", sig["rps_doc_hash_to_word_ratio"], c.max_symbol_word_ratio),
                at_most("gopher_quality_too_many_ellipses", sig["rps_doc_ellipsis_to_word_ratio"], c.max_symbol_word_ratio),
            ]
        out += [
            at_most("gopher_quality_too_many_bullet_lines", sig["rps_doc_frac_lines_start_with_bullet"], c.max_bullet_lines_ratio),
            at_most("gopher_quality_too_many_ellipsis_lines", sig["rps_doc_frac_lines_end_with_ellipsis"], c.max_ellipsis_lines_ratio),
        ]
        if lang.word_rules:
            out += [
                at_least("gopher_quality_too_few_alpha_words", None if alpha is None else 1.0 - alpha, c.max_non_alpha_words_ratio),
                at_least("gopher_quality_too_few_stop_words", sig["rps_doc_stop_word_count"], c.min_stop_words),
            ]
        return [x for x in out if x is not None]
