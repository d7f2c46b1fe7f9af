"""Per-document stages under the recipe's stage_time_limit (pipeline/engine/time_limit.py)."""
from __future__ import annotations

import glob

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import kept_ids, write_jsonl, write_recipe
from pipeline.cli import main
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.engine.time_limit import TIME_LIMIT

TEXTS = [f"document number {i} with a few ordinary words in it" for i in range(7)]
# The limit in the tests where one document stalls (in C, for 60 s): far above what an ordinary
# batch of these documents takes even on a loaded machine. At 1 s (5 s on Ray), with a load
# average of about 10, ordinary batches and documents went over it too (4 rejects instead of 1).
# Each such test waits the limit twice (the batch, then the stalled document alone): slow tier.
LIMIT = 15


def _inputs(tmp_path, stall_at: int | None = 3):
    docs = [{"text": t + (" STALL" if i == stall_at else "")} for i, t in enumerate(TEXTS)]
    write_jsonl(tmp_path / "in" / "a.jsonl", docs[:4])
    write_jsonl(tmp_path / "in" / "b.jsonl", docs[4:])


def _recipe(tmp_path, name: str, limit: float, stages: str = "  - stage: test_stall_on\n    word: STALL\n") -> str:
    return str(write_recipe(tmp_path / f"{name}.yaml", f"""
output: {tmp_path / name}
stage_time_limit: {limit}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages:
  - stage: test_min_words
    min_words: 2
{stages}"""))


def _check_stalled_run(tmp_path, out: str, res, limit: int = LIMIT) -> None:
    rej = pa.concat_tables([pq.read_table(f) for f in glob.glob(f"{out}/rejects/test_stall_on/*.parquet")])
    assert rej.num_rows == 1
    row = rej.to_pylist()[0]
    assert row["drop_reason"] == TIME_LIMIT and row["drop_stage"] == "test_stall_on"
    assert "STALL" in row["text"] and row["test_stall_words"] is None
    assert row["file"].endswith("a.jsonl") and row["offset"] is not None  # its true location
    assert f"more than {limit} s" in row["drop_detail"]
    assert len(kept_ids(out)) == 6  # the shard's other documents, the next ones in the batch included
    assert res.ledger.check() == []
    st = res.ledger.total("test_stall_on")
    assert st.docs_in == 7 and st.kept == 6 and st.rejected[TIME_LIMIT][0] == 1
    assert Ledger.read(f"{out}/ledger.json").check() == []


@pytest.mark.slow
def test_a_document_that_stalls_a_stage_in_c_code_is_rejected_and_the_shard_goes_on(tmp_path):
    _inputs(tmp_path)
    res = run(load_recipe(_recipe(tmp_path, "out", LIMIT)), executor="local", progress=False)
    _check_stalled_run(tmp_path, str(tmp_path / "out"), res)
    from pipeline.report.build import write_report

    write_report(str(tmp_path / "out"))  # the report reads such rejects too


@pytest.mark.slow
def test_the_same_on_ray(tmp_path, ray_local):
    _inputs(tmp_path)
    res = run(load_recipe(_recipe(tmp_path, "out", LIMIT)), workers=2, progress=False)
    _check_stalled_run(tmp_path, str(tmp_path / "out"), res)


@pytest.mark.slow
def test_the_same_on_worker_processes(tmp_path):
    _inputs(tmp_path)
    res = run(load_recipe(_recipe(tmp_path, "out", LIMIT)), workers=2, executor="processes", progress=False)
    _check_stalled_run(tmp_path, str(tmp_path / "out"), res)


