"""stages/_scalar_fasttext.py: the memoised scorer gives fastText's own predictions."""
from __future__ import annotations

import gzip
import io
import json
import random
import string

import numpy as np
import pyarrow as pa
import pytest

import stages._fasttext_tokens as tokens_mod
import stages._scalar_fasttext as scalar
from pipeline.train.fasttext_linear import to_linear
from stages._fasttext import load_model, train_supervised
from stages._fasttext_tokens import word_hashes
from stages._scalar_fasttext import ScalarFastText, supports
from stages.toxicity import TOXIC, bundled_model_path, model_language, span_lines


def fasttext_p(model, lines: list[str], positive: str = "__label__toxic") -> np.ndarray:
    """P(positive) as the toxicity stage read it from fastText before (top label, k=1)."""
    labels, probs = model.f.multilinePredict([l + "\n" for l in lines], 1, 0.0, "replace")
    return np.array([min(max(float(p[0]) if l[0] == positive else 1.0 - float(p[0]), 0.0), 1.0)
                     for l, p in zip(labels, probs)])


TRICKY = [
    "plain words here", "  leading and   runs of spaces  ", "x", "", " ", "tab\tseparated\tline",
    "ünïcödé wörds ß ﬁ", "你 好 世 界", "かな カナ ｱｲｳ", "привет мир", "emoji 😀😀 mixed 😀x",
    "nbsp\xa0inside a token", "a __label__toxic b", "__label__clean", "xlang_de sehr gut",
    "w" * 300 + " long " + "é" * 200, "a b a b a b a b", "'quoted' o'neil don't",
]


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """A trained two-label model (minn 2, so one-character n-grams' rules do not matter, and
    wordNgrams 2), rewritten with one dimension."""
    return _small_model(tmp_path_factory, minn=2)


