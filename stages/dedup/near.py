"""MinHash LSH near-duplicate removal, global across every shard and source.

annotate: word 5-gram shingles -> MinHash signature (datasketch-identical, stages/dedup/minhash.py) ->
one 64-bit key per LSH band, spilled as `minhash_bands`. resolve, in waves of parallel tasks
(`executor.map`) that exchange bucketed numpy files in a work directory (stages/dedup/io.py):
  1. scan (per spill file): (band key, doc) entries bucketed by key hash range into P partitions,
     and the file's ranking records (id, quality);
  2. bucket (per partition): sort by key; documents sharing a key are candidate pairs. Edges:
     all pairs in buckets of at most `max_bucket_pairs` documents, otherwise a star from the
     lowest doc plus a chain (only the star without verification: same components, fewer edges);
  3. shingle sets (per spill file, verify only): the text of candidate documents only is re-read
     from the spill file and turned into sorted 64-bit shingle hashes;
  4. verify (per spill file of the lower doc): keep edges whose true Jaccard >= threshold;
  5. driver: connected components (scipy, compiled; the one serial step), clustered documents and
     edges written bucketed by component;
  6. keepers (per component partition): `dup_cluster_id` = the component's best document
     (highest quality if asked, then lowest id), its size, and who is dropped: greedily best-first
     over verified edges (or all but the best, `clusters: components`);
  7. decide (per spill file): the decision file, same rows and order as the spill file.
Memory (measured, docs/dedup.md): a wave-2 task ~90 bytes x (documents x bands / P); the driver
tens of bytes per clustered document; every other task is bounded by one spill file or partition.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field, model_validator

from stages.dedup import io
from stages.dedup import minhash as mh
from stages._arrow import set_column
from stages.base import Executor, GlobalStage, StageConfig

ENTRY_DTYPE = np.dtype([("key", "<u8"), ("doc", "<i8")])
EDGE_DTYPE = np.dtype([("a", "<i8"), ("b", "<i8")])
CNODE_DTYPE = np.dtype([("doc", "<i8"), ("comp", "<i8")])
BANDS_COLUMN = "minhash_bands"


class MinhashDedupConfig(StageConfig):
    ngram: int = Field(5, description="word n-gram shingles (tokenisation: stages/dedup/minhash.py)")
    num_perm: int = Field(112, description="MinHash permutations")
    # Verification removes false positives, so the default favours recall: 0.9 gives >= 0.95 recall
    # at threshold + 0.05 for thresholds 0.7-0.9 at 112 permutations (docs/dedup.md).
    bands: int | None = Field(14, description=(
        "LSH bands (FineWeb: 14 x 8 of 112); bands and rows both null: derived from threshold and num_perm "
        "with datasketch's optimal-parameter routine"))
    rows: int | None = Field(8, description="LSH rows per band (see bands)")
    false_negative_weight: float = Field(
        0.9, description="weight of false negatives when deriving bands x rows (0.5 = datasketch's MinHashLSH)")
    threshold: float = Field(0.8, description="Jaccard threshold: candidate pairs below it are dropped by verification")
    seed: int = Field(1, description="seed of the hash permutations")
    scheme: Literal["affine32", "legacy"] = Field(
        "affine32", description="permutation scheme: datasketch >= 2.0's default / < 2.0")
    verify: bool = Field(
        True, description="check candidate pairs by true Jaccard of shingle sets (no LSH false positives)")
    clusters: Literal["greedy", "components"] = Field("greedy", description=(
        "who is dropped in a cluster: greedy (best first; drop a document only if it is a near duplicate "
        "of a kept one) or components (keep only each connected component's best)"))
    max_bucket_pairs: int = Field(8, description="buckets up to this size yield all pairs for verification")
    keep: Literal["lowest_id", "highest_quality"] = Field(
        "lowest_id", description="best document of a cluster: lowest id, or highest `quality_column` (ties: lowest id)")
    quality_column: str = Field("quality_score", description="the score `keep: highest_quality` ranks by")
    partitions: int | None = Field(None, description=(
        "key-range partitions of the bucketing wave; null: about partition_entries band entries each, "
        "at least the parallelism"))
    partition_entries: int = Field(8_000_000, description="band entries per partition when partitions is null (16 B each)")
    work_dir: str | None = Field(
        None, description="intermediate files (shared storage); null: `_minhash_dedup_work` next to the spill files")

    @model_validator(mode="after")
    def _lsh(self):
        if (self.bands is None) != (self.rows is None):
            raise ValueError("give both bands and rows, or neither (derived from threshold)")
        if self.bands is None:
            self.bands, self.rows = mh.optimal_bands(self.threshold, self.num_perm, self.false_negative_weight)
        if self.bands * self.rows > self.num_perm:
            raise ValueError(f"bands*rows = {self.bands * self.rows} > num_perm = {self.num_perm}")
        if not 0.0 < self.threshold <= 1.0 or self.ngram < 1 or self.max_bucket_pairs < 2:
            raise ValueError("need 0 < threshold <= 1, ngram >= 1, max_bucket_pairs >= 2")
        if not 0.0 < self.false_negative_weight < 1.0:
            raise ValueError("need 0 < false_negative_weight < 1")
        return self


class MinhashDedup(GlobalStage):
    name = "minhash_dedup"
    Config = MinhashDedupConfig
    reasons = ("near_duplicate",)

    def __init__(self, config=None, **kwargs):
        super().__init__(config, **kwargs)
        self.stats: dict[str, int] = {}

    def signal_fields(self) -> list[pa.Field]:
        return [pa.field("dup_cluster_id", pa.string()), pa.field("dup_cluster_size", pa.int32())]

    def signal_descriptions(self) -> dict[str, str]:
        return {"dup_cluster_id": "id of the cluster's best document", "dup_cluster_size": "documents in the cluster"}

    def spill_fields(self) -> list[pa.Field]:
        return [pa.field(BANDS_COLUMN, pa.list_(pa.uint64(), self.config.bands))]

    def setup(self) -> None:
        c = self.config
        self._perm = mh.permutations(c.num_perm, c.seed, c.scheme)

    def annotate(self, batch: pa.Table) -> pa.Table:
        self.ensure_setup()
        c = self.config
        sh = [mh.shingles(t, c.ngram) for t in batch.column("text").to_pylist()]
        keys = mh.band_keys(mh.signatures(sh, *self._perm, c.scheme), c.bands, c.rows)
        col = pa.FixedSizeListArray.from_arrays(pa.array(keys.ravel(), pa.uint64()), c.bands)
        return set_column(batch, BANDS_COLUMN, col)

    def resolve(self, spill_files: list[str], executor: Executor) -> list[str]:
        c = self.config
        if not spill_files:
            return []
        wd = io.work_dir(spill_files, self.name, c.work_dir)
        nfiles = len(spill_files)
        total = sum(io.num_rows(p) for p in spill_files)
        parts = c.partitions or max(executor.parallelism, math.ceil(total * c.bands / c.partition_entries), 1)
        qcol = c.quality_column if c.keep == "highest_quality" else None
        scans = executor.map(_scan, [(i, p, wd, parts, qcol) for i, p in enumerate(spill_files)])
        pairs = c.max_bucket_pairs if c.verify else 0
        candidate_edges = executor.map(_bucket, [(p, wd, nfiles, pairs) for p in range(parts)])
        self.stats = {"documents": total, "partitions": parts, "band_entries": sum(scans)}
        self.stats["candidate_edges"] = sum(candidate_edges)
        if c.verify:
            executor.map(_shingle_sets, [(j, p, wd, parts, c.ngram) for j, p in enumerate(spill_files)])
            executor.map(_verify, [(i, wd, parts, c.threshold) for i in range(nfiles)])
            edges = np.concatenate([np.load(f) for f in io.work_paths(wd, "verified", nfiles)])
        else:
            edges = np.concatenate([np.load(f) for f in io.work_paths(wd, "edges", parts)])
        edges = _unique_edges(edges)
        self.stats["edges"] = int(edges.size)
        clustered, clusters = _label_components(edges, wd, parts)
        del edges
        dropped = executor.map(
            _keepers, [(p, wd, nfiles, qcol is not None, c.clusters == "greedy") for p in range(parts)]
        )
        self.stats["clustered_documents"] = clustered
        self.stats["clusters"] = clusters
        self.stats["dropped"] = sum(dropped)
        files = executor.map(_decide, [(i, p, wd, parts) for i, p in enumerate(spill_files)])
        io.clean_work_dir(wd)
        return files


# -- waves (module-level so executors can pickle them) ---------------------------------------------
def _scan(args) -> int:
    """Wave 1: band entries bucketed by key range; ranking records of every row."""
    i, path, wd, parts, qcol = args
    io.require_column(path, BANDS_COLUMN)
    t = io.read_columns(path, ["id", BANDS_COLUMN] + ([qcol] if qcol else []))
    id_hi, id_lo = io.ids_hex128(t.column("id"), path)
    meta = np.zeros(t.num_rows, dtype=io.RANK_DTYPE)
    meta["id_hi"], meta["id_lo"] = id_hi, id_lo
    meta["q"] = io.quality(t.column(qcol)) if qcol else 0.0
    np.save(io.work_path(wd, "meta", i), meta)
    bands = t.column(BANDS_COLUMN).combine_chunks()
    ok = ~np.asarray(bands.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if bands.null_count:
        bands = bands.filter(pa.array(ok))
    width = bands.type.list_size if len(bands) else 1
    keys = np.asarray(bands.flatten().to_numpy(zero_copy_only=False), dtype=np.uint64).reshape(-1, width)
    rows = np.flatnonzero(ok).astype(np.int64)
    doc = np.repeat((np.int64(i) << io.ROW_BITS) | rows, width)
    keys = keys.ravel()
    live = keys != 0  # 0: document without shingles
    rec = np.zeros(int(live.sum()), dtype=ENTRY_DTYPE)
    rec["key"], rec["doc"] = keys[live], doc[live]
    io.write_bucketed(io.work_path(wd, "entries", i), rec, io.hash_partition(rec["key"], parts), parts)
    return int(rec.size)


def _bucket(args) -> int:
    """Wave 2: candidate edges of one key range, bucketed by the spill file of their lower doc."""
    p, wd, nfiles, max_pairs = args
    rec = io.read_buckets(io.work_paths(wd, "entries", nfiles), p, ENTRY_DTYPE)
    rec = rec[np.lexsort([rec["doc"], rec["key"]])]
    key, doc = rec["key"], rec["doc"]
    new = np.ones(key.size, dtype=bool)
    new[1:] = key[1:] != key[:-1]
    gid = np.cumsum(new) - 1
    start = np.flatnonzero(new)
    size = np.diff(np.append(start, key.size))[gid] if key.size else np.zeros(0, dtype=np.int64)
    first = start[gid] if key.size else np.zeros(0, dtype=np.int64)
    member = (size > 1) & ~new
    a_parts, b_parts = [doc[first[member]]], [doc[member]]  # star from the lowest doc
    if max_pairs:  # verification needs more than a spanning tree: all pairs of small buckets, a chain in big ones
        for d in range(1, max_pairs):
            i = np.arange(key.size - d)
            same = gid[i] == gid[i + d]
            take = same & ((size[i] <= max_pairs) | (d == 1)) & (first[i] != i)
            a_parts.append(doc[i[take]])
            b_parts.append(doc[i[take] + d])
    edges = np.zeros(sum(x.size for x in a_parts), dtype=EDGE_DTYPE)
    edges["a"], edges["b"] = np.concatenate(a_parts), np.concatenate(b_parts)
    edges = _unique_edges(edges)
    io.write_bucketed(io.work_path(wd, "edges", p), edges, io.file_of(edges["a"]), nfiles)
    nodes = np.unique(np.concatenate([edges["a"], edges["b"]]))
    io.write_bucketed(io.work_path(wd, "nodes", p), nodes, io.file_of(nodes), nfiles)
    return int(edges.size)


def _shingle_sets(args) -> str:
    """Wave 3: sorted 64-bit shingle hashes of this file's candidate documents (text re-read here)."""
    j, path, wd, parts, ngram = args
    rows = np.unique(io.row_of(io.read_buckets(io.work_paths(wd, "nodes", parts), j, np.dtype("<i8"))))
    base = io.work_path(wd, "sets", j, "")
    texts = pq.read_table(path, columns=["text"]).column("text").take(pa.array(rows)).to_pylist() if rows.size else []
    sets = [mh.shingle_set64(t, ngram) for t in texts]
    off = np.zeros(len(sets) + 1, dtype=np.int64)
    off[1:] = np.cumsum([s.size for s in sets])
    np.save(base + ".rows.npy", rows)
    np.save(base + ".off.npy", off)
    np.save(base + ".npy", np.concatenate(sets) if sets else np.zeros(0, dtype=np.uint64))
    return base


