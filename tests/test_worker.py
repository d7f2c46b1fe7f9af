import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.engine.planning import plan_phases
from pipeline.engine.barrier import aligned_decisions
from tests.helpers import ExactHash, MinWords, kept_ids, write_jsonl, write_recipe


def test_phases_split_at_global_stages():
    phases = plan_phases([MinWords(), ExactHash(), MinWords(), ExactHash()])
    assert [(p.stages, p.barrier) for p in phases] == [([0], 1), ([2], 3), ([], None)]


def test_after_a_barrier_the_shard_is_streamed_in_batches(tmp_path, monkeypatch):
    """Phase 1 reads the spill batch by batch (memory bounded by the batch size, not the shard)."""
    docs = [{"text": f"words number {i % 20} in this document"} for i in range(50)]  # 30 exact duplicates
    write_jsonl(tmp_path / "in" / "a.jsonl", docs)
    recipe = load_recipe(str(write_recipe(tmp_path / "r.yaml", f"""
name: t
output: {tmp_path / "out"}
stage_time_limit: 0  # the stages in this process, where the spy below sees their batches
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"], batch_size: 4}}
stages:
  - stage: test_exact
  - stage: test_min_words
    min_words: 3
""")))
    seen: list[int] = []
    annotate = MinWords.annotate
    monkeypatch.setattr(MinWords, "annotate", lambda self, b: (seen.append(b.num_rows), annotate(self, b))[1])
    whole_reads: list[str] = []
    read_table = pq.read_table

    def spy(path, *a, columns=None, **kw):  # a spill file is never loaded whole, only its ids
        if "_work" in str(path) and (columns is None or "text" in columns):
            whole_reads.append(str(path))
        return read_table(path, *a, columns=columns, **kw)

    monkeypatch.setattr(pq, "read_table", spy)
    res = run(recipe, executor="local", progress=False)
    assert res.ledger.total("test_exact").rejected["test_duplicate"][0] == 30
    assert len(kept_ids(tmp_path / "out")) == 20
    assert sum(seen) == 20 and max(seen) <= 4 and len(seen) >= 5
    assert [p for p in whole_reads if "test_exact/part-" in p] == []


def test_decisions_are_aligned_to_the_spill_order():
    ids = pa.chunked_array([pa.array(["b", "a", "c"])])
    dec = pa.table({"id": ["a", "c", "b"], "drop_reason": [None, "dup", None], "drop_detail": [None, "a", None],
                    "other": [1, 2, 3]})
    out = aligned_decisions(ids, dec, ExactHash())
    assert out.column_names == ["id", "drop_reason", "drop_detail"]  # only decisions and the stage's signals
    assert out.column("id").to_pylist() == ["b", "a", "c"]
    assert out.column("drop_reason").to_pylist() == [None, None, "dup"]
    # a document without a decision is kept; two decisions for one document is an error
    assert aligned_decisions(ids, dec.slice(0, 2), ExactHash()).column("drop_reason").to_pylist() == [None, None, "dup"]
    with pytest.raises(RuntimeError, match="one to one"):
        aligned_decisions(ids, pa.concat_tables([dec, dec.slice(0, 1)]), ExactHash())
