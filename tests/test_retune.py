"""`refinery retune`: re-deciding a finished run from its stored signals equals a full rerun."""
from __future__ import annotations

import glob
import re
import json
import shutil
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.retune import parse_sets, retune
from pipeline.engine.runner import run
from pipeline.errors import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _recipe(tmp, name: str, changes: dict[str, object]) -> str:
    with open(os.path.join(ROOT, "mixtures", "sample.yaml"), encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    raw.pop("mixture")
    for src in raw["sources"].values():
        src["paths"] = [os.path.join(ROOT, p) for p in src["paths"]]
    labels = [s["stage"] for s in raw["stages"]]
    for key, value in changes.items():
        parts = key.split(".")
        node = raw["stages"][labels.index(parts[0])]
        for p in parts[1:-1]:
            node = node.setdefault(p, {}) if node.get(p) is not None else node.setdefault(p, {})
        node[parts[-1]] = value
    raw["output"] = str(tmp / name)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def _full(tmp, name: str, changes: dict[str, object]) -> str:
    # langid's thresholds are retunable only without CLD2's second opinion (it depends on them)
    recipe = load_recipe(_recipe(tmp, name, {"langid.second_opinion": False, **changes}))
    return run(recipe, executor="local", progress=False).out


def _docs(out: str) -> dict[str, dict]:
    docs = {}
    for f in sorted(glob.glob(f"{out}/kept/*.parquet")) + sorted(glob.glob(f"{out}/rejects/*/*.parquet")):
        where = f.split("/")[-2]
        for r in pq.read_table(f).to_pylist():
            docs[r["id"]] = {**r, "_where": where}
    return docs


def _shard_ledgers(out: str) -> list[dict]:
    with open(f"{out}/shards.jsonl", encoding="utf-8") as fh:
        return [Ledger.from_dict(json.loads(x)["ledger"]).to_dict(times=False) for x in fh]


def assert_same_run(a: str, b: str) -> None:
    da, db = _docs(a), _docs(b)
    assert da.keys() == db.keys()
    kept_a = {k for k, v in da.items() if v["_where"] == "kept"}
    assert kept_a == {k for k, v in db.items() if v["_where"] == "kept"}
    for k, row in da.items():
        other = db[k]
        assert (row["text"] or "").encode() == (other["text"] or "").encode(), k
        diff = [c for c in row if row[c] != other.get(c)]
        assert not diff, (k, row["_where"], diff)
    assert Ledger.read(f"{a}/ledger.json").to_dict(times=False) == Ledger.read(f"{b}/ledger.json").to_dict(times=False)
    assert _shard_ledgers(a) == _shard_ledgers(b)


def _slot(f: str) -> str:
    """A part file's place in a run whatever its attempt id: kept/part-00003, rejects/quality/part-00003."""
    return f.rsplit("/", 1)[0] + "/" + f.rsplit("/", 1)[1][:10]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("retune")
    return tmp, _full(tmp, "base", {})


@pytest.mark.parametrize("sets", [
    # the example: relax language id and the stop-word rule
    {"langid.min_score": 0.5, "quality.gopher_quality.min_stop_words": 1},
    # every quality reject let through: fresh documents reach toxicity, both dedups and PII masking
    {"langid.min_score": 0.3, "quality.drop_on_rules": False},
    # dedup settings and thresholds after quality: re-resolved dedup, re-derived quality scores
    {"toxicity.max_toxic_fraction": 0.9, "exact_dedup.keep": "highest_quality", "minhash_dedup.threshold": 0.6,
     "quality.fineweb.char_duplicates_ratio": 0.5},
    # which documents toxicity examines: arXiv opted in (measured from their text), then a source dropped
    {"toxicity.skip_kinds": ["code"]},
    {"toxicity.sources": ["cc", "web_jsonl"], "toxicity.max_score": 0.9},
], ids=["issue-example", "quality-off", "dedup", "toxicity-opts-in-arxiv", "toxicity-fewer-sources"])
@pytest.mark.slow
def test_retune_equals_a_full_rerun(base, sets):
    tmp, old = base
    name = "r" + str(abs(hash(tuple(sets))) % 10_000)
    full = _full(tmp, "full_" + name, sets)
    res = retune(old, [f"{k}={json.dumps(v)}" for k, v in sets.items()], str(tmp / ("re_" + name)))
    assert not res.inexact
    assert res.changed > 0 or "quality.drop_on_rules" not in sets  # letting every quality reject through changes paths
    if "toxicity.skip_kinds" in sets:  # the run skipped arXiv: its papers are measured, not re-decided
        assert res.changed > 0 and res.recomputed > 0
    assert_same_run(full, res.out)
    with open(f"{res.out}/retune.json", encoding="utf-8") as fh:
        info = json.load(fh)
    assert info["changed_documents"] == res.changed
    # files whose rows the new settings left alone are the run's files, copied, not written again
    with open(f"{old}/_SUCCESS", encoding="utf-8") as fh:
        run_files = {_slot(f): f for f in json.load(fh)["files"] if "part-" in f}
    with open(f"{res.out}/_SUCCESS", encoding="utf-8") as fh:
        new_files = [f for f in json.load(fh)["files"] if "part-" in f]
    same = [f for f in new_files if _slot(f) in run_files and
            open(f"{res.out}/{f}", "rb").read() == open(f"{old}/{run_files[_slot(f)]}", "rb").read()]
    assert info["files_copied"] == len(same) > 0 and info["files_written"] == len(new_files) - len(same)


@pytest.mark.slow
def test_unchanged_settings_give_the_same_run_without_recomputing(base):
    tmp, old = base
    res = retune(old, ["langid.default_min_score=0.65"], str(tmp / "same"))  # the value it ran with
    assert res.changed == 0 and res.recomputed == 0
    assert_same_run(old, res.out)
    with open(f"{res.out}/retune.json", encoding="utf-8") as fh:
        assert json.load(fh)["files_written"] == 0  # every file is the run's, copied


@pytest.mark.slow
@pytest.mark.parametrize("arg, message", [
    ("quality.c4.remove_lines=false", "changes what the stage measures"),
    ("toxicity.span_threshold=0.2", "changes what the stage measures"),
    ("nosuch.min_score=1", "no stage 'nosuch'"),
    ("langid.min_score=abc", "stages[1].min_score"),  # url_filter is stages[0] in the sample recipe
    ("langid", "expected STAGE.KEY=VALUE"),
    ("quality.gopher_quality.min_doc_words=500", "need `refinery run`"),  # kept texts C4 rewrote
    ("langid.second_opinion=true", "langid.second_opinion changes what the stage measures"),
    ("exact_dedup.skip_kinds=[arxiv]", "exact_dedup.skip_kinds: changing which documents a global stage examines"),
])
def test_refusals_write_nothing(base, arg, message):
    tmp, old = base
    out = tmp / "refused"
    with pytest.raises(ConfigError, match=re.escape(message)):
        retune(old, [arg], str(out))
    assert not out.exists()


@pytest.mark.slow
def test_an_output_holding_someone_elses_files_is_never_written_or_deleted(base, tmp_path):
    _, old = base
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "notes.txt").write_text("not refinery's", encoding="utf-8")
    with pytest.raises(ConfigError, match="exists and is not empty"):
        retune(old, ["langid.min_score=0.5"], str(out))
    with pytest.raises(ConfigError, match="was not written by retune; refusing to delete it"):
        retune(old, ["langid.min_score=0.5"], str(out), overwrite=True)
    assert sorted(os.listdir(out)) == ["notes.txt"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "not refinery's"


@pytest.mark.slow
def test_cli_one_line_exit_2_and_a_complete_run(base, tmp_path):
    _, old = base
    cmd = [sys.executable, "-m", "pipeline.cli", "retune", old, "--out", str(tmp_path / "x"), "--set", "pii.mask_emails=false"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    cmd[-1] = "langid.min_score=0.5"
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, r.stderr
    for name in ("kept", "rejects/read", "ledger.json", "shards.jsonl", "report/report.md", "retune.json", "recipe.yaml"):
        assert (tmp_path / "x" / name).exists(), name


def test_parse_sets():
    assert parse_sets(["a.b.c=0.5", "x.y=[en, de]"]) == [(["a", "b", "c"], 0.5), (["x", "y"], ["en", "de"])]


def test_langid_thresholds_with_the_second_opinion_are_refused(tmp_path):
    out = str(tmp_path / "run")
    import shutil

    shutil.copytree(os.path.join(ROOT, "samples"), tmp_path / "samples")
    raw = {"name": "t", "output": out, "sources": {"j": {"kind": "jsonl", "paths": [str(tmp_path / "samples/jsonl/*.jsonl.gz")]}},
           "stages": [{"stage": "langid"}]}
    p = tmp_path / "r.yaml"
    p.write_text(yaml.safe_dump(raw))
    run(load_recipe(str(p)), executor="local", progress=False)
    with pytest.raises(ConfigError, match="second_opinion on"):
        retune(out, ["langid.min_score=0.5"], str(tmp_path / "x"))


@pytest.mark.slow
def test_stored_band_keys_are_committed_and_only_changed_groups_are_redone(base):
    """The run keeps every MinHash band key in keys/<label>/ (listed by _SUCCESS); a retune reuses
    them, re-resolves only the dedup groups a change touches, and equals a retune of a run that
    stored no keys (everything recomputed) and the full rerun."""
    import shutil

    tmp, old = base
    with open(f"{old}/_SUCCESS", encoding="utf-8") as fh:
        listed = json.load(fh)["files"]
    keys = [f for f in listed if f.startswith("keys/minhash_dedup/")]
    assert keys and all(os.path.exists(f"{old}/{f}") for f in keys)
    stored = pq.read_table([f"{old}/{f}" for f in keys][0])
    assert stored.column_names == ["id", "minhash_bands", "minhash_sweep"]  # the default sweep's bands too
    assert stored.schema.field("minhash_bands").type.list_size == 14
    assert stored.schema.field("minhash_sweep").type.list_size == 28
    # rows with keys: the spill's rows, null where exact dedup dropped the document first
    reached = sum(len(pq.read_table(f"{old}/{f}").column("minhash_bands").drop_null()) for f in keys)
    led = Ledger.read(f"{old}/ledger.json")
    assert reached == led.total("minhash_dedup").docs_in  # every document that reached the stage

    sets = {"langid.min_score": 0.3, "quality.drop_on_rules": False}
    with_keys = retune(old, [f"{k}={json.dumps(v)}" for k, v in sets.items()], str(tmp / "with_keys"))
    info = json.load(open(f"{with_keys.out}/retune.json", encoding="utf-8"))
    assert 0 < info["reresolved_documents"] < Ledger.read(f"{with_keys.out}/ledger.json").total("minhash_dedup").docs_in \
        + Ledger.read(f"{with_keys.out}/ledger.json").total("exact_dedup").docs_in

    older = tmp / "no_keys"  # the same run as an older refinery wrote it: no keys/
    shutil.copytree(old, older)
    shutil.rmtree(older / "keys")
    manifest = json.load(open(older / "_SUCCESS", encoding="utf-8"))
    manifest["files"] = [f for f in manifest["files"] if not f.startswith("keys/")]
    (older / "_SUCCESS").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match="need `refinery run`"):  # keys from PII-masked texts: not the run's
        retune(str(older), [f"{k}={json.dumps(v)}" for k, v in sets.items()], str(tmp / "without_keys"))
    without = retune(str(older), [f"{k}={json.dumps(v)}" for k, v in sets.items()], str(tmp / "without_keys"),
                     allow_inexact=True)
    assert without.recomputed > with_keys.recomputed and without.inexact and not with_keys.inexact
    assert_same_run(with_keys.out, without.out)  # on the sample, masking moves no Jaccard across 0.8


@pytest.mark.slow
def test_overwrite_deletes_only_what_retune_wrote_and_only_once_the_settings_give_a_run(base, tmp_path):
    """--overwrite used to delete the whole --out (the user's notes beside an earlier retune
    included), and before the new settings were checked (a refused retune lost the earlier one)."""
    _, old = base
    out = tmp_path / "re"
    retune(old, ["langid.min_score=0.5"], str(out))
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "analysis").mkdir()
    (out / "analysis" / "plot.py").write_text("mine", encoding="utf-8")
    with pytest.raises(ConfigError, match="need `refinery run`"):
        retune(old, ["quality.gopher_quality.min_doc_words=500"], str(out), overwrite=True)
    assert (out / "retune.json").exists() and (out / "_SUCCESS").exists()  # the earlier retune is intact
    res = retune(old, ["langid.min_score=0.4"], str(out), overwrite=True)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (out / "analysis" / "plot.py").read_text(encoding="utf-8") == "mine"
    assert json.loads((out / "retune.json").read_text(encoding="utf-8"))["set"] == ["langid.min_score=0.4"]
    assert res.ledger.check() == []


