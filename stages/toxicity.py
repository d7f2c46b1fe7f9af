"""Toxicity: one multilingual fastText classifier scored per span (sentence, window, paragraph).

The model (stages/models/toxicity.bin, shipped in the package; a fastText model rewritten with one
dimension, which predicts the same probabilities faster, pipeline/train/fasttext_linear.py) is trained by
`refinery train-toxicity` (pipeline/train/toxicity.py) on labelled sets in 13 languages whose licences
allow it. Each line it sees starts with the document's language token (`xlang_de`, from the langid
stage's `lang` column) when that language is one it was trained on; otherwise the line has no token
and the model scores it language-agnostically. `toxicity_lang` records which ("any": none).

Which documents are judged (docs/toxicity.md):
  * languages: by default only those where the shipped model's held-out ROC-AUC reaches MIN_AUC on
    every held-out set (stages/data/toxicity_languages.json, benchmarks/toxicity_coverage.py); a
    document in another language passes unscored, with `toxicity_unjudged` saying why. Without a
    `lang` value the stage identifies the language with the langid stage's model (`detect_language`).
  * kinds: code and arXiv are skipped by default (a recipe opts in with `skip_kinds`).
  * markup: LaTeX commands, math, tables, code blocks and HTML tags are dropped before scoring
    (stages/_markup.py): the prose only is scored.
`model_path` points at another fastText model whose labels include `__label__toxic` (or Dolma's
jigsaw models: any label not containing "non" counts as toxic); with it, every language is judged
unless `languages` lists some.

Names of groups of people (`identity_terms`, stages/data/identity_terms.txt: women, Muslims, Juden,
migrants, kobiety, ...) are dropped from every span before the model sees it, as they were from every
training line: a group's name is never evidence by itself, what is said about the group is. Words
after a negation cue up to the end of their clause are read as `not_<word>` (`negation_scope`,
stages/_negation.py), as in training, so "X are not vermin" is not "X are vermin" to the model.

Document rule. The text is cut into spans (`granularity`; paragraph: lines, a line of fewer than
`min_span_words` words scored with the lines after it) and each span gets P(toxic):
  * `toxicity_score`: the largest span score;
  * `toxic_span_fraction`: share of the document's characters that lie in spans with P >= `span_threshold`;
  * `toxic_word_count`: occurrences of the user's word list (Aho-Corasick; `ldnoobw`: the shipped
    LDNOOBW list of the document's language); null without a list.
Decision: `toxic_content` when toxicity_score >= `max_score` (and, with `min_toxic_fraction`,
toxic_span_fraction >= it), or when toxic_span_fraction >=
`max_toxic_fraction` (if set); `toxic_words` when toxic_word_count >= `max_toxic_words` (if set).
The defaults (paragraph spans, reject when one paragraph scores >= 0.95) were chosen on whole
documents (benchmarks/toxicity.py); min_toxic_fraction 0.03 and min_span_words 3 on dev documents
(books, textbook sections, web pages; docs/toxicity.md "English"). Empty text scores 0 and is kept.
"""
from __future__ import annotations

import functools
import html
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from stages._arrow import set_column
from stages._fasttext_tokens import _utf8
from stages._fasttext import load_model
from stages._markup import has_markup, prose
from stages._negation import ASCII_CLAUSE_END, CLAUSE_END, NEGATED, UNI_CLAUSE_END, mark_negation, scope_tokens
from stages._scalar_fasttext import ScalarFastText, supports
from stages.base import Stage, StageConfig

TOXIC, CLEAN = "__label__toxic", "__label__clean"
# Languages the shipped model was trained with (their token is a feature); others are scored untokened.
MODEL_LANGUAGES = frozenset(("en", "de", "fr", "es", "pt", "ru", "pl", "zh", "ja", "tr", "ar", "da", "ko"))
_ISO3 = {"eng": "en", "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "por": "pt", "rus": "ru",
         "pol": "pl", "zho": "zh", "cmn": "zh", "chi": "zh", "jpn": "ja", "tur": "tr", "ara": "ar", "arb": "ar",
         "dan": "da", "kor": "ko"}