class _Sets:
    """Memory-mapped shingle sets of one spill file, looked up by row (only touched pages are read)."""

    def __init__(self, base: str):
        self.rows = np.load(base + ".rows.npy", mmap_mode="r")
        self.off = np.load(base + ".off.npy", mmap_mode="r")
        self.vals = np.load(base + ".npy", mmap_mode="r")

    def get(self, row: int) -> np.ndarray:
        k = int(np.searchsorted(self.rows, row))
        return np.asarray(self.vals[int(self.off[k]) : int(self.off[k + 1])])


def _verify(args) -> int:
    """Wave 4: edges whose lower doc is in spill file i, kept if true Jaccard >= threshold.

    Edges are taken grouped by the partner's spill file, so one partner store is open at a time.
    """
    i, wd, parts, threshold = args
    edges = _unique_edges(io.read_buckets(io.work_paths(wd, "edges", parts), i, EDGE_DTYPE))
    edges = edges[np.lexsort([edges["a"], edges["b"] >> io.ROW_BITS])]
    keep = np.zeros(edges.size, dtype=bool)
    mine = _Sets(io.work_path(wd, "sets", i, ""))
    fb, rb, ra = io.file_of(edges["b"]), io.row_of(edges["b"]), io.row_of(edges["a"])
    bounds = np.flatnonzero(np.diff(fb)) + 1
    for lo, hi in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [edges.size]])):
        if lo == hi:
            continue
        other = mine if fb[lo] == i else _Sets(io.work_path(wd, "sets", int(fb[lo]), ""))
        last_a, sa = -1, None
        for k in range(int(lo), int(hi)):
            if ra[k] != last_a:
                last_a, sa = ra[k], mine.get(int(ra[k]))
            keep[k] = mh.jaccard_sorted(sa, other.get(int(rb[k]))) >= threshold
    np.save(io.work_path(wd, "verified", i), edges[keep])
    return int(keep.sum())


