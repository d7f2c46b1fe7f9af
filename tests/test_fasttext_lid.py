"""stages/_fasttext_lid.py: the memoised hierarchical-softmax scorer gives fastText's own top-k."""
from __future__ import annotations

import random

import numpy as np
import pyarrow
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stages._fasttext_lid as lid
import stages._fasttext_tokens as tokens_mod
from stages._fasttext import load_model, one_line, train_supervised
from stages._fasttext_lid import FastTextLID, huffman_tree, supports
from benchmarks.langid_scorer import real_lines, table
from stages.langid import LangID, bundled_model_path


def assert_same(model, scorer, lines: list[str], k: int = 5, tol: float = 5e-6) -> float:
    """Same labels in the same order as fastText's predict, probabilities within `tol`; the max diff."""
    theirs_l, theirs_p = model.predict(lines, k=k)
    ours_l, ours_p = scorer.predict(lines, k=k)
    worst = 0.0
    for line, a, b, pa_, pb in zip(lines, theirs_l, ours_l, theirs_p, ours_p):
        assert list(a) == list(b), line
        if len(a):
            worst = max(worst, float(np.abs(np.asarray(pa_, np.float64) - np.asarray(pb, np.float64)).max()))
    assert worst < tol
    return worst


@pytest.fixture(scope="module")
def shipped():
    path = bundled_model_path()
    model = load_model(path)
    return model, FastTextLID(model, path)


def test_the_shipped_model_is_supported_and_the_stage_uses_the_scorer(shipped):
    model, _ = shipped
    assert supports(model)
    stage = LangID()
    stage.ensure_setup()
    assert isinstance(stage.scorer, FastTextLID)


def test_huffman_tree_is_fasttexts():
    # counts 5, 3, 2, 1 (sorted, as the dictionary holds labels): leaves 3 (1) and 2 (2) join first
    left, right, parent = huffman_tree([5, 3, 2, 1])
    assert (left[4], right[4]) == (3, 2)
    assert (left[5], right[5]) == (4, 1)  # leaf 1 (3) < inner node 4 (3) is false: the inner node first
    assert (left[6], right[6]) == (0, 5) and parent[6] == -1 and parent[0] == 6


TRICKY = [
    "plain words here", "  leading and   runs of spaces  ", "x", " ", "tab\tseparated\tline", "nul\0inside\0tokens",
    "a </s> after the end of line", "</s>", "x</s> not a token", "ünïcödé wörds ß ﬁ", "你好世界，这是一个句子。",
    "かな カナ ｱｲｳ", "привет мир", "emoji 😀😀 mixed 😀x", "nbsp\xa0inside a token", "a __label__en b",
    "__label__de", "w" * 400 + " long " + "é" * 300, "\v\f\r mixed\x1c\x1d\x85\u2028\u3000whitespace", "",
    "Der schnelle braune Fuchs springt über den faulen Hund.", "ال" * 200,
]


def test_tricky_lines_agree_with_fasttext(shipped):
    model, _ = shipped
    for k in (1, 5, 176):
        assert_same(model, FastTextLID(model, bundled_model_path()), TRICKY, k=k)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(
    list("abcdeéßжя你好ا ") + ["\0", "\t", "\v", "\f", "\r", "\xa0", "\u3000", "\x1c", "</s>", "__label__en", "😀",
                               "\u0301", "q" * 300, "ы" * 120]), max_size=60).map("".join), min_size=1, max_size=8))
@pytest.mark.slow
def test_odd_tokens_agree_with_fasttext(shipped, lines):
    model, scorer = shipped
    assert_same(model, scorer, lines, tol=1e-3)  # long runs of one n-gram: fastText's float32 sums drift