# On lowercased text; "ſ" is what IGNORECASE also matched for "s" (2.5x faster than IGNORECASE, same matches)
_URL = re.compile(r"(?:htt(?:ps?|pſ)://|www\.)\S+")
# "@" not after a word character, then a word: (?<!\w)@\w+, written to start with the literal "@"
# so that re searches for it (10x faster, same matches; tested)
_MENTION = re.compile(r"@(?<!\w@)\w+")
# ASCII punctuation and control characters become spaces in one bytes.translate over the UTF-8 text
# (multi-byte UTF-8 sequences never contain ASCII bytes, so this is safe and runs at memory speed;
# a regex that split punctuation off as tokens cost 5x more, docs/toxicity.md). The apostrophe stays.
_ASCII_PUNCT = bytes(c for c in range(128) if chr(c) != "'" and not chr(c).isalnum() and chr(c) != "_")
_TO_SPACE = bytes.maketrans(_ASCII_PUNCT, b" " * len(_ASCII_PUNCT))
_KEEP_LINES = bytes.maketrans(_ASCII_PUNCT.replace(b"\n", b""), b" " * (len(_ASCII_PUNCT) - 1))
# the same with the clause ends of a negation scope as "\v" (stages/_negation.py), line breaks too without keep_lines
_TO_SPACE_CLAUSES = bytes.maketrans(_ASCII_PUNCT, bytes(11 if c in ASCII_CLAUSE_END + b"\n" else 32 for c in _ASCII_PUNCT))
_KEEP_LINES_CLAUSES = bytes.maketrans(_ASCII_PUNCT.replace(b"\n", b""), bytes(
    11 if c in ASCII_CLAUSE_END else 32 for c in _ASCII_PUNCT.replace(b"\n", b"")))
# Non-ASCII punctuation (general, CJK and fullwidth) to spaces; Chinese characters and kana one
# token each (fastText splits on spaces only; its word bigrams then pair neighbouring characters).
_UNI_PUNCT = re.compile(r"[\u0085\u00a0-\u00bf\u1680\u00d7\u00f7\u2000-\u206f\u2190-\u2bff\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")


def load_identity_terms() -> frozenset[str]:
    """Names of groups of people (stages/data/identity_terms.txt): no feature for the model."""
    text = (files("stages") / "data" / "identity_terms.txt").read_text(encoding="utf-8")
    return frozenset(w for w in (l.strip() for l in text.splitlines()) if w and not w.startswith("#"))


# Dropped from every line before the model sees it (in training too), so naming a group is never
# evidence by itself (a model that saw them learned "migrants", "juifs", ... as toxic from hostile
# training sets and rejected neutral sentences about them; docs/toxicity.md).
IDENTITY_TERMS = load_identity_terms()
# what is dropped: the names, also as words in a negation's scope
UNSCORED_TERMS = IDENTITY_TERMS | frozenset(NEGATED + t for t in IDENTITY_TERMS)


def drop_identity_terms(line: str, terms: frozenset[str] = UNSCORED_TERMS) -> str:
    """A normalised line without its identity-term tokens."""
    return " ".join(w for w in line.split() if w not in terms)


def _spaced(m: re.Match) -> str:
    # " c " for every character c, as a per-character substitution gives, but one callback per run
    # of CJK characters: that substitution was 60% of the normalisation time (docs/toxicity.md)
    return " " + "  ".join(m.group()) + " "
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")
_PARAGRAPH_END = re.compile(r"\n+")


def _normalise_ascii(text: str, keep_lines: bool) -> str:
    """`_normalise` up to the non-ASCII punctuation and CJK steps."""
    return _normalised_bytes(text, keep_lines, False).decode("utf-8", "replace")


def _replace_urls(text: str) -> str:
    """`_URL.sub(" xurl ", text)`: a URL starts at "htt" or "www.", which str.find finds at memory
    speed, where re tries the pattern at every "h" and "w" (12.4 against 16.5 ms, with the check
    whether there is one, for the speed benchmark's 2,524 documents; tested equal). Each find
    starts where the last match or candidate ended: linear in the text; after 16 candidates the
    rest goes to re (no match starts before `done`), which is faster on text dense with them."""
    h, w = text.find("htt"), text.find("www.")
    if h < 0 and w < 0:
        return text
    out: list[str] = []
    done = 0
    for _ in range(16):
        if h < 0 and w < 0:
            break
        i = w if h < 0 or 0 <= w < h else h
        m = _URL.match(text, i)
        if m is None:
            at = i + 1
        else:
            out += (text[done:i], " xurl ")
            done = at = m.end()
        if 0 <= h < at:
            h = text.find("htt", at)
        if 0 <= w < at:
            w = text.find("www.", at)
    out.append(text[done:] if h < 0 and w < 0 else _URL.sub(" xurl ", text[done:]))
    return "".join(out)