def _unique_edges(edges: np.ndarray) -> np.ndarray:
    if edges.size == 0:
        return edges
    edges = edges[np.lexsort([edges["b"], edges["a"]])]
    keep = np.ones(edges.size, dtype=bool)
    keep[1:] = (edges["a"][1:] != edges["a"][:-1]) | (edges["b"][1:] != edges["b"][:-1])
    return edges[keep]


def _compact(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct docs, int32 index of each edge end in it)."""
    nodes = np.unique(np.concatenate([edges["a"], edges["b"]]))
    ia = np.searchsorted(nodes, edges["a"]).astype(np.int32)  # < 2^31 clustered documents per run
    ib = np.searchsorted(nodes, edges["b"]).astype(np.int32)
    return nodes, ia, ib


def _label_components(edges: np.ndarray, wd: str, parts: int) -> tuple[int, int]:
    """Driver: connected components of the edge graph (scipy, compiled), the only serial step.

    Writes clustered documents and edges bucketed by component (component id mod `parts`), so the
    keeper wave sees whole components. Returns (#clustered documents, #components).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    nodes, ia, ib = _compact(edges)
    if nodes.size:
        graph = coo_matrix((np.ones(ia.size, dtype=np.int8), (ia, ib)), shape=(nodes.size, nodes.size)).tocsr()
        ncomp, comp = connected_components(graph, directed=False)
        del graph
    else:
        ncomp, comp = 0, np.zeros(0, dtype=np.int32)
    cnodes = np.zeros(nodes.size, dtype=CNODE_DTYPE)
    cnodes["doc"], cnodes["comp"] = nodes, comp
    io.write_bucketed(io.work_path(wd, "cnodes", 0), cnodes, comp.astype(np.int64) % parts, parts)
    del cnodes
    io.write_bucketed(io.work_path(wd, "cedges", 0), edges, comp[ia].astype(np.int64) % parts, parts)
    return int(nodes.size), int(ncomp)


def _keepers(args) -> int:
    """Wave 5b (per component partition): each component's best document and who keeps whom."""
    p, wd, nfiles, by_quality, greedy = args
    cn = io.read_bucket(io.work_path(wd, "cnodes", 0), p)
    ce = io.read_bucket(io.work_path(wd, "cedges", 0), p)
    cn = cn[np.argsort(cn["doc"])]
    nodes = np.ascontiguousarray(cn["doc"])
    _, comp = np.unique(cn["comp"], return_inverse=True)
    ia, ib = np.searchsorted(nodes, ce["a"]), np.searchsorted(nodes, ce["b"])
    assign, dropped = _assign(nodes, comp.ravel(), ia, ib, io.work_paths(wd, "meta", nfiles), by_quality, greedy)
    io.write_bucketed(io.work_path(wd, "assign", p), assign, io.file_of(assign["doc"]), nfiles)
    return dropped


def _assign(
    nodes: np.ndarray, comp: np.ndarray, ia: np.ndarray, ib: np.ndarray, meta_paths: list[str],
    by_quality: bool, greedy: bool,
) -> tuple[np.ndarray, int]:
    """Assignments of clustered documents (components 0..k-1 in `comp`), and how many are dropped.

    components: every document but the component's best is dropped (datatrove's behaviour; a
    chain A~B~C drops C even if C is far from A). greedy: documents are visited best first and a
    document is dropped only if it has an edge to a kept document, which becomes its keeper; so
    every dropped document is itself within the threshold of a kept one, and no two kept
    documents share an edge (the lexicographically-first maximal independent set).
    """
    if nodes.size == 0:
        return np.zeros(0, dtype=io.ASSIGN_DTYPE), 0
    rank = np.zeros(nodes.size, dtype=io.RANK_DTYPE)
    files = io.file_of(nodes)
    bounds = np.flatnonzero(np.diff(files)) + 1
    for lo, hi in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [nodes.size]])):
        meta = np.load(meta_paths[int(files[lo])], mmap_mode="r")
        rank[lo:hi] = meta[io.row_of(nodes[lo:hi])]
    pos = io.rank_positions(rank["id_hi"], rank["id_lo"], rank["q"] if by_quality else None)
    by_comp = np.argsort(comp.astype(np.int64) * nodes.size + pos)  # by component, best first
    firsts = np.ones(by_comp.size, dtype=bool)
    firsts[1:] = comp[by_comp[1:]] != comp[by_comp[:-1]]
    best = np.zeros(int(comp.max()) + 1, dtype=np.int64)
    best[comp[by_comp[firsts]]] = by_comp[firsts]
    keeper = _greedy_keepers(ia, ib, pos) if greedy else best[comp]
    assign = np.zeros(nodes.size, dtype=io.ASSIGN_DTYPE)
    assign["doc"] = nodes
    assign["c_hi"], assign["c_lo"] = rank["id_hi"][best[comp]], rank["id_lo"][best[comp]]
    assign["size"] = np.bincount(comp)[comp]
    assign["k_hi"], assign["k_lo"] = rank["id_hi"][keeper], rank["id_lo"][keeper]
    return assign, int(np.count_nonzero(keeper != np.arange(nodes.size)))


