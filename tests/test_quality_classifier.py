"""The optional fastText quality classifier, with a tiny model trained here."""
from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stages.quality.stage import Quality
from stages.quality.classifier import QualityClassifier, QualityClassifierConfig

HQ = ["the committee published a detailed report on the history of the region and its economy",
      "researchers describe the method, the data and the results of the experiment in this paper",
      "the museum explains how the old bridge was built and why it survived the great flood"]
LQ = ["click here buy now cheap free free free win prize", "lol omg subscribe like share follow",
      "best deals best deals click click click now now"]


TRAIN = """
import sys, fasttext
m = fasttext.train_supervised(sys.argv[1], epoch=25, lr=0.1, dim=10, bucket=1000, minCount=1, seed=0, thread=1, verbose=0)
m.save_model(sys.argv[2])
"""


@pytest.fixture(scope="module")
def model_path():
    # This machine's fasttext-numpy2-wheel build aborts small training runs with "Encountered NaN"
    # in some processes (every attempt in that process fails, a new process usually succeeds), so
    # training runs in fresh interpreters, up to 10 of them. Loading and predicting are not affected.
    rng = random.Random(0)
    lines = [f"__label__hq {rng.choice(HQ)}" for _ in range(200)] + [f"__label__cc {rng.choice(LQ)}" for _ in range(200)]
    rng.shuffle(lines)
    # a private temp dir: pytest's numbered basetemp dirs are pruned by other pytest sessions of the same user
    tmp = tempfile.TemporaryDirectory(prefix="refinery_clf_")
    d = Path(tmp.name)
    (d / "train.txt").write_text("\n".join(lines) + "\n")
    model = d / "quality.bin"
    for _ in range(10):
        r = subprocess.run([sys.executable, "-c", TRAIN, str(d / "train.txt"), str(model)], capture_output=True, text=True)
        if model.is_file():
            break
    assert model.is_file(), f"fastText training failed 10 times: {r.stderr[-300:]}"
    yield str(model)
    tmp.cleanup()


def test_scores_separate_classes(model_path):
    clf = QualityClassifier(QualityClassifierConfig(model_path=model_path))
    hq, lq, empty = clf.scores([HQ[0] + "\n" + HQ[1], LQ[0], ""])
    assert 0.0 <= lq < 0.5 < hq <= 1.0 and 0.0 <= empty <= 1.0


def test_stage_stores_score_and_drops(model_path):
    from tests.test_quality import GOOD, table

    q = Quality(classifier={"model_path": model_path, "min_score": 0.5}, drop_on_rules=False)
    out = q.annotate(table([HQ[0], LQ[0]]))
    s = out.column("quality_classifier_score").to_pylist()
    assert s[0] > 0.5 > s[1]
    assert q.decide(out) == [None, "classifier_score_too_low"]
    assert "classifier_score_too_low" in q.reasons


def test_bad_paths_and_labels(tmp_path, model_path):
    with pytest.raises(FileNotFoundError):
        QualityClassifier(QualityClassifierConfig(model_path=str(tmp_path / "missing.bin"))).setup()
    with pytest.raises(ValueError):
        QualityClassifier(QualityClassifierConfig(model_path=model_path, label="__label__nope")).setup()


def test_classifier_scores_the_text_c4_keeps(model_path):
    """As in datatrove's FineWeb-Edu pipeline, the classifier scores the C4-cleaned text."""
    from tests.test_quality import GOOD, table

    page = GOOD + "\n" + "\n".join(LQ)  # C4 deletes the spam lines (no terminal punctuation)
    short = "Too short. " + LQ[0]  # fails Gopher first: never reaches C4's text, scored as it is
    q = Quality(classifier={"model_path": model_path})
    q.ensure_setup()
    seen: list[str] = []
    score = q.classifier.scores
    q.classifier.scores = lambda texts, langs=None: seen.extend(texts) or score(texts, langs)
    out = q.annotate(table([page, short]))
    assert seen == [GOOD, short]
    assert q.decide(out)[0] is None and out.column("text").to_pylist() == [GOOD, short]
    assert out.column("quality_classifier_score").to_pylist() == pytest.approx(score([GOOD, short]), abs=1e-6)


def test_unspaced_scripts_are_cut_into_characters_and_ascii_is_unchanged():
    from stages.quality.classifier import preprocess

    assert preprocess("The  cat\nsat.\n\n") == "The cat sat."
    assert preprocess("東京は日本の首都です。") == "東 京 は 日 本 の 首 都 で す 。"
    assert preprocess("Zürich  liegt am See") == "Zürich liegt am See"  # no unspaced script: words stay


def test_language_token_only_for_a_model_that_knows_it(model_path):
    """The tiny model was trained without `xlang_*` words: a document's language never reaches it."""
    clf = QualityClassifier(QualityClassifierConfig(model_path=model_path))
    assert clf.scores([HQ[0]], ["de"]) == clf.scores([HQ[0]]) == clf.scores([HQ[0]], [None])
    assert clf._tokens == {"de": "", None: ""}


def test_the_batch_preprocessing_gives_the_same_words():
    """`preprocess_array` (Arrow, used with the memoised scorer) leaves the words between ASCII
    whitespace that `preprocess` leaves between single spaces: every whitespace character Python
    splits on, every unspaced script's range edge, NUL, mixed scripts."""
    import re

    from stages.quality.classifier import _OTHER_SPACES, _UNSPACED_RANGES, preprocess, preprocess_array

    edges = [chr(c) for a, b in _UNSPACED_RANGES for c in (a - 1, a, b, b + 1)]
    alphabet = list("ab .,\t\n\r\x0b\x0c\0") + list(_OTHER_SPACES) + edges + list("éж東かア") + ["\U0001F600"]
    rng = random.Random(7)
    texts = ["", " ", "\u3000", "東京", "The  cat\nsat."] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(2000)]
    assert _OTHER_SPACES == "".join(chr(c) for c in range(0x110000) if chr(c).isspace() and chr(c) not in " \t\n\x0b\x0c\r")
    ascii_ws = re.compile(r"[ \t\n\x0b\x0c\r]+")
    got = preprocess_array(texts).to_pylist()
    for t, g in zip(texts, got):
        assert [w for w in ascii_ws.split(g) if w] == [w for w in preprocess(t).split(" ") if w], repr(t)
    assert preprocess_array(["abcdef"], max_chars=3).to_pylist() == ["abc"]


def test_shipped_model_scores_as_fasttext_scores():
    """The shipped model is scored by the memoised one-dimensional scorer: fastText's own
    probabilities to float rounding, and a stage built later shares the scorer."""
    clf = QualityClassifier(QualityClassifierConfig())
    clf.setup()
    assert clf._scalar is not None
    texts = HQ + LQ + ["", "東京は日本の首都です。", "Zürich\u00a0liegt am See", "a </s> b", "nul\0x"]
    fast = clf.scores(texts, ["en"] * len(texts))
    other = QualityClassifier(QualityClassifierConfig())
    other.setup()
    assert other._scalar is clf._scalar
    other._scalar = None  # fastText itself
    slow = other.scores(texts, ["en"] * len(texts))
    assert max(abs(a - b) for a, b in zip(fast, slow)) < 2e-6