# Letters written as digits or signs to get past filters ("h4te", "k1ll", "v3rmin", "sc*m", "0dio"):
# a sign between two letters (or a 0 starting a word of letters) is read as the letter it stands
# for, so the word's character n-grams are the plain word's. Digits beside other digits or at a
# word's end ("mp3", "1st", "2024") are left alone.
_LEET_MAP = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "*": ""}
# An @ inside an e-mail address ("a@b.com": a dot and a letter follow before the next space) stays.
# One character class first (the regex engine scans for it in C; an alternation at the front made the
# step cost 0.35 s on the speed benchmark's 9 MB instead of 0.06), then which of the three cases.
_LEET = re.compile(r"[013457$*@](?:(?<=[^\W\d_][013457$*])(?=[^\W\d_])|(?<=0)(?<![\w@$*]0)(?=[^\W\d_]{2})"
                   r"|(?<=[^\W\d_]@)(?=[^\W\d_])(?!\S*\.[^\W\d_]))")


def _unleet(m: re.Match) -> str:
    return _LEET_MAP[m.group()]


def _normalised_bytes(text: str, keep_lines: bool, negation: bool) -> bytes:
    """`_normalise_ascii` as UTF-8 (what Arrow takes without decoding and encoding it again)."""
    if "&" in text:
        text = html.unescape(text)
    text = _replace_urls(text.lower())
    if "@" in text:
        text = _MENTION.sub(" xuser ", text)
    text = _LEET.sub(_unleet, text)
    if negation:
        table = _KEEP_LINES_CLAUSES if keep_lines else _TO_SPACE_CLAUSES
    else:
        table = _KEEP_LINES if keep_lines else _TO_SPACE
    return text.encode("utf-8", "replace").translate(table)


def _normalise(text: str, keep_lines: bool = False, negation: bool = True) -> str:
    """Lowercase, entities, URLs and mentions as fixed tokens, punctuation and line breaks to spaces
    (`\\n` kept with `keep_lines`), Chinese characters and kana split, words in a negation's scope
    marked (`negation`, mark_negation). Not whitespace-collapsed (fastText ignores runs of spaces)."""
    text = _normalised_bytes(text, keep_lines, negation).decode("utf-8", "replace")
    if not text.isascii():
        if negation:
            text = UNI_CLAUSE_END.sub(CLAUSE_END, text)
        text = _UNI_PUNCT.sub(" ", text)
        if _CJK.search(text):
            text = _CJK_RUN.sub(_spaced, text)
    return mark_negation(text) if negation else text


# The same two steps over a whole batch (Arrow): the punctuation in RE2, half the time of Python's re
# (docs/toxicity.md); the CJK spacing in numpy (`_space_cjk`).
_RE2_UNI_CLAUSE_END = UNI_CLAUSE_END.pattern
_RE2_UNI_PUNCT = re.sub(r"\\u([0-9a-f]{4})", r"\\x{\1}", _UNI_PUNCT.pattern)
# each Chinese character or kana: a code point of three UTF-8 bytes, the first 0xE3-0xEF (a byte no
# other part of valid UTF-8 takes); per code point below 0x10000, whether it is one
_CJK_TABLE = np.zeros(0x10000, bool)
for _lo, _hi in zip(_CJK_CHARS[0::3], _CJK_CHARS[2::3]):
    assert 0x3000 <= ord(_lo) <= ord(_hi) <= 0xFFFF
    _CJK_TABLE[ord(_lo):ord(_hi) + 1] = True


def _space_cjk(arr: pa.Array) -> pa.Array:
    """`_CJK_RUN.sub(_spaced, s)` for every string of a large_string array without nulls: a space
    inserted before and after each Chinese character or kana, in the UTF-8 bytes. RE2's match and
    per-character replacement (" \\1 ") cost 38 ms for the speed benchmark's documents (392 with
    CJK), a tenth of the stage; this about 15 (docs/toxicity.md, "Speed")."""
    raw, offsets = _utf8(arr)
    lead = np.flatnonzero((raw - np.uint8(0xE3)) <= np.uint8(0xEF - 0xE3))  # 0xE3 <= byte <= 0xEF
    lead = lead[lead + 2 < len(raw)]  # (always, in valid UTF-8; bytes cut short are never read past)
    if not len(lead):
        return arr
    cp = ((raw[lead].astype(np.int32) & 0x0F) << 12) | ((raw[lead + 1].astype(np.int32) & 0x3F) << 6) | (
        raw[lead + 2] & 0x3F)
    at = lead[_CJK_TABLE[cp]]
    if not len(at):
        return arr
    spaces = np.empty(2 * len(at), np.int64)  # where each space goes, in order (np.insert sorts them: 8.5 ms, this 5.7)
    spaces[0::2], spaces[1::2] = at, at + 3
    spaces += np.arange(len(spaces))
    out = np.full(len(raw) + len(spaces), 32, np.uint8)
    old = np.ones(len(out), bool)
    old[spaces] = False
    out[old] = raw
    ends = offsets + 2 * np.searchsorted(at, offsets)  # each character before an end moved it by two
    return pa.LargeStringArray.from_buffers(len(arr), pa.py_buffer(ends), pa.py_buffer(out))


