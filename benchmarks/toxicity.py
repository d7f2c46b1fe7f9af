"""Toxicity benchmark: documents per second per core against alt-profanity-check, and what the default
document rule rejects on real corpora.

Documents (read in place from ../shared/corpora): the held-out toxicity split (tweets and forum
sentences, the trainer's seed), 4chan threads (Paloma), WikiText-2 test articles, HPLT web pages.
refinery scores per sentence (default) and per document; alt-profanity-check scores whole documents
(`predict_prob`, a linear SVM over a TF-IDF vectoriser). One process, best of `--repeats`.

    PYTHONPATH=. python benchmarks/toxicity.py [--corpora ../shared/corpora]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import re
from pathlib import Path

from pipeline.schema import make_record, records_to_table
from stages.langid import LangID
from stages.toxicity import Toxicity
from pipeline.train.toxicity import load_examples, split
from benchmarks._timing import best_time

ROOT = Path(__file__).resolve().parents[1]


def load_corpora(corpora: Path, seed: int = 13) -> dict[str, list[str]]:
    import zstandard

    _, test = split(load_examples(corpora), seed, 0.2)
    out = {"held-out toxicity examples": [e.text for e in test]}
    with gzip.open(corpora / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        out["4chan threads"] = [json.loads(l)["text"] for l in f if l.strip()]
    wiki = (corpora / "quality" / "wikitext2_test.tokens.txt").read_text(encoding="utf-8")
    out["WikiText-2 test articles"] = [a.strip() for a in re.split(r"\n = [^=\n]+ = \n", wiki) if len(a.strip()) > 500]
    web = []
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(open(corpora / "web" / name, "rb"))
        web += [json.loads(l).get("t") or "" for l in io.TextIOWrapper(raw, encoding="utf-8", errors="replace")]
    out["HPLT web pages (24 languages)"] = [t for t in web if t]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    from profanity_check import predict_prob

    groups = load_corpora(args.corpora)
    sentence = Toxicity()
    document = Toxicity(granularity="document")
    sentence.ensure_setup()
    document.ensure_setup()

    print("Document rule with defaults, after langid (only lang=en scored; span P >= 0.5; reject when")
    print(">= 50% of characters are in toxic spans). profanity-check scores every document.")
    print("| documents | n | scored (en) | refinery rejected | refinery max-span >= 0.5 | profanity-check P >= 0.5 |")
    print("|---|---:|---:|---:|---:|---:|")
    langid = LangID()
    for name, texts in groups.items():
        t = records_to_table(make_record(source="b", kind="jsonl", file="t", offset=i, text=x) for i, x in enumerate(texts))
        out = sentence.annotate(langid.annotate(t))
        scores = out.column("toxicity_score").to_pylist()
        rejected = sum(r is not None for r in sentence.decide(out)) / len(texts)
        scored = sum(s is not None for s in scores)
        any_span = sum(s is not None and s >= 0.5 for s in scores) / len(texts)
        pc = sum(p >= 0.5 for p in predict_prob(texts)) / len(texts)
        print(f"| {name} | {len(texts)} | {scored} | {rejected:.1%} | {any_span:.1%} | {pc:.1%} |")

    texts = [t for ts in groups.values() for t in ts]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    table = records_to_table(make_record(source="b", kind="jsonl", file="t", offset=i, text=x) for i, x in enumerate(texts))
    t_sent = best_time(lambda: sentence.decide(sentence.annotate(table)), args.repeats)
    t_doc = best_time(lambda: document.decide(document.annotate(table)), args.repeats)
    t_pc = best_time(lambda: predict_prob(texts), args.repeats)
    print(f"\nspeed on {len(texts)} documents ({mb:.2f} MB, no langid: every document scored), 1 process, best of {args.repeats}:")
    print(f"  alt-profanity-check predict_prob (per document)  {len(texts) / t_pc:8.0f} docs/s {mb / t_pc:6.2f} MB/s")
    print(f"  refinery toxicity, granularity=document          {len(texts) / t_doc:8.0f} docs/s {mb / t_doc:6.2f} MB/s"
          f"  ratio {t_pc / t_doc:.2f}x")
    print(f"  refinery toxicity, granularity=sentence          {len(texts) / t_sent:8.0f} docs/s {mb / t_sent:6.2f} MB/s"
          f"  ratio {t_pc / t_sent:.2f}x")


if __name__ == "__main__":
    main()