def test_runs_of_one_character_agree_with_fasttext(shipped):
    """fastText's float32 sum drifts most on repeated n-grams (its rounding errors add up): the
    labels must still be fastText's."""
    model, _ = shipped
    chars = [chr(c) for c in [*range(33, 127), *range(0xC0, 0x250, 3), *range(0x400, 0x460, 2), *range(0x4E00, 0x4E40, 4)]]
    rng = random.Random(4)
    lines = [c * 3000 for c in chars] + [(c + d) * 1500 for c, d in zip(rng.sample(chars, 60), rng.sample(chars, 60))]
    lines += [" ".join([c * k] * (3000 // (k + 1))) for c in rng.sample(chars, 60) for k in (2, 3, 5)]
    assert_same(model, FastTextLID(model, bundled_model_path()), lines, tol=1e-3)


def test_a_newline_or_invalid_unicode_is_fasttexts_error(shipped):
    model, scorer = shipped
    for bad in (["one\ntwo"], ["lone \ud800 surrogate"]):
        with pytest.raises(Exception) as theirs:
            model.predict(bad, k=5)
        with pytest.raises(Exception) as ours:
            scorer.predict(bad, k=5)
        assert type(theirs.value) is type(ours.value)


def test_a_full_memo_starts_again_with_the_same_answers(shipped, monkeypatch):
    model, _ = shipped
    monkeypatch.setattr(lid, "MEMO_SIZE", 50)
    scorer = FastTextLID(model, bundled_model_path())
    rng = random.Random(3)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 9))) for _ in range(400)]
    for _ in range(4):  # each batch has more new tokens than the memo holds
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(40)]
        assert_same(model, scorer, lines)
        assert len(scorer.count) <= scorer.nwords + 50 + 400  # grown for one batch at most
    scorer.forget()
    assert len(scorer.count) == scorer.nwords + 50


def test_a_line_with_a_huge_token_goes_to_fasttext_without_being_vectorised(shipped, monkeypatch):
    """Hostile input: a line holding one huge word is scored by fastText (in C), not hashed and
    vectorised here. The other lines of the batch stay on the scorer."""
    model, _ = shipped
    monkeypatch.setattr(lid.fasttext_tokens, "LONG_TOKEN", 64)
    scorer = FastTextLID(model, bundled_model_path())
    seen = []
    features = scorer._features
    monkeypatch.setattr(scorer, "_features", lambda tokens, wids, h32: seen.append(max(
        (len(t.as_py().encode()) for t in tokens), default=0)) or features(tokens, wids, h32))
    lines = ["Das ist ein ganz normaler Satz.", "word " + "x" * 65 + " ende", "ok " + "é" * 30, "y" * 200, ""]
    assert lid._long_token_lines(pyarrow.array(lines, "large_string")).tolist() == [1, 3]
    assert_same(model, scorer, lines)
    assert scorer.fallbacks == 2 and max(seen) <= 64


def test_small_bytes_chunks_give_the_same_sums(shipped, monkeypatch):
    model, _ = shipped
    monkeypatch.setattr(tokens_mod, "CHUNK_BYTES", 7)
    assert_same(model, FastTextLID(model, bundled_model_path()), TRICKY)