def normalise_batch(texts: Sequence[str | None], keep_lines: bool = False, negation: bool = True) -> pa.Array:
    """`_normalise` of every text (None as ""), as one Arrow array (tested equal), except that with
    `negation` the words in a negation's scope are not yet marked: the clause ends are there ("\\v"),
    and the scorer marks the batch's tokens (stages/_negation.py scope_tokens; mark_negation of
    each string gives `_normalise`'s text)."""
    bodies = [_normalised_bytes(t, keep_lines, negation) if t else b"" for t in texts]
    arr = pa.array(bodies, pa.large_binary()).cast(pa.large_string())  # valid UTF-8: "replace" above
    other = [not b.isascii() for b in bodies]  # only where the two steps can change something
    if any(other):
        done = arr.filter(pa.array(other))
        if negation:
            done = pc.replace_substring_regex(done, _RE2_UNI_CLAUSE_END, CLAUSE_END)
        done = pc.replace_substring_regex(done, _RE2_UNI_PUNCT, " ")
        arr = pc.replace_with_mask(arr, pa.array(other), _space_cjk(done))
    return arr


def preprocess(text: str, negation: bool = True) -> str:
    """The one normalisation used for training and scoring: fastText sees exactly this.

    HTML entities decoded (tweets carry &amp;), lowercased, URLs and @mentions replaced by fixed
    tokens (`xurl`, `xuser`), punctuation and line breaks to spaces (fastText tokenises on spaces
    only: "idiot!!" must count as "idiot"), Chinese characters and kana one token each, the words
    in a negation's scope read as `not_<word>` (`negation`, stages/_negation.py), one line.
    """
    return " ".join(_normalise(text, negation=negation).split())


@functools.lru_cache(maxsize=4096)
def model_language(lang: str | None) -> str | None:
    """The model's language for a `lang` value (`de`, `deu`, `deu_Latn`), or None if it has none."""
    if not lang:
        return None
    code = lang.split("_")[0].split("-")[0].lower()
    code = _ISO3.get(code, code)
    return code if code in MODEL_LANGUAGES else None


def model_line(text: str, lang: str | None, negation: bool = True) -> str:
    """What fastText sees for one span: the language token (if the model knows it) and the text."""
    body = preprocess(text, negation)
    if not body:
        return ""
    code = model_language(lang)
    return f"xlang_{code} {body}" if code else body


def _lang_code(lang: str) -> str:
    """`de`, `deu`, `deu_Latn`, `DE-at` -> `de` (ISO 639-1 where the model knows it)."""
    code = lang.split("_")[0].split("-")[0].lower()
    return _ISO3.get(code, code)


def join_short_lines(lines: pa.Array, owner: np.ndarray, min_words: int) -> tuple[pa.Array, np.ndarray]:
    """Normalised lines (words separated by single spaces, clause ends as "\v") and their document index:
    each line of fewer than `min_words` words joined (with a space) to the lines after it in the same
    document, up to and with the next line of at least `min_words` words; returns the spans and their
    documents. Vectorised: a span starts at a document's first line and after every long line."""
    words = pc.add(pc.count_substring(pc.utf8_trim_whitespace(lines), " "), 1).to_numpy(zero_copy_only=False)
    start = np.ones(len(owner), dtype=bool)
    start[1:] = (owner[1:] != owner[:-1]) | (words[:-1] >= min_words)
    if start.all():
        return lines, owner
    first = np.nonzero(start)[0]
    offsets = pa.array(np.append(first, len(owner)).astype(np.int32))
    sep = pa.scalar("\x0b ", lines.type)  # a clause end: a negation scope stops at the line end, as before
    spans = pc.binary_join(pa.ListArray.from_arrays(offsets, lines), sep)
    return spans, owner[first]


def split_spans(text: str, granularity: str) -> list[str]:
    """Sentences (end punctuation or line break), paragraphs (line breaks) or the whole text."""
    if granularity == "document":
        parts = [text]
    elif granularity == "paragraph":
        parts = _PARAGRAPH_END.split(text)
    else:
        parts = _SENTENCE_END.split(text)
    return [p for p in (s.strip() for s in parts) if p]


def windows(line: str, size: int) -> list[str]:
    """`line` cut at the first space after every `size` characters; a short tail joins the last window."""
    n = len(line)
    out: list[str] = []
    i = 0
    while n - i > size:
        k = line.find(" ", i + size)
        if k == -1 or n - k < size // 3:
            break
        out.append(line[i:k])
        i = k + 1
    out.append(line[i:])
    return [w for w in out if not w.isspace()]


