"""Barrier groups: consecutive global stages share one spill and one barrier read
(pipeline/engine/planning.py `plan_phases`, runner's resolve loop) and decide exactly as one phase
per global stage: same kept documents, same rejects, same ledgers. The reference plan, one phase
per global stage (`one_phase_per_global_stage`, shared with benchmarks/dedup_groups.py), is not in the
engine: the engine runs it as it runs any recipe whose global stages cannot share a group (each group of
one member)."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.engine import runner
from pipeline.engine.planning import plan_phases
from pipeline.engine.worker import ShardWorker
from stages.dedup.exact import ExactDedup, text_hash
from stages.dedup.lines import LineDedup
from stages.dedup.near import MinhashDedup
from benchmarks.dedup_groups import one_phase_per_global_stage
from tests.helpers import MinWords, write_jsonl, write_recipe

ROOT = Path(__file__).resolve().parents[1]
VOCAB = [f"w{i}" for i in range(400)]


def run_one_phase_per_stage(path: str):
    """`run` with the reference plan."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "plan_phases", one_phase_per_global_stage)
        return run(load_recipe(path), executor="local", progress=False)


def test_plan_groups_consecutive_global_stages_only():
    ex, near, lines = ExactDedup(), MinhashDedup(), LineDedup()
    groups = lambda stages, **kw: [(p.stages, p.group) for p in plan_phases(stages, **kw)]  # noqa: E731
    assert groups([MinWords(), ex, near]) == [([0], [1, 2]), ([], [])]
    assert groups([ex, near, lines, MinWords()]) == [([], [0, 1, 2]), ([3], [])]
    # a per-document stage between two global stages joins the group (it runs in the wave before
    # the next global member): one spill for the whole group
    assert groups([ex, MinWords(), near]) == [([], [0, 1, 2]), ([], [])]
    assert groups([MinWords(), ex, MinWords(), MinWords(), near, MinWords()]) == [([0], [1, 2, 3, 4]), ([5], [])]
    assert [(p.stages, p.group) for p in one_phase_per_global_stage([ex, MinWords(), near])] == [([], [0]), ([1], [2]), ([], [])]
    # line dedup rewrites the text: a later stage's keys would be computed on the old text
    assert groups([lines, ex]) == [([], [0]), ([], [1]), ([], [])]
    # members must apply to the same shards (one spill or bypass per shard for the whole group)
    assert groups([ex, MinhashDedup(sources=["web"])]) == [([], [0]), ([], [1]), ([], [])]
    assert plan_phases([ex, near])[0].barrier == 0


def _doc(rng: random.Random, n: int = 120) -> list[str]:
    return [rng.choice(VOCAB) for _ in range(n)]


def corpus(tmp_path: Path) -> Path:
    """4 shards: bases, exact copies (whitespace noise) and near copies (1-3 words changed) across
    shards, copies of copies, and a boilerplate line in many documents (for line dedup)."""
    rng = random.Random(7)
    bases = [_doc(rng) for _ in range(40)]
    shards: list[list[dict]] = [[] for _ in range(4)]
    for b, words in enumerate(bases):
        shards[b % 4].append({"text": " ".join(words) + "\nshared footer line of the site"})
        for c in range(b % 4):
            w = list(words)
            if c % 2:
                for _ in range(1 + (b + c) % 3):
                    w[rng.randrange(len(w))] = rng.choice(VOCAB)
                text = " ".join(w)
            else:
                text = "  ".join(w) + " "  # exact copy after whitespace normalisation
            if b % 3 == 0:
                text += "\nshared footer line of the site"
            shards[(b + c + 1) % 4].append({"text": text})
    for s, docs in enumerate(shards):
        write_jsonl(tmp_path / "in" / f"s{s}.jsonl", docs)
    return tmp_path / "in"


