"""Drop precision of minhash_dedup on big, overlapping clusters of near-copies of real text.

Bases: WikiText-2 documents (../shared/corpora, as benchmarks/dedup_accuracy.py). Each cluster is
a base and its copies, each copy the base with a random share (0-6%) of its words substituted,
so copies sit at true Jaccard ~0.55-1.0 from the base and from each other: many candidates per
bucket that share shingles among themselves but not with the document checked. Default: 20
clusters of 41 and 10 of 401 (4,830 documents), plus `--template` words of shared boilerplate
prepended to every document so clusters also collide in buckets.

Reported per system: kept, dropped, drop precision (dropped documents whose true Jaccard with the
document named as keeper is >= threshold; goal 1.000), dropped documents with no partner at
J >= threshold anywhere, kept pairs at J >= threshold (all pairs, exact). Systems: minhash_dedup
(greedy and components, default config), the exact greedy over all pairs (lowest index first),
and datasketch MinHashLSH (same threshold and permutations) with the same greedy and true-Jaccard
verification of its candidates.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/dedup_clusters.py
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH
from benchmarks.dedup_accuracy import BOILERPLATE, wikitext_docs  # noqa: E402
from stages.dedup import minhash as mh
from stages.dedup.near import near_duplicates


def corpus(sizes: list[tuple[int, int]], template: int, seed: int):
    rng = random.Random(seed)
    bases = [d for d in wikitext_docs() if 200 <= len(d.split()) <= 500]
    rng.shuffle(bases)
    vocab = sorted({w for d in bases[:300] for w in d.split()})
    head = (BOILERPLATE * 10)[:template]
    texts, cluster = [], []
    c = 0
    for count, size in sizes:
        for _ in range(count):
            base = bases[c].split()
            texts.append(" ".join(head + base))
            cluster.append(c)
            for _ in range(size - 1):
                p = rng.uniform(0.0, 0.06)
                texts.append(" ".join(head + [rng.choice(vocab) if rng.random() < p else w for w in base]))
                cluster.append(c)
            c += 1
    order = list(range(len(texts)))
    rng.shuffle(order)
    return [texts[k] for k in order], [cluster[k] for k in order]


def pairs_at(sets, threshold):
    """All pairs (a < b) at true Jaccard >= threshold, by a sparse product."""
    n = len(sets)
    vals, inv = np.unique(np.concatenate(sets), return_inverse=True)
    rows = np.repeat(np.arange(n), [s.size for s in sets])
    x = sp.csr_matrix((np.ones(inv.size, dtype=np.int32), (rows, inv)), shape=(n, vals.size))
    inter = sp.triu(x @ x.T, k=1).tocoo()
    size = np.array([s.size for s in sets])
    j = inter.data / (size[inter.row] + size[inter.col] - inter.data)
    sel = j >= threshold
    return set(zip(inter.row[sel].tolist(), inter.col[sel].tolist()))


def greedy(n, cand_of, is_dup):
    """Lowest index first; keeper = first kept candidate that is a duplicate."""
    keeper, kept = list(range(n)), []
    for v in range(n):
        hit = next((u for u in cand_of(v, kept) if is_dup(u, v)), None)
        if hit is None:
            kept.append(v)
        else:
            keeper[v] = hit
    return keeper


def score(name, keeper, sets, near, threshold, cpu):
    n = len(keeper)
    dropped = [d for d in range(n) if keeper[d] != d]
    ok = sum(mh.jaccard_sorted(sets[d], sets[keeper[d]]) >= threshold for d in dropped)
    partnered = {a for p in near for a in p}
    orphans = sum(d not in partnered for d in dropped)
    kept = set(range(n)) - set(dropped)
    kept_near = sum(a in kept and b in kept for a, b in near)
    print(f"| {name} | {len(kept):,} | {len(dropped):,} | {ok / max(len(dropped), 1):.3f} | {orphans} | {kept_near} | "
          f"{cpu:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clusters", default="20x41,10x401", help="COUNTxSIZE,...")
    ap.add_argument("--template", type=int, default=60, help="boilerplate words prepended to every document")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sizes = [tuple(int(x) for x in c.split("x")) for c in args.clusters.split(",")]
    texts, _ = corpus(sizes, args.template, args.seed)
    t = args.threshold
    sets = [mh.shingle_set64(x) for x in texts]
    near = pairs_at(sets, t)
    print(f"{len(texts):,} documents in clusters {args.clusters} (+{args.template} boilerplate words each); "
          f"{len(near):,} pairs at J >= {t}\n")
    print("| system | kept | dropped | drop precision | dropped without any partner at J >= t | kept pairs at J >= t | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for mode in ("greedy", "components"):
        c0 = time.process_time()
        res = near_duplicates(texts, threshold=t, clusters=mode)
        score(f"minhash_dedup, {mode}", res.keeper, sets, near, t, time.process_time() - c0)
    nb: dict[int, set[int]] = {}
    for a, b in near:
        nb.setdefault(b, set()).add(a)
    c0 = time.process_time()
    keeper = greedy(len(texts), lambda v, kept: [u for u in kept if u in nb.get(v, ())], lambda u, v: True)
    score("exact greedy over all pairs", keeper, sets, near, t, time.process_time() - c0)
    from datasketch import MinHash, MinHashLSH

    c0 = time.process_time()
    lsh = MinHashLSH(threshold=t, num_perm=112)
    sigs = []
    for x in texts:
        m = MinHash(num_perm=112)
        m.update_batch(mh.shingles(x))
        sigs.append(m)
    keeper = list(range(len(texts)))
    for v in range(len(texts)):  # the index holds kept documents only, so its answers are kept candidates
        hit = next((u for u in sorted(lsh.query(sigs[v])) if mh.jaccard_sorted(sets[u], sets[v]) >= t), None)
        if hit is None:
            lsh.insert(v, sigs[v])
        else:
            keeper[v] = hit
    score("datasketch MinHashLSH + verification, greedy", keeper, sets, near, t, time.process_time() - c0)


if __name__ == "__main__":
    main()
