"""The page score: how much a document reads like the main content of a web page, in [0, 1].

A bag-of-words classifier measures register (edited prose vs chat) but not page structure: a
footer, a menu or a list of headlines is written in the same words as the article beside it. The
page score is a logistic model over the classifier's log-odds and a few text statistics that carry
that structure, all computed from the document's text in one pass over its lines:

  line shape     log characters, log lines, mean line length, share of lines of at most 30 characters,
                 share of characters in lines that end a sentence, share of lines that end one,
                 share of repeated lines, share of lines that start with a bullet or hold a separator
  sentences      words per sentence end (log), commas per word, share of digits and of capitals
  classifier     the fastText model's log-odds of high quality (clipped)

Lengths are counted so that a language's clean text lands near another's: a Han or kana
character counts as three characters and half a word, a Thai character as a sixth of a word
(Hangul is written with spaces and counts as it is).
The classifier's log-odds are shifted per language (the `lang` column) so that clean news text of
every language it was calibrated on sits where English does: the classifier was trained on few
languages, and how high it puts another language's prose is an accident of shared character n-grams.
The weights, with each feature's mean and spread, are a small JSON file next to the model
(stages/models/quality_page.json), fitted by `refinery train-quality --default`
(pipeline/train/quality.py; docs/quality.md has the data and the measured figures).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from stages.quality.stop_words import normalize_lang

FEATURES = (
    "classifier_logit", "log_chars", "log_lines", "log_mean_line_chars", "short_line_share",
    "sentence_char_share", "sentence_line_share", "repeated_line_share", "bullet_line_share",
    "log_words_per_sentence", "commas_per_word", "digit_share", "capital_share",
)
SENTENCE_END = tuple(".!?。！？…\"'”’»)」』")
COMMAS = re.compile("[,;:،、，；]")
_SENTENCE_MARK = re.compile(r"[.!?。！？](?:\s|$)|[。！？]")
_BULLET = re.compile(r"^\s*(?:[-*•·►▶»›|>]|\d{1,3}[.)]\s)|\s[|»›·•]\s")
_DENSE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")  # Han, kana
_THAI = re.compile("[\u0e00-\u0e7f]")
MAX_CHARS = 100_000  # statistics of a long document are those of its first MAX_CHARS characters
LOGIT_CLIP = 8.0


def shipped_weights_path() -> Path:
    from importlib.resources import files

    return Path(str(files("stages") / "models" / "quality_page.json"))


def _width(line: str) -> int:
    """A line's length in Latin-script characters: a Han or kana character holds about what three
    do (XQuAD's English paragraphs have 3.1 times the characters of their Chinese translations)."""
    return len(line) if line.isascii() else len(line) + 2 * len(_DENSE.findall(line))


def _words(text: str) -> float:
    """Whitespace words; in Han and kana two characters count as one word, in Thai six."""
    if text.isascii():
        return float(len(text.split()))
    dense = len(_DENSE.findall(text))
    thai = len(_THAI.findall(text))
    rest = _THAI.sub(" ", _DENSE.sub(" ", text))
    return len(rest.split()) + dense / 2 + thai / 6


def text_features(text: str) -> list[float]:
    """The structure statistics of one text (every feature but the classifier's), in FEATURES order."""
    text = text[:MAX_CHARS]
    lines = [ln.strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln]
    widths = [_width(ln) for ln in lines]
    n_chars = sum(widths)
    if not lines or not n_chars:
        return [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    n = len(lines)
    short = sum(w <= 30 for w in widths)
    ends = [ln.endswith(SENTENCE_END) for ln in lines]
    sentence_chars = sum(w for w, e in zip(widths, ends) if e)
    repeated = n - len(set(lines))
    bullets = sum(bool(_BULLET.search(ln)) for ln in lines)
    joined = " ".join(lines)
    words = _words(joined)
    sentences = len(_SENTENCE_MARK.findall(joined)) + 1
    commas = len(COMMAS.findall(joined))
    digits = sum(map(str.isdigit, joined))  # map over a C method: no Python frame per character
    letters = "".join(filter(str.isalpha, joined))
    capitals = sum(map(str.isupper, letters))
    return [
        math.log1p(n_chars), math.log1p(n), math.log1p(n_chars / n), short / n,
        sentence_chars / n_chars, sum(ends) / n, repeated / n, bullets / n,
        math.log1p(words / sentences), commas / max(words, 1.0), digits / len(joined),
        capitals / max(len(letters), 1),
    ]


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return max(-LOGIT_CLIP, min(LOGIT_CLIP, math.log(p / (1 - p))))


def feature_rows(texts: list[str], classifier_scores: list[float], langs: list[str | None] | None = None,
                 offsets: dict[str, float] | None = None) -> np.ndarray:
    """FEATURES of each text; `offsets` (per language) shift the classifier's log-odds."""
    offsets = offsets or {}
    langs = langs if langs is not None else [None] * len(texts)
    return np.array([[logit(p) + offsets.get(normalize_lang(lang) or "", 0.0)] + text_features(t)
                     for t, p, lang in zip(texts, classifier_scores, langs)], dtype=np.float64)


class PageScore:
    """A fitted logistic model over FEATURES (standardised), with the per-language classifier offsets."""

    def __init__(self, weights: dict):
        if tuple(weights["features"]) != FEATURES:
            raise ValueError(f"page score weights name features {weights['features']}, expected {list(FEATURES)}")
        self.weights = weights
        self.mean = np.array(weights["mean"], np.float64)
        self.scale = np.array(weights["scale"], np.float64)
        self.coef = np.array(weights["coef"], np.float64)
        self.bias = float(weights["bias"])
        self.offsets = dict(weights.get("language_offsets", {}))

    @classmethod
    def load(cls, path: str | Path | None = None) -> "PageScore":
        path = Path(path) if path else shipped_weights_path()
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def from_features(self, rows: np.ndarray) -> np.ndarray:
        z = ((rows - self.mean) / self.scale) @ self.coef + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))

    def scores(self, texts: list[str], classifier_scores: list[float], langs: list[str | None] | None = None) -> list[float]:
        if not texts:
            return []
        return self.from_features(feature_rows(texts, classifier_scores, langs, self.offsets)).tolist()


def language_offsets(scores_by_lang: dict[str, list[float]], reference: str = "en") -> dict[str, float]:
    """Per language, how far the median log-odds of its clean text sit below the reference's."""
    med = {normalize_lang(k) or k: float(np.median([logit(p) for p in v])) for k, v in scores_by_lang.items() if v}
    return {k: round(med[reference] - m, 4) for k, m in sorted(med.items())}


def fit(rows: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray, l2: float = 1.0, iterations: int = 50) -> dict:
    """L2-regularised logistic regression by Newton's method on standardised features (deterministic)."""
    mean = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale[scale == 0] = 1.0
    x = np.hstack([(rows - mean) / scale, np.ones((len(rows), 1))])
    w = np.zeros(x.shape[1])
    sw = sample_weight / sample_weight.sum() * len(rows)
    reg = np.full(x.shape[1], l2)
    reg[-1] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        grad = x.T @ (sw * (p - labels)) + reg * w
        hess = (x * (sw * p * (1 - p))[:, None]).T @ x + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return {"features": list(FEATURES), "mean": [round(x, 6) for x in mean.tolist()],
            "scale": [round(x, 6) for x in scale.tolist()], "coef": [round(x, 6) for x in w[:-1].tolist()],
            "bias": round(float(w[-1]), 6), "l2": l2}