def corpus_mid(tmp_path: Path) -> Path:
    """`corpus` plus a shard for the per-document stages between global ones: short documents
    (dropped by test_min_words), copies that differ only in their e-mail addresses (identical once
    PII masked them, so near and line dedup must see the masked text), and short copies of kept
    documents (dropped before near dedup: never its keepers)."""
    corpus(tmp_path)
    rng = random.Random(11)
    docs = []
    for k in range(12):
        words = _doc(rng)
        for c in range(1 + k % 3):
            docs.append({"text": " ".join(words[:60]) + f" mail user{k}.{c}@example{c}.org " + " ".join(words[60:])})
        docs.append({"text": " ".join(words[:100])})
    write_jsonl(tmp_path / "in" / "s4.jsonl", docs)
    return tmp_path / "in"


def recipe(tmp_path: Path, out: str, stages: str, keep_work: bool = False) -> str:
    inp = tmp_path / "in"
    return str(write_recipe(tmp_path / f"{out}.yaml", f"""
output: {tmp_path / out}
keep_work: {str(keep_work).lower()}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"], batch_size: 7}}
stages:{stages}"""))


EXACT_NEAR = """
  - stage: exact_dedup
  - stage: minhash_dedup
    threshold: 0.8
"""
EXACT_NEAR_LINES = EXACT_NEAR + """  - stage: line_dedup
    max_count: 6
"""
# per-document stages between global stages, one of which rewrites text (PII masks e-mail
# addresses) and one of which drops documents; near dedup ranks by a signal the wave computed
EXACT_MID_NEAR = """
  - stage: exact_dedup
  - stage: test_min_words
    min_words: 118
  - stage: pii
  - stage: minhash_dedup
    threshold: 0.8
    keep: highest_quality
    quality_column: test_words
  - stage: test_min_words
    label: words_again
    min_words: 119
  - stage: line_dedup
    max_count: 6
"""


def outputs(out: Path) -> dict:
    """Everything a run decides: kept rows, rejects per stage (rows, reasons, details, signals),
    the ledger without times."""
    def rows(pattern: str) -> list[dict]:
        files = sorted(out.glob(pattern))
        t = pa.concat_tables([pq.read_table(f) for f in files]) if files else None
        return sorted(t.to_pylist(), key=lambda r: r["id"]) if t is not None else []

    found = {"kept": rows("kept/*.parquet"),
             "ledger": Ledger.read(str(out / "ledger.json")).to_dict(times=False)}
    for d in sorted((out / "rejects").iterdir()):
        found[d.name] = rows(f"rejects/{d.name}/*.parquet")
    return found


@pytest.mark.parametrize("stages", [EXACT_NEAR, EXACT_NEAR_LINES], ids=["exact+near", "exact+near+lines"])
def test_grouped_equals_one_phase_per_stage(tmp_path, stages, monkeypatch):
    corpus(tmp_path)
    one = run_one_phase_per_stage(recipe(tmp_path, "one", stages))
    signed = []
    real = MinhashDedup.annotate
    monkeypatch.setattr(MinhashDedup, "annotate", lambda self, b: signed.append(b.num_rows) or real(self, b))
    grouped = run(load_recipe(recipe(tmp_path, "grouped", stages)), executor="local", progress=False)
    # MinHash keys only for exact dedup's survivors (the keys wave), as with one phase per stage
    assert sum(signed) == grouped.ledger.total("minhash_dedup").docs_in < grouped.ledger.total("exact_dedup").docs_in
    a, b = outputs(tmp_path / "one"), outputs(tmp_path / "grouped")
    assert a == b
    assert grouped.ledger.check() == [] and one.ledger.check() == []
    led = grouped.ledger
    assert led.total("exact_dedup").rejected["exact_duplicate"][0] > 5
    assert led.total("minhash_dedup").rejected["near_duplicate"][0] > 5
    # near dedup decided on exact dedup's survivors only: no near duplicate names a dropped keeper
    dropped_exact = {r["id"] for r in b["exact_dedup"]}
    if "line_dedup" not in stages:  # exact dedup, computed here: one survivor per hash, the lowest id
        by_hash: dict[str, list[str]] = {}
        for r in b["kept"] + b["exact_dedup"] + b["minhash_dedup"]:
            by_hash.setdefault(text_hash(r["text"]), []).append(r["id"])
        assert dropped_exact == {i for ids in by_hash.values() for i in sorted(ids)[1:]}
    assert not {r["drop_detail"] for r in b["minhash_dedup"]} & dropped_exact
    if "line_dedup" in stages:
        assert sum(r["lines_removed"] for r in b["kept"]) > 6
    # the text is spilled once: one spill per shard, in the group's first stage's folder
    n = stages.count("- stage:")
    assert "4 shards, 2 phases" in (tmp_path / "grouped" / "run.log").read_text()
    assert f"4 shards, {n + 1} phases" in (tmp_path / "one" / "run.log").read_text()
    assert len(list((tmp_path / "grouped").glob("_work/*/part-*.parquet"))) == 0  # _work removed at the end


