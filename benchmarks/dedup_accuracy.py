"""Accuracy of minhash_dedup on planted near-duplicates of real texts, per true-Jaccard bucket.

Bases: WikiText-2 articles cut into ~150-600-word documents, and HPLT web page texts (from
../shared/corpora, read in place). Each base gets two edited copies: word substitutions,
deletions, insertions, a deleted span, or a boilerplate prefix/suffix, at a random strength. The
true Jaccard of every (base, copy) pair is computed on the stage's own shingle sets; the corpus
(bases + copies) is spread over 4 spill files in random order and run through annotate + resolve.

Reported, per Jaccard bucket: planted pairs, recall (pair ended in one cluster). Overall: drop
precision (a dropped document's true Jaccard with its survivor >= threshold), with and without
verification, and a datasketch MinHashLSH run on the same signatures' parameters for reference.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/dedup_accuracy.py [--threshold 0.8]
"""
from __future__ import annotations

import argparse
import io
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from pipeline.schema import make_record, records_to_table
from stages.dedup import minhash as mh
from stages.base import LocalExecutor
from stages.dedup.near import MinhashDedup

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
BOILERPLATE = (
    "Home About us Contact Privacy policy Terms of use Cookie settings We use cookies to improve your "
    "experience on our website By continuing to browse you agree to our use of cookies Subscribe to our "
    "newsletter Follow us on Facebook Twitter Instagram Share this article Related posts Read more "
    "Copyright all rights reserved Powered by WordPress Skip to main content Search this site Menu Login "
    "Register Cart Checkout Sign up for free shipping on orders over fifty dollars Back to top"
).split()


def wikitext_docs() -> list[str]:
    docs = []
    for name in ("wikitext2_valid.tokens.txt", "wikitext2_test.tokens.txt"):
        text = (CORPORA / "quality" / name).read_text(encoding="utf-8")
        cur: list[str] = []
        for para in text.split("\n"):
            para = para.strip()
            if not para or para.startswith("="):
                continue
            cur.extend(para.split())
            if len(cur) >= 150:
                docs.append(" ".join(cur))
                cur = []
    return docs


def hplt_docs() -> list[str]:
    docs = []
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        with open(CORPORA / "web" / name, "rb") as f:
            reader = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), encoding="utf-8", errors="replace")
            for line in reader:
                t = json.loads(line).get("t") or ""
                if len(t.split()) >= 80:
                    docs.append(t)
    return docs


