"""pipeline/train/fasttext_linear.py: the one-dimensional rewrite predicts what the full model predicts."""
from __future__ import annotations

import random
import string

import numpy as np
import pytest

from pipeline.train.fasttext_linear import dictionary_end, to_linear
from stages._fasttext import load_model, train_supervised


@pytest.fixture(scope="module")
def full_model(tmp_path_factory):
    rng = random.Random(3)  # random words: a vocabulary of a few hundred, 40 of them "toxic"
    vocab = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9))) for _ in range(600)]
    lines = []
    for i in range(4000):
        toxic = i % 3 == 0
        words = [rng.choice(vocab[40:]) for _ in range(rng.randint(3, 15))]
        if toxic:
            words.insert(rng.randrange(len(words)), rng.choice(vocab[:40]))
        lines.append(("__label__toxic " if toxic else "__label__clean ") + " ".join(words))
    d = tmp_path_factory.mktemp("ft")
    (d / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = train_supervised(input=str(d / "train.txt"), thread=1, seed=1, verbose=0, epoch=5, lr=0.1, dim=8,
                             wordNgrams=2, minn=2, maxn=4, bucket=5000, minCount=1, loss="softmax")
    model.save_model(str(d / "full.bin"))
    return d / "full.bin", vocab[0], " ".join(vocab[100:104])


def test_same_probabilities_with_one_dimension(full_model, tmp_path):
    full_model, toxic_word, clean_words = full_model
    out = tmp_path / "linear.bin"
    rows = to_linear(full_model, out)
    full, linear = load_model(full_model), load_model(out)
    assert linear.get_dimension() == 1 and rows == len(full.get_words()) + 5000
    texts = [clean_words, toxic_word, f"{clean_words} {toxic_word}", "unseen wordz here",
             "x", "ünïcödé 你好 garden", ""]
    for t in texts:
        (la,), (pa,) = full.predict(t, k=1)
        lb, pb = linear.predict(t, k=2)
        p_full = pa if la == "__label__toxic" else 1 - pa
        p_lin = dict(zip(lb, pb))["__label__toxic"]
        assert abs(p_full - p_lin) < 1e-4, (t, p_full, p_lin)  # float32 sums in another order
    assert out.stat().st_size < full_model.stat().st_size / 4


def test_the_rewrite_is_deterministic(full_model, tmp_path):
    full_model = full_model[0]
    to_linear(full_model, tmp_path / "a.bin")
    to_linear(full_model, tmp_path / "b.bin")
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


def test_dictionary_end_points_at_the_matrix(full_model):
    full_model = full_model[0]
    buf = full_model.read_bytes()
    end = dictionary_end(buf)
    m, n = np.frombuffer(buf[end + 1:end + 17], "<i8")
    assert n == 8 and m == len(load_model(full_model).get_words()) + 5000


def test_refuses_a_model_without_the_label(tmp_path):
    (tmp_path / "t.txt").write_text("__label__a x y\n__label__b z w\n" * 50, encoding="utf-8")
    model = train_supervised(input=str(tmp_path / "t.txt"), thread=1, seed=1, verbose=0, epoch=1, dim=4, minCount=1, loss="softmax")
    model.save_model(str(tmp_path / "m.bin"))
    with pytest.raises(ValueError, match="__label__toxic"):
        to_linear(tmp_path / "m.bin", tmp_path / "out.bin")


def test_a_quantised_model_is_decoded_row_by_row(full_model, tmp_path):
    """The trainer quantises first: the rewrite must predict what the quantised model predicts."""
    full_model, toxic_word, clean_words = full_model
    train = full_model.parent / "train.txt"
    model = train_supervised(input=str(train), thread=1, seed=1, verbose=0, epoch=5, lr=0.1, dim=8, wordNgrams=2,
                             minn=2, maxn=4, bucket=5000, minCount=1, loss="softmax",
                             quantize=dict(qnorm=True, dsub=4, cutoff=0, thread=1, verbose=0))
    model.save_model(str(tmp_path / "q.ftz"))
    to_linear(tmp_path / "q.ftz", tmp_path / "linear.bin")
    quant, linear = load_model(tmp_path / "q.ftz"), load_model(tmp_path / "linear.bin")
    assert quant.f.isQuant() and linear.get_dimension() == 1
    for t in (clean_words, toxic_word, f"{clean_words} {toxic_word}", "unseen wordz here"):
        pq = dict(zip(*quant.predict(t, k=2)))["__label__toxic"]
        pl = dict(zip(*linear.predict(t, k=2)))["__label__toxic"]
        assert abs(pq - pl) < 1e-4, (t, pq, pl)


def _logit(model, text: str) -> float:
    p = dict(zip(*model.predict(text, k=2)))["__label__toxic"]
    p = min(max(p, 1e-7), 1 - 1e-7)
    return float(np.log(p / (1 - p)))


def test_the_average_of_runs_predicts_their_mean_logit(full_model, tmp_path):
    """Runs on the same lines with other seeds (the trainer's RUNS) become one model whose logit is
    the runs' mean logit; a word's row is matched by the word even where the runs' dictionaries list
    equally frequent words in another order."""
    from pipeline.train.fasttext_linear import average_linear

    full_model, toxic_word, clean_words = full_model
    train = full_model.parent / "train.txt"
    runs = []
    for seed in (1, 2, 3):
        lines = train.read_text(encoding="utf-8").splitlines()
        random.Random(seed).shuffle(lines)  # another order: the dictionary's ties may come out otherwise
        (tmp_path / f"t{seed}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        m = train_supervised(input=str(tmp_path / f"t{seed}.txt"), thread=1, seed=seed, verbose=0, epoch=5, lr=0.1,
                             dim=8, wordNgrams=2, minn=2, maxn=4, bucket=5000, minCount=1, loss="softmax")
        m.save_model(str(tmp_path / f"full{seed}.bin"))
        to_linear(tmp_path / f"full{seed}.bin", tmp_path / f"lin{seed}.bin")
        runs.append(tmp_path / f"lin{seed}.bin")
    assert len({tuple(load_model(r).get_words()) for r in runs}) > 1  # the word matching is exercised
    rows = average_linear(runs, tmp_path / "avg.bin")
    avg, models = load_model(tmp_path / "avg.bin"), [load_model(r) for r in runs]
    assert rows == len(avg.get_words()) + 5000 and avg.get_dimension() == 1
    spread = 0.0
    checked = 0
    for t in (clean_words, toxic_word, f"{clean_words} {toxic_word}", "unseen wordz here", "x", "",
              *(" ".join(clean_words.split()[:k]) + " " + toxic_word for k in range(4))):
        each = [_logit(m, t) for m in models]
        if max(abs(e) for e in each) > 6:  # predict's +-1e-5 hides the logit near 0 and 1
            continue
        checked += 1
        spread = max(spread, max(each) - min(each))
        assert abs(_logit(avg, t) - sum(each) / len(each)) < 1e-3, (t, each)
    assert checked >= 3
    assert spread > 0.01  # the runs differ, so a mean equal to one of them would fail
    assert average_linear(runs, tmp_path / "again.bin") and (tmp_path / "again.bin").read_bytes() == (tmp_path / "avg.bin").read_bytes()


def test_average_refuses_runs_of_other_lines(full_model, tmp_path):
    from pipeline.train.fasttext_linear import average_linear

    full_model = full_model[0]
    to_linear(full_model, tmp_path / "a.bin")
    other = train_supervised(input=str(full_model.parent / "train.txt"), thread=1, seed=1, verbose=0, epoch=5, lr=0.1,
                             dim=8, wordNgrams=2, minn=2, maxn=4, bucket=5000, minCount=40, loss="softmax")
    assert len(other.get_words()) < len(load_model(full_model).get_words())  # rarer words left out
    other.save_model(str(tmp_path / "o.bin"))
    to_linear(tmp_path / "o.bin", tmp_path / "b.bin")
    with pytest.raises(ValueError, match="dictionary"):
        average_linear([tmp_path / "a.bin", tmp_path / "b.bin"], tmp_path / "out.bin")
