"""Toxicity: a small fastText classifier scored per sentence or paragraph, as Dolma does.

The model (stages/models/toxicity.ftz, quantised, shipped in the package) is trained by
`python -m pipeline.train.toxicity` on Davidson 2017 tweets, Vicomtech Stormfront sentences and a
Jigsaw sample; see docs/filters.md for its held-out scores. `model_path` points at another fastText
model whose labels include `__label__toxic` (or Dolma's jigsaw models: any label not containing
"non" counts as toxic).

Document rule. The text is cut into spans (`granularity`: sentence, paragraph or document) and each
span gets P(toxic). A span is toxic when P >= `span_threshold`. Signals:
  * `toxicity_score`: the largest span score (one very toxic sentence shows here);
  * `toxic_span_fraction`: share of the document's characters that lie in toxic spans (a long
    article with one rude sentence scores low here, a hate-forum post scores high);
  * `toxic_word_count`: occurrences of the user's word list (whole words, case-insensitive),
    counted with Aho-Corasick; null when no list is configured.
Decision: `toxic_content` when toxic_span_fraction >= `max_toxic_fraction` and some span is toxic
(so `max_toxic_fraction: 0` means "any toxic span"), or (if set) toxicity_score >= `max_score`; `toxic_words` when toxic_word_count >= `max_toxic_words` (if set).
Empty text scores 0 and is kept. The model knows English: with an earlier langid stage, documents
whose `lang` is not in `languages` (default [en]) are not scored (null signals, kept).
"""
from __future__ import annotations

import html
import re
from importlib.resources import files
from pathlib import Path
from typing import Literal, Sequence

import pyarrow as pa
from pydantic import Field

from stages._arrow import set_column
from stages._fasttext import load_model
from stages.base import Stage, StageConfig

TOXIC, CLEAN = "__label__toxic", "__label__clean"

_URL = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
_MENTION = re.compile(r"(?<!\w)@\w+")
_PUNCT = re.compile(r"([^\w\s'])")
# The same split for ASCII text, as a translate table built from the regex (faster than the regex).
_ASCII_PUNCT = {c: f" {chr(c)} " for c in range(128) if _PUNCT.fullmatch(chr(c))}
_REPEAT = re.compile(r"(\w)\1{2,}")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PARAGRAPH_END = re.compile(r"\n+")


def preprocess(text: str) -> str:
    """The one normalisation used for training and scoring: fastText sees exactly this.

    HTML entities decoded (tweets carry &amp;), lowercased, URLs and @mentions replaced by fixed
    tokens, punctuation split off words (fastText tokenises on spaces only: "idiot!!" must count
    as "idiot"), letters repeated 3+ times cut to 2 ("sooooo" -> "soo"), one line. The substring
    tests only skip regexes that cannot match.
    """
    if "&" in text:
        text = html.unescape(text)
    text = text.lower()
    if "http" in text or "www." in text:
        text = _URL.sub(" xurl ", text)
    if "@" in text:
        text = _MENTION.sub(" xuser ", text)
    text = _REPEAT.sub(r"\1\1", text)
    text = text.translate(_ASCII_PUNCT) if text.isascii() else _PUNCT.sub(r" \1 ", text)
    return " ".join(text.split())


def split_spans(text: str, granularity: str) -> list[str]:
    """Sentences (end punctuation or line break), paragraphs (line breaks) or the whole text."""
    if granularity == "document":
        parts = [text]
    elif granularity == "paragraph":
        parts = _PARAGRAPH_END.split(text)
    else:
        parts = _SENTENCE_END.split(text)
    return [p for p in (s.strip() for s in parts) if p]


def bundled_model_path() -> Path:
    return Path(str(files("stages") / "models" / "toxicity.ftz"))


class ToxicityConfig(StageConfig):
    model_path: str | None = Field(None, description="fastText model file; null: the shipped stages/models/toxicity.ftz")
    granularity: Literal["sentence", "paragraph", "document"] = Field(
        "sentence", description="the spans the model scores")
    span_threshold: float = Field(0.5, ge=0.0, le=1.0, description="a span scoring at least this is toxic")
    max_toxic_fraction: float = Field(
        0.5, ge=0.0, le=1.0, description="drop (toxic_content) when toxic spans hold more than this share of the text")
    max_score: float | None = Field(
        None, ge=0.0, le=1.0, description="also drop when the largest span score exceeds this; null: never alone")
    languages: list[str] | None = Field(["en"], description=(
        "score only documents whose `lang` (from an earlier langid stage) is listed (the model knows English only); "
        "without a `lang` column every document is scored; null: every language"))
    word_list: str | None = Field(None, description="text file of toxic words or phrases, one per line (# comments)")
    max_toxic_words: int | None = Field(
        None, ge=1, description="drop (toxic_words) when more listed words occur than this; null: count only")