def mutate(text: str, rng: random.Random, vocab: list[str]) -> tuple[str, str]:
    w = text.split()
    op = rng.choice(["substitute", "delete", "insert", "span", "boilerplate"])
    if op == "substitute":
        p = rng.uniform(0.0, 0.12)
        w = [rng.choice(vocab) if rng.random() < p else x for x in w]
    elif op == "delete":
        p = rng.uniform(0.0, 0.12)
        w = [x for x in w if rng.random() >= p]
    elif op == "insert":
        p = rng.uniform(0.0, 0.12)
        out = []
        for x in w:
            out.append(x)
            if rng.random() < p:
                out.append(rng.choice(vocab))
        w = out
    elif op == "span":
        f = rng.uniform(0.0, 0.5)
        n = int(len(w) * f)
        s = rng.randrange(0, len(w) - n + 1)
        w = w[:s] + w[s + n :]
    else:
        n = int(len(w) * rng.uniform(0.0, 0.8))
        bp = (BOILERPLATE * (n // len(BOILERPLATE) + 1))[:n]
        cut = rng.randrange(0, n + 1)
        w = bp[:cut] + w + bp[cut:]
    return " ".join(w), op


MODES = {  # label -> stage options
    "verify+greedy": dict(verify=True, clusters="greedy"),
    "verify+components": dict(verify=True, clusters="components"),
    "no verify+components": dict(verify=False, clusters="components"),
}


def run(threshold: float, options: dict, records, spill_dir: Path):
    stage = MinhashDedup(threshold=threshold, **options)  # bands x rows derived (0.8, weight 0.95: 14 x 8)
    rng = random.Random(1)
    order = list(range(len(records)))
    rng.shuffle(order)
    paths = []
    spill_dir.mkdir()
    t0 = time.perf_counter()
    for k in range(4):
        t = stage.annotate(records_to_table([records[i] for i in order[k::4]]))
        p = spill_dir / f"part-{k}.parquet"
        pq.write_table(t, p)
        paths.append(str(p))
    t1 = time.perf_counter()
    files = stage.resolve(paths, LocalExecutor())
    t2 = time.perf_counter()
    dec = pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()
    return stage, {r["id"]: r for r in dec}, t1 - t0, t2 - t1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--variants", type=int, default=2)
    ap.add_argument("--fn-weight", type=float, default=None,
                    help="false_negative_weight deriving bands x rows (default: the stage's)")
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = ap.parse_args()
    for m in list(MODES):
        if m not in args.modes:
            del MODES[m]
        elif args.fn_weight is not None:
            MODES[m] = dict(MODES[m], false_negative_weight=args.fn_weight)
    thr = args.threshold
    rng = random.Random(0)
    wiki, web = wikitext_docs(), hplt_docs()
    bases = wiki + web
    vocab = sorted({x for d in bases[:200] for x in d.split()})
    records, text_of, pairs, family = [], {}, [], {}
    for b, text in enumerate(bases):
        rec = make_record(source="bench", kind="jsonl", file="bases", offset=b, text=text)
        records.append(rec)
        text_of[rec["id"]] = text
        family[rec["id"]] = b
        for v in range(args.variants):
            vt, op = mutate(text, rng, vocab)
            vrec = make_record(source="bench", kind="jsonl", file=f"variants{v}", offset=b, text=vt)
            records.append(vrec)
            text_of[vrec["id"]] = vt
            family[vrec["id"]] = b
            pairs.append((rec["id"], vrec["id"], op))
    members: dict[int, list[str]] = {}
    for k, b in family.items():
        members.setdefault(b, []).append(k)
    sets = {k: mh.shingle_set64(t) for k, t in text_of.items()}
    jac = np.array([mh.jaccard_sorted(sets[a], sets[b]) for a, b, _ in pairs])
    print(f"{len(bases)} base documents ({len(wiki)} WikiText-2, {len(web)} HPLT), "
          f"{len(pairs)} planted copies, threshold {thr}")
    edges = sorted({round(e, 4) for e in [0.0, 0.5, 0.6, 0.7, 0.8, 0.85, thr - 0.05, thr, thr + 0.05, 0.9, 0.95, 1.0001]})
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, options in MODES.items():
            stage, dec, t_ann, t_res = run(thr, options, records, Path(tmp) / label.replace(" ", "_").replace("+", "_"))
            resolved = np.array([dec[a]["drop_reason"] is not None or dec[b]["drop_reason"] is not None for a, b, _ in pairs])
            dropped = [r for r in dec.values() if r["drop_reason"]]
            to_detail = sum(mh.jaccard_sorted(sets[r["id"]], sets[r["drop_detail"]]) >= thr for r in dropped)
            justified = sum(
                any(dec[k]["drop_reason"] is None and mh.jaccard_sorted(sets[r["id"]], sets[k]) >= thr
                    for k in members[family[r["id"]]] if k != r["id"])
                for r in dropped
            )
            results[label] = (resolved, len(dropped), to_detail, justified, stage, t_ann, t_res)
    c = results["verify+greedy"][4].config
    print(f"LSH {c.bands} bands x {c.rows} rows of {c.num_perm} permutations, {c.ngram}-gram shingles\n")
    print("Recall = share of planted (base, copy) pairs of which at most one document is kept.\n")
    print("| true Jaccard | pairs | " + " | ".join(MODES) + " |")
    print("|---|---|" + "---|" * len(MODES))
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (jac >= lo) & (jac < hi)
        if m.any():
            cells = " | ".join(f"{results[k][0][m].mean():.3f}" for k in MODES)
            print(f"| [{lo:.2f}, {min(hi, 1.0):.2f}{']' if hi > 1 else ')'} | {int(m.sum())} | {cells} |")
    goal = jac >= thr + 0.05
    print(f"\n| mode | recall J >= {thr + 0.05:.2f} ({int(goal.sum())} pairs) | dropped | precision: J(dropped, "
          f"drop_detail) >= {thr} | precision: a kept near-duplicate exists | annotate s | resolve s |")
    print("|---|---|---|---|---|---|---|")
    for label in MODES:
        resolved, nd, to_detail, justified, stage, t_ann, t_res = results[label]
        print(f"| {label} | {resolved[goal].mean():.4f} | {nd} | {to_detail / max(nd, 1):.4f} | "
              f"{justified / max(nd, 1):.4f} | {t_ann:.1f} | {t_res:.1f} |")
    band = (jac >= thr) & (jac < thr + 0.05)
    for label in MODES:
        resolved = results[label][0]
        print(f"{label}: recall at J in [{thr:.2f}, {thr + 0.05:.2f}) {resolved[band].mean():.4f} ({int(band.sum())} pairs); "
              f"kept pairs at J >= {thr} (both kept): {int((~resolved & (jac >= thr)).sum())}")
    print("\nstats (verify+greedy):", results["verify+greedy"][4].stats)
    by_op: dict[str, list[bool]] = {}
    for (a, b, op), s, j in zip(pairs, results["verify+greedy"][0], jac):
        if j >= thr + 0.05:
            by_op.setdefault(op, []).append(bool(s))
    print("recall (verify+greedy, J >= thr+0.05) by edit:", {k: f"{np.mean(v):.3f} ({len(v)})" for k, v in sorted(by_op.items())})


if __name__ == "__main__":
    main()
