"""Gopher repetition rules (Rae et al. 2021, Table A1) with datatrove's GopherRepetitionFilter defaults.

Fractions are over the whole text length, as in datatrove 0.10: paragraphs are `text.strip()` split
on 2+ newlines, lines are the text split on 1+ newlines; the top n-gram fraction is
len(" ".join(ngram)) * count of the most common n-gram; the duplicated n-gram fraction counts the
characters of n-grams seen before in a left-to-right scan that jumps past each duplicate.
"""
from __future__ import annotations

import pyarrow as pa

from stages.quality.rules import Check, LangRules, RuleSet, RuleSetConfig, at_most, flag
from stages.quality.text_stats import find_duplicates


class GopherRepetitionConfig(RuleSetConfig):
    """datatrove's parameter names and defaults; null disables a rule."""

    dup_line_frac: float | None = 0.3
    dup_para_frac: float | None = 0.3
    dup_line_char_frac: float | None = 0.2
    dup_para_char_frac: float | None = 0.2
    top_n_grams: list[tuple[int, float]] = [(2, 0.2), (3, 0.18), (4, 0.16)]
    dup_n_grams: list[tuple[int, float]] = [(5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)]


class GopherRepetition(RuleSet):
    Config = GopherRepetitionConfig

    def fields(self) -> list[pa.Field]:
        f = [
            pa.field("rps_doc_dup_para_frac", pa.float64()),
            pa.field("rps_doc_dup_para_char_frac", pa.float64()),
            pa.field("rps_doc_dup_line_frac", pa.float64()),
            pa.field("rps_doc_dup_line_char_frac", pa.float64()),
        ]
        f += [pa.field(f"rps_doc_top_{n}gram_frac", pa.float64()) for n, _ in self.config.top_n_grams]
        f += [pa.field(f"rps_doc_dup_{n}gram_frac", pa.float64()) for n, _ in self.config.dup_n_grams]
        return f

    def reasons(self) -> list[str]:
        return list(self.datatrove_reasons())

    def datatrove_reasons(self) -> dict[str, str]:
        """Our reason -> datatrove's, for the parity benchmarks."""
        r = {
            "gopher_repetition_empty": "empty",
            "gopher_repetition_too_many_dup_paras": "dup_para_frac",
            "gopher_repetition_too_many_dup_para_chars": "dup_para_char_frac",
            "gopher_repetition_too_many_dup_lines": "dup_line_frac",
            "gopher_repetition_too_many_dup_line_chars": "dup_line_char_frac",
        }
        r |= {f"gopher_repetition_top_{n}gram_too_frequent": f"top_{n}_gram" for n, _ in self.config.top_n_grams}
        r |= {f"gopher_repetition_too_many_dup_{n}grams": f"duplicated_{n}_n_grams" for n, _ in self.config.dup_n_grams}
        return r

    def signals(self, st, lang: LangRules) -> dict:
        text = st.text
        size = len(text)
        sig: dict = {}
        if not size:
            return {f.name: None for f in self.fields()}
        paras = st.paragraphs
        p_dup, p_chars = find_duplicates(paras)
        lines = st.nl_lines
        l_dup, l_chars = find_duplicates(lines)
        sig["rps_doc_dup_para_frac"] = p_dup / len(paras)
        sig["rps_doc_dup_para_char_frac"] = p_chars / size
        sig["rps_doc_dup_line_frac"] = l_dup / len(lines)
        sig["rps_doc_dup_line_char_frac"] = l_chars / size
        for n, _ in self.config.top_n_grams:
            sig[f"rps_doc_top_{n}gram_frac"] = st.top_ngram_chars(n) / size
        for n, _ in self.config.dup_n_grams:
            sig[f"rps_doc_dup_{n}gram_frac"] = st.dup_ngram_chars(n) / size
        return sig

    def checks(self, sig: dict, lang: LangRules) -> list[Check]:
        c = self.config
        if sig["rps_doc_dup_para_frac"] is None:
            return [flag("gopher_repetition_empty", True)]
        out = [
            at_most("gopher_repetition_too_many_dup_paras", sig["rps_doc_dup_para_frac"], c.dup_para_frac),
            at_most("gopher_repetition_too_many_dup_para_chars", sig["rps_doc_dup_para_char_frac"], c.dup_para_char_frac),
            at_most("gopher_repetition_too_many_dup_lines", sig["rps_doc_dup_line_frac"], c.dup_line_frac),
            at_most("gopher_repetition_too_many_dup_line_chars", sig["rps_doc_dup_line_char_frac"], c.dup_line_char_frac),
        ]
        if lang.word_rules:
            out += [at_most(f"gopher_repetition_top_{n}gram_too_frequent", sig[f"rps_doc_top_{n}gram_frac"], t) for n, t in c.top_n_grams]
            out += [at_most(f"gopher_repetition_too_many_dup_{n}grams", sig[f"rps_doc_dup_{n}gram_frac"], t) for n, t in c.dup_n_grams]
        return [x for x in out if x is not None]
