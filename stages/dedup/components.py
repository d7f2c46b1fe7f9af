"""Connected components of a graph too big for one node: alternating large-star / small-star.

Why this algorithm (Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014; the
one text-dedup's Spark job uses): every round is a map over node partitions that needs only the
edges of its partition, so a task's memory is bounded by its partition (plus the degree of the
biggest hub) whatever the size of the graph or of its components, and the number of rounds grows
like log^2 of the component size (a chain of 10,000 converges in a dozen rounds). The rounds run
as `executor.map` waves over Parquet partitions in a `Work` location (stages/dedup/io.py), so the
same code runs in-process, over Ray actors, and on a cluster with object storage.

Edges are stored in both directions, each under the partition of its first node.
  large-star at u: m = min(u, N(u)); for every neighbour v > u, link v to m;
  small-star at u: m = min(u, smaller neighbours); link each smaller neighbour (and u) to m.
At the fixed point every component is a star around its smallest node, which labels it.
Convergence: each task returns an order-independent checksum of its (deduplicated) input edges;
when a large-star round sees the same edge set as the previous one, nothing changes any more.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from stages.dedup import io

EDGE_DTYPE = np.dtype([("a", "<i8"), ("b", "<i8")])
LABEL_DTYPE = np.dtype([("doc", "<i8"), ("comp", "<i8")])
MAX_ROUNDS = 200


def both_ways(a: np.ndarray, b: np.ndarray) -> pa.Table:
    """Edges (a, b) and (b, a) without self-loops, as a table of EDGE_DTYPE's columns (written as
    they are: a structured array would be copied field by field into one)."""
    keep = a != b
    a, b = a[keep], b[keep]
    return pa.table({"a": np.concatenate([a, b]).astype(np.int64, copy=False),
                     "b": np.concatenate([b, a]).astype(np.int64, copy=False)})


def write_edges(work: io.Work, out: str, p: int, parts: int, a: np.ndarray, b: np.ndarray) -> None:
    """`both_ways(a, b)` written by `io.node_partition` of the first node into `parts` buckets."""
    e = both_ways(a, b)
    work.write_tables(out, p, e, io.node_partition(e.column("a").to_numpy(), parts), parts)


def label(work: io.Work, kind: str, producers: int, parts: int, out_buckets: int, bucket_of, executor) -> dict:
    """Components of the graph whose edges (both directions, bucketed by `io.node_partition(a, parts)`)
    are `work` files `kind` from `producers` producers. Writes `labels`: (doc, comp = smallest doc
    of its component) for every node, bucketed by `bucket_of(doc)` into `out_buckets`. Returns stats."""
    src, n_src = kind, producers
    last = None
    for r in range(MAX_ROUNDS):
        mid, out = f"cc{r}l", f"cc{r}s"
        sums = executor.map(_large_star, [(work, src, n_src, p, parts, mid) for p in range(parts)])
        state = (sum(s[0] for s in sums), sum(s[1] for s in sums) % (1 << 64))
        if state == last:  # the previous round changed nothing: src is the fixed point
            break
        last = state
        executor.map(_small_star, [(work, mid, parts, p, parts, out) for p in range(parts)])
        src, n_src = out, parts
    else:  # pragma: no cover - log^2 bound makes this unreachable for any real graph
        raise RuntimeError("connected components did not converge")
    counts = executor.map(_labels, [(work, src, n_src, p, out_buckets, bucket_of) for p in range(parts)])
    return {"nodes": sum(c[0] for c in counts), "components": sum(c[1] for c in counts), "rounds": r}


def _read(work: io.Work, kind: str, producers: int, p: int) -> tuple[np.ndarray, int, int]:
    """Edges of partition p, sorted by (a, b) and deduplicated; (edges, count, checksum)."""
    e = work.read(kind, p, producers, EDGE_DTYPE)
    if e.size:
        a, b = np.ascontiguousarray(e["a"]), np.ascontiguousarray(e["b"])
        o = np.lexsort([b, a])
        a, b = a[o], b[o]
        keep = np.ones(a.size, dtype=bool)
        keep[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
        e = np.zeros(int(keep.sum()), dtype=EDGE_DTYPE)
        e["a"], e["b"] = a[keep], b[keep]
    with np.errstate(over="ignore"):
        check = int(io.mix64(io.mix64(e["a"]) + e["b"].astype(np.uint64)).sum(dtype=np.uint64)) if e.size else 0
    return e, int(e.size), check


def _groups(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start of each run of equal `a`, group index of each row) for sorted `a`."""
    new = np.ones(a.size, dtype=bool)
    new[1:] = a[1:] != a[:-1]
    return np.flatnonzero(new), np.cumsum(new) - 1


def _large_star(args) -> tuple[int, int]:
    work, src, n_src, p, parts, out = args
    e, n, check = _read(work, src, n_src, p)
    a, b = e["a"], e["b"]
    if a.size:
        start, gid = _groups(a)
        m = np.minimum(np.minimum.reduceat(b, start), a[start])[gid]
        sel = b > a
        write_edges(work, out, p, parts, b[sel], m[sel])
    else:
        write_edges(work, out, p, parts, a, b)
    return n, check


def _small_star(args) -> int:
    work, src, n_src, p, parts, out = args
    e, n, _ = _read(work, src, n_src, p)
    sel = e["b"] < e["a"]
    a, b = e["a"][sel], e["b"][sel]  # only smaller neighbours; sorted by a
    if a.size:
        start, gid = _groups(a)
        m = np.minimum.reduceat(b, start)  # b < a, so this is min(u, smaller neighbours)
        v = np.concatenate([b, a[start]])
        mm = np.concatenate([m[gid], m])
        write_edges(work, out, p, parts, v, mm)
    else:
        write_edges(work, out, p, parts, a, b)
    return n


def _labels(args) -> tuple[int, int]:
    """Every node of partition p with its component (the smallest node it reaches)."""
    work, src, n_src, p, out_buckets, bucket_of = args
    e, _, _ = _read(work, src, n_src, p)
    a, b = e["a"], e["b"]
    lab = np.zeros(0, dtype=LABEL_DTYPE)
    if a.size:
        start, _ = _groups(a)
        lab = np.zeros(start.size, dtype=LABEL_DTYPE)
        lab["doc"] = a[start]
        lab["comp"] = np.minimum(np.minimum.reduceat(b, start), a[start])
    work.write("labels", p, lab, bucket_of(lab["doc"]), out_buckets)
    return int(lab.size), int(np.count_nonzero(lab["comp"] == lab["doc"]))