@pytest.mark.slow
def test_overwrite_replaces_an_interrupted_retune(base, tmp_path):
    """A retune stopped (Ctrl-C) before it wrote retune.json left a folder that only a manual
    delete could clear: --overwrite refused it as not written by retune."""
    _, old = base
    out = tmp_path / "re"
    retune(old, ["langid.min_score=0.5"], str(out))
    for name in ("retune.json", "_SUCCESS", "ledger.json", "shards.jsonl"):
        (out / name).unlink()
    shutil.rmtree(out / "kept")
    res = retune(old, ["langid.min_score=0.5"], str(out), overwrite=True)
    assert (out / "retune.json").exists() and res.ledger.check() == []


@pytest.mark.slow
def test_a_retune_of_a_retune_decides_as_a_retune_of_the_equal_full_run(base):
    """A retune stores the keys of its global stages as a run does (keys/LABEL/), so a retune of it
    re-resolves from them instead of computing them again from texts a later stage rewrote."""
    tmp, old = base
    first = {"quality.fineweb.line_punct_thr": 0.0}
    then = ["quality.fineweb.line_punct_thr=0.12", "quality.fineweb.char_duplicates_ratio=0.5"]
    chained = retune(old, [f"{k}={json.dumps(v)}" for k, v in first.items()], str(tmp / "chain1"))
    assert glob.glob(f"{chained.out}/keys/minhash_dedup/*.parquet")
    with open(f"{chained.out}/_SUCCESS", encoding="utf-8") as fh:
        assert any(f.startswith("keys/minhash_dedup/") for f in json.load(fh)["files"])
    a = retune(chained.out, then, str(tmp / "chain2"), allow_inexact=True)
    b = retune(_full(tmp, "full_first", first), then, str(tmp / "full_then"), allow_inexact=True)
    assert a.inexact == b.inexact
    assert_same_run(a.out, b.out)


