"""What `SpacyRules`' shortcuts, read from the tokenizer's patterns with CPython's private regex
parser (`re._parser`), save: the quality stage's word tokenizer and the whole stage, with the
shortcuts and with plain searches (the parser hidden, as on a Python without it), on the same
documents, fresh each round (an empty chunk memo: text the stage has not seen), alternating.

    PYTHONPATH=. python benchmarks/spacy_rules_shortcuts.py [--rounds 2]

Input: ../shared/corpora/quality/paloma_4chan_val.jsonl.gz (web forum text, 3.2 MB).
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import stages.quality.spacy_rules as spacy_rules  # noqa: E402
import stages.quality.word_tokenizer as word_tokenizer  # noqa: E402
from pipeline.schema import make_record, records_to_table  # noqa: E402
from stages import registry  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "quality" / "paloma_4chan_val.jsonl.gz"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with gzip.open(CORPUS, "rt") as fh:
        texts = [json.loads(line)["text"] for line in fh]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    chunks = "\n".join(texts).split()
    table = records_to_table(make_record(source="s", kind="jsonl", file="f", offset=i, text=t)
                             for i, t in enumerate(texts))
    parser = spacy_rules._parser
    quality = registry.get("quality")
    tok: dict[str, list[float]] = {"shortcuts": [], "plain": []}
    stage: dict[str, list[float]] = {"shortcuts": [], "plain": []}
    tokens = {}
    for _ in range(args.rounds):
        for mode in ("shortcuts", "plain"):
            spacy_rules._parser = parser if mode == "shortcuts" else None
            t = word_tokenizer.ChunkTokenizer()
            t0 = time.process_time()
            tokens[mode] = t.chunks(chunks)
            tok[mode].append(time.process_time() - t0)
            word_tokenizer._SHARED = None
            st = quality(quality.Config())
            st.ensure_setup()
            t0 = time.process_time()
            st.annotate(table)
            stage[mode].append(time.process_time() - t0)
    spacy_rules._parser = parser
    print(f"{mb:.1f} MB, {len(chunks):,} chunks ({len(set(chunks)):,} distinct); CPU s per MB, best of {args.rounds}")
    for what, got in (("word tokenizer", tok), ("quality stage annotate", stage)):
        a, b = min(got["shortcuts"]) / mb, min(got["plain"]) / mb
        print(f"{what:24s} shortcuts {a:.3f}  plain {b:.3f}  saved {b - a:.3f} s/MB ({1 - a / b:.0%})")
    print("same tokens:", tokens["shortcuts"] == tokens["plain"])


if __name__ == "__main__":
    main()
