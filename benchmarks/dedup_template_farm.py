"""minhash_dedup on template farms: many documents sharing a template without being near-duplicates.

Product pages, forum threads and directory listings of one site: a 400-word template plus 60 words
of each page's own (pairwise Jaccard ~0.77 at 5-gram shingles, below the 0.8 threshold), all in
the same few LSH buckets. Planted among them: 1% of the pages get a near-copy (one word changed,
J ~ 0.98), so there is something to drop. Each size runs `near_duplicates` (annotate + the global
step, in this process, default config) and reports CPU seconds (total and global step), the
Jaccard checks, the largest bucket, and whether the decisions equal an exact all-pairs check
(the textbook greedy, lowest index first, over every pair at true Jaccard >= threshold, computed
with a sparse product over the shingles not shared by every page).

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/dedup_template_farm.py --sizes 1000 10000
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

from stages.base import LocalExecutor
from stages.dedup import minhash as mh
from stages.dedup.in_process import run_in_process
from stages.dedup.near import MinhashDedup


def farm(n: int, seed: int = 0, template_words: int = 400, own_words: int = 60, copies: float = 0.01):
    rng = np.random.default_rng(seed)
    template = " ".join(f"w{k}" for k in rng.integers(0, 10**6, template_words))
    texts = [template + " " + " ".join(f"x{k}" for k in rng.integers(0, 10**9, own_words)) for _ in range(n)]
    for k in rng.choice(n, int(n * copies), replace=False):
        w = texts[k].split()
        w[-3] = f"copy{k}"
        texts.append(" ".join(w))
    return texts


def exact_greedy(texts, threshold):
    """Keeper per text of the greedy over all pairs at true Jaccard >= threshold (lowest index first)."""
    sets = [mh.shingle_set64(t) for t in texts]
    n = len(sets)
    vals, inv = np.unique(np.concatenate(sets), return_inverse=True)
    rows = np.repeat(np.arange(n), [s.size for s in sets])
    everywhere = np.bincount(inv, minlength=vals.size) == n  # shared by every text: adds n_all to every pair
    n_all = int(everywhere.sum())
    keep_col = ~everywhere[inv]
    x = sp.csr_matrix((np.ones(int(keep_col.sum()), dtype=np.int32), (rows[keep_col], inv[keep_col])), shape=(n, vals.size))
    inter = (x @ x.T).tocoo()
    sizes = np.array([s.size for s in sets])
    a, b, c = inter.row, inter.col, inter.data + n_all
    sel = a < b
    a, b, c = a[sel], b[sel], c[sel]
    j = c / (sizes[a] + sizes[b] - c)
    nb: dict[int, list[int]] = {}
    for u, v in zip(a[j >= threshold].tolist(), b[j >= threshold].tolist()):
        nb.setdefault(v, []).append(u)
    keeper = list(range(n))
    kept = set()
    for v in range(n):
        hits = sorted(u for u in nb.get(v, ()) if u in kept)
        if hits:
            keeper[v] = hits[0]
        else:
            kept.add(v)
    return keeper


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--clusters", default="greedy", choices=["greedy", "components"])
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        texts = farm(n)
        stage = MinhashDedup(clusters=args.clusters)
        c0 = time.process_time()
        res = run_in_process(stage, texts, LocalExecutor(), None, 100_000, "dup_cluster_id", "dup_cluster_size")
        cpu = time.process_time() - c0
        want = exact_greedy(texts, stage.config.threshold)
        same = res.keeper == want if args.clusters == "greedy" else sorted(res.kept) == sorted(set(want))
        s = stage.stats
        rows.append((n, len(texts), cpu, s["jaccard_checks"], s.get("sweep_jaccard_checks", 0), s["largest_bucket"],
                     len(texts) - len(res.kept), same))
        print(f"{n:,} pages (+{len(texts) - n} copies): CPU {cpu:.1f} s, checks {s['jaccard_checks']:,} "
              f"(sweep {s.get('sweep_jaccard_checks', 0):,}), largest bucket {s['largest_bucket']:,}, "
              f"dropped {len(texts) - len(res.kept)}, same as exact all-pairs greedy: {same}", flush=True)
    base = rows[0]
    print(f"\n| pages | documents | CPU s (annotate + global step) | CPU vs {base[0]:,} | Jaccard checks (main / sweep) "
          "| largest bucket | dropped | decisions = exact all-pairs |")
    print("|---|---|---|---|---|---|---|---|")
    for n, docs, cpu, ch, sw, lb, dr, same in rows:
        print(f"| {n:,} | {docs:,} | {cpu:.1f} | {cpu / base[2]:.1f}x | {ch:,} / {sw:,} | {lb:,} | {dr} | {same} |")


if __name__ == "__main__":
    main()
