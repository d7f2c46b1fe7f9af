"""Decontamination: cost per document against the quality stage, and decisions and speed against
datatrove's n-gram decontamination filter, on the same real documents in the same run.

Documents: HPLT's Common Crawl and Internet Archive pages, WikiText-2 validation articles and
Paloma's 4chan threads (none of them was used to choose a setting), each once as it is and once
with a GSM8K or HumanEval test item planted in it (in turn: the whole item, a fragment of 13 to 18
whitespace-separated words, a fragment of 26 or 39 words inside navigation and footer lines, the
whole item with case, punctuation and whitespace changed).

Decontamination here: the stage's defaults (13 words; HumanEval with the code tokenizer).
datatrove 0.10: `NGramsDecontFilter` with an index built by `NGramsDecontIndexer.compute_hashes`
(its own code, called without lighteval, which only fetches tasks) over the same items, query =
GSM8K's question / HumanEval's prompt, label = answer / canonical solution, every n-gram of both
(`find_query_ngrams`), 13-grams, its default normalisation (numbers become 0) and spaCy word
tokenizer.

Speed: process CPU time on one core, best of `--repeat`, of each side's per-document work over every
document (index building and model loading are set-up, reported apart); the quality stage with its
defaults (rules and classifier) and with the rules alone on the same documents.

    PYTHONPATH=. python benchmarks/decontamination.py [--repeat 3] [--limit N]
"""
from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import pyarrow as pa

import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH
from benchmarks._timing import best_time  # noqa: E402
from benchmarks.quality_corpus import fourchan, hplt, wikitext  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
VARIANTS = ("whole", "fragment", "boilerplate", "changed")
NAV = "Home | News | Forum | Login | Register\nSkip to content"
FOOTER = "Share · Tweet · Email\n© 2021 All rights reserved. Privacy policy"