def _greedy_keepers(ia: np.ndarray, ib: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """keeper[i] = i if node i is kept, else its best-ranked kept neighbour (pos: 0 = best).

    Computed in rounds, vectorised over edges: a node is decided once all its better-ranked
    neighbours are; it is kept iff none of them is kept. Edges whose worse end is decided are
    pruned, so the total work is the sum of live edges over rounds (a few rounds for stars).
    """
    n = pos.size
    better_first = pos[ia] < pos[ib]
    u = np.where(better_first, ia, ib)  # better end
    v = np.where(better_first, ib, ia)  # worse end
    state = np.zeros(n, dtype=np.int8)  # 0 undecided, 1 kept, 2 dropped
    keeper = np.arange(n, dtype=np.int64)
    while u.size:
        blocked = np.zeros(n, dtype=bool)
        blocked[v[state[u] == 0]] = True
        ready = (state == 0) & ~blocked
        hit = (state[u] == 1) & ready[v]
        hv, hu = v[hit], u[hit]
        o = np.lexsort([pos[hu], hv])
        hv, hu = hv[o], hu[o]
        first = np.ones(hv.size, dtype=bool)
        first[1:] = hv[1:] != hv[:-1]
        state[ready] = 1
        state[hv[first]] = 2
        keeper[hv[first]] = hu[first]
        live = state[v] == 0
        u, v = u[live], v[live]
    return keeper


def _decide(args) -> str:
    """Wave 6 (per spill file): the decision file."""
    i, path, wd, parts = args
    out = io.work_path(wd, "decisions", i, ".parquet")
    return io.write_decisions(
        path, out, io.read_buckets(io.work_paths(wd, "assign", parts), i, io.ASSIGN_DTYPE), "near_duplicate",
        size_col="dup_cluster_size", cluster_col="dup_cluster_id",
    )