def span_lines(text: str, granularity: str, window: int = 300, negation: bool = True) -> list[str]:
    """The document's spans, preprocessed for the model.

    `window`: the normalised text cut into pieces of about `window` characters at spaces, without
    finding sentences first (one pass, no regex).
    """
    if granularity == "window":
        body = _normalise(text, negation=negation).replace(CLAUSE_END, " ")  # windows are cut at spaces
        return windows(body, window) if body and not body.isspace() else []
    if granularity == "paragraph":  # one normalisation for the whole text, then its lines
        return [l for l in _normalise(text, True, negation).split("\n") if l and not l.isspace()]
    if granularity == "document":
        body = preprocess(text, negation)
        return [body] if body else []
    return [l for l in (preprocess(s, negation) for s in split_spans(text, granularity)) if l]


def bundled_model_path() -> Path:
    return Path(str(files("stages") / "models" / "toxicity.bin"))


def judged_languages() -> dict[str, float]:
    """The languages the shipped model judges, with their held-out ROC-AUC (stages/data/
    toxicity_languages.json, written by benchmarks/toxicity_coverage.py --write): the languages where
    every held-out measurement reaches MIN_AUC."""
    data = json.loads((files("stages") / "data" / "toxicity_languages.json").read_text(encoding="utf-8"))
    return {lang: float(v["auc"]) for lang, v in data["judged"].items()}


# A language is judged by the shipped model only where its held-out ROC-AUC reaches this.
MIN_AUC = 0.75
JUDGED = judged_languages()
UNJUDGED_LANGUAGE, NO_LANGUAGE = "language_not_judged", "no_language"


class ToxicityConfig(StageConfig):
    model_path: str | None = Field(None, description="fastText model file; null: the shipped stages/models/toxicity.bin")
    languages: list[str] | None = Field(None, description=(
        "judge only documents in these languages (`lang` codes), the others pass unscored (toxicity_unjudged); "
        f"null: with the shipped model, the languages whose held-out ROC-AUC is >= {MIN_AUC} and whose held-out "
        "clean prose loses <= 0.5% at the default rule ("
        + ", ".join(f"{l} {a:.2f}" for l, a in sorted(JUDGED.items()))
        + "; stages/data/toxicity_languages.json, docs/toxicity.md), with another model_path every language"))
    detect_language: bool = Field(True, description=(
        "a document without a `lang` value (no langid stage before this one) is identified here with the "
        "langid stage's model; false: it passes unscored (toxicity_unjudged: no_language)"))
    granularity: Literal["sentence", "window", "paragraph", "document"] = Field(
        "paragraph", description="the spans the model scores (window: about window_chars characters)")
    window_chars: int = Field(300, ge=1, description="granularity window: span length in characters")
    min_span_words: int = Field(
        3, ge=1, description=(
            "granularity paragraph: a line of fewer words than this is scored together with the lines after it, up to "
            "and with the next line that has at least this many (within the document), so an index entry, a verse line "
            "or the tail of a hard-wrapped sentence is not a span of its own; 1: every line is a span"))
    span_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="a span scoring at least this is toxic (for toxic_span_fraction)")
    max_score: float | None = Field(
        0.95, ge=0.0, le=1.0, description="drop (toxic_content) when the largest span score reaches this; null: off")
    min_toxic_fraction: float | None = Field(
        0.03, ge=0.0, le=1.0, description=(
            "max_score rejects only a document whose toxic spans (>= span_threshold) hold at least this share of "
            "its characters, so one toxic line in a long text (a quoted slur in a book) does not reject it; "
            "null: one span decides"))
    max_toxic_fraction: float | None = Field(
        None, ge=0.0, le=1.0, description="also drop when toxic spans hold at least this share of the text; null: off")
    identity_terms: bool = Field(
        True, description="drop names of groups of people (stages/data/identity_terms.txt) before the model scores a "
                          "span, as the shipped model was trained; false for a model trained with them")
    negation_scope: bool = Field(
        True, description="mark the words after a negation cue up to the end of the clause (`not_` prefix) before the "
                          "model scores a span, as the shipped model was trained; false for a model trained without")
    word_list: str | None = Field(None, description=(
        "text file of toxic words or phrases, one per line (# comments); `ldnoobw`: the shipped LDNOOBW lists "
        "(CC BY 4.0, stages/data/ldnoobw), each document counted with its language's list (English without "
        "a language, null for a language without a list; with max_toxic_words: 1, C4's rule, off by default: "
        "docs/toxicity.md says why)"))
    max_toxic_words: int | None = Field(
        None, ge=1, description="drop (toxic_words) when at least this many listed words occur; null: count only")


