"""pipeline/api.py: every function on strings, the README example, and agreement with a real run
of the pipeline (the runner in-process) on the same texts."""
from __future__ import annotations

from functools import partial

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import api
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from stages.quality.stage import Quality
from tests.helpers import write_jsonl, write_recipe

ROOT = Path(__file__).resolve().parents[1]

EN = ("The history of the town goes back to the twelfth century, when a small abbey was founded on the hill.\n"
      "Over the following centuries the settlement grew into a market town with a busy harbour and a mill.\n"
      "Today it is known for its old bridge, which was rebuilt after a flood and is still in use by the locals.\n"
      "Visitors come to see the abbey ruins, to walk along the river and to taste the cheese that is made nearby.\n"
      "The museum in the former town hall shows tools, paintings and letters that tell the story of the place.\n"
      "Please enable JavaScript to view the map.")
DE = ("Die Geschichte der Stadt reicht bis ins zwölfte Jahrhundert zurück, als auf dem Hügel eine kleine Abtei "
      "gegründet wurde. Heute ist sie für ihre alte Brücke bekannt, die nach einem Hochwasser wieder aufgebaut wurde.")
TEXTS = [
    EN,
    DE,
    "Hello",
    "\n".join(["Buy cheap shoes online now and save money today!"] * 8),
    "you are a stupid idiot and I hate you, you worthless piece of garbage",
    "Contact jane.doe@example.org or +1 415 555 0100 from 8.8.8.8 (not 192.168.0.1).",
    EN,  # exact duplicate of 0
    EN.replace("twelfth", "eleventh"),  # near duplicate of 0
    "  ".join(EN.split(" ")),  # same text up to whitespace: an exact duplicate after normalisation
    "",
]


def readme_code() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_readme_example_runs():
    ns: dict = {}
    exec(compile(readme_code(), "README.md", "exec"), ns)  # noqa: S102 - our own README
    assert ns["api"].exact_dedup(ns["docs"]).kept == [0, 1, 2]
    assert ns["api"].near_dedup(ns["docs"]).clusters == [[0, 2, 3]]


def test_language_on_a_string_and_a_list():
    r = api.language(DE)
    assert r.lang == "de" and r.score > 0.9 and r.keep and r.reason is None
    rs = api.language([EN, DE], languages=["en"])
    assert [x.lang for x in rs] == ["en", "de"]
    assert [x.reason for x in rs] == [None, "language_not_allowed"]
    assert api.language("", min_score=0.5).reason == "language_score_too_low"


def test_quality_signals_decision_and_kept_text():
    good, short = api.quality([EN, "Hello"])
    assert good.keep and good.reason is None and good.failed_rules == [] and 0 < good.score <= 1
    assert "JavaScript" not in good.text and good.text.startswith("The history")  # C4 removed the line
    assert good.signals["rps_doc_word_count"] > 50 and "c4_javascript_lines" in good.signals
    assert not short.keep and short.reason == short.failed_rules[0] and short.text == "Hello"
    assert api.quality("Hello", gopher_quality=None, c4=None, fineweb=None, gopher_repetition=None).keep
    # language: German stop words count only with lang="de"
    assert "gopher_quality_too_few_stop_words" in api.quality(DE * 3, lang="en").failed_rules
    assert "gopher_quality_too_few_stop_words" not in api.quality(DE * 3, lang="de").failed_rules
    assert "gopher_quality_too_few_stop_words" not in api.quality(DE * 3).failed_rules  # detected: de
    ja = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。" * 4
    assert api.quality(ja).keep and not api.quality(ja, lang="en").keep


@pytest.mark.slow
def test_toxicity_score_and_decision():
    nice, rude = api.toxicity(["Have a lovely day at the beach!", TEXTS[4]], languages=["en"])
    assert nice.keep and nice.score < 0.5 and rude.score > 0.5 and rude.reason == "toxic_content"
    # a listed language is scored (lang: the model's language token); one not judged passes unscored
    assert api.toxicity(TEXTS[4], lang="de", languages=["de"]).score > 0.5
    assert api.toxicity(TEXTS[4], lang="de", languages=["en"]).score is None
    assert api.toxicity(TEXTS[4], max_score=None, languages=["en"]).keep  # the config is the stage's


def test_mask_pii():
    r = api.mask_pii(TEXTS[5])
    assert "jane.doe" not in r.text and "8.8.8.8" not in r.text and "192.168.0.1" in r.text
    assert (r.emails, r.phones, r.ips) == (1, 1, 1)
    assert api.mask_pii([TEXTS[5]], mask_ips=False)[0].ips == 0


def test_extract_from_html_bytes():
    page = ("<html><head><meta charset='windows-1252'><title>t</title></head><body><nav>Home | Shop | Cart</nav>"
            "<article><p>" + EN.replace("\n", "</p><p>") + " Caf\xe9.</p></article></body></html>").encode("cp1252")
    r = api.extract(page, time_limit=0)
    assert r.reason is None and r.charset == "cp1252" and "twelfth century" in r.text and "Café" in r.text
    assert "Home | Shop" not in r.text
    empty = api.extract(b"<html><body></body></html>", time_limit=0)
    assert empty.text is None and empty.reason == "no_text"
    with pytest.raises(TypeError):
        api.extract("<html></html>")


