"""Barrier groups: consecutive global stages share one spill and one barrier read
(pipeline/engine/worker.py `plan_phases`, runner's resolve loop) and decide exactly as one phase
per stage did: same kept documents, same rejects, same ledgers."""
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
from pipeline.engine.worker import plan_phases
from stages.dedup.exact import ExactDedup
from stages.dedup.lines import LineDedup
from stages.dedup.near import MinhashDedup
from tests.helpers import MinWords, write_jsonl, write_recipe

ROOT = Path(__file__).resolve().parents[1]
VOCAB = [f"w{i}" for i in range(400)]


def test_plan_groups_consecutive_global_stages_only():
    ex, near, lines = ExactDedup(), MinhashDedup(), LineDedup()
    groups = lambda stages, **kw: [(p.stages, p.group) for p in plan_phases(stages, **kw)]  # noqa: E731
    assert groups([MinWords(), ex, near]) == [([0], [1, 2]), ([], [])]
    assert groups([ex, near, lines, MinWords()]) == [([], [0, 1, 2]), ([3], [])]
    assert groups([ex, MinWords(), near]) == [([], [0]), ([1], [2]), ([], [])]
    # line dedup rewrites the text: a later stage's keys would be computed on the old text
    assert groups([lines, ex]) == [([], [0]), ([], [1]), ([], [])]
    # members must apply to the same shards (one spill or bypass per shard for the whole group)
    assert groups([ex, MinhashDedup(sources=["web"])]) == [([], [0]), ([], [1]), ([], [])]
    assert groups([ex, near], group=False) == [([], [0]), ([], [1]), ([], [])]
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


def recipe(tmp_path: Path, out: str, stages: str, group: bool = True) -> str:
    inp = tmp_path / "in"
    return str(write_recipe(tmp_path / f"{out}.yaml", f"""
output: {tmp_path / out}
group_global_stages: {str(group).lower()}
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
    one = run(load_recipe(recipe(tmp_path, "one", stages, group=False)), use_ray=False, progress=False)
    signed = []
    real = MinhashDedup.annotate
    monkeypatch.setattr(MinhashDedup, "annotate", lambda self, b: signed.append(b.num_rows) or real(self, b))
    grouped = run(load_recipe(recipe(tmp_path, "grouped", stages)), use_ray=False, progress=False)
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
    assert not {r["drop_detail"] for r in b["minhash_dedup"]} & dropped_exact
    if "line_dedup" in stages:
        assert sum(r["lines_removed"] for r in b["kept"]) > 6
    # the text is spilled once: one spill per shard, in the group's first stage's folder
    n = stages.count("- stage:")
    assert "4 shards, 2 phases" in (tmp_path / "grouped" / "run.log").read_text()
    assert f"4 shards, {n + 1} phases" in (tmp_path / "one" / "run.log").read_text()
    assert len(list((tmp_path / "grouped").glob("_work/*/part-*.parquet"))) == 0  # _work removed at the end


def test_grouped_same_on_1_and_2_ray_workers(tmp_path, ray_local):
    corpus(tmp_path)
    path = recipe(tmp_path, "out", EXACT_NEAR_LINES)
    run(load_recipe(path), use_ray=False, progress=False)
    local = outputs(tmp_path / "out")
    for workers in (1, 2):
        run(load_recipe(path), workers=workers, progress=False, overwrite=True)
        assert outputs(tmp_path / "out") == local


def test_resume_after_a_kill_between_the_group_resolve_steps(tmp_path, monkeypatch):
    corpus(tmp_path)
    clean = run(load_recipe(recipe(tmp_path, "clean", EXACT_NEAR)), use_ray=False, progress=False)
    path = recipe(tmp_path, "killed", EXACT_NEAR)
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
        run(load_recipe(path), use_ray=False, progress=False)
    assert calls["exact"] == 1 and not (tmp_path / "killed" / "ledger.json").exists()
    monkeypatch.setattr(MinhashDedup, "resolve", real_near)
    resumed = run(load_recipe(path), use_ray=False, progress=False)
    assert resumed.resumed and calls["exact"] == 1  # exact dedup's recorded decisions were reused
    assert resumed.ledger.check() == []
    assert outputs(tmp_path / "killed") == outputs(tmp_path / "clean")
    assert clean.ledger.to_dict(times=False) == resumed.ledger.to_dict(times=False)


def test_sample_recipe_grouped_equals_one_phase_per_stage(tmp_path):
    cwd = os.getcwd()
    os.chdir(ROOT)  # the recipe's paths are relative to the repository root
    try:
        found = []
        for group in (True, False):
            r = load_recipe("mixtures/sample.yaml")
            r.output = str(tmp_path / f"g{int(group)}")
            r.group_global_stages = group
            res = run(r, use_ray=False, progress=False)
            assert res.ledger.check() == []
            found.append(outputs(Path(r.output)))
    finally:
        os.chdir(cwd)
    assert found[0] == found[1]
    assert found[0]["ledger"]["stages"]  # the comparison saw the whole ledger
    assert found[0]["exact_dedup"] and found[0]["minhash_dedup"]