class Toxicity(Stage):
    name = "toxicity"
    Config = ToxicityConfig
    reasons = ("toxic_content", "toxic_words")
    decision_keys = ("max_toxic_fraction", "min_toxic_fraction", "max_score", "max_toxic_words")
    threshold_signals = {"max_toxic_fraction": "toxic_span_fraction", "min_toxic_fraction": "toxic_span_fraction",
                         "max_score": "toxicity_score",
                         "span_threshold": "toxicity_score"}
    # arXiv papers and code are not the prose the model was trained and measured on: a recipe opts in
    # with `skip_kinds: []` (their markup is dropped before scoring either way, stages/_markup.py)
    default_skip_kinds = ("code", "arxiv")

    config: ToxicityConfig

    def signal_fields(self) -> list[pa.Field]:
        return [
            pa.field("toxicity_score", pa.float32()),
            pa.field("toxic_span_fraction", pa.float32()),
            pa.field("toxic_word_count", pa.int32()),
            pa.field("toxicity_lang", pa.string()),
            pa.field("toxicity_unjudged", pa.string()),
        ]

    def signal_descriptions(self) -> dict[str, str]:
        return {"toxicity_score": "the largest span score", "toxic_span_fraction": "share of characters in toxic spans",
                "toxic_word_count": "occurrences of the word list's words and phrases",
                "toxicity_lang": "the language whose token the model saw (any: none, scored language-agnostically)",
                "toxicity_unjudged": f"why the document passed unscored: {UNJUDGED_LANGUAGE} (its language is not one "
                                     f"the stage judges), {NO_LANGUAGE} (no language known); null: scored"}

    def setup(self) -> None:
        path = self.config.model_path or bundled_model_path()
        self.model = load_model(path)
        self.binary = sorted(self.model.get_labels()) == sorted((TOXIC, CLEAN))
        # the shipped model (one dimension): the same probabilities, a word's features computed once
        self.no_feature = UNSCORED_TERMS if self.config.identity_terms else frozenset()  # with their not_ forms
        self.scalar = (ScalarFastText(self.model, TOXIC, no_feature=self.no_feature)
                       if self.binary and supports(self.model, path) else None)
        self.words = (ldnoobw_lists() if self.config.word_list == LDNOOBW
                      else load_word_list(self.config.word_list) if self.config.word_list else None)
        langs = self.config.languages
        if langs is None and self.config.model_path is None:
            langs = list(JUDGED)
        self.judged = None if langs is None else frozenset(_lang_code(l) for l in langs)
        self.langid = None

    def params(self) -> dict:
        """The languages the run judged, with the held-out ROC-AUC measured for each (null: not measured,
        a language the recipe listed below the bar); {} when every language is judged."""
        langs = self.config.languages
        if langs is None and self.config.model_path is None:
            langs = list(JUDGED)
        if langs is None:
            return {}
        return {"judged_languages": {l: JUDGED.get(_lang_code(l)) for l in sorted(langs)}}

    def _detected(self, texts: list[str | None]) -> list[str | None]:
        """The top language of each text by the langid stage's model (None when it finds none)."""
        if self.langid is None:
            from stages.langid import LangID

            self.langid = LangID()
            self.langid.ensure_setup()
        return [pairs[0][0] if pairs else None for pairs in self.langid.predict(texts)]

    # -- scoring -----------------------------------------------------------------------------
    def _predict(self, lines: "pa.Array | list[str]", first: pa.Array | None = None, scope: bool = False
                 ) -> "np.ndarray | list[float]":
        """P(toxic) per line; `first`: a token ("xlang_de") to put before each line ("" for none);
        `scope`: the lines' words in a negation's scope are still to be marked (normalise_batch)."""
        if not len(lines):
            return []
        if self.scalar is not None:
            return self.scalar.predict(lines, first, scope_tokens if scope else None)
        if isinstance(lines, pa.Array):
            lines = lines.to_pylist()
        if scope:
            lines = [mark_negation(l) for l in lines]
        if self.no_feature:
            lines = [drop_identity_terms(l, self.no_feature) for l in lines]
        if first is not None:
            lines = [f"{f} {l}" if f else l for f, l in zip(first.to_pylist(), lines)]
        if self.binary:  # top label only: P(toxic) = p or 1 - p (a third less work than k=-1)
            # The lines never hold "\n" (span_lines splits on it, preprocess joins on spaces), so the
            # wrapper's per-line check is skipped: fastText's own multilinePredict, as `predict` calls it.
            labels, probs = self.model.f.multilinePredict([l + "\n" for l in lines], 1, 0.0, "replace")
            return [min(max(float(p[0]) if l[0] == TOXIC else 1.0 - float(p[0]), 0.0), 1.0) for l, p in zip(labels, probs)]
        labels, probs = self.model.predict(lines, k=-1)
        return [toxic_probability(l, p) for l, p in zip(labels, probs)]

    def score_texts(self, texts: Sequence[str], lang: str | None = None) -> list[float]:
        """P(toxic) for each text taken as one span, in language `lang` (None: agnostic)."""
        self.ensure_setup()
        lines = [model_line(prose(t), lang, self.config.negation_scope) for t in texts]
        todo = [i for i, line in enumerate(lines) if line]
        out = [0.0] * len(lines)
        for i, p in zip(todo, self._predict([lines[i] for i in todo])):
            out[i] = p
        return out

    def score_documents(self, texts: Sequence[str | None], langs: Sequence[str | None] | None = None
                        ) -> list[tuple[float, float]]:
        """(max span score, toxic character fraction) per document, all spans scored at once."""
        self.ensure_setup()
        c = self.config
        n = len(texts)
        langs = langs if langs is not None else [None] * n
        texts = [prose(t) if t and has_markup(t) else t for t in texts]  # the prose only (stages/_markup.py)
        if c.granularity == "paragraph":  # each text normalised once, its lines cut out by Arrow
            parts = pc.split_pattern(normalise_batch(texts, True, c.negation_scope), "\n")
            owner = pc.list_parent_indices(parts).to_numpy(zero_copy_only=False)
            lines = parts.flatten()
            keep = pc.not_equal(pc.binary_length(pc.ascii_trim_whitespace(lines)), 0)
            lines, owner = lines.filter(keep), owner[keep.to_numpy(zero_copy_only=False)]
            if c.min_span_words > 1 and len(lines):
                lines, owner = join_short_lines(lines, owner, c.min_span_words)
        else:
            spans = [span_lines(t or "", c.granularity, c.window_chars, c.negation_scope) for t in texts]
            owner = np.repeat(np.arange(n), [len(s) for s in spans])
            lines = pa.array([l for s in spans for l in s], pa.large_string())
        tokens = [f"xlang_{code}" if (code := model_language(lang)) else "" for lang in langs]
        first = pa.array(tokens, pa.large_string()).take(pa.array(owner)) if any(tokens) and len(lines) else None
        scores = np.asarray(self._predict(lines, first, c.granularity == "paragraph" and c.negation_scope),
                            dtype=np.float64)
        chars = pc.utf8_length(lines).to_numpy(zero_copy_only=False).astype(np.float64)
        if first is not None:  # "xlang_de " is part of the span's characters
            chars += pc.add(pc.utf8_length(first), pc.if_else(pc.equal(first, ""), 0, 1)).to_numpy(
                zero_copy_only=False)
        top = np.zeros(n)
        np.maximum.at(top, owner, scores)
        toxic_chars = np.bincount(owner, weights=chars * (scores >= c.span_threshold), minlength=n)
        all_chars = np.bincount(owner, weights=chars, minlength=n)
        return [(float(t), float(tc / ac) if ac else 0.0) for t, tc, ac in zip(top, toxic_chars, all_chars)]

    def annotate(self, batch: pa.Table) -> pa.Table:
        self.ensure_setup()
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        kinds = batch.column("kind").to_pylist()
        n = batch.num_rows
        langs = batch.column("lang").to_pylist() if "lang" in batch.column_names else [None] * n
        live = [i for i in range(n) if self.applies_to(sources[i], kinds[i])]
        score: list[float | None] = [None] * n
        frac: list[float | None] = [None] * n
        words: list[int | None] = [None] * n
        used: list[str | None] = [None] * n
        unjudged: list[str | None] = [None] * n
        if self.judged is not None or isinstance(self.words, dict):
            unknown = [i for i in live if not langs[i] and (texts[i] or "").strip()]
            if unknown and self.config.detect_language:
                langs = list(langs)
                for i, lang in zip(unknown, self._detected([texts[i] for i in unknown])):
                    langs[i] = lang
        if self.words is not None:  # the word list's rule holds in every language
            for i in live:
                wl = self.words
                if isinstance(wl, dict):  # LDNOOBW: the document's language's list (none: not counted)
                    wl = wl.get(_lang_code(langs[i]) if langs[i] else "en")
                if wl is not None:
                    words[i] = wl.count(texts[i] or "")
        if self.judged is not None:
            judged = []
            for i in live:
                if not (texts[i] or "").strip():
                    judged.append(i)  # empty text: scores 0 in any language
                elif not langs[i]:
                    unjudged[i] = NO_LANGUAGE
                elif _lang_code(langs[i]) not in self.judged:
                    unjudged[i] = UNJUDGED_LANGUAGE
                else:
                    judged.append(i)
            live = judged
        for i, (s, f) in zip(live, self.score_documents([texts[i] for i in live], [langs[i] for i in live])):
            score[i], frac[i] = s, f
            used[i] = model_language(langs[i]) or "any"
        batch = set_column(batch, "toxicity_score", pa.array(score, pa.float32()))
        batch = set_column(batch, "toxic_span_fraction", pa.array(frac, pa.float32()))
        batch = set_column(batch, "toxic_word_count", pa.array(words, pa.int32()))
        batch = set_column(batch, "toxicity_lang", pa.array(used, pa.string()))
        return set_column(batch, "toxicity_unjudged", pa.array(unjudged, pa.string()))

    def reason_signals(self) -> dict[str, str]:
        return {"toxic_content": "toxicity_score", "toxic_words": "toxic_word_count"}

    def flagged_span(self, row: dict) -> tuple[int, int] | None:
        """toxic_content: the highest-scoring paragraph (sentence) of the document, scored again
        here alone, as `annotate` scored it; toxic_words: the first listed word. None for window
        and document granularity (no span of the text to point at)."""
        reason, text = row.get("drop_reason"), row.get("text")
        if not text or reason not in self.reasons:
            return None
        self.ensure_setup()
        lang = row.get("lang") or None
        if reason == "toxic_words":
            wl = self.words
            if isinstance(wl, dict):
                wl = wl.get(_lang_code(lang) if lang else "en")
            return wl.first(text) if wl is not None else None
        sep = {"paragraph": _PARAGRAPH_END, "sentence": _SENTENCE_END}.get(self.config.granularity)
        if sep is None:
            return None
        spans, at = [], 0
        for m in list(sep.finditer(text)) + [None]:
            end = len(text) if m is None else m.start()
            piece = text[at:end]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                spans.append((at + lead, at + len(piece.rstrip())))
            at = end if m is None else m.end()
        if not spans:
            return None
        scores = self.score_texts([text[s:e] for s, e in spans], lang)
        return spans[int(np.argmax(scores))]

    def decide(self, batch: pa.Table) -> list[str | None]:
        c = self.config
        out: list[str | None] = []
        for score, frac, words in zip(
            batch.column("toxicity_score").to_pylist(),
            batch.column("toxic_span_fraction").to_pylist(),
            batch.column("toxic_word_count").to_pylist(),
        ):
            if score is not None and (
                c.max_score is not None and score >= c.max_score
                and (c.min_toxic_fraction is None or frac >= c.min_toxic_fraction)
                or c.max_toxic_fraction is not None and frac >= c.max_toxic_fraction and score >= c.span_threshold
            ):
                out.append("toxic_content")
            elif words is not None and c.max_toxic_words is not None and words >= c.max_toxic_words:
                out.append("toxic_words")
            else:
                out.append(None)
        return out


