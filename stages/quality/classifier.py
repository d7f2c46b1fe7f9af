"""A user's fastText quality classifier (DCLM-style), scored on whole documents.

DCLM's fastText model labels text `__label__hq` vs `__label__cc`; the score is the probability
of the positive label. fastText reads one line, so newlines become spaces, as DCLM does.
Nothing is downloaded: the default is the model shipped in the package (stages/models/quality.ftz,
trained by `refinery train-quality --default`, see pipeline/train/quality.py), or the recipe points
at a local .bin/.ftz file. The shipped model is English: `languages` limits which documents it
scores (others get no classifier score).
"""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from stages.quality.text_stats import collapse_whitespace

HQ, LQ = "__label__hq", "__label__cc"


def shipped_model_path() -> Path:
    from importlib.resources import files

    return Path(str(files("stages") / "models" / "quality.ftz"))


def preprocess(text: str, max_chars: int | None = None) -> str:
    """One fastText line: whitespace runs (newlines included) become one space, as
    `" ".join(text.split())` does, without a list of every word of a long text."""
    return collapse_whitespace(text[:max_chars] if max_chars else text)


class QualityClassifierConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_path: str | None = Field(
        None, description="local fastText .bin/.ftz file (nothing is downloaded); null: the shipped stages/models/quality.ftz")
    languages: list[str] | None = Field(
        None, description="score only documents whose `lang` is one of these; null: all (the shipped model is English)")
    label: str = Field(HQ, description="the label whose probability is the score")
    min_score: float | None = Field(
        None, description="drop (classifier_score_too_low) documents scoring below this; null: only store the score")
    max_chars: int | None = Field(None, description="score only a prefix of long documents, for speed")


_MODELS: dict[str, object] = {}  # loaded models by path: stages built per setting share one (the report's yield)


class QualityClassifier:
    def __init__(self, config: QualityClassifierConfig):
        self.config = config
        self._model = None

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

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_model": None}

    def scores(self, texts: list[str]) -> list[float]:
        if self._model is None:
            self.setup()
        lines = [preprocess(t, self.config.max_chars) for t in texts]
        labels, probs = self._model.predict(lines, k=-1)
        want = self.config.label
        out = []
        for ls, ps in zip(labels, probs):
            out.append(next((min(1.0, float(p)) for lab, p in zip(ls, ps) if lab == want), 0.0))
        return out
