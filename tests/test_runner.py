import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.errors import ConfigError, RunError
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from tests.helpers import kept_ids, write_jsonl, write_recipe

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()


def corpus(tmp_path: Path) -> Path:
    """3 shards; shard b repeats 5 of a's texts (cross-shard duplicates); short docs and a bad line."""
    inp = tmp_path / "in"
    a = [{"text": " ".join(WORDS[i % 10:] + WORDS[: i % 10]) + f" doc{i}", "url": f"http://a/{i}"} for i in range(30)]
    b = [{"text": a[i]["text"]} for i in range(5)] + [{"text": "too short"} for _ in range(4)]
    c = [{"text": f"unique text number {i} with words"} for i in range(12)]
    write_jsonl(inp / "a.jsonl.gz", a)
    write_jsonl(inp / "b.jsonl", b, broken_lines=1)
    write_jsonl(inp / "sub" / "c.jsonl", c)
    return inp


def make_recipe(tmp_path: Path, out: str = "out", stages: str | None = None) -> str:
    inp = corpus(tmp_path)
    stages = stages or """
  - stage: test_min_words
    min_words: 3
  - stage: test_exact
  - stage: test_min_words
    label: min_words_again
    min_words: 4
"""
    return str(write_recipe(tmp_path / "r.yaml", f"""
name: t
output: {tmp_path / out}
sources:
  web: {{kind: jsonl, paths: ["{inp}/**/*.jsonl*"], batch_size: 4}}
stages:{stages}"""))


def test_local_run_balances_and_records_every_document(tmp_path):
    recipe = load_recipe(make_recipe(tmp_path))
    res = run(recipe, executor="local", progress=False)
    led = Ledger.read(str(tmp_path / "out" / "ledger.json"))
    assert led.check() == []
    assert led.stage_order == ["read", "test_min_words", "test_exact", "min_words_again"]
    read = led.total("read")
    assert read.docs_in == 30 + 9 + 1 + 12 and read.rejected["unreadable"][0] == 1
    assert led.total("test_min_words").rejected["too_few_words"][0] == 4
    assert led.total("test_exact").rejected["test_duplicate"][0] == 5
    # every document read is kept or in exactly one rejects folder
    out = tmp_path / "out"
    kept = kept_ids(out)
    rejected = [i for f in sorted(out.glob("rejects/*/*.parquet")) for i in pq.read_table(f).column("id").to_pylist()]
    assert len(kept) + len(rejected) == read.docs_in
    assert len(set(kept) | set(rejected)) == read.docs_in
    assert res.ledger.total("min_words_again").kept == len(kept)


def test_rejects_carry_reason_stage_detail_and_signals(tmp_path):
    run(load_recipe(make_recipe(tmp_path)), executor="local", progress=False)
    out = tmp_path / "out"
    dup = pq.read_table(next(out.glob("rejects/test_exact/*.parquet"))).to_pylist()
    assert all(r["drop_stage"] == "test_exact" and r["drop_reason"] == "test_duplicate" for r in dup)
    assert all(r["drop_detail"] and r["drop_detail"] < r["id"] for r in dup)  # survivor = lowest id
    assert all(r["test_words"] is not None and r["test_hash"] for r in dup)  # signals kept on rejects
    bad = pq.read_table(next(out.glob("rejects/read/*.parquet"))).to_pylist()
    assert bad[0]["drop_reason"] == "unreadable" and "b.jsonl:line 10" in bad[0]["drop_detail"]
    kept = pq.read_table(next(out.glob("kept/*.parquet")))
    assert {"test_words", "test_hash", "drop_reason", "metadata"} <= set(kept.column_names)
    assert kept.schema.field("text").type == "string"
    assert pq.ParquetFile(next(out.glob("kept/*.parquet"))).metadata.row_group(0).column(0).compression == "ZSTD"


@pytest.mark.slow
def test_ids_are_stable_across_reruns_and_locations(tmp_path):
    run(load_recipe(make_recipe(tmp_path)), executor="local", progress=False)
    first = kept_ids(tmp_path / "out")
    moved = tmp_path / "moved"
    moved.mkdir()
    run(load_recipe(make_recipe(moved)), executor="local", progress=False)
    assert kept_ids(moved / "out") == first