def toxic_probability(labels: Sequence[str], probs: Sequence[float]) -> float:
    for lab, p in zip(labels, probs):
        if lab == TOXIC or (lab != CLEAN and "non" not in lab and lab.startswith("__label__")):
            return min(max(float(p), 0.0), 1.0)
    return 0.0


class WordList:
    """Whole-word, case-insensitive counting of many words at once (Aho-Corasick automaton)."""

    def __init__(self, words: Sequence[str]):
        import ahocorasick

        self.automaton = ahocorasick.Automaton()
        for w in {w.strip().lower() for w in words if w.strip()}:
            self.automaton.add_word(w, len(w))
        self.empty = len(self.automaton) == 0
        if not self.empty:
            self.automaton.make_automaton()

    def count(self, text: str) -> int:
        return sum(1 for _ in self._matches(text))

    def first(self, text: str) -> tuple[int, int] | None:
        """(start, end) of the first whole-word occurrence of a listed word, or None."""
        if len(text.lower()) != len(text):  # a character whose lowercase is longer: offsets would not match
            return None
        return next(self._matches(text), None)

    def _matches(self, text: str):
        if self.empty or not text:
            return
        low = text.lower()
        for end, length in self.automaton.iter(low):
            start = end - length + 1
            before = low[start - 1] if start > 0 else " "
            after = low[end + 1] if end + 1 < len(low) else " "
            if not before.isalnum() and not after.isalnum():
                yield start, end + 1


LDNOOBW = "ldnoobw"


@functools.lru_cache(maxsize=1)
def ldnoobw_lists() -> dict[str, WordList]:
    """The shipped LDNOOBW lists (stages/data/ldnoobw, CC BY 4.0), one WordList per language code."""
    folder = files("stages") / "data" / LDNOOBW
    return {p.name: WordList(p.read_text(encoding="utf-8").splitlines()) for p in folder.iterdir()
            if p.is_file() and p.name.isalpha() and p.name.islower()}


def load_word_list(path: str | Path) -> WordList:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return WordList([l for l in lines if not l.lstrip().startswith("#")])
