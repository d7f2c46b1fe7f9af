"""Negation scope as features (Das & Chen 2001; Pang et al. 2002), for the toxicity model.

Every word after a negation cue up to the end of its clause is read with the prefix `not_`, so
"<group> are not vermin" and "<group> are vermin" differ in their words, word pairs and the
character n-grams at the word's start, and the model can learn what a negated word means. Cues are
those of the functional suite's languages (en, de, fr, es, pt, pl; a cue of one language is rarely a
word in the others), English words ending in "n't" and French words starting with "n'". The `xurl`
and `xuser` placeholders keep their form; names of groups of people are dropped by the toxicity
stage with or without the prefix.

The input is normalised text (stages/toxicity.py) whose clause ends (. , ; : ! ? ¡ ¿ " « » „ “ ” …
( ) [ ] { } |) became "\\v" and whose tokens are split by " ", "\\v" and "\\n" only: "\\v" is
whitespace to fastText, so a line keeps it. Two implementations of one rule, tested equal:
`mark_negation` on one text (training lines, `score_texts`), and `scope_tokens` on the scorer's
tokens of a whole batch (stages/_scalar_fasttext.py), where the cues are found among the batch's
distinct tokens and the prefixed tokens are new distinct tokens, so the work is per distinct token
and a few array operations per token.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NEGATION_CUES = {
    "en": "not no never nor neither nobody nothing none nowhere cannot",
    "de": "nicht kein keine keinen keinem keiner keines nie niemals nichts niemand niemanden nirgends nirgendwo weder",
    "fr": "ne pas jamais aucun aucune rien ni guère",
    "es": "no nunca jamás ningún ninguna ninguno nada nadie ni tampoco",
    "pt": "não nunca jamais nenhum nenhuma nada ninguém nem",
    "pl": "nie nigdy żaden żadna żadne żadnych żadnego żadnej nic nikt nikogo ani",
}
NEGATED = "not_"
CUE_WORDS = frozenset(w for v in NEGATION_CUES.values() for w in v.split())
PLACEHOLDERS = frozenset(("xurl", "xuser"))
CLAUSE_END = "\v"
# clause ends: ASCII ones in the normaliser's byte table, these by a regex before its punctuation step
ASCII_CLAUSE_END = b".,;:!?\"()[]{}|\v"
UNI_CLAUSE_END = re.compile("[¡¿«»„“”…]")
_CLAUSE_SPLIT = re.compile("([\n\v])")
_CUE_ARRAY = pa.array(sorted(CUE_WORDS), pa.large_string())
_PLACEHOLDER_ARRAY = pa.array(sorted(PLACEHOLDERS), pa.large_string())


def is_negation_cue(token: str) -> bool:
    return token in CUE_WORDS or token.endswith("n't") or (token.startswith("n'") and len(token) > 2)


def mark_negation(text: str) -> str:
    """Normalised text with every token after a negation cue in its clause prefixed `not_`."""
    parts = _CLAUSE_SPLIT.split(text)
    for k in range(0, len(parts), 2):
        words = parts[k].split(" ")
        scope = False
        for i, w in enumerate(words):
            if not w:
                continue
            if scope and w not in PLACEHOLDERS:
                words[i] = NEGATED + w
            if not scope and is_negation_cue(w):
                scope = True
        parts[k] = " ".join(words)
    return "".join(parts)


def _cues(words: pa.Array) -> np.ndarray:
    cue = pc.or_(pc.is_in(words, value_set=_CUE_ARRAY), pc.ends_with(words, "n't"))
    cue = pc.or_(cue, pc.and_(pc.starts_with(words, "n'"), pc.greater(pc.utf8_length(words), 2)))
    return cue.to_numpy(zero_copy_only=False)


def scope_tokens(spaced: pa.Array, spaced_idx: np.ndarray, words: pa.Array, tok: np.ndarray,
                 per_line: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """`mark_negation` on a batch's tokens: `spaced` the distinct tokens with the whitespace after
    them and `spaced_idx` each token's index among them, `words` the distinct tokens and `tok` each
    token's index among them, `per_line` the tokens of each line. Returns (distinct tokens, each
    token's index among them) with the tokens in a scope replaced by their `not_` forms."""
    n = len(tok)
    if not n:
        return words, tok
    cue = _cues(words)[tok]
    if not cue.any():
        return words, tok
    ends_clause = pc.or_(pc.match_substring(spaced, "\v"), pc.match_substring(spaced, "\n")).to_numpy(
        zero_copy_only=False)[spaced_idx]
    opens = np.zeros(n, bool)  # a clause opens at a line's first token and after a clause end
    opens[1:] = ends_clause[:-1]
    firsts = (np.cumsum(per_line) - per_line)[per_line > 0]
    opens[firsts] = True
    before = np.cumsum(cue) - cue  # cues before each token
    at_open = before[np.maximum.accumulate(np.where(opens, np.arange(n), 0))]
    scope = before > at_open
    scope &= ~pc.is_in(words, value_set=_PLACEHOLDER_ARRAY).to_numpy(zero_copy_only=False)[tok]
    at = np.flatnonzero(scope)
    if not len(at):
        return words, tok
    inner, back = np.unique(tok[at], return_inverse=True)
    taken = words.take(pa.array(inner))
    negated = pc.binary_join_element_wise(pa.scalar(NEGATED, taken.type), taken, pa.scalar("", taken.type))
    both = pc.dictionary_encode(pa.concat_arrays([words, negated]))  # "not_x" may be a word of the text too
    ids = both.indices.to_numpy(zero_copy_only=False)
    tok = ids[tok]
    tok[at] = ids[len(words) + back]
    return both.dictionary, tok
