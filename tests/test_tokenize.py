"""Tokenizers (tiktoken offline, tokenizer.json), EOD handling and shard tokenization."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import ConfigError
from pipeline.schema import conform, full_schema, make_record
from pipeline.mixture.tokenize import encode_documents, load_tokenizer, plan_tasks, run_task, tokenize_tasks


def write_kept(path, docs, row_group_size=None):
    recs = [make_record(source=s, kind="jsonl", file="f", offset=i, text=t) for i, (s, t) in enumerate(docs)]
    table = conform(pa.Table.from_pylist(recs), full_schema([]))
    pq.write_table(table, path, compression="zstd", row_group_size=row_group_size)
    return table


def test_cl100k_offline_default():
    tok = load_tokenizer()
    assert tok.eod_id == 100257 and tok.vocab_size == 100277 and tok.dtype is np.int32
    assert tok.encode_batch(["Hello world"]) == [[9906, 1917]]


def test_literal_special_token_text_stays_text():
    tok = load_tokenizer()
    flat, lengths = encode_documents(["a <|endoftext|> b"], tok)
    assert list(flat).count(100257) == 1 and flat[-1] == 100257  # only the appended EOD
    assert lengths.tolist() == [flat.size]


@pytest.mark.slow
def test_gpt2_json(corpora):
    tok = load_tokenizer(str(corpora / "tokenizers" / "gpt2_tokenizer.json"))
    assert tok.eod_id == 50256 and tok.dtype is np.uint16
    flat, lengths = encode_documents(["Hello world", "x <|endoftext|>"], tok)
    assert flat[:3].tolist() == [15496, 995, 50256]
    assert list(flat).count(50256) == 2 and lengths.sum() == flat.size


@pytest.mark.slow
def test_olmo2_json_ids_match_cl100k(corpora):
    """OLMo 2's tokenizer is cl100k-derived: on real text its ids equal tiktoken's."""
    olmo = load_tokenizer(str(corpora / "tokenizers" / "olmo2_dolma2_tokenizer.json"))
    cl = load_tokenizer("cl100k_base")
    assert olmo.eod_id == cl.eod_id == 100257
    text = (corpora / "quality" / "wikitext2_valid.tokens.txt").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip()][:400]
    lines += ["def f(x):\n\treturn x ** 2  # ünïcode ✓ 日本語", "a <|endoftext|> b <|fim_prefix|>"]
    a, la = encode_documents(lines, olmo)
    b, lb = encode_documents(lines, cl)
    assert a.size > 10_000
    assert np.array_equal(a, b) and np.array_equal(la, lb)


@pytest.mark.slow
def test_eod_override_and_errors(corpora, tmp_path):
    gpt2 = str(corpora / "tokenizers" / "gpt2_tokenizer.json")
    assert load_tokenizer(gpt2, "!").eod_id == 0
    with pytest.raises(ConfigError, match="not in its vocabulary"):
        load_tokenizer(gpt2, "<|nope|>")
    with pytest.raises(ConfigError, match="file not found"):
        load_tokenizer(str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="not a tiktoken encoding"):
        load_tokenizer("no_such_encoding")


def test_shard_task_filters_sources_and_skips_empty(tmp_path):
    docs = [("cc", "one two"), ("code", "print(1)"), ("cc", ""), ("cc", None), ("arxiv", "three")]
    write_kept(tmp_path / "part-0.parquet", docs, row_group_size=2)
    tasks = plan_tasks([(str(tmp_path / "part-0.parquet"), {"cc": "web", "arxiv": "papers"})], max_rows_per_task=2)
    assert [t.row_groups for t in tasks] == [(0,), (1,), (2,)]
    tok = load_tokenizer()
    results = [run_task(t, "cl100k_base", None, str(tmp_path / "tok")) for t in tasks]
    assert sum(r.documents for r in results) == 2 and sum(r.empty_skipped for r in results) == 2
    got = []
    for r in results:
        toks = np.load(r.tokens_path)
        for row in pq.read_table(r.docs_path).to_pylist():
            got.append((row["name"], toks[row["start"] : row["start"] + row["length"]].tolist()))
    assert got == [
        ("web", tok.encode_batch(["one two"])[0] + [100257]),
        ("papers", tok.encode_batch(["three"])[0] + [100257]),
    ]


@pytest.mark.slow
def test_ray_matches_in_process(tmp_path):
    words = "the quick brown fox jumps over the lazy dog".split()
    rng = np.random.default_rng(3)
    docs = [("cc", " ".join(rng.choice(words, size=int(rng.integers(1, 60))))) for _ in range(400)]
    for p in range(2):
        write_kept(tmp_path / f"part-{p}.parquet", docs[p * 200 : (p + 1) * 200], row_group_size=100)
    files = [(str(tmp_path / f"part-{p}.parquet"), {"cc": "cc"}) for p in range(2)]
    tasks = plan_tasks(files, max_rows_per_task=100)
    local = tokenize_tasks(tasks, "cl100k_base", None, str(tmp_path / "a"), use_ray=False)
    remote = tokenize_tasks(tasks, "cl100k_base", None, str(tmp_path / "b"), workers=2, use_ray=True)
    assert len(local) == len(remote) == 4
    for x, y in zip(local, remote):
        assert np.array_equal(np.load(x.tokens_path), np.load(y.tokens_path))
        assert pq.read_table(x.docs_path).equals(pq.read_table(y.docs_path))


def test_large_string_and_dictionary_columns(tmp_path):
    t = pa.table({
        "id": pa.array(["a", "b"], pa.large_string()),
        "source": pa.array(["cc", "x"]).dictionary_encode(),
        "text": pa.array(["hello there", "no"], pa.large_string()),
    })
    pq.write_table(t, tmp_path / "k.parquet")
    [task] = plan_tasks([(str(tmp_path / "k.parquet"), {"cc": "cc"})])
    r = run_task(task, "cl100k_base", None, str(tmp_path / "o"))
    assert r.documents == 1 and pq.read_table(r.docs_path).column("id").to_pylist() == ["a"]


@pytest.mark.slow
def test_eod_id_outside_vocab_widens_dtype(corpora):
    tok = load_tokenizer(str(corpora / "tokenizers" / "gpt2_tokenizer.json"), 70000)
    assert tok.dtype is np.int32
    flat, _ = encode_documents(["hi"], tok)
    assert flat[-1] == 70000
