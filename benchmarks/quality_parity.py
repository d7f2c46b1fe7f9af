"""Decision parity of the quality stage with datatrove's 4-filter chain on the corpora of ../shared
that benchmarks/quality.py does not cover (it covers HPLT, WikiText-2, 4chan, SMS, 390 lingua
documents and trafilatura's evaluation pages).

Documents: a JSON-lines file gives one document per line (its `text`, `t` or `content` field); a
CSV/TSV/text file gives one document per non-empty line (a tweet, a sentence, a forum post); the
lingua sentence files give documents of 10 consecutive sentences. Each file contributes at most
`--per-file` documents (a seeded random sample; every document when it has fewer). arXiv LaTeX is
left out: the quality stage skips `arxiv` by default. Compared per document: keep or drop, the
first drop reason, and the kept text (C4 deletes lines), as in benchmarks/quality.py's chain table.

    PYTHONPATH=. python benchmarks/quality_parity.py [--per-file 2000]

`--against-slice N` compares the stage with itself instead: every signal and the kept text, with
the spaCy fallback's sub-pieces (`word_tokenizer._SMALL_SLICE`) of N characters against the
default, on these documents and on benchmarks/quality.py's (every document of both): a change of
the slice that gives identical signals everywhere keeps the parity measured with datatrove.

    PYTHONPATH=. python benchmarks/quality_parity.py --per-file 1500 --against-slice 4096
"""
from __future__ import annotations

import argparse
import collections
import gzip
import io
import json
import random
import time
from pathlib import Path

import zstandard

import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH
from benchmarks.quality import datatrove_chain, run_chain, same_reason, stage_chain  # noqa: E402
from stages.quality.text_stats import DocStats

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
COVERED = {"uci_sms_spam_collection.tsv", "wikitext2_valid.tokens.txt", "wikitext2_test.tokens.txt",
           "paloma_4chan_val.jsonl.gz"}


def _open_text(path: Path) -> str | None:
    data = path.read_bytes()
    if path.suffix == ".zst":
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    elif path.suffix == ".gz":
        data = gzip.decompress(data)
    if b"\x00" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")


def corpus_documents(per_file: int, seed: int = 0) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for folder in ("quality", "toxicity", "langid"):
        for path in sorted((CORPORA / folder).rglob("*")):
            if not path.is_file() or path.name in COVERED or path.name.startswith(("SOURCE", "LICENSE", "README")):
                continue
            if path.suffix in (".zip", ".md", ".pdf"):
                continue
            text = _open_text(path)
            if text is None:
                continue
            name = str(path.relative_to(CORPORA))
            if ".jsonl" in path.name or ".json" in path.name:
                docs = []
                for line in text.splitlines():
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict):
                        t = rec.get("text") or rec.get("t") or rec.get("content")
                        if isinstance(t, str) and t.strip():
                            docs.append(t)
            elif folder == "langid":
                lines = [ln for ln in text.splitlines() if ln.strip()]
                docs = ["\n".join(lines[i : i + 10]) for i in range(0, len(lines), 10)]
            else:
                docs = [ln for ln in text.splitlines() if ln.strip()]
            if not docs:
                continue
            if len(docs) > per_file:
                docs = random.Random(seed).sample(docs, per_file)
            out[name] = docs
    return out


def against_slice(corpora: dict[str, list[str]], other: int) -> None:
    """Signals and kept text of every document with the default slice and with `other`."""
    import stages.quality.word_tokenizer as wt
    from benchmarks.quality_corpus import load_all
    from stages.quality.stage import Quality

    for d in load_all(CORPORA):
        corpora.setdefault(f"benchmarks/quality.py: {d[0]}", []).append(d[2])
    default = wt._SMALL_SLICE
    q = Quality()
    t0 = time.time()
    total = collections.Counter()
    for name, docs in corpora.items():
        s = collections.Counter()
        for text in docs:
            wt._SMALL_SLICE = default
            a = q.evaluate(text, None)
            whole = DocStats(text, q._tokenizer).needs_whole
            wt._SMALL_SLICE = other
            b = q.evaluate(text, None)
            s["docs"] += 1
            s["whole"] += whole
            if repr(a) == repr(b):  # repr: a NaN signal equals itself
                s["same"] += 1
            else:
                print(f"  differs: {name}: {text[:80]!r}")
        total.update(s)
        if s["same"] != s["docs"]:
            print(f"| {name} | {s['docs']} | {s['whole']} | {s['same']} |", flush=True)
    wt._SMALL_SLICE = default
    print(f"\nslice {default} against {other}: {total['same']}/{total['docs']} documents with identical signals and "
          f"text ({total['whole']} tokenized as spaCy would the whole text, where the slice matters), "
          f"{len(corpora)} files ({time.time() - t0:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-file", type=int, default=2000)
    ap.add_argument("--against-slice", type=int, help="compare the stage's signals with this spaCy slice instead")
    args = ap.parse_args()
    from stages.quality.stage import Quality

    corpora = corpus_documents(args.per_file)
    if args.against_slice:
        return against_slice(corpora, args.against_slice)
    total = collections.Counter()
    print("| corpus file | docs | datatrove keeps | keep/drop agreement | same first reason | kept with identical text |")
    print("|---|---:|---:|---:|---:|---:|")
    t0 = time.time()
    filters = datatrove_chain()
    q = Quality()
    for name, docs in corpora.items():
        ours = [r for k in range(0, len(docs), 500) for r in stage_chain(q, docs[k : k + 500])]
        s = collections.Counter()
        for i, (text, (our_reason, our_text)) in enumerate(zip(docs, ours)):
            dt_r, dt_text = run_chain(filters, text, i)
            s["docs"] += 1
            s["dt_kept"] += dt_r is None
            s["keep"] += (dt_r is None) == (our_reason is None)
            s["reason"] += same_reason(dt_r, our_reason)
            if dt_r is None and our_reason is None:
                s["kept_both"] += 1
                s["same_text"] += dt_text == our_text
            elif (dt_r is None) != (our_reason is None) or not same_reason(dt_r, our_reason):
                print(f"  differs: {name} #{i}: datatrove {dt_r}, refinery {our_reason}: {text[:80]!r}")
        total.update(s)
        n = s["docs"]
        print(f"| {name} | {n} | {s['dt_kept']} | {100 * s['keep'] / n:.2f}% | {100 * s['reason'] / n:.2f}% "
              f"| {s['same_text']}/{s['kept_both']} |", flush=True)
    n = total["docs"]
    print(f"| **all {len(corpora)} files** | {n} | {total['dt_kept']} | {100 * total['keep'] / n:.2f}% "
          f"| {100 * total['reason'] / n:.2f}% | {total['same_text']}/{total['kept_both']} |")
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