def test_the_limit_changes_nothing_on_normal_input(tmp_path):
    """Same kept documents, text (PII rewrites it), signals and ledger with and without the child."""
    docs = [{"text": f"Write to person{i}@example.com or call 555-0{i}00. " + "Plain English words here. " * (i + 3)}
            for i in range(12)] + [{"text": "Das ist ein kurzer deutscher Satz über nichts."}]
    write_jsonl(tmp_path / "in" / "a.jsonl", docs)
    stages = "  - stage: langid\n    languages: [en]\n  - stage: pii\n"
    a = run(load_recipe(_recipe(tmp_path, "plain", 0, stages)), executor="local", progress=False)
    b = run(load_recipe(_recipe(tmp_path, "timed", 30, stages)), executor="local", progress=False)
    ta = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(f"{a.out}/kept/*.parquet"))])
    tb = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(f"{b.out}/kept/*.parquet"))])
    assert ta.num_rows == 12 and ta.equals(tb)
    assert "person0@example.com" not in str(ta.column("text").to_pylist())  # PII did rewrite the text
    assert a.ledger.to_dict(times=False) == b.ledger.to_dict(times=False)
    assert b.ledger.total("langid").cpu_s > 0  # the child's CPU is booked to the stage


@pytest.mark.slow
def test_a_crash_of_the_stages_process_is_retried_document_by_document(tmp_path):
    _inputs(tmp_path, stall_at=None)
    marker = tmp_path / "crashed.pid"
    res = run(load_recipe(_recipe(tmp_path, "out", 30, f"  - stage: test_crash_once\n    marker: {marker}\n")),
              executor="local", progress=False)
    assert marker.exists()
    assert len(kept_ids(res.out)) == 7 and res.ledger.check() == []


@pytest.mark.parametrize("value", ["-1", "soon", ".nan"])
def test_a_bad_limit_is_one_line_and_exit_2(tmp_path, capsys, value):
    _inputs(tmp_path, stall_at=None)
    path = _recipe(tmp_path, "out", value)
    assert main(["run", path, "--no-ray", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stage_time_limit" in err[0], err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_retune_keeps_a_timed_out_document_rejected(tmp_path, monkeypatch):
    from pipeline.engine.retune import retune
    from stages import registry

    for name in ("test_stall_on", "test_min_words"):  # test stages: no decision setting of their own
        monkeypatch.setattr(registry.get(name), "decision_keys", ())
    _inputs(tmp_path)
    stages = "  - stage: test_stall_on\n    word: STALL\n  - stage: quality\n    gopher_quality: {min_doc_words: 12}\n"
    res = run(load_recipe(_recipe(tmp_path, "out", LIMIT, stages)), executor="local", progress=False)
    assert res.ledger.total("test_stall_on").rejected[TIME_LIMIT][0] == 1
    again = retune(res.out, ["quality.gopher_quality.min_doc_words=1"], str(tmp_path / "re"))
    assert again.ledger.check() == []
    assert again.ledger.total("test_stall_on").rejected[TIME_LIMIT][0] == 1
    rej = pa.concat_tables([pq.read_table(f) for f in glob.glob(f"{tmp_path}/re/rejects/test_stall_on/*.parquet")])
    assert rej.column("drop_reason").to_pylist() == [TIME_LIMIT]
    assert again.ledger.total("test_stall_on").kept == 6


def test_a_stage_that_cannot_set_up_fails_the_run_with_its_own_message(tmp_path):
    _inputs(tmp_path, stall_at=None)
    stages = "  - stage: langid\n    model_path: /nowhere/lid.bin\n"
    with pytest.raises(Exception, match="/nowhere/lid.bin") as exc:
        run(load_recipe(_recipe(tmp_path, "out", 30, stages)), executor="local", progress=False)
    assert "died on document" not in str(exc.value)


@pytest.mark.slow
def test_a_stalling_stage_between_two_global_stages_is_held_too(tmp_path):
    """There it runs in the barrier group's wave over the spill (docs/dedup.md), not in a phase."""
    _inputs(tmp_path)
    stages = ("  - stage: exact_dedup\n  - stage: test_stall_on\n    word: STALL\n"
              "  - stage: minhash_dedup\n")
    res = run(load_recipe(_recipe(tmp_path, "out", LIMIT, stages)), executor="local", progress=False)
    assert (tmp_path / "out" / "_state" / "wave-minhash_dedup.json").exists()  # it did run in a wave
    _check_stalled_run(tmp_path, str(tmp_path / "out"), res)