class Toxicity(Stage):
    name = "toxicity"
    Config = ToxicityConfig
    reasons = ("toxic_content", "toxic_words")
    default_skip_kinds = ("code",)

    config: ToxicityConfig

    def signal_fields(self) -> list[pa.Field]:
        return [
            pa.field("toxicity_score", pa.float32()),
            pa.field("toxic_span_fraction", pa.float32()),
            pa.field("toxic_word_count", pa.int32()),
        ]

    def signal_descriptions(self) -> dict[str, str]:
        return {"toxicity_score": "the largest span score", "toxic_span_fraction": "share of characters in toxic spans",
                "toxic_word_count": "occurrences of the word list's words and phrases"}

    def setup(self) -> None:
        self.model = load_model(self.config.model_path or bundled_model_path())
        self.words = load_word_list(self.config.word_list) if self.config.word_list else None

    # -- scoring -----------------------------------------------------------------------------
    def score_texts(self, texts: Sequence[str]) -> list[float]:
        """P(toxic) for each text (already one span each)."""
        self.ensure_setup()
        lines = [preprocess(t) for t in texts]
        todo = [i for i, line in enumerate(lines) if line]
        out = [0.0] * len(lines)
        if todo:
            labels, probs = self.model.predict([lines[i] for i in todo], k=-1)
            for i, labs, ps in zip(todo, labels, probs):
                out[i] = _toxic_probability(labs, ps)
        return out

    def score_documents(self, texts: Sequence[str | None]) -> list[tuple[float, float]]:
        """(max span score, toxic character fraction) per document, all spans in one predict call."""
        spans: list[str] = []
        owner: list[int] = []
        for d, text in enumerate(texts):
            for s in split_spans(text or "", self.config.granularity):
                spans.append(s)
                owner.append(d)
        scores = self.score_texts(spans)
        top = [0.0] * len(texts)
        toxic_chars = [0] * len(texts)
        all_chars = [0] * len(texts)
        for d, s, p in zip(owner, spans, scores):
            top[d] = max(top[d], p)
            all_chars[d] += len(s)
            if p >= self.config.span_threshold:
                toxic_chars[d] += len(s)
        return [(t, tc / ac if ac else 0.0) for t, tc, ac in zip(top, toxic_chars, all_chars)]

    def annotate(self, batch: pa.Table) -> pa.Table:
        self.ensure_setup()
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        kinds = batch.column("kind").to_pylist()
        n = batch.num_rows
        langs = batch.column("lang").to_pylist() if "lang" in batch.column_names else [None] * n
        wanted = set(self.config.languages) if self.config.languages is not None else None
        live = [
            i
            for i in range(n)
            if self.applies_to(sources[i], kinds[i]) and (wanted is None or langs[i] is None or langs[i] in wanted)
        ]
        score: list[float | None] = [None] * n
        frac: list[float | None] = [None] * n
        words: list[int | None] = [None] * n
        for i, (s, f) in zip(live, self.score_documents([texts[i] for i in live])):
            score[i], frac[i] = s, f
            if self.words is not None:
                words[i] = self.words.count(texts[i] or "")
        batch = set_column(batch, "toxicity_score", pa.array(score, pa.float32()))
        batch = set_column(batch, "toxic_span_fraction", pa.array(frac, pa.float32()))
        return set_column(batch, "toxic_word_count", pa.array(words, pa.int32()))

    def decide(self, batch: pa.Table) -> list[str | None]:
        c = self.config
        out: list[str | None] = []
        for score, frac, words in zip(
            batch.column("toxicity_score").to_pylist(),
            batch.column("toxic_span_fraction").to_pylist(),
            batch.column("toxic_word_count").to_pylist(),
        ):
            if score is not None and (
                frac >= c.max_toxic_fraction and score >= c.span_threshold
                or c.max_score is not None and score >= c.max_score
            ):
                out.append("toxic_content")
            elif words is not None and c.max_toxic_words is not None and words >= c.max_toxic_words:
                out.append("toxic_words")
            else:
                out.append(None)
        return out


def _toxic_probability(labels: Sequence[str], probs: Sequence[float]) -> float:
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
        if self.empty or not text:
            return 0
        low = text.lower()
        n = 0
        for end, length in self.automaton.iter(low):
            start = end - length + 1
            before = low[start - 1] if start > 0 else " "
            after = low[end + 1] if end + 1 < len(low) else " "
            if not before.isalnum() and not after.isalnum():
                n += 1
        return n


def load_word_list(path: str | Path) -> WordList:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return WordList([l for l in lines if not l.lstrip().startswith("#")])