NEAR_MID_EXACT = """
  - stage: minhash_dedup
    threshold: 0.8
  - stage: pii
  - stage: exact_dedup
"""


@pytest.mark.slow
def test_exact_dedup_after_a_rewriting_stage_hashes_the_rewritten_text(tmp_path):
    """exact dedup's key (`text_hash`, also a signal) computed in the wave, on the masked text."""
    corpus_mid(tmp_path)
    run_one_phase_per_stage(recipe(tmp_path, "one", NEAR_MID_EXACT))
    grouped = run(load_recipe(recipe(tmp_path, "grouped", NEAR_MID_EXACT)), executor="local", progress=False)
    a, b = outputs(tmp_path / "one"), outputs(tmp_path / "grouped")
    assert a == b
    masked = [r for r in b["kept"] if "|||EMAIL_ADDRESS|||" in r["text"]]
    assert masked and all(r["text_hash"] == text_hash(r["text"]) for r in b["kept"])
    assert "5 shards, 2 phases" in (tmp_path / "grouped" / "run.log").read_text()


@pytest.mark.slow
def test_per_document_stages_between_global_ones_spill_once(tmp_path, monkeypatch):
    """exact dedup, two per-document stages (one drops, PII rewrites), near dedup ranking by a
    signal of one of them, another per-document stage, line dedup: one spill, one barrier read,
    the same output as one phase per global stage, in-process."""
    corpus_mid(tmp_path)
    one = run_one_phase_per_stage(recipe(tmp_path, "one", EXACT_MID_NEAR))
    grouped = run(load_recipe(recipe(tmp_path, "grouped", EXACT_MID_NEAR, keep_work=True)), executor="local",
                  progress=False)
    a, b = outputs(tmp_path / "one"), outputs(tmp_path / "grouped")
    assert a == b
    assert grouped.ledger.check() == [] and one.ledger.check() == []
    led = grouped.ledger
    for label, reason in [("exact_dedup", "exact_duplicate"), ("test_min_words", "too_few_words"),
                          ("minhash_dedup", "near_duplicate")]:
        assert led.total(label).rejected[reason][0] > 3, label
    assert sum(r["pii_email_count"] or 0 for r in b["kept"]) > 3
    assert all("@" not in r["text"] for r in b["kept"])
    # copies that differ only in their e-mail address are near duplicates after masking
    masked = [r for r in b["minhash_dedup"] if "|||EMAIL_ADDRESS|||" in r["text"]]
    assert len(masked) >= 6
    assert sum(r["lines_removed"] for r in b["kept"]) > 6
    # every per-document stage booked its own time
    assert all(led.total(s).cpu_s > 0 for s in ("test_min_words", "pii", "words_again"))
    log = (tmp_path / "grouped" / "run.log").read_text()
    assert "5 shards, 2 phases" in log and "5 shards, 4 phases" in (tmp_path / "one" / "run.log").read_text()
    # the text was spilled once: spill files only in the group's first member's folder
    spilled = {p.parent.name for p in (tmp_path / "grouped").glob("_work/*/part-*.parquet")}
    assert spilled == {"exact_dedup"}