def test_exact_and_near_dedup_return_clusters_and_kept_indices():
    ex = api.exact_dedup(TEXTS)
    assert ex.clusters == [[0, 6, 8]] and ex.dropped == {6: 0, 8: 0}
    assert ex.kept == [i for i in range(len(TEXTS)) if i not in (6, 8)]
    near = api.near_dedup(TEXTS)
    assert [0, 6, 7, 8] in near.clusters and {7, 6, 8} <= set(near.dropped) and 0 in near.kept
    assert api.near_dedup(TEXTS, threshold=0.99).dropped.keys() == {6, 8}  # only the identical ones
    assert api.exact_dedup([]) == api.DedupResult([], {}, [])


def test_bad_input_and_bad_config_are_clear():
    with pytest.raises(TypeError):
        api.quality([b"bytes"])
    with pytest.raises(ValueError):
        api.quality(["a", "b"], lang=["en"])
    with pytest.raises(Exception, match="min_doc_word"):
        api.quality("x", gopher_quality={"min_doc_word": 3})
    with pytest.raises(TypeError, match="not NoneType"):
        api.language(None)


def test_a_lone_surrogate_is_a_replacement_character_in_every_function():
    """Half an emoji from a JSON escape: every function raised UnicodeEncodeError (Arrow, xxhash)."""
    cut = "the old bridge was rebuilt \ud83d after the flood"
    assert api.mask_pii(cut + " a@b.org").text == "the old bridge was rebuilt \ufffd after the flood |||EMAIL_ADDRESS|||"
    assert api.language(cut).lang == "en" and api.quality(cut).reason and api.toxicity(cut).keep
    assert api.exact_dedup([cut, cut]).dropped == {1: 0}
    assert api.near_dedup([cut * 3, cut * 3]).dropped == {1: 0}


# -- the same texts through the pipeline ---------------------------------------------------------
STAGES = {
    "langid": {"languages": ["en"]},
    "quality": {},
    "toxicity": {},
    "pii": {},
    "exact_dedup": {},
    "minhash_dedup": {},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One in-process run per stage over TEXTS: {stage: {index: (drop_reason, text, row)}}."""
    tmp = tmp_path_factory.mktemp("api_runs")
    write_jsonl(tmp / "in" / "docs.jsonl", [{"text": t} for t in TEXTS])
    out = {}
    for name, cfg in STAGES.items():
        stage = json.dumps({"stage": name, **cfg})
        path = write_recipe(tmp / f"{name}.yaml", f"""
output: {tmp / name}
sources:
  web: {{kind: jsonl, paths: ["{tmp}/in/*.jsonl"]}}
stages:
  - {stage}
""")
        run(load_recipe(str(path)), executor="local", progress=False)
        rows = []
        for f in sorted((tmp / name).glob("kept/*.parquet")) + sorted((tmp / name).glob(f"rejects/{name}/*.parquet")):
            rows += pq.read_table(f).to_pylist()
        by_offset = sorted(rows, key=lambda r: r["offset"])
        assert len(by_offset) == len(TEXTS)
        out[name] = {i: r for i, r in enumerate(by_offset)}
    return out


@pytest.mark.slow
def test_per_document_stages_agree_with_the_pipeline(runs):
    # the runs have no langid stage: quality judges every text by its default_lang (en), as
    # api.quality does when told the language
    quality_en = partial(api.quality, lang="en")
    for name, fn, field in [("langid", api.language, None), ("quality", quality_en, "text"),
                            ("toxicity", api.toxicity, None), ("pii", api.mask_pii, "text")]:
        res = fn(TEXTS, **STAGES[name])
        for i, r in enumerate(res):
            row = runs[name][i]
            if hasattr(r, "reason"):
                assert r.reason == row["drop_reason"], (name, i)
            if field:
                assert getattr(r, field) == row["text"], (name, i)
    q = api.quality(TEXTS, lang="en")
    names = [f.name for f in Quality().signal_fields()]
    for i, r in enumerate(q):
        assert {n: r.signals[n] for n in names} == {n: runs["quality"][i][n] for n in names}
    tox = api.toxicity(TEXTS, **STAGES["toxicity"])
    assert [r.score for r in tox] == pytest.approx([runs["toxicity"][i]["toxicity_score"] for i in range(len(TEXTS))])


@pytest.mark.slow
def test_dedup_agrees_with_the_pipeline(runs):
    """Same groups and as many kept per group (which copy survives follows the ids, which differ)."""
    for name, fn in [("exact_dedup", api.exact_dedup), ("minhash_dedup", api.near_dedup)]:
        rows = runs[name]
        index = {r["id"]: i for i, r in rows.items()}
        groups: dict[int, set[int]] = {}
        for i, r in rows.items():
            if r["drop_reason"] is not None:
                k = index[r["drop_detail"]]
                groups.setdefault(k, {k}).add(i)
        res = fn(TEXTS)
        assert sorted(sorted(g) for g in groups.values()) == sorted(sorted({k, *[d for d, kk in res.dropped.items() if kk == k]})
                                                                  for k in set(res.dropped.values()))
        assert len(res.kept) == sum(r["drop_reason"] is None for r in rows.values())
