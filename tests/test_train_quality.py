"""`refinery train-quality` and the shipped quality model (stages/models/quality.ftz)."""
from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys

import pyarrow as pa
import pytest

from pipeline.train.quality import Doc, balance, chunks, clean_social, detokenize_wikitext, join_short, read_texts, split
from stages.quality.classifier import QualityClassifier, QualityClassifierConfig, shipped_model_path
from stages.quality.stage import Quality, combined_score
from tests.test_quality import GOOD, table


def test_detokenize_and_clean():
    assert detokenize_wikitext('It is 6 @,@ 000 km ( 24 in ) long , " red " and <unk> old .') == 'It is 6,000 km (24 in) long, "red" and old.'
    assert clean_social("RT @bob: look &amp; see https://t.co/x now") == "look & see now"


def test_chunks_and_joins_have_the_same_length_range():
    rng = random.Random(0)
    text = "\n\n".join("word " * 40 for _ in range(200))
    cs = list(chunks(text, rng))
    js = list(join_short(["short message here"] * 2000, rng))
    assert cs and js and all(300 <= len(c) for c in cs) and all(300 <= len(j) <= 3100 for j in js)


def test_split_is_seeded_and_stratified():
    docs = [Doc(f"d{i}", i % 2 == 0, "a" if i < 50 else "b") for i in range(100)]
    a, b = split(docs, 1, 0.2), split(docs, 1, 0.2)
    assert a == b and len(a[1]) == 20 and not set(a[0]) & set(a[1])
    bal = balance(a[0] + [Doc("x", True, "c")] * 10, 1)
    assert sum(d.hq for d in bal) == sum(not d.hq for d in bal)


def test_read_texts_formats(tmp_path):
    (tmp_path / "a.txt").write_text("one doc\n\ntwo doc\n")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as f:
        f.write(json.dumps({"text": "three"}) + "\n")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["four", None]}), tmp_path / "c.parquet")
    assert list(read_texts(tmp_path)) == ["one doc", "two doc", "three", "four"]
    (tmp_path / "d.jsonl").write_text("not json\n")
    with pytest.raises(ValueError, match=r"d.jsonl:1"):
        list(read_texts(tmp_path / "d.jsonl"))
    with pytest.raises(ValueError, match="no such file"):
        list(read_texts(tmp_path / "missing.txt"))


def test_cli_trains_a_model_and_reports_held_out_accuracy(tmp_path):
    rng = random.Random(0)
    good = ["the committee published a detailed report on the history of the region and its economy",
            "researchers describe the method the data and the results of the experiment in this paper"]
    bad = ["lol omg subscribe like share follow click here", "best deals click now free free win prize"]
    (tmp_path / "pos.txt").write_text("\n".join(rng.choice(good) for _ in range(200)) + "\n")
    (tmp_path / "neg.txt").write_text("\n".join(rng.choice(bad) for _ in range(200)) + "\n")
    out = tmp_path / "m.ftz"
    r = subprocess.run([sys.executable, "-m", "pipeline.cli", "train-quality", str(tmp_path / "pos.txt"),
                        str(tmp_path / "neg.txt"), "--out", str(out), "--seed", "3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "| all | 80 | 1.000 |" in r.stdout and out.is_file()
    hq, lq = QualityClassifier(QualityClassifierConfig(model_path=str(out))).scores([good[0], bad[0]])
    assert hq > 0.5 > lq


def test_cli_bad_arguments_exit_2(tmp_path):
    for args in ([], [str(tmp_path / "missing"), str(tmp_path / "missing2")], ["--default", "x"]):
        r = subprocess.run([sys.executable, "-m", "pipeline.cli", "train-quality", *args], capture_output=True, text=True)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)


def test_shipped_model_is_small_and_ranks():
    path = shipped_model_path()
    assert path.is_file() and path.stat().st_size <= 5 * 1024 * 1024
    spam = "lol omg u coming tonight?? text me back\nFREE entry in 2 a wkly comp to win cup final tkts txt now\nya ya whatever bro"
    hq, lq = QualityClassifier(QualityClassifierConfig()).scores([GOOD, spam])
    assert hq > 0.8 and lq < 0.2


def test_stage_combines_rule_and_classifier_scores():
    q = Quality()  # the shipped classifier is on by default, English only
    t = table([GOOD, GOOD])
    t = t.append_column("lang", pa.array(["en", "de"]))
    out = q.annotate(t)
    cls = out.column("quality_classifier_score").to_pylist()
    assert cls[0] is not None and cls[1] is None  # German: not scored by the English model
    rule = out.column("quality_rule_score").to_pylist()
    assert rule[0] == 1.0
    assert out.column("quality_score").to_pylist() == pytest.approx([(1 + cls[0]) / 2, (rule[1] + 0.5) / 2])
    assert combined_score(0.5, None) == 0.5 and combined_score(None, 0.3) == 0.3
    assert "quality_rule_score" not in [f.name for f in Quality(classifier=None).signal_fields()]


def test_shipped_model_separates_held_out_corpora(corpora):
    from pipeline.train.quality import default_sets, evaluate

    pool, extra = default_sets(corpora, 13)
    _, test = split(pool, 13, 0.2)
    rows = dict(evaluate(test, shipped_model_path()))
    assert rows["all"]["roc_auc"] > 0.98
    rows = dict(evaluate(extra, shipped_model_path()))
    assert rows["wikitext2-test (never trained on)"]["accuracy"] > 0.95