@pytest.mark.slow
def test_a_document_a_stage_now_examines_whose_text_a_later_stage_rewrote_is_inexact(tmp_path):
    """Toxicity opted in for a source whose documents PII then masked: the run holds only the masked
    text, which a full run's toxicity never saw, so the retune cannot be exact for them."""
    from tests.helpers import write_jsonl, write_recipe

    text = "We met at the conference and talked about gardens for an hour. Write to ana.lopez@example.org soon."
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": text}, {"text": "A plain sentence about gardens and rain."}])
    recipe = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages:
  - stage: toxicity
    languages: [en]
    skip_kinds: [jsonl]
  - stage: pii
""")
    res = run(load_recipe(str(recipe)), executor="local", progress=False)
    with pytest.raises(ConfigError, match="1 documents"):
        retune(res.out, ["toxicity.skip_kinds=[]"], str(tmp_path / "re"))
    again = retune(res.out, ["toxicity.skip_kinds=[]"], str(tmp_path / "re"), allow_inexact=True)
    assert len(again.inexact) == 1


def test_a_shard_whose_documents_no_longer_reach_dedup_frees_their_duplicates(tmp_path):
    """A shard all of whose documents an earlier stage now rejects leaves the dedup groups it was in:
    the duplicate another shard's copy was dropped for is kept, as in a full rerun."""
    en = ("The quick brown fox jumps over the lazy dog near the river bank every single morning, and the "
          "farmers watch it with great interest while drinking their coffee.")
    de = ("Der schnelle braune Fuchs springt jeden Morgen über den faulen Hund am Flussufer, und die Bauern "
          "sehen ihm dabei mit großem Interesse zu, während sie Kaffee trinken.")
    for name, texts in {"a": [en], "b": [en, de], "c": [de]}.items():  # a's copy of `en` is the one kept
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))

    def full(name: str, langid_sources: list[str]) -> str:
        raw = {"name": "t", "output": str(tmp_path / name),
               "sources": {s: {"kind": "jsonl", "paths": [str(tmp_path / f"{s}.jsonl")]} for s in "abc"},
               "stages": [{"stage": "langid", "languages": ["de"], "second_opinion": False, "sources": langid_sources},
                          {"stage": "exact_dedup"}]}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(raw))
        return run(load_recipe(str(tmp_path / f"{name}.yaml")), executor="local", progress=False).out

    base, rerun = full("base", ["c"]), full("rerun", ["a"])  # now a's only document is rejected by langid
    retuned = retune(base, ["langid.sources=[a]"], str(tmp_path / "retuned")).out
    assert_same_run(rerun, retuned)
