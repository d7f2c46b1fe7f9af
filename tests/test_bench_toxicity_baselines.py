"""benchmarks/toxicity_baselines.py: the plain baseline held to the shipped model's rule on names of
groups sees no name, in training and in scoring."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import toxicity_baselines as tb  # noqa: E402
from pipeline.train.toxicity import Example, baseline_scorer, train_baseline  # noqa: E402


def test_names_are_dropped_whatever_their_case_and_punctuation():
    assert tb.without_names("Muslims, WOMEN and\ncats.") == "and cats."
    assert tb.without_names("Juden sind hier") == "sind hier"
    assert tb.without_names("") == ""


def test_the_baseline_without_names_never_sees_one(monkeypatch):
    import pipeline.train.toxicity as T

    seen = {}

    def fake_train(input, **kw):  # what the baseline is trained on
        seen["train"] = Path(input).read_text(encoding="utf-8").splitlines()
        return "model"
    monkeypatch.setattr(T, "train_supervised", fake_train)
    examples = [Example("Muslims were here", True, "t", "en", "train"), Example("women, here", False, "t", "en", "train"),
                Example("Juden", True, "t", "de", "train")]
    assert train_baseline(examples, 13, tb.without_names) == "model"
    assert sorted(seen["train"]) == ["__label__clean here", "__label__toxic were here"]  # a line left empty is skipped

    class Model:  # what it is asked to score
        def predict(self, lines, k):
            seen["scored"] = lines
            return [("__label__toxic", "__label__clean")] * len(lines), [(0.75, 0.25)] * len(lines)
    assert baseline_scorer(Model(), tb.without_names)(["Muslims were here", "Frauen"]) == [0.75, 0.75]
    assert seen["scored"] == ["were here", " "]