def load_items():
    ev = CORPORA / "evals"
    gsm = [json.loads(x) for x in open(ev / "gsm8k" / "test.jsonl", encoding="utf-8")]
    he = [json.loads(x) for x in gzip.open(ev / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8")]
    items = [("gsm8k", str(i), r["question"], r["answer"], "words") for i, r in enumerate(gsm)]
    items += [("humaneval", r["task_id"], r["prompt"], r["canonical_solution"], "code") for r in he]
    return items


def benchmarks_config() -> list[dict]:
    ev = CORPORA / "evals"
    return [{"name": "gsm8k", "path": str(ev / "gsm8k" / "test.jsonl"), "fields": ["question", "answer"]},
            {"name": "humaneval", "path": str(ev / "humaneval" / "HumanEval.jsonl.gz"),
             "fields": ["prompt", "canonical_solution"], "id_field": "task_id", "tokenizer": "code"}]


def planted_docs(texts: list[str], items, seed: int = 0):
    rng = random.Random(seed)
    out, truth, pieces = [], [], []
    for i, page in enumerate(texts):
        bench, item_id, q, a, tok = items[rng.randrange(len(items))] if i % 3 else \
            rng.choice([x for x in items if x[0] == "humaneval"])
        text = q + ("" if tok == "code" else "\n") + a
        variant = VARIANTS[i % len(VARIANTS)]
        piece = text
        if variant in ("fragment", "boilerplate"):
            # in whitespace-separated words, a unit neither side counts in
            words = text.split()
            m = min(len(words), 13 + rng.randrange(6) if variant == "fragment" else rng.choice([26, 39]))
            s = rng.randrange(len(words) - m + 1)
            piece = " ".join(words[s:s + m])
            if variant == "boilerplate":
                piece = f"{NAV}\n{piece}\n{FOOTER}"
        elif variant == "changed":
            piece = rng.choice([str.upper, str.swapcase])(text)
            if tok == "words":
                piece = piece.replace(". ", "! ").replace(",", " ,").replace("?", " ??")
            piece = " ".join(piece.split())
        lines = page.split("\n")
        at = rng.randrange(len(lines) + 1)
        out.append("\n".join(lines[:at] + [piece] + lines[at:]))
        truth.append((bench, item_id, variant))
        pieces.append(piece)
    return out, truth, pieces


class DatatroveDecont:
    """datatrove's NGramsDecontFilter over an index written by its indexer's own hashing code."""

    def __init__(self, items, n: int = 13):
        from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
        from datatrove.utils.hashing import create_hash_func
        from datatrove.utils.word_tokenizers import load_word_tokenizer

        cfg = NGramsDecontConfig(n_grams=n, find_query_ngrams=True)
        self.tmp = tempfile.TemporaryDirectory()
        t = time.process_time()
        indexer = types.SimpleNamespace(tokenizer=load_word_tokenizer("en"), config=cfg,
                                        hash_func=create_hash_func(cfg.hash_config))
        hashes = collections.defaultdict(set)
        for bench, _, q, a, _ in items:
            hashes[bench].update(NGramsDecontIndexer.compute_hashes(indexer, a, q))
        for bench, hs in hashes.items():
            np.array(sorted(hs), dtype=cfg.hash_config.np_descr).tofile(f"{self.tmp.name}/{bench}.index.hashes")
        self.filter = NGramsDecontFilter(self.tmp.name, config=cfg)
        self.filter.load_index_hashes()
        self.setup_cpu = time.process_time() - t

    def flags(self, texts: list[str]) -> list[str | None]:
        from datatrove.data import Document

        out = []
        self.ngrams = []
        for i, t in enumerate(texts):
            doc = Document(text=t, id=str(i))
            res = self.filter.filter(doc)
            out.append(doc.metadata.get("contaminated_task") if res is not True else None)
            self.ngrams.append(doc.metadata.get("contaminated_ngram"))
        return out


def table(texts: list[str]) -> pa.Table:
    return pa.table({"text": texts, "source": ["web"] * len(texts), "kind": ["web"] * len(texts),
                     "lang": ["en"] * len(texts)})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="documents per corpus (0: all)")
    args = ap.parse_args(argv)
    from stages.decontam.stage import Decontamination
    from stages.quality.stage import Quality

    clean = []
    for loader in (hplt, wikitext, fourchan):
        docs = [t for _, _, t in loader(CORPORA) if t.strip()]
        clean += docs[:args.limit] if args.limit else docs
    items = load_items()
    t = time.process_time()
    ours = Decontamination(benchmarks=benchmarks_config())
    ours.ensure_setup()
    our_setup = time.process_time() - t
    planted, truth, pieces = planted_docs(clean, items)
    texts = clean + planted
    mb = sum(len(x.encode()) for x in texts) / 1e6
    print(f"{len(clean)} real documents (HPLT pages, WikiText-2 articles, 4chan threads) + {len(planted)} with a "
          f"planted item: {len(texts)} documents, {mb:.1f} MB")
    print(f"index: {sum(v['items'] for v in ours.params()['benchmarks'].values())} items, "
          f"{ours.params()['index_bytes'] / 1e6:.1f} MB, set-up {our_setup:.2f} s CPU")
    dt = DatatroveDecont(items)
    print(f"datatrove index: {sum(len(v) for v in [np.fromfile(f, dtype='<u8') for f in Path(dt.tmp.name).glob('*')])} "
          f"hashes, set-up {dt.setup_cpu:.2f} s CPU")

    # -- decisions
    ann = ours.annotate(table(texts))
    reasons = ours.decide(ann)
    named = list(zip(ann.column("decontam_benchmark").to_pylist(), ann.column("decontam_item").to_pylist()))
    theirs = dt.flags(texts)
    nc = len(clean)
    print("\ndecisions (flagged / documents)")
    print(f"  {'set':<24}{'refinery':>10}{'datatrove':>11}")
    print(f"  {'clean documents':<24}{sum(r is not None for r in reasons[:nc]):>10}{sum(x is not None for x in theirs[:nc]):>11}"
          f"   of {nc}")
    for v in VARIANTS:
        for bench in ("gsm8k", "humaneval"):
            rows = [i for i, (b, _, var) in enumerate(truth) if var == v and b == bench]
            if rows:
                a = sum(reasons[nc + i] is not None for i in rows)
                b = sum(theirs[nc + i] is not None for i in rows)
                print(f"  {'planted ' + v + ' ' + bench:<24}{a:>10}{b:>11}   of {len(rows)}")
    right = sum(named[nc + i] == truth[i][:2] for i in range(len(truth)))
    print(f"  planted: the detail names the planted item for {right} of {len(truth)}")
    missed = [i for i in range(len(truth)) if reasons[nc + i] is None]
    if missed:
        from stages.decontam.index import is_word
        from stages.decontam.normalise import tokens

        few = sum(sum(map(is_word, tokens(pieces[i], "code"))) < ours.config.ngram for i in missed)
        print(f"  planted items refinery misses: {len(missed)}, of which {few} hold fewer than "
              f"{ours.config.ngram} words (symbol-only chunks such as `>>>`, `->`, `=` are no words)")
    fp = [(i, named[i]) for i in range(nc) if reasons[i] is not None]
    if fp:
        print("  clean documents refinery flags:", fp[:5])
    dfp = [(theirs[i], dt.ngrams[i]) for i in range(nc) if theirs[i] is not None]
    for task, ngram in dfp[:8]:
        print(f"  a clean document datatrove flags: {task}: {ngram!r}")

    # -- speed
    batch = table(texts)
    fresh = Decontamination(benchmarks=benchmarks_config())
    fresh.ensure_setup()
    quality = Quality()
    rules = Quality(classifier=None)
    quality.ensure_setup()
    rules.ensure_setup()
    runs = {
        "decontamination (refinery)": lambda: fresh.decide(fresh.annotate(batch)),
        "datatrove NGramsDecontFilter": lambda: dt.flags(texts),
        "quality stage, defaults": lambda: quality.decide(quality.annotate(batch)),
        "quality stage, rules only": lambda: rules.decide(rules.annotate(batch)),
    }
    times = {name: best_time(fn, args.repeat) for name, fn in runs.items()}
    base = times["decontamination (refinery)"]
    print(f"\nCPU per document (best of {args.repeat}, one core, same {len(texts)} documents)")
    for name, s in times.items():
        print(f"  {name:<30}{s / len(texts) * 1e6:>9.0f} µs   {s / base:>5.2f}x decontamination")


if __name__ == "__main__":
    main()