@pytest.mark.slow
@pytest.mark.parametrize("stages", [EXACT_NEAR_LINES, EXACT_MID_NEAR], ids=["exact+near+lines", "per-document between"])
def test_grouped_same_on_1_and_2_ray_workers(tmp_path, ray_local, stages):
    corpus_mid(tmp_path)
    path = recipe(tmp_path, "out", stages)
    run(load_recipe(path), executor="local", progress=False)
    local = outputs(tmp_path / "out")
    for workers in (1, 2):
        run(load_recipe(path), workers=workers, progress=False, overwrite=True)
        assert outputs(tmp_path / "out") == local


@pytest.mark.slow
@pytest.mark.parametrize("stages", [EXACT_NEAR_LINES, EXACT_MID_NEAR], ids=["exact+near+lines", "per-document between"])
def test_grouped_same_on_1_and_2_worker_processes(tmp_path, stages):
    """`--processes`: the global steps' maps and the waves run on the worker processes."""
    corpus_mid(tmp_path)
    path = recipe(tmp_path, "out", stages)
    run(load_recipe(path), executor="local", progress=False)
    local = outputs(tmp_path / "out")
    for workers in (1, 2):
        res = run(load_recipe(path), workers=workers, executor="processes", progress=False, overwrite=True)
        assert res.workers == workers
        assert outputs(tmp_path / "out") == local


@pytest.mark.slow
@pytest.mark.parametrize("stages", [EXACT_NEAR, EXACT_MID_NEAR], ids=["exact+near", "per-document between"])
def test_resume_after_a_kill_between_the_group_resolve_steps(tmp_path, monkeypatch, stages):
    corpus_mid(tmp_path)
    clean = run(load_recipe(recipe(tmp_path, "clean", stages)), executor="local", progress=False)
    path = recipe(tmp_path, "killed", stages)
    real_near, real_exact = MinhashDedup.resolve, ExactDedup.resolve
    calls = {"exact": 0}

    def killed(self, *a, **k):
        raise KeyboardInterrupt  # the driver dies after exact dedup's decisions are recorded

    def counted(self, *a, **k):
        calls["exact"] += 1
        return real_exact(self, *a, **k)

    monkeypatch.setattr(MinhashDedup, "resolve", killed)
    monkeypatch.setattr(ExactDedup, "resolve", counted)
    with pytest.raises(KeyboardInterrupt):
        run(load_recipe(path), executor="local", progress=False)
    assert calls["exact"] == 1 and not (tmp_path / "killed" / "ledger.json").exists()
    monkeypatch.setattr(MinhashDedup, "resolve", real_near)
    waves = []
    real_wave = ShardWorker.wave
    monkeypatch.setattr(ShardWorker, "wave", lambda self, args: waves.append(args[6]) or real_wave(self, args))
    resumed = run(load_recipe(path), executor="local", progress=False)
    assert resumed.resumed and calls["exact"] == 1  # exact dedup's recorded decisions were reused
    if "pii" in stages:  # the wave before near dedup was recorded too; only line dedup's ran
        assert waves and set(waves) == {len(stages.split("- stage:")) - 2}
    assert resumed.ledger.check() == []
    assert outputs(tmp_path / "killed") == outputs(tmp_path / "clean")
    assert clean.ledger.to_dict(times=False) == resumed.ledger.to_dict(times=False)


@pytest.mark.slow
def test_sample_recipe_grouped_equals_one_phase_per_stage(tmp_path):
    cwd = os.getcwd()
    os.chdir(ROOT)  # the recipe's paths are relative to the repository root
    try:
        found = []
        for group in (True, False):
            r = load_recipe("mixtures/sample.yaml")
            r.output = str(tmp_path / f"g{int(group)}")
            with pytest.MonkeyPatch.context() as mp:
                if not group:
                    mp.setattr(runner, "plan_phases", one_phase_per_global_stage)
                res = run(r, executor="local", progress=False)
            assert res.ledger.check() == []
            found.append(outputs(Path(r.output)))
    finally:
        os.chdir(cwd)
    assert found[0] == found[1]
    assert found[0]["ledger"]["stages"]  # the comparison saw the whole ledger
    assert found[0]["exact_dedup"] and found[0]["minhash_dedup"]
