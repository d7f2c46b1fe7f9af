"""Gopher quality rules (Rae et al. 2021, Table A1) with datatrove's GopherQualityFilter defaults.

Same arithmetic as datatrove 0.10: word counts and lengths over datatrove's words (spaCy English
tokens) that contain a non-punctuation character; '#' and ellipsis counts over all words; bullet and
ellipsis lines over `str.splitlines()`; stop words are the distinct stop words present (case-sensitive).
"""
from __future__ import annotations

import pyarrow as pa

from stages.quality.rules import LangRules, Rule, RuleSet, Signal

OPT_INT = int | None
OPT_FLOAT = float | None


class GopherQuality(RuleSet):
    """datatrove's parameter names and defaults; null disables a rule."""

    name = "gopher_quality"
    config_name = "GopherQualityConfig"
    signals_declared = (
        Signal("rps_doc_word_count", pa.int32(), "words with a non-punctuation character"),
        Signal("rps_doc_mean_word_length", pa.float64(), "mean length of those words"),
        Signal("rps_doc_hash_to_word_ratio", pa.float64(), "'#' count / all words"),
        Signal("rps_doc_ellipsis_to_word_ratio", pa.float64(), "('...' + '…') count / all words"),
        Signal("rps_doc_frac_lines_start_with_bullet", pa.float64(), "share of lines starting with '•' or '-'"),
        Signal("rps_doc_frac_lines_end_with_ellipsis", pa.float64(), "share of lines ending with '...' or '…'"),
        Signal("rps_doc_frac_no_alph_words", pa.float64(), "share of words without a letter"),
        Signal("rps_doc_stop_word_count", pa.int32(), "distinct stop words of the document's language present"),
    )
    rules = (
        Rule("gopher_quality_too_few_words", "rps_doc_word_count", "at_least", "min_doc_words", 50, OPT_INT,
             "fewer words (with a non-punctuation character) than this", "gopher_short_doc", word_rule=True),
        Rule("gopher_quality_too_many_words", "rps_doc_word_count", "at_most", "max_doc_words", 100_000, OPT_INT,
             "more words than this", "gopher_long_doc", word_rule=True),
        Rule("gopher_quality_mean_word_too_short", "rps_doc_mean_word_length", "at_least", "min_avg_word_length", 3, OPT_FLOAT,
             "the mean word length is below this", "gopher_below_avg_threshold", word_rule=True),
        Rule("gopher_quality_mean_word_too_long", "rps_doc_mean_word_length", "at_most", "max_avg_word_length", 10, OPT_FLOAT,
             "the mean word length is above this", "gopher_above_avg_threshold", word_rule=True),
        Rule("gopher_quality_too_many_hashes", "rps_doc_hash_to_word_ratio", "at_most", "max_symbol_word_ratio", 0.1, OPT_FLOAT,
             "'#' per word is above this", "gopher_too_many_hashes", word_rule=True),
        Rule("gopher_quality_too_many_ellipses", "rps_doc_ellipsis_to_word_ratio", "at_most", "max_symbol_word_ratio", 0.1, OPT_FLOAT,
             "ellipses per word are above this (same key as the hash rule, as in datatrove)", "gopher_too_many_ellipsis", word_rule=True),
        Rule("gopher_quality_too_many_bullet_lines", "rps_doc_frac_lines_start_with_bullet", "at_most", "max_bullet_lines_ratio", 0.9,
             OPT_FLOAT, "the share of lines starting with a bullet is above this", "gopher_too_many_bullets"),
        Rule("gopher_quality_too_many_ellipsis_lines", "rps_doc_frac_lines_end_with_ellipsis", "at_most", "max_ellipsis_lines_ratio", 0.3,
             OPT_FLOAT, "the share of lines ending with an ellipsis is above this", "gopher_too_many_end_ellipsis"),
        Rule("gopher_quality_too_few_alpha_words", "rps_doc_frac_no_alph_words", "at_least", "max_non_alpha_words_ratio", 0.8, OPT_FLOAT,
             "the share of words with a letter is below this (datatrove's name for a minimum)", "gopher_below_alpha_threshold",
             word_rule=True, value=lambda v, c: 1.0 - v),
        Rule("gopher_quality_too_few_stop_words", "rps_doc_stop_word_count", "at_least", "min_stop_words", 2, OPT_INT,
             "fewer distinct stop words than this (no list for the language: rule skipped)", "gopher_enough_stop_words", word_rule=True),
    )

    def measure(self, st, lang: LangRules) -> dict:
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


GopherQualityConfig = GopherQuality.Config