@pytest.fixture(scope="module")
def small_hs(tmp_path_factory):
    """Hierarchical-softmax models trained here: dense (.bin) and quantised with pruning (.ftz)."""
    rng = random.Random(7)
    langs = {f"l{i}": "".join(rng.sample("abcdefghijklmnopqrstuvwxyzäöü", 8)) for i in range(9)}
    lines = []
    for i in range(2500):
        lab = rng.choice(list(langs)[: 3 + i % 7])  # uneven counts: a real Huffman tree
        alpha = langs[lab]
        words = ["".join(rng.choice(alpha) for _ in range(rng.randint(2, 7))) for _ in range(rng.randint(3, 12))]
        lines.append(f"__label__{lab} " + " ".join(words))
    d = tmp_path_factory.mktemp("hs")
    (d / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = dict(input=str(d / "train.txt"), thread=1, seed=1, verbose=0, epoch=5, lr=0.5, dim=8, wordNgrams=1,
                minn=2, maxn=4, bucket=5000, minCount=1, loss="hs")
    dense = train_supervised(**args)
    dense.save_model(str(d / "hs.bin"))
    quant = train_supervised(quantize=dict(cutoff=2000, retrain=False, qnorm=True, dsub=2), **args)
    quant.save_model(str(d / "hs.ftz"))
    return d, lines


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hs.bin", "hs.ftz"])
def test_trained_hs_models_agree_with_fasttext(small_hs, name):
    d, lines = small_hs
    model = load_model(d / name)
    assert supports(model)
    rng = random.Random(2)
    test = [l.split(" ", 1)[1] for l in rng.sample(lines, 300)] + TRICKY
    for k in (1, 3, 9):
        assert_same(model, FastTextLID(model, d / name), test, k=k)


def test_models_it_cannot_reproduce_are_left_to_fasttext(tmp_path):
    """The models are built without SGD (epoch 0) and given seeded weights: fastText 0.9.2 with
    thread=1 fills only the first tenth of a fresh input matrix (`uniformThread` writes block 0 of
    10) and leaves the rest as whatever the heap held, so training a matrix this small met a NaN
    ("Encountered NaN") in about a third of the runs, more often in a busy process."""
    import numpy as np

    (tmp_path / "t.txt").write_text("__label__a x y\n__label__b z w\n" * 20, encoding="utf-8")
    rng = np.random.default_rng(1)
    for loss, ngrams in (("softmax", 1), ("hs", 2)):
        m = train_supervised(input=str(tmp_path / "t.txt"), thread=1, seed=1, verbose=0, epoch=0, dim=4,
                             wordNgrams=ngrams, bucket=100, loss=loss)
        m.set_matrices(rng.uniform(-0.25, 0.25, m.get_input_matrix().shape).astype(np.float32),
                       rng.uniform(-0.25, 0.25, m.get_output_matrix().shape).astype(np.float32))
        assert not supports(m)
        m.save_model(str(tmp_path / "m.bin"))
        stage = LangID(model_path=str(tmp_path / "m.bin"))
        stage.ensure_setup()
        assert stage.scorer is stage.model


@pytest.mark.slow
def test_every_real_langid_text_agrees_with_fasttext(corpora, shipped):
    model, _ = shipped
    scorer = FastTextLID(model, bundled_model_path())
    sets = real_lines(corpora)
    assert sum(map(len, sets.values())) > 85_000
    for name, lines in sets.items():
        for s in range(0, len(lines), 2000):  # the stage's batches, one scorer (its memo) throughout
            assert_same(model, scorer, lines[s: s + 2000])
    assert scorer.fallbacks < 0.03 * sum(map(len, sets.values()))  # rounding doubts handed to fastText


@pytest.mark.slow
def test_stage_decisions_unchanged_on_real_documents(corpora):
    texts = real_lines(corpora)["lingua documents"][::3] + real_lines(corpora)["hplt web"]
    tab = table(texts)
    for cfg in ({}, {"languages": ["en"]}, {"languages": ["de", "hr"], "top_k": 5}):
        ours, theirs = LangID(**cfg), LangID(**cfg)
        theirs.ensure_setup()
        theirs.scorer = theirs.model
        a, b = ours.annotate(tab), theirs.annotate(tab)
        for col in ("lang", "lang_group", "lang_cld2") + (("lang_top",) if "top_k" in cfg else ()):
            if col == "lang_top":  # labels equal, scores within rounding
                assert [[x["lang"] for x in r] for r in a.column(col).to_pylist()] == \
                    [[x["lang"] for x in r] for r in b.column(col).to_pylist()]
            else:
                assert a.column(col).to_pylist() == b.column(col).to_pylist()
        for col in ("lang_score", "lang_group_score"):
            x, y = (np.array(t.column(col).to_pylist(), dtype=float) for t in (a, b))
            assert np.array_equal(np.isnan(x), np.isnan(y)) and np.nanmax(np.abs(x - y)) < 5e-6
        assert ours.decide(a) == theirs.decide(b)


def test_listing_the_stages_does_not_import_scipy():
    """A process that only lists or validates the stages (`refinery run`'s driver on Ray, `refinery
    report`, `refinery stages`) does not pay for scipy.sparse: the scorer imports it when it scores."""
    import subprocess
    import sys

    code = ("import sys; from pipeline import cli; cli.build_parser(); from stages import registry; "
            "registry.available(); print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