def test_rerun_of_finished_run_is_a_no_op_and_other_recipes_need_overwrite(tmp_path):
    recipe = load_recipe(make_recipe(tmp_path))
    first = run(recipe, executor="local", progress=False)
    again = run(recipe, executor="local", progress=False)
    assert again.resumed and again.ledger.to_dict() == first.ledger.to_dict()
    other = load_recipe(make_recipe(tmp_path, stages="\n  - stage: test_exact\n"))
    with pytest.raises(ConfigError, match="holds a run of a different recipe"):
        run(other, executor="local", progress=False)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "f").write_text("x")
    other.output = str(tmp_path / "junk")
    with pytest.raises(ConfigError, match="holds no refinery run") as exc:
        run(other, executor="local", progress=False)
    assert "--overwrite" not in str(exc.value)  # it would not help: refinery deletes only its own runs
    with pytest.raises(ConfigError, match="holds no refinery run"):
        run(other, executor="local", progress=False, overwrite=True)
    assert (tmp_path / "junk" / "f").read_text() == "x"
    other.output = str(tmp_path / "out")
    (tmp_path / "out" / "notes.txt").write_text("mine")  # a user's file beside a run: never deleted
    assert not run(other, executor="local", progress=False, overwrite=True).resumed
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


def test_skip_kinds_pass_through_and_are_counted(tmp_path):
    path = make_recipe(tmp_path, stages="""
  - stage: test_min_words
    min_words: 100
    skip_kinds: [jsonl]
""")
    res = run(load_recipe(path), executor="local", progress=False)
    c = res.ledger.total("test_min_words")
    assert c.skipped == c.docs_in == c.kept > 0


def test_broken_ledger_fails_the_run(tmp_path, monkeypatch):
    from pipeline.engine import worker
    real = worker.ShardWorker._run_stages

    def lossy(self, indices, shard, live, ledger, outputs):
        kept = real(self, indices, shard, live, ledger, outputs)
        return kept.slice(1)  # silently lose a document

    monkeypatch.setattr(worker.ShardWorker, "_run_stages", lossy)
    with pytest.raises(RunError, match="ledger does not balance"):
        run(load_recipe(make_recipe(tmp_path)), executor="local", progress=False)


@pytest.mark.slow
def test_ray_matches_local_for_1_and_2_workers(tmp_path, ray_local):
    recipe = load_recipe(make_recipe(tmp_path))
    run(recipe, executor="local", progress=False)
    local = kept_ids(tmp_path / "out")
    local_ledger = Ledger.read(str(tmp_path / "out" / "ledger.json")).to_dict(times=False)
    for workers in (1, 2):
        res = run(recipe, workers=workers, progress=False, overwrite=True)
        assert res.workers == workers
        assert kept_ids(tmp_path / "out") == local
        assert Ledger.read(str(tmp_path / "out" / "ledger.json")).to_dict(times=False) == local_ledger


@pytest.mark.slow
def test_worker_processes_match_local_for_1_and_2_workers_and_rerun(tmp_path):
    """`executor="processes"` (`--processes`): the same kept documents and ledger as in-process, on 1
    and 2 local worker processes without Ray; a rerun of the finished run is a no-op."""
    recipe = load_recipe(make_recipe(tmp_path))
    run(recipe, executor="local", progress=False)
    local = kept_ids(tmp_path / "out")
    local_ledger = Ledger.read(str(tmp_path / "out" / "ledger.json")).to_dict(times=False)
    for workers in (1, 2):
        res = run(recipe, workers=workers, executor="processes", progress=False, overwrite=True)
        assert res.workers == workers and not res.used_ray
        assert kept_ids(tmp_path / "out") == local
        assert Ledger.read(str(tmp_path / "out" / "ledger.json")).to_dict(times=False) == local_ledger
        assert f"{workers} worker(s) (local processes)" in (tmp_path / "out" / "run.log").read_text()
    again = run(recipe, workers=2, executor="processes", progress=False)
    assert again.resumed and kept_ids(tmp_path / "out") == local


def test_worker_processes_with_a_cluster_address_or_an_unknown_executor_are_refused_before_writing(tmp_path):
    recipe = load_recipe(make_recipe(tmp_path))
    with pytest.raises(ConfigError, match="--address attaches to a Ray cluster"):
        run(recipe, executor="processes", address="auto", progress=False)
    with pytest.raises(ConfigError, match="expected one of auto, local, processes, ray"):
        run(recipe, executor="threads", progress=False)
    assert not (tmp_path / "out").exists()


