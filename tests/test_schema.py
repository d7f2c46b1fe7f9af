"""pipeline/schema.py: records and their ids."""
from __future__ import annotations

import xxhash

from pipeline.schema import doc_id


def test_a_file_name_that_is_not_utf8_has_an_id_and_a_storable_file(tmp_path):
    """Python keeps such a name's bytes as lone surrogates; the record must still be stored and its
    run's log written (a valid name's id is unchanged by the error handler)."""
    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.runner import run
    from tests.helpers import kept_ids, write_recipe

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / b"\xffbad.jsonl".decode("utf-8", "surrogateescape")).write_text('{"text": "a few words here"}\n')
    (tmp_path / "in" / "good.jsonl").write_text('{"text": "other words in this one"}\n')
    recipe = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages:
  - stage: exact_dedup
""")
    res = run(load_recipe(str(recipe)), executor="local", progress=False)
    assert len(kept_ids(res.out)) == 2 and res.ledger.check() == []
    assert "bad.jsonl" in (tmp_path / "out" / "run.log").read_text(encoding="utf-8")
    assert doc_id("s", "a.jsonl", 0) == xxhash.xxh3_128_hexdigest("s\x1fa.jsonl\x1f0".encode())
