"""Gopher repetition rules (Rae et al. 2021, Table A1) with datatrove's GopherRepetitionFilter defaults.

Fractions are over the whole text length, as in datatrove 0.10: paragraphs are `text.strip()` split
on 2+ newlines, lines are the text split on 1+ newlines; the top n-gram fraction is
len(" ".join(ngram)) * count of the most common n-gram; the duplicated n-gram fraction counts the
characters of n-grams seen before in a left-to-right scan that jumps past each duplicate.
"""
from __future__ import annotations

import re

import pyarrow as pa

from stages.quality.rules import LangRules, Rule, RuleSet, Signal
from stages.quality.spans import first_repeat, pieces
from stages.quality.text_stats import find_duplicates

_LINES, _PARAGRAPHS = re.compile("\n+"), re.compile(r"\n{2,}")

OPT_FLOAT = float | None
N_THRESHOLDS = list[tuple[int, float]]


class GopherRepetition(RuleSet):
    """datatrove's parameter names and defaults; null disables a rule."""

    name = "gopher_repetition"
    config_name = "GopherRepetitionConfig"
    signals_declared = (
        Signal("rps_doc_dup_para_frac", pa.float64(), "repeated paragraphs / paragraphs"),
        Signal("rps_doc_dup_para_char_frac", pa.float64(), "characters in repeated paragraphs / characters"),
        Signal("rps_doc_dup_line_frac", pa.float64(), "repeated lines / lines"),
        Signal("rps_doc_dup_line_char_frac", pa.float64(), "characters in repeated lines / characters"),
        Signal("rps_doc_top_{n}gram_frac", pa.float64(), "characters of the most frequent n-gram x its count / characters",
               per_n="top_n_grams"),
        Signal("rps_doc_dup_{n}gram_frac", pa.float64(), "characters in duplicated n-grams / characters", per_n="dup_n_grams"),
    )
    rules = (
        Rule("gopher_repetition_empty", "rps_doc_dup_para_frac", "present", None, None, None,
             "the text is empty", "empty"),
        Rule("gopher_repetition_too_many_dup_paras", "rps_doc_dup_para_frac", "at_most", "dup_para_frac", 0.3, OPT_FLOAT,
             "the share of repeated paragraphs is above this", "dup_para_frac"),
        Rule("gopher_repetition_too_many_dup_para_chars", "rps_doc_dup_para_char_frac", "at_most", "dup_para_char_frac", 0.2,
             OPT_FLOAT, "the share of characters in repeated paragraphs is above this", "dup_para_char_frac"),
        Rule("gopher_repetition_too_many_dup_lines", "rps_doc_dup_line_frac", "at_most", "dup_line_frac", 0.3, OPT_FLOAT,
             "the share of repeated lines is above this", "dup_line_frac"),
        Rule("gopher_repetition_too_many_dup_line_chars", "rps_doc_dup_line_char_frac", "at_most", "dup_line_char_frac", 0.2,
             OPT_FLOAT, "the share of characters in repeated lines is above this", "dup_line_char_frac"),
        Rule("gopher_repetition_top_{n}gram_too_frequent", "rps_doc_top_{n}gram_frac", "at_most", "top_n_grams",
             [(2, 0.2), (3, 0.18), (4, 0.16)], N_THRESHOLDS,
             "the most frequent n-gram covers more than this share of characters; [(n, share), ...]", "top_{n}_gram",
             word_rule=True, per_n=True),
        Rule("gopher_repetition_too_many_dup_{n}grams", "rps_doc_dup_{n}gram_frac", "at_most", "dup_n_grams",
             [(5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)], N_THRESHOLDS,
             "duplicated n-grams cover more than this share of characters; [(n, share), ...]", "duplicated_{n}_n_grams",
             word_rule=True, per_n=True),
    )

    def measure(self, st, lang: LangRules) -> dict:
        text = st.text
        size = len(text)
        sig: dict = {}
        if not size:
            return {f.name: None for f in self.fields()}
        paras = st.paragraphs
        p_dup, p_chars = find_duplicates(paras)
        n_paras = len(paras)
        del paras
        st.forget("paragraphs")  # only this rule set reads paragraphs and nl_lines
        lines = st.nl_lines
        l_dup, l_chars = find_duplicates(lines)
        n_lines = len(lines)
        del lines
        st.forget("nl_lines")
        sig["rps_doc_dup_para_frac"] = p_dup / n_paras
        sig["rps_doc_dup_para_char_frac"] = p_chars / size
        sig["rps_doc_dup_line_frac"] = l_dup / n_lines
        sig["rps_doc_dup_line_char_frac"] = l_chars / size
        for n, _ in self.config.top_n_grams:
            sig[f"rps_doc_top_{n}gram_frac"] = st.top_ngram_chars(n) / size
        for n, _ in self.config.dup_n_grams:
            sig[f"rps_doc_dup_{n}gram_frac"] = st.dup_ngram_chars(n) / size
        st.forget(*st.NGRAM_VIEWS)  # no later rule reads them
        return sig

    def flagged_span(self, reason, text, lang, stats):
        """The first line (paragraph) that repeats an earlier one, for the repeated-lines
        (paragraphs) rules, split as `measure` splits."""
        if reason in ("gopher_repetition_too_many_dup_lines", "gopher_repetition_too_many_dup_line_chars"):
            return first_repeat(text, pieces(text, _LINES))
        if reason in ("gopher_repetition_too_many_dup_paras", "gopher_repetition_too_many_dup_para_chars"):
            lead = len(text) - len(text.lstrip())
            body = text.strip()
            at = first_repeat(body, pieces(body, _PARAGRAPHS))
            return (at[0] + lead, at[1] + lead) if at else None
        return None


GopherRepetitionConfig = GopherRepetition.Config
