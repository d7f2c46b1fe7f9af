"""A fastText quality classifier (DCLM-style), scored on whole documents.

DCLM's fastText model labels text `__label__hq` vs `__label__cc`; the score is the probability
of the positive label. fastText reads one line, so newlines become spaces, as DCLM does; and it
splits words on spaces only, so characters of scripts written without spaces (Chinese, Japanese
kana, Thai) are set apart one per token (English text is unchanged, so a DCLM model reads what it
was trained on). Nothing is downloaded: the default is the multilingual model shipped in the
package (stages/models/quality.ftz, trained by `refinery train-quality --default`, see
pipeline/train/quality.py and docs/quality.md), or the recipe points at a local .bin/.ftz file.
A model that knows language tokens (`xlang_de`: one trained with them; the shipped model is not,
docs/quality.md says why) gets the document's language (the langid stage's `lang`) as the line's
first word; other models never see one.
`languages` limits which documents are scored (others get no classifier score).

Scoring: a two-label model (the shipped one: 32 dimensions, product-quantised, pruned) is scored by
stages/_scalar_fasttext.py, which projects every input row on the difference of the two output rows
once at load time and memoises each distinct word's features: fastText's own probabilities to float
rounding (docs/quality.md, "Classifier speed", states the measured maximum difference), several times
cheaper per document. Other models are scored by fastText itself.
"""
from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from stages.quality.stop_words import normalize_lang
from stages.quality.text_stats import collapse_whitespace

HQ, LQ = "__label__hq", "__label__cc"


def shipped_model_path() -> Path:
    from importlib.resources import files

    return Path(str(files("stages") / "models" / "quality.ftz"))


# Han (with CJK extension A and compatibility ideographs), hiragana, katakana (and half-width), Thai
_UNSPACED_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x0E00, 0x0E7F))
_UNSPACED = re.compile("([" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _UNSPACED_RANGES) + "])")


def preprocess(text: str, max_chars: int | None = None) -> str:
    """One fastText line: whitespace runs (newlines included) become one space, as
    `" ".join(text.split())` does, without a list of every word of a long text; each character
    of an unspaced script is its own word (ASCII text skips that scan)."""
    text = text[:max_chars] if max_chars else text
    if not text.isascii():
        text = _UNSPACED.sub(r" \1 ", text)
    return collapse_whitespace(text)


# Python's whitespace (what `str.split()` splits on) that Arrow's ASCII split does not split on:
# replaced by a space, the tokens are those of `preprocess`'s collapsed line
# (tests/test_quality_classifier.py checks the list against every code point)
_OTHER_SPACES = "\x1c\x1d\x1e\x1f\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_OTHER_SPACES_RE2 = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in _OTHER_SPACES) + "]"
_UNSPACED_RE2 = "([" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in _UNSPACED_RANGES) + "])"


def preprocess_array(texts: list[str], max_chars: int | None = None) -> pa.Array:
    """`preprocess` for a batch, in Arrow (no Python per document): the lines hold the same words
    between ASCII whitespace as `preprocess`'s (each character of an unspaced script set apart, every
    other whitespace character a separator), though runs of spaces are not collapsed: a reader that
    splits on ASCII whitespace (stages/_scalar_fasttext.py, as fastText does) sees the same tokens."""
    if max_chars:
        texts = [t[:max_chars] for t in texts]
    arr = pa.array(texts, pa.large_string())
    arr = pc.replace_substring_regex(arr, _UNSPACED_RE2, " \\1 ")
    return pc.replace_substring_regex(arr, _OTHER_SPACES_RE2, " ")


def language_token(lang: str | None) -> str | None:
    """`xlang_de` for `de`, `deu`, `deu_Latn`; None without a language."""
    code = normalize_lang(lang)
    return f"xlang_{code}" if code else None


class QualityClassifierConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_path: str | None = Field(
        None, description="local fastText .bin/.ftz file (nothing is downloaded); null: the shipped stages/models/quality.ftz")
    languages: list[str] | None = Field(
        None, description="score only documents whose `lang` is one of these; null: all (the shipped model is multilingual)")
    label: str = Field(HQ, description="the label whose probability is the score")
    min_score: float | None = Field(
        None, description="drop (classifier_score_too_low) documents scoring below this; null: only store the score")
    max_chars: int | None = Field(None, description="score only a prefix of long documents, for speed")


_MODELS: dict[str, object] = {}  # loaded models by path: stages built per setting share one (the report's yield)
_SCALAR: dict[tuple[str, str], object] = {}  # their memoised scorers, by model and label (a pure cache)


class QualityClassifier:
    def __init__(self, config: QualityClassifierConfig):
        self.config = config
        self._model = None
        self._scalar = None  # ScalarFastText, when it reproduces the model
        self._tokens: dict[str | None, str] = {}  # lang -> "xlang_xx " if the model knows it, else ""

    def setup(self) -> None:
        import fasttext

        path = Path(self.config.model_path).expanduser() if self.config.model_path else shipped_model_path()
        if not path.is_file():
            raise FileNotFoundError(f"quality classifier model not found: {path}")
        st = path.stat()
        key = f"{path}:{st.st_size}:{st.st_mtime_ns}"  # a retrained file is loaded again
        if key not in _MODELS:
            _MODELS[key] = fasttext.load_model(str(path))
        self._model = _MODELS[key]
        if self.config.label not in self._model.get_labels():
            raise ValueError(f"label {self.config.label!r} not in the model's labels {self._model.get_labels()}")
        from stages._scalar_fasttext import ScalarFastText, supports

        if supports(self._model, path, any_dimension=True):
            skey = (key, self.config.label)
            if skey not in _SCALAR:
                _SCALAR[skey] = ScalarFastText(self._model, self.config.label, path=path, all_labels=True)
            self._scalar = _SCALAR[skey]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_model": None, "_scalar": None, "_tokens": {}}

    def _token(self, lang: str | None) -> str:
        if lang not in self._tokens:
            tok = language_token(lang)
            self._tokens[lang] = f"{tok} " if tok and self._model.get_word_id(tok) >= 0 else ""
        return self._tokens[lang]

    def scores(self, texts: list[str], langs: list[str | None] | None = None) -> list[float]:
        """P(label) per text; `langs` (the documents' languages) only matter to a model trained
        with language tokens."""
        if self._model is None:
            self.setup()
        if self._scalar is not None:
            first = None if langs is None else [self._token(lang).rstrip() for lang in langs]
            if first is not None and not any(first):  # a model without language tokens
                first = None
            return self._scalar.predict(preprocess_array(texts, self.config.max_chars), first).tolist()
        lines = [preprocess(t, self.config.max_chars) for t in texts]
        if langs is not None:
            lines = [self._token(lang) + line for lang, line in zip(langs, lines)]
        labels, probs = self._model.predict(lines, k=-1)
        want = self.config.label
        out = []
        for ls, ps in zip(labels, probs):
            out.append(next((min(1.0, float(p)) for lab, p in zip(ls, ps) if lab == want), 0.0))
        return out
