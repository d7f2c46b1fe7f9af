"""Many small input files are joined into parts: the same output as one part per file,
balanced ledgers, and a run killed in the middle of a part resumes to the same result."""
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.engine import planning, runner, worker
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.engine.worker import Shard
from pipeline import storage
from tests.helpers import write_jsonl, write_recipe

WORDS = "river music family history school church village county water union party team".split()


def texts(n: int) -> list[str]:
    """n documents; every 5th repeats an earlier one, every 7th is an earlier one plus a word."""
    out = []
    for i in range(n):
        if i % 5 == 4:
            out.append(out[i - 3])
        elif i % 7 == 6:
            out.append(out[i - 5] + " extra")
        else:
            out.append(" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 30)) + f" number {i}")
    return out


def write_files(root: Path, docs: list[str], files: int) -> None:
    per = -(-len(docs) // files)
    for k in range(files):
        write_jsonl(root / f"s{k:04d}.jsonl", [{"text": t, "url": f"u{k * per + j}"}
                                                for j, t in enumerate(docs[k * per:(k + 1) * per])])


def recipe(tmp_path: Path, inp: Path, out: str, extra: str = "") -> str:
    return str(write_recipe(tmp_path / f"{out}.yaml", f"""
output: {tmp_path / out}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"], batch_size: 16}}
stages:
  - stage: test_min_words
    min_words: 3
{extra}  - stage: exact_dedup
  - stage: minhash_dedup
    threshold: 0.7
"""))


def outcome(out: Path) -> tuple[list[str], dict[str, list[str]], dict]:
    """Kept ids, rejected ids by stage (from the committed files only) and the ledger's counts."""
    out_s = str(out)
    kept = sorted(i for f in storage.committed_files(out_s, "kept")
                  for i in pq.read_table(f, columns=["id"]).column("id").to_pylist())
    rejects = {}
    for stage in sorted(p.name for p in (out / "rejects").iterdir()):
        rejects[stage] = sorted(i for f in storage.committed_files(out_s, f"rejects/{stage}")
                                for i in pq.read_table(f, columns=["id"]).column("id").to_pylist())
    led = Ledger.read(str(out / "ledger.json"))
    assert led.check() == []
    return kept, rejects, led.to_dict(times=False)


def one_part_per_file(monkeypatch) -> None:
    monkeypatch.setattr(runner, "part_limits", lambda sizes, workers: (1, 1))


@pytest.fixture
def inputs(tmp_path):
    docs = texts(400)
    write_files(tmp_path / "many", docs, 160)
    write_files(tmp_path / "few", docs, 4)
    return docs


def test_parts_plan_by_bytes_and_never_mix_sources():
    shards = [Shard(i, "a" if i < 6 else "b", "jsonl", f"f{i}", f"f{i}") for i in range(9)]
    sizes = [10, 10, 10, 100, 10, 10, 10, 10, 10]
    parts = runner.plan_parts(shards, sizes, target_bytes=30, most_shards=10)
    assert [[s.index for s in p.shards] for p in parts] == [[0, 1, 2], [3], [4, 5], [6, 7, 8]]
    assert [p.part for p in parts] == ["part-00000.parquet", "part-00003.parquet", "part-00004.parquet",
                                       "part-00006.parquet"]
    # unknown sizes (0): by count alone
    parts = runner.plan_parts(shards[:6], [0] * 6, *runner.part_limits([0] * 6, 1))
    assert [len(p.shards) for p in parts] == [2, 2, 2]
    # about PARTS_PER_WORKER parts per worker, a big file alone
    target, most = runner.part_limits([1000] * 800, 2)
    assert len(runner.plan_parts([Shard(i, "a", "jsonl", "f", "f") for i in range(800)], [1000] * 800,
                                 target, most)) == 2 * planning.PARTS_PER_WORKER


@pytest.mark.slow
def test_joined_parts_give_the_same_output_as_one_part_per_file(tmp_path, inputs, monkeypatch):
    grouped = run(load_recipe(recipe(tmp_path, tmp_path / "many", "grouped")), executor="local", progress=False)
    kept, rejects, ledger = outcome(tmp_path / "grouped")
    files = [f for f in storage.committed_files(str(tmp_path / "grouped"), "kept")]
    assert len(files) <= 2 * planning.PARTS_PER_WORKER  # 160 files in a few parts
    lines = (tmp_path / "grouped" / "shards.jsonl").read_text().splitlines()
    assert sum(len(__import__("json").loads(l)["files"]) for l in lines) == 160
    assert grouped.ledger.inputs["web"]["files"] == 160
    assert rejects["exact_dedup"] and rejects["minhash_dedup"]

    with monkeypatch.context() as m:
        one_part_per_file(m)
        run(load_recipe(recipe(tmp_path, tmp_path / "many", "single")), executor="local", progress=False)
    assert len((tmp_path / "single" / "shards.jsonl").read_text().splitlines()) == 160
    assert outcome(tmp_path / "single") == (kept, rejects, ledger)

    # the same documents in 4 files: other ids (an id names its file), so near-duplicate survivors
    # may differ (greedy keeps by id order); every stage before them counts the same
    run(load_recipe(recipe(tmp_path, tmp_path / "few", "out_few")), executor="local", progress=False)
    few = outcome(tmp_path / "out_few")
    counts = lambda d: [s for s in d["stages"] if s["stage"] != "minhash_dedup"]  # noqa: E731
    assert counts(few[2]) == counts(ledger)
    assert len(few[1]["exact_dedup"]) == len(rejects["exact_dedup"])


@pytest.mark.slow
def test_joined_parts_on_two_ray_workers_match_in_process(tmp_path, inputs, ray_local):
    run(load_recipe(recipe(tmp_path, tmp_path / "many", "local")), executor="local", progress=False)
    res = run(load_recipe(recipe(tmp_path, tmp_path / "many", "ray")), workers=2, progress=False)
    assert res.workers == 2
    assert outcome(tmp_path / "ray") == outcome(tmp_path / "local")


@pytest.mark.slow
def test_joined_parts_on_two_worker_processes_match_in_process(tmp_path, inputs):
    run(load_recipe(recipe(tmp_path, tmp_path / "many", "local")), executor="local", progress=False)
    res = run(load_recipe(recipe(tmp_path, tmp_path / "many", "procs")), workers=2, executor="processes", progress=False)
    assert res.workers == 2
    assert outcome(tmp_path / "procs") == outcome(tmp_path / "local")


@pytest.mark.slow
def test_a_run_killed_inside_a_part_resumes_to_the_same_output(tmp_path, inputs, monkeypatch):
    run(load_recipe(recipe(tmp_path, tmp_path / "many", "clean")), executor="local", progress=False)
    clean = outcome(tmp_path / "clean")

    class Killed(BaseException):
        pass

    real_finish = worker.ShardWorker._finish
    seen: list[int] = []

    def dies_in_the_third_part(self, phase, part, live, ledger, outputs):
        real_finish(self, phase, part, live, ledger, outputs)
        if phase.index == 0:
            seen.append(part.index)
            if len(set(seen)) == 3 and seen.count(part.index) == 2:  # the third part wrote some files
                raise Killed()

    path = recipe(tmp_path, tmp_path / "many", "killed")
    with monkeypatch.context() as m:
        m.setattr(worker.ShardWorker, "_finish", dies_in_the_third_part)
        m.setattr(worker.ShardOutputs, "abort", lambda self: None)  # a kill cleans nothing up
        with pytest.raises(Killed):
            run(load_recipe(path), executor="local", progress=False)
    out = tmp_path / "killed"
    assert not (out / storage.MANIFEST).exists()
    before = {p.name: p.read_text() for p in (out / "_state" / "p0").iterdir()}
    assert len(before) == 2  # two parts committed, the third died half-written
    killed_files = [f for f in storage.find(str(out)) if f"part-{seen[-1]:05d}-" in f]
    assert killed_files  # its spill, half written

    # resumed with smaller parts: the committed parts stay as they are, the rest is planned anew
    with monkeypatch.context() as m:
        m.setattr(planning, "PARTS_PER_WORKER", 16)
        res = run(load_recipe(path), executor="local", progress=False)
    assert res.resumed
    assert outcome(out) == clean
    after = {p.name: p.read_text() for p in (out / "_state" / "p0").iterdir()}
    assert {k: after[k] for k in before} == before and len(after) > len(before) + 2
    committed = set(storage.read_json(str(out / storage.MANIFEST))["files"])
    on_disk = {storage.relative(f, str(out)) for d in ("kept", "rejects", "keys") for f in storage.find(str(out / d))}
    assert on_disk == committed  # the killed attempt's files are gone
    assert not any(Path(f).exists() for f in killed_files)
    removed = [l for l in (out / "run.log").read_text().splitlines() if "uncommitted files" in l]
    assert removed and "removed 0 " not in removed[0]


def test_records_that_overlap_are_not_trusted(tmp_path):
    from pipeline.engine.planning import plan_phases

    out = str(tmp_path / "o")
    shards = [Shard(i, "a", "jsonl", f"f{i}", f"f{i}") for i in range(6)]
    phases = plan_phases([])
    for part, cover in (("part-00000", [0, 1, 2]), ("part-00002", [2, 3]), ("part-00004", [4, 5])):
        storage.write_json(f"{out}/_state/p0/{part}.json", {"ledger": {}, "files": {}, "shards": cover})
    storage.write_json(f"{out}/_state/p0/part-00005.json", {"ledger": {}, "files": {}, "shards": [4]})  # misnamed
    recs = runner._read_records(out, phases, shards)
    assert sorted(recs[0]) == [0, 4]
