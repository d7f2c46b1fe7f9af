"""The functional suite (benchmarks/toxicity_functional.py), the coverage file and the LDNOOBW rule."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import toxicity_functional as suite  # noqa: E402
from stages.toxicity import JUDGED, MIN_AUC, Toxicity, bundled_model_path  # noqa: E402


def test_every_language_has_every_category_in_both_parts():
    for lang in suite.LANGUAGES:
        for part in ("dev", "test"):
            cats = {c for c, *_ in suite.cases(lang, part)}
            assert cats == set(suite.HATEFUL + suite.CONTRASTS), (lang, part)
        dev = {t for *_, t in suite.cases(lang, "dev")}
        test = {t for *_, t in suite.cases(lang, "test")}
        assert not dev & test
        assert all("{" not in t for t in dev | test)


def test_no_case_is_a_training_line():
    from pipeline.train.toxicity import composed, generated, load_written

    trained = {e.text.lower() for e in generated(13) + composed(13) + load_written()}
    assert not trained & {t.lower() for *_, t in suite.every_case()}


def test_the_judged_languages_were_measured_on_the_shipped_model():
    data = json.loads((ROOT / "stages" / "data" / "toxicity_languages.json").read_text(encoding="utf-8"))
    assert data["model_sha256"] == hashlib.sha256(bundled_model_path().read_bytes()).hexdigest(), \
        "the model changed: rerun PYTHONPATH=. python benchmarks/toxicity_coverage.py --write"
    assert set(JUDGED) == set(data["judged"]) and data["min_auc"] == MIN_AUC
    prose = data["max_prose_rejected"]

    def ok(v: dict) -> bool:
        aucs = [m["auc"] for m in v.values() if isinstance(m, dict) and "auc" in m]
        cp = v.get("clean_prose")
        return bool(aucs) and all(a >= MIN_AUC for a in aucs) and (cp is None or cp["rejected_share"] <= prose)

    for lang, v in data["judged"].items():
        assert ok(v), lang
    for lang, v in data["not_judged"].items():
        assert not ok(v), lang


def test_ldnoobw_counts_with_the_documents_language_list():
    s = Toxicity(word_list="ldnoobw", max_toxic_words=1, max_score=None)
    import pyarrow as pa
    from pipeline.schema import make_record, records_to_table

    texts = ["Das ist Scheiße.", "Das ist Scheiße.", "What a nice day.", "Un texte sans liste."]
    langs = ["de", "en", "en", "ro"]
    t = records_to_table(make_record(source="s", kind="jsonl", file="f", offset=i, text=x) for i, x in enumerate(texts))
    out = s.annotate(t.append_column("lang", pa.array(langs, pa.string())))
    assert out.column("toxic_word_count").to_pylist() == [1, 0, 0, None]  # ro: no list, not counted
    assert s.decide(out) == ["toxic_words", None, None, None]
    assert (ROOT / "stages" / "data" / "ldnoobw" / "LICENSE").is_file()