def test_shards_are_dispatched_largest_first_and_logged_with_their_work_time(tmp_path):
    from pipeline.engine.planning import input_stamps, stamp_size
    from pipeline.engine.runner import largest_first, plan_shards

    recipe = load_recipe(make_recipe(tmp_path))
    shards = plan_shards(recipe)
    stamps = input_stamps(shards)  # the sizes the runner plans the first phase with
    sizes = [stamp_size(stamps[f"{s.source}:{s.id_path}"]) for s in shards]
    assert sizes == [Path(s.url).stat().st_size for s in shards] and len(set(sizes)) == 3
    order = largest_first(shards, sizes)
    assert [sizes[s.index] for s in order] == sorted(sizes, reverse=True)
    assert largest_first(shards, [0] * len(shards)) == shards  # unknown sizes keep recipe order
    run(recipe, executor="local", progress=False)
    lines = [l for l in (tmp_path / "out" / "run.log").read_text().splitlines() if "phase 0: shard" in l]
    assert len(lines) == 3 and all("s of work" in l for l in lines)
    assert [l.split("(web ")[1].split(")")[0] for l in lines] == [s.id_path for s in order]


@pytest.mark.slow
def test_a_small_local_input_runs_in_process_unless_asked_for_ray(tmp_path, monkeypatch):
    """Starting an embedded Ray costs ~5 CPU-s: a small local input (no cluster address) runs in
    this process instead (the CLI's default); a large one, or any address, keeps Ray."""
    from pipeline.engine.pool import SMALL_INPUT_BYTES, small_local_input
    from pipeline.engine.runner import plan_shards

    import sys

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if "ray" in sys.modules:  # another test of this session may have started Ray in this process
        monkeypatch.setattr(sys.modules["ray"], "is_initialized", lambda: False)
    recipe = load_recipe(make_recipe(tmp_path))
    recipe.output = str(tmp_path / "out")
    shards = plan_shards(recipe)
    assert small_local_input(recipe, shards, None)
    assert not small_local_input(recipe, shards, "127.0.0.1:6379")
    local_out = recipe.output
    recipe.output = "s3://bucket/out"
    assert not small_local_input(recipe, shards, None)
    recipe.output = local_out
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert not small_local_input(recipe, shards, None)
    monkeypatch.delenv("RAY_ADDRESS")
    with open(tmp_path / "in" / "big.jsonl", "wb") as fh:  # sparse: no disk used
        fh.truncate(SMALL_INPUT_BYTES)
    assert not small_local_input(recipe, plan_shards(recipe), None)
    (tmp_path / "in" / "big.jsonl").unlink()

    res = run(recipe, progress=False, executor="auto")  # would start Ray if it chose to
    assert not res.used_ray and res.workers == 1
    local = kept_ids(tmp_path / "out")
    run(recipe, executor="local", progress=False, overwrite=True)
    assert kept_ids(tmp_path / "out") == local


def test_part_ledgers_are_spooled_and_merged_over_phases():
    from pipeline.engine.runner import PartLedgers

    def led(stage, n):
        x = Ledger([stage])
        x.record(stage, "web", docs_in=n, bytes_in=n, kept=n, kept_bytes=n)
        return x.to_dict()

    spool = PartLedgers()
    rec = {"ledger": led("read", 3), "files": {"kept/part-00000.parquet": "x"}}
    assert spool.add(0, rec).total("read").docs_in == 3 and "ledger" not in rec and rec["files"]
    spool.add(5, {"ledger": led("read", 7)})
    spool.add(0, {"ledger": led("dedup", 2)})
    merged = spool.ledger(0)
    assert merged.total("read").docs_in == 3 and merged.total("dedup").docs_in == 2
    assert spool.ledger(5).total("read").docs_in == 7 and spool.ledger(9).stage_order == []
    spool.close()


def test_two_inputs_with_one_name_below_their_roots_are_refused_and_one_file_named_twice_is_read_once(tmp_path):
    """x/a.jsonl and y/a.jsonl named as files are both `a.jsonl`: their documents got the same ids
    (7 rows, 4 ids) and one `file`, so a reject's location named neither; a.jsonl and ./a.jsonl
    (one file) was read three times, every document kept three times under one id."""
    for d in ("x", "y"):
        write_jsonl(tmp_path / d / "a.jsonl", [{"text": f"{d} one two three"}, {"text": f"{d} four five six"}])
    out = tmp_path / "out"
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/x/a.jsonl", "{tmp_path}/y/a.jsonl"]}}
stages: []
""")
    with pytest.raises(ConfigError, match=r"are both 'a.jsonl' below their input roots"):
        run(load_recipe(path), executor="local", progress=False)
    assert not out.exists()
    path = write_recipe(tmp_path / "r2.yaml", f"""
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/x/a.jsonl", "{tmp_path}/x/./a.jsonl", "{tmp_path}/x//a.jsonl"]}}
stages: []
""")
    res = run(load_recipe(path), executor="local", progress=False)
    assert res.ledger.counts("read", "web").docs_in == 2
    assert sum(pq.read_table(f).num_rows for f in (out / "kept").glob("*.parquet")) == 2