def _small_model(tmp_path_factory, minn: int):
    rng = random.Random(5)
    letters = string.ascii_lowercase + "éüßпр你好"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 8))) for _ in range(500)]
    lines = []
    for i in range(3000):
        toxic = i % 3 == 0
        words = [rng.choice(vocab[30:]) for _ in range(rng.randint(2, 12))]
        if toxic:
            words.insert(rng.randrange(len(words)), rng.choice(vocab[:30]))
        lines.append(("__label__toxic " if toxic else "__label__clean ") + " ".join(words))
    d = tmp_path_factory.mktemp("scalar")
    (d / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = train_supervised(input=str(d / "train.txt"), thread=1, seed=1, verbose=0, epoch=5, lr=0.2, dim=4,
                             wordNgrams=2, minn=minn, maxn=4, bucket=3000, minCount=1, loss="softmax")
    model.save_model(str(d / "full.bin"))
    to_linear(d / "full.bin", d / "linear.bin")
    return d / "linear.bin", vocab


def test_small_model_agrees_with_fasttext(small_model):
    path, vocab = small_model
    model = load_model(path)
    assert supports(model, path)
    rng = random.Random(9)
    lines = TRICKY + [" ".join(rng.choice(vocab + ["unseen", "wörd", "новое"]) for _ in range(rng.randint(1, 20)))
                      for _ in range(500)]
    ours = ScalarFastText(model, "__label__toxic").predict(lines)
    theirs = fasttext_p(model, lines)
    assert np.abs(ours - theirs).max() < 2e-6
    for batch in (["ж"], ["ы ф"], ["q"], ["ж q"]):  # new tokens all too short for some n-gram lengths
        sc = ScalarFastText(model, "__label__toxic")
        assert np.abs(sc.predict(batch) - fasttext_p(model, batch)).max() < 2e-6


def test_one_character_ngrams_follow_fasttexts_rule_on_the_marks(tmp_path_factory):
    """With minn 1 fastText counts every one-character n-gram but a lone "<" or ">": the scorer
    leaves those two out of each token's sum and count (every start of a token is one step's work,
    those rules too)."""
    path, vocab = _small_model(tmp_path_factory, minn=1)
    model = load_model(path)
    rng = random.Random(11)
    lines = TRICKY + [" ".join(rng.choice(vocab + ["a", "é", "你", "😀x", "ab"]) for _ in range(rng.randint(1, 9)))
                      for _ in range(300)]
    assert np.abs(ScalarFastText(model, "__label__toxic").predict(lines) - fasttext_p(model, lines)).max() < 2e-6


def test_the_first_token_is_as_if_written_before_the_line(small_model):
    path, vocab = small_model
    sc = ScalarFastText(load_model(path), "__label__toxic")
    lines = [" ".join(vocab[i:i + 5]) for i in range(0, 100, 5)]
    first = [vocab[i] if i % 2 else "" for i in range(len(lines))]
    joined = [f"{f} {l}" if f else l for f, l in zip(first, lines)]
    assert np.abs(sc.predict(lines, first) - sc.predict(joined)).max() < 1e-12


def test_no_feature_tokens_score_as_if_removed_from_the_line(small_model):
    """Tokens in `no_feature` (the toxicity stage's identity terms) count as absent, in the
    vocabulary or not, and their neighbours pair up as in the line written without them."""
    path, vocab = small_model
    model = load_model(path)
    gone = frozenset((vocab[0], vocab[40], "unseen"))
    sc = ScalarFastText(model, "__label__toxic", no_feature=gone)
    rng = random.Random(3)
    lines = [" ".join(rng.choice(vocab[:60] + ["unseen", "other"]) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    lines += [vocab[0], f"{vocab[0]} unseen", f"{vocab[1]} {vocab[0]} {vocab[2]}"]
    without = [" ".join(w for w in l.split() if w not in gone) for l in lines]
    assert np.abs(sc.predict(lines) - fasttext_p(model, without)).max() < 2e-6
    assert np.abs(sc.predict(lines) - ScalarFastText(model, "__label__toxic").predict(without)).max() < 1e-12


def test_a_full_memo_starts_again_with_the_same_answers(small_model, monkeypatch):
    path, vocab = small_model
    model = load_model(path)
    lines = [f"new{i} token{i % 7} {vocab[i % 50]}" for i in range(400)]
    expected = ScalarFastText(model, "__label__toxic").predict(lines)
    monkeypatch.setattr(scalar, "MEMO_SIZE", 50)  # fewer than one batch's new tokens
    sc = ScalarFastText(model, "__label__toxic")
    for chunk in range(0, 400, 40):
        got = sc.predict(lines[chunk:chunk + 40])
        assert np.abs(got - expected[chunk:chunk + 40]).max() < 1e-12
        assert sc.size - sc.nwords <= 50 or chunk == 0
    assert sc.size - sc.nwords <= 80


def test_vocabulary_words_computed_when_first_met_are_the_numbers_computed_up_front(small_model):
    """A vocabulary word's features are computed in the batch that first holds it: bit for bit
    what computing the whole vocabulary at once gives, whatever else the batch holds."""
    import pyarrow as pa

    path, vocab = small_model
    model = load_model(path)
    sc = ScalarFastText(model, "__label__toxic")
    assert sc.ready.sum() == 1  # only "</s>", until a batch holds a word
    words = model.get_words()
    h32, _, _ = word_hashes(pa.array(words, pa.large_string()))
    _, up_front, up_count = sc._features(pa.array(words, pa.large_string()), np.arange(len(words)), h32)
    up_front[sc.eos], up_count[sc.eos] = sc.rows[sc.eos], 1
    rng = random.Random(3)
    shuffled = [w for w in words if w != "</s>"]
    rng.shuffle(shuffled)
    for i in range(0, len(shuffled), 97):  # batches mixing known, new and out-of-vocabulary words
        sc.predict([" ".join(shuffled[i:i + 97] + ["oov", "wörd"]), "ж " + shuffled[i]])
    assert sc.ready.all()
    assert np.array_equal(sc.sum[:sc.nwords], up_front) and np.array_equal(sc.count[:sc.nwords], up_count)


def test_models_it_cannot_reproduce_are_left_to_fasttext(small_model, tmp_path):
    path, _ = small_model
    full = load_model(path.parent / "full.bin")
    assert not supports(full, path.parent / "full.bin")  # four dimensions


@pytest.mark.slow
def test_shipped_model_on_real_paragraphs(corpora):
    """20,000+ paragraphs of web pages (many languages, with their language token) and 4chan
    threads, as the stage cuts them: the same probabilities and the same decisions."""
    import zstandard

    lines = []
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(open(corpora / "web" / name, "rb"))
        for l in io.TextIOWrapper(raw, encoding="utf-8", errors="replace"):
            d = json.loads(l)
            code = model_language(d.get("lang"))
            lines += [f"xlang_{code} {s}" if code else s for s in span_lines(d.get("t") or "", "paragraph")]
    with gzip.open(corpora / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        for l in f:
            lines += ["xlang_en " + s for s in span_lines(json.loads(l)["text"], "paragraph")]
            if len(lines) >= 25_000:
                break
    assert len(lines) >= 20_000
    model = load_model(bundled_model_path())
    assert supports(model, bundled_model_path())
    ours = ScalarFastText(model, TOXIC).predict(lines)
    theirs = fasttext_p(model, lines)
    assert np.abs(ours - theirs).max() < 2e-6
    for threshold in (0.5, 0.8):
        assert ((ours >= threshold) == (theirs >= threshold)).all()


# -- models of any dimension, quantised and pruned: the quality classifier's -----------------------
def quality_p(model, lines: list[str]) -> np.ndarray:
    """P(__label__hq) as the quality classifier read it from fastText (k=-1, clipped to 1)."""
    labels, probs = model.f.multilinePredict([l + "\n" for l in lines], -1, 0.0, "replace")
    return np.array([next(min(1.0, float(p)) for lab, p in zip(ls, ps) if lab == "__label__hq")
                     for ls, ps in zip(labels, probs)])


@pytest.fixture(scope="module")
def quality_model():
    from stages.quality.classifier import shipped_model_path

    path = shipped_model_path()
    return load_model(path), path


def test_quantised_rows_are_decoded_as_fasttext_decodes_them(quality_model):
    from stages._scalar_fasttext import read_matrices

    model, path = quality_model
    rows, out, prune = read_matrices(path)
    assert model.f.isQuant() and prune is not None and out.shape == (2, model.get_dimension())
    assert rows.shape == (len(model.get_words()) + int((prune >= 0).sum()), model.get_dimension())
    for i in list(range(0, len(rows), 997)) + [len(rows) - 1]:
        assert np.array_equal(model.get_input_vector(i), rows[i])  # bit for bit
    # a pruned model's kept n-grams: fastText's own ids for a word's subwords are rows we map to
    ids = model.get_subwords("qualitätsprüfung")[1]
    assert all(i < len(rows) for i in ids)


def test_a_dense_model_of_more_dimensions_is_projected(small_model):
    """The four-dimensional model the small one was rewritten from: read from its file and
    projected, the same probabilities as fastText's (k=1 and k=-1 readings)."""
    path, vocab = small_model
    full_path = path.parent / "full.bin"
    full = load_model(full_path)
    assert supports(full, full_path, any_dimension=True)
    rng = random.Random(11)
    lines = TRICKY + [" ".join(rng.choice(vocab + ["unseen", "wörd"]) for _ in range(rng.randint(1, 20))) for _ in range(300)]
    assert np.abs(ScalarFastText(full, "__label__toxic", path=full_path).predict(lines) - fasttext_p(full, lines)).max() < 2e-6
    labels, probs = full.f.multilinePredict([l + "\n" for l in lines], -1, 0.0, "replace")
    every = np.array([min(1.0, float(dict(zip(ls, ps))["__label__toxic"])) for ls, ps in zip(labels, probs)])
    got = ScalarFastText(full, "__label__toxic", path=full_path, all_labels=True).predict(lines)
    assert np.abs(got - every).max() < 2e-6


@pytest.mark.slow
def test_shipped_quality_model_agrees_with_fasttext(quality_model):
    """32 dimensions, product-quantised and pruned, projected to one: fastText's probabilities to
    float rounding, on tricky lines (NUL, a "</s>" token, which ends fastText's line) and on random
    multilingual word salad."""
    model, path = quality_model
    assert supports(model, path, any_dimension=True) and not supports(model, path)
    sc = ScalarFastText(model, "__label__hq", path=path, all_labels=True)
    words = model.get_words()
    rng = random.Random(4)
    lines = TRICKY + ["a </s> b c", "</s>", "x </s>", "x </s>y z", "nul\0inside a\0 token", "\0",
                      "__label__hq good text"]
    lines += [" ".join(rng.choice(words + ["unseen", "wörd", "новое", "你", "tëxt."]) for _ in range(rng.randint(1, 60)))
              for _ in range(400)]
    ours = sc.predict(lines)
    theirs = quality_p(model, lines)
    assert np.abs(ours - theirs).max() < 2e-6
    # the first token (a language token) is as if written before the line
    assert np.abs(sc.predict(lines[:50], ["xlang_de"] * 50) - sc.predict(["xlang_de " + l for l in lines[:50]])).max() < 1e-12


@pytest.mark.slow
def test_shipped_quality_model_on_real_documents(corpora, quality_model):
    """Whole documents of several languages, as the quality stage sends them: the same scores to
    float rounding (the measured maximum, on every real corpus, is in docs/quality.md)."""
    import zstandard

    from stages.quality.classifier import preprocess

    model, path = quality_model
    docs = []
    raw = zstandard.ZstdDecompressor().stream_reader(open(corpora / "web" / "hplt_sample100_CC.jsonl.zst", "rb"))
    docs += [json.loads(l).get("t") or "" for l in io.TextIOWrapper(raw, encoding="utf-8", errors="replace")]
    with gzip.open(corpora / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        docs += [json.loads(l)["text"] for _, l in zip(range(300), f)]
    lines = [preprocess(d) for d in docs]
    ours = ScalarFastText(model, "__label__hq", path=path, all_labels=True).predict(lines)
    theirs = quality_p(model, lines)
    assert len(docs) >= 350 and np.abs(ours - theirs).max() < 2e-5


def test_a_batch_that_fills_the_memo_with_first_tokens(small_model, monkeypatch):
    """A batch with more new tokens than the memo holds, and a first token per line: the lines'
    tokens and the first tokens are looked up together (a second look-up once started the memo
    again, and the first one's indices pointed past it: an IndexError, or wrong rows)."""
    path, vocab = small_model
    model = load_model(path)
    lines = [f"new{i} token{i} {vocab[i % 50]}" for i in range(300)]
    first = ["" if i % 3 else vocab[i % 40] for i in range(300)]
    expected = ScalarFastText(model, "__label__toxic").predict(lines, first)
    monkeypatch.setattr(scalar, "MEMO_SIZE", 50)
    sc = ScalarFastText(model, "__label__toxic")
    sc.predict(["filler words " + " ".join(f"f{i}" for i in range(45))])  # memo nearly full
    assert np.abs(sc.predict(lines, first) - expected).max() < 1e-12
    assert np.abs(sc.predict(lines[:20], first[:20]) - expected[:20]).max() < 1e-12


def test_a_huge_token_is_summed_in_windows_with_bounded_work_arrays(small_model, quality_model, monkeypatch):
    """Hostile input: the vectorised n-grams need ~140 bytes per code point, so one 64 MB word
    (a recipe may lift `max_chars`) would need ~9 GB at once. A token over LONG_TOKEN bytes is
    summed in windows (the pieces `_ngrams` sees stay short) to the same score as fastText's, for a
    dense and for a pruned quantised model; many new tokens go in CHUNK_BYTES chunks."""
    monkeypatch.setattr(tokens_mod, "LONG_TOKEN", 16)
    monkeypatch.setattr(tokens_mod, "CHUNK_BYTES", 40)
    path, vocab = small_model
    model, qmodel, qpath = load_model(path), *quality_model
    huge = ["ab" * 50, "é你" * 23 + "x", "y" * 17, vocab[0] * 9, "z" * 16]
    lines = [f"{vocab[1]} {w} {vocab[2]}" for w in huge] + [" ".join(huge), "short words only", "q" * 33]
    for sc, theirs in ((ScalarFastText(model, "__label__toxic"), fasttext_p(model, lines)),
                       (ScalarFastText(qmodel, "__label__hq", path=qpath, all_labels=True), quality_p(qmodel, lines))):
        seen = []
        ngrams = sc._ngrams
        monkeypatch.setattr(sc, "_ngrams", lambda marked, f=ngrams: seen.append(
            [len(t.as_py().encode()) for t in marked]) or f(marked))
        assert np.abs(sc.predict(lines) - theirs).max() < 2e-6
        # at most LONG_TOKEN code points and maxn - 1 more (4 bytes each) per piece; 40 bytes per call
        assert max(map(max, seen)) <= 4 * (16 + 3) and all(len(s) == 1 or sum(s) <= 40 for s in seen)
        assert sum(map(len, seen)) > len(huge) + 4  # the huge tokens went in several pieces


def test_many_lines_are_scored_a_slice_at_a_time_with_the_same_answers(small_model, monkeypatch):
    """Millions of tiny lines (one document of "a\\n" * 2M: ~120 bytes of arrays per line, 122x the
    text in the toxicity stage, now 48x) go STEP_LINES lines per pass, with their first tokens."""
    path, vocab = small_model
    model = load_model(path)
    lines = [f"{vocab[i % 70]} new{i % 13}" for i in range(200)] + ["", "x"]
    first = ["" if i % 3 else vocab[i % 40] for i in range(len(lines))]
    expected = ScalarFastText(model, "__label__toxic").predict(lines, first)
    monkeypatch.setattr(scalar, "STEP_LINES", 16)
    sc = ScalarFastText(model, "__label__toxic")
    passes = []
    lookup = sc._lookup
    monkeypatch.setattr(sc, "_lookup", lambda distinct: passes.append(len(distinct)) or lookup(distinct))
    assert np.array_equal(sc.predict(lines, first), expected)
    assert len(passes) == 13 and np.array_equal(sc.predict(pa.array(lines, pa.large_string())),
                                                ScalarFastText(model, "__label__toxic").predict(lines))


def test_per_line_sums_are_bincounts_with_empty_lines():
    from stages._scalar_fasttext import _per_line

    rng = np.random.default_rng(5)
    per_line = rng.integers(0, 4, 500)
    per_line[:3] = 0
    values = rng.integers(-1, 9, int(per_line.sum()))
    line_of = np.repeat(np.arange(len(per_line)), per_line)
    assert _per_line(values, per_line).tolist() == np.bincount(line_of, weights=values, minlength=500).tolist()
    assert _per_line(values > 2, per_line).tolist() == np.bincount(line_of[values > 2], minlength=500).tolist()
    assert _per_line(np.zeros(0, np.int64), np.zeros(3, np.int64)).tolist() == [0, 0, 0]


def test_a_first_token_gives_bit_for_bit_the_scores_of_the_line_written_with_it(quality_model):
    """The first token is not inserted into the per-token arrays: its sum and its pair with the
    line's next token (or "</s>") start the line's sums, which then add in fastText's order, so the
    scores equal the joined line's exactly, for a dense model and a pruned one: also for empty
    lines, no-feature first tokens ("", a label, an identity term) and no-feature words in the line."""
    from stages.toxicity import IDENTITY_TERMS

    model, qpath = quality_model
    tox = load_model(bundled_model_path())
    rng = random.Random(7)
    words = ["the", "idiot", "women", "xlang_de", "__label__x", "dummes", "ünïcode", "你", "zzqx", "a"]
    lines = ["", " ", "idiot", "women", "women idiot women"] + [
        " ".join(rng.choice(words) for _ in range(rng.randint(0, 9))) for _ in range(400)]
    heads = ["", "xlang_de", "xlang_en", "women", "__label__toxic", "zzqx"]
    first = [rng.choice(heads) for _ in lines]
    joined = [f"{f} {l}" if f else l for f, l in zip(first, lines)]
    scorers = [ScalarFastText(tox, TOXIC, no_feature=IDENTITY_TERMS),
               ScalarFastText(model, model.get_labels()[0], path=qpath)]
    for sc in scorers:
        assert sc.predict(lines, first).tolist() == sc.predict(joined).tolist()
        assert sc.predict(lines[:3], ["", "", ""]).tolist() == sc.predict(lines[:3]).tolist()
        assert sc.predict(["", ""], ["xlang_de", "women"]).tolist() == sc.predict(["xlang_de", "women"]).tolist()
