"""MinHash LSH near-duplicate removal, global across every shard and source.

annotate: word 5-gram shingles -> MinHash signature (datasketch-identical, stages/dedup/minhash.py) ->
one 64-bit key per LSH band, spilled as `minhash_bands`. resolve, in waves of parallel tasks
(`executor.map`) that exchange partitioned Parquet files in a work location (stages/dedup/io.py;
a local directory or an fsspec URL, no shared POSIX disk needed):
  1. scan (per spill file): (band key, doc) entries bucketed by key range into P partitions, and
     the file's ranking records (id, quality);
  2. bucket (per key partition): documents sharing a key form an LSH bucket. Each bucket of two or
     more documents yields a star (every member linked to the bucket's first document: the
     candidate graph's components with one edge per member, whatever the bucket size) and its
     memberships (key, doc), sent to the member's spill file;
  3. components (stages/dedup/components.py): distributed large-star/small-star over the star
     edges -> each candidate document's candidate component (memory bounded by partition);
  4. gather (per spill file): for its candidate documents, the ranking record, the shared band
     keys and the exact shingle set (text re-read here), bucketed by component;
  5. keepers (per component partition): documents best first (highest quality if asked, then
     lowest id); each is checked by true Jaccard against every *kept* document that shares a
     bucket with it (and against its predecessor in each bucket, for the cluster labels). It is
     dropped iff one of them is >= threshold (the best such becomes its keeper): exactly the
     greedy independent set of the graph of candidate pairs with Jaccard >= threshold, at the
     cost of checks against kept documents only (one per copy in a cluster of identical copies);
     `clusters: components` keeps only the best of each component of the verified edges; in a
     component of 32 or more documents the checks are found through a prefix filter
     (`_Prefixes`: rules out only pairs below the threshold), so a template farm is linear;
  6. decide (per spill file): the decision file, same rows and order as the spill file.
"""
from __future__ import annotations

import itertools
import math
from collections import defaultdict
from typing import Literal, Sequence

import numpy as np
import pyarrow as pa
from pydantic import Field, PrivateAttr, model_validator

from stages.dedup import components as cc
from stages.dedup import io
from stages.dedup import minhash as mh
from stages._arrow import set_column
from stages.base import Executor, GlobalStage, StageConfig
from stages.dedup.in_process import Duplicates, run_in_process

ENTRY_DTYPE = np.dtype([("key", "<u8"), ("doc", "<i8")])
BANDS_COLUMN = "minhash_bands"
SWEEP_COLUMN = "minhash_sweep"  # the sweep's band keys (a second banding of the same signature)


class MinhashDedupConfig(StageConfig):
    ngram: int = Field(5, description="word n-gram shingles (tokenisation: stages/dedup/minhash.py)")
    num_perm: int = Field(112, description="MinHash permutations")
    # Verification removes false positives, so bands x rows favour recall: false_negative_weight 0.995
    # gives 18 x 6 at threshold 0.8 (0.996 candidate probability at the threshold; FineWeb's 14 x 8,
    # weight 0.95, has 0.924), 21 x 4 at 0.7, 11 x 10 at 0.9. Chosen by measurement: kept pairs above
    # the threshold that LSH never paired fell from 292 to 12 (docs/dedup.md "Kept pairs above the threshold").
    bands: int | None = Field(None, description=(
        "LSH bands; bands and rows both null (default): derived from threshold and num_perm with datasketch's "
        "optimal-parameter routine; explicit bands and rows win"))
    rows: int | None = Field(None, description="LSH rows per band (see bands)")
    _derived: bool = PrivateAttr(default=False)
    false_negative_weight: float = Field(
        0.995, description=(
            "weight of false negatives when deriving bands x rows (0.5 = datasketch's MinHashLSH; "
            "0.95 = FineWeb's 14 x 8 at threshold 0.8)"))
    threshold: float = Field(0.8, description=(
        "Jaccard threshold: candidate pairs below it are not duplicates; alone, it also sets bands x rows"))
    seed: int = Field(1, description="seed of the hash permutations")
    scheme: Literal["affine32", "legacy"] = Field(
        "affine32", description="permutation scheme: datasketch >= 2.0's default / < 2.0")
    verify: bool = Field(
        True, description="check candidate pairs by true Jaccard of shingle sets (no LSH false positives)")
    clusters: Literal["greedy", "components"] = Field("greedy", description=(
        "who is dropped: greedy (best first; dropped iff a near duplicate of a kept document sharing a bucket) "
        "or components (keep only the best of each connected component of verified candidate pairs)"))
    keep: Literal["lowest_id", "highest_quality"] = Field(
        "lowest_id", description="best document of a cluster: lowest id, or highest `quality_column` (ties: lowest id)")
    quality_column: str = Field("quality_score", description="the score `keep: highest_quality` ranks by")
    partitions: int | None = Field(None, gt=0, description=(
        "key-range partitions of the global step; null: about partition_entries band entries each, "
        "at least the parallelism (the sweep's too, from the documents the main pass kept). Given: the "
        "sweep uses partitions x sweep bands / bands (rounded up)"))
    partition_entries: int = Field(8_000_000, gt=0, description="band entries per partition when partitions is null (16 B each)")
    work_dir: str | None = Field(None, description=(
        "intermediate files: a local path or fsspec URL (s3://...); null: `_minhash_dedup_work` next to the spill files"))
    sweep_rows: int | None = Field(4, description=(
        "a final sweep among the documents the main pass kept: a second banding of the same signature, "
        "num_perm // sweep_rows bands of sweep_rows rows (4: 28 x 4, candidate probability 0.9999996 at "
        "Jaccard 0.8), verified by true Jaccard, best first like the main pass; it catches kept pairs the "
        "main bands never compared (docs/dedup.md). Costs 8 B per sweep band per document in the spill and "
        "the stored keys. Default 4; null: no sweep"))

    @model_validator(mode="after")
    def _lsh(self):
        if (self.bands is None) != (self.rows is None):
            raise ValueError("give both bands and rows, or neither (derived from threshold)")
        if not 0.0 < self.threshold <= 1.0 or self.ngram < 1 or self.num_perm < 1:
            raise ValueError(f"need 0 < threshold <= 1, ngram >= 1 and num_perm >= 1 (got threshold {self.threshold:g}, "
                             f"ngram {self.ngram}, num_perm {self.num_perm})")
        if not 0.0 < self.false_negative_weight < 1.0:
            raise ValueError("need 0 < false_negative_weight < 1")
        self._derived = self.bands is None
        if self.bands is None:
            self.bands, self.rows = mh.optimal_bands(self.threshold, self.num_perm, self.false_negative_weight)
        if self.bands < 1 or self.rows < 1 or self.bands * self.rows > self.num_perm:
            raise ValueError(f"need bands, rows >= 1 and bands*rows = {self.bands * self.rows} <= num_perm = {self.num_perm}")
        if "sweep_rows" not in self.model_fields_set and self.sweep_rows and 2 * self.sweep_rows > self.num_perm:
            self.sweep_rows = None  # the default sweep needs at least two bands: a tiny signature has none
        if self.sweep_rows is not None and not 1 <= self.sweep_rows <= self.num_perm:
            raise ValueError(f"need 1 <= sweep_rows <= num_perm = {self.num_perm}")
        return self

    @property
    def sweep_bands(self) -> int:
        return self.num_perm // self.sweep_rows if self.sweep_rows else 0

    def lsh_params(self) -> dict:
        """The LSH parameters in use, for the run's log and ledger."""
        b, r, t = self.bands, self.rows, self.threshold
        return {
            "bands": b, "rows": r, "num_perm": self.num_perm, "threshold": t,
            "bands_rows": "derived from threshold" if self._derived else "given",
            "candidate_probability": {f"{j:.2f}": round(mh.candidate_probability(j, b, r), 4)
                                      for j in sorted({max(t - 0.1, 0.0), t, min(t + 0.05, 1.0)})},
        } | ({"sweep": {"bands": self.sweep_bands, "rows": self.sweep_rows,
                        "candidate_probability": round(mh.candidate_probability(t, self.sweep_bands, self.sweep_rows), 7)}}
             if self.sweep_rows else {})


class MinhashDedup(GlobalStage):
    name = "minhash_dedup"
    Config = MinhashDedupConfig
    reasons = ("near_duplicate",)
    decision_keys = ("keep", "quality_column", "threshold", "clusters")
    accepts_dropped_before = True
    keys_private = True
    reads_text = True

    def group_keys(self) -> list[str]:
        """Its spilled band keys (with its final sweep's, which link documents too)."""
        return [f.name for f in self.spill_fields()]

    def ranks_by(self) -> str | None:
        return self.config.quality_column if self.config.keep == "highest_quality" else None

    def __init__(self, config=None, **kwargs):
        super().__init__(config, **kwargs)
        self.stats: dict[str, int] = {}

    def params(self) -> dict:
        return self.config.lsh_params()

    def signal_fields(self) -> list[pa.Field]:
        return [pa.field("dup_cluster_id", pa.string()), pa.field("dup_cluster_size", pa.int32())]

    def signal_descriptions(self) -> dict[str, str]:
        return {"dup_cluster_id": "id of the cluster's best document", "dup_cluster_size": "documents in the cluster"}

    def spill_fields(self) -> list[pa.Field]:
        c = self.config
        sweep = [pa.field(SWEEP_COLUMN, pa.list_(pa.uint64(), c.sweep_bands))] if c.sweep_rows else []
        return [pa.field(BANDS_COLUMN, pa.list_(pa.uint64(), c.bands))] + sweep

    def setup(self) -> None:
        c = self.config
        self._perm = mh.permutations(c.num_perm, c.seed, c.scheme)

    def annotate(self, batch: pa.Table) -> pa.Table:
        self.ensure_setup()
        c = self.config
        sigs = mh.column_signatures(batch.column("text"), c.ngram, *self._perm, c.scheme)
        if batch.column("text").nbytes > RELEASE_BYTES:
            io.release_memory()  # a big batch's words and n-grams: freed memory back before the spill write
        keys = mh.band_keys(sigs, c.bands, c.rows)
        batch = set_column(batch, BANDS_COLUMN, pa.FixedSizeListArray.from_arrays(pa.array(keys.ravel(), pa.uint64()), c.bands))
        if c.sweep_rows:
            sweep = mh.band_keys(sigs, c.sweep_bands, c.sweep_rows)
            batch = set_column(batch, SWEEP_COLUMN,
                               pa.FixedSizeListArray.from_arrays(pa.array(sweep.ravel(), pa.uint64()), c.sweep_bands))
        return batch

    def resolve(self, spill_files: list[str], executor: Executor) -> list[str]:
        c = self.config
        if not spill_files:
            return []
        work = io.work_dir(spill_files, self.name, c.work_dir or self.work_url)
        work.clean()
        nfiles = len(spill_files)
        total = sum(io.num_rows(p) for p in spill_files)
        parts = c.partitions or max(executor.parallelism, math.ceil(total * c.bands / c.partition_entries), 1)
        qcol = c.quality_column if c.keep == "highest_quality" else None
        entries = executor.map(_scan, [(i, p, work, parts, qcol, io.before(self, i), io.keys_path(self, i, p))
                                          for i, p in enumerate(spill_files)])
        buckets = executor.map(_bucket, [(p, work, nfiles, parts) for p in range(parts)])
        comp = cc.label(work, "star", parts, parts, nfiles, io.file_of, executor)
        executor.map(_gather, [(i, p, work, parts, c.ngram, c.verify) for i, p in enumerate(spill_files)])
        kept = executor.map(_keepers, [(p, work, nfiles, qcol is not None, c.clusters == "greedy",
                                        c.threshold, c.verify) for p in range(parts)])
        self.stats = {
            "documents": total, "partitions": parts, "band_entries": sum(entries),
            "buckets": sum(b[0] for b in buckets), "largest_bucket": max([b[1] for b in buckets] or [0]),
            "candidate_documents": comp["nodes"], "candidate_components": comp["components"],
            "components_rounds": comp["rounds"], "jaccard_checks": sum(k[0] for k in kept),
            "edges": sum(k[1] for k in kept), "clusters": sum(k[2] for k in kept),
            "dropped": sum(k[3] for k in kept),
        }
        sweep = None
        sp = parts
        if c.sweep_rows:  # the same waves again, among the documents the main pass kept, on the sweep bands
            # its own partition count: sweep_bands entries per document the main pass kept (at most), so each
            # holds at most partition_entries like the main pass's; explicit partitions: scaled by sweep bands / bands
            kept_docs = total - self.stats["dropped"]
            sp = (max(parts, math.ceil(parts * c.sweep_bands / c.bands)) if c.partitions else
                  max(executor.parallelism, math.ceil(kept_docs * c.sweep_bands / c.partition_entries), 1))
            sweep = io.Work(work.url.rstrip("/") + "/sweep")
            sweep.clean()
            entries = executor.map(_scan, [(i, p, sweep, sp, qcol, io.before(self, i), io.keys_path(self, i, p),
                                            SWEEP_COLUMN, work, parts) for i, p in enumerate(spill_files)])
            executor.map(_bucket, [(p, sweep, nfiles, sp) for p in range(sp)])
            cc.label(sweep, "star", sp, sp, nfiles, io.file_of, executor)
            executor.map(_gather, [(i, p, sweep, sp, c.ngram, c.verify) for i, p in enumerate(spill_files)])
            swept = executor.map(_keepers, [(p, sweep, nfiles, qcol is not None, c.clusters == "greedy",
                                             c.threshold, c.verify) for p in range(sp)])
            self.stats |= {"sweep_partitions": sp, "sweep_band_entries": sum(entries),
                           "sweep_jaccard_checks": sum(k[0] for k in swept), "sweep_dropped": sum(k[3] for k in swept)}
        files = executor.map(_decide, [(i, p, work, parts, sweep, sp) for i, p in enumerate(spill_files)])
        work.clean()
        return files


# -- waves (module-level so executors can pickle them) ---------------------------------------------
def _scan(args) -> int:
    """Wave 1: band entries bucketed by key range; ranking records of every row."""
    i, path, work, parts, qcol, dropped_before, kpath, column, main, main_parts = (args + (BANDS_COLUMN, None, None))[:10]
    io.require_column(kpath, column)
    t = io.read_columns(path, ["id"] + ([qcol] if qcol else []))
    t = t.append_column(column, io.read_columns(kpath, [column]).column(0))
    id_hi, id_lo = io.ids_hex128(t.column("id"), path)
    meta = np.zeros(t.num_rows, dtype=io.RANK_DTYPE)
    meta["id_hi"], meta["id_lo"] = id_hi, id_lo
    meta["q"] = io.quality(t.column(qcol)) if qcol else 0.0
    work.write("meta", i, meta)
    bands = t.column(column).combine_chunks()
    ok = ~np.asarray(bands.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    ok &= io.live_rows(dropped_before, t.num_rows, path)  # dropped by an earlier stage: absent
    if main is not None:  # the sweep: only the documents the main pass (work `main`) kept
        ok[_dropped_rows(main.read("assign", i, main_parts, io.ASSIGN_DTYPE), id_hi, id_lo)] = False
    if not ok.all():
        bands = bands.filter(pa.array(ok))
    width = bands.type.list_size if len(bands) else 1
    keys = np.asarray(bands.flatten().to_numpy(zero_copy_only=False), dtype=np.uint64).reshape(-1, width)
    rows = np.flatnonzero(ok).astype(np.int64)
    doc = np.repeat((np.int64(i) << io.ROW_BITS) | rows, width)
    keys = keys.ravel()
    live = keys != 0  # 0: document without shingles
    rec = np.zeros(int(live.sum()), dtype=ENTRY_DTYPE)
    rec["key"], rec["doc"] = keys[live], doc[live]
    work.write("entries", i, rec, io.hash_partition(rec["key"], parts), parts)
    n = int(rec.size)
    del rec, keys, doc, bands, t
    io.release_memory()  # every wave task ends so: a worker's RSS is its biggest task's, not their sum
    return n


def _bucket(args) -> tuple[int, int]:
    """Wave 2 (per key partition): LSH buckets of two or more documents -> star edges (for the
    components) and memberships (for the keepers). Returns (#buckets, largest bucket).
    Memory: the partition's keys and docs once (16 B per entry), the sort's permutation and one
    permuted copy at a time, then only the entries in buckets of two or more: 40-70 B per entry of
    the partition at the peak, ~130 when every entry is shared (benchmarks/dedup_bucket_memory.py),
    so `partition_entries` bounds a worker's memory in this wave."""
    p, work, nfiles, parts = args
    key, doc = work.read_fields("entries", p, nfiles, ENTRY_DTYPE)
    n = key.size
    if n > 1 and bool((doc[1:] < doc[:-1]).any()):
        o = np.lexsort([doc, key])
    else:  # producers write their docs ascending, file by file: a stable sort by key is by (key, doc)
        o = np.argsort(key, kind="stable")
    key = key[o]
    doc = doc[o]
    del o
    same = key[1:] == key[:-1]
    dup = same & (doc[1:] == doc[:-1])  # a document with two equal band keys counts once
    if dup.any():
        keep = np.concatenate([[True], ~dup])
        key, doc = key[keep], doc[keep]
        del keep
        same = key[1:] == key[:-1]
    del dup
    shared = np.zeros(key.size, dtype=bool)  # in a bucket of two or more
    shared[1:] = same
    shared[:-1] |= same
    del same
    at = np.flatnonzero(shared)
    del shared
    key, doc = key[at], doc[at]
    del at
    new = np.ones(key.size, dtype=bool)
    new[1:] = key[1:] != key[:-1]
    start = np.flatnonzero(new)
    out = int(start.size), (int(np.diff(np.append(start, key.size)).max()) if start.size else int(n > 0))
    first = doc[start[np.cumsum(new) - 1]]  # each entry's bucket's first document
    del start
    cc.write_edges(work, "star", p, parts, first[~new], doc[~new])
    del first, new
    work.write_tables("members", p, pa.table({"key": key, "doc": doc}), io.file_of(doc), nfiles)  # as ENTRY_DTYPE records
    del key, doc
    io.release_memory()
    return out


def _gather(args) -> int:
    """Wave 4 (per spill file): its candidate documents with rank, shared keys and shingle set,
    bucketed by component so that each keeper task sees whole components."""
    i, path, work, parts, ngram, verify = args
    lab = work.read("labels", i, parts, cc.LABEL_DTYPE)
    lab = lab[np.argsort(lab["doc"], kind="stable")]
    mem = work.read("members", i, parts, ENTRY_DTYPE)
    mem = mem[np.lexsort([mem["key"], mem["doc"]])]
    rows = io.row_of(lab["doc"])
    meta = work.read_one("meta", i, io.RANK_DTYPE)[rows]
    counts = np.searchsorted(mem["doc"], lab["doc"], side="right") - np.searchsorted(mem["doc"], lab["doc"])
    koff = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    bucket = io.node_partition(lab["comp"], parts)
    t = pa.table({
        "doc": lab["doc"], "comp": lab["comp"],
        "id_hi": meta["id_hi"], "id_lo": meta["id_lo"], "q": meta["q"],
        "keys": pa.ListArray.from_arrays(pa.array(koff), pa.array(np.ascontiguousarray(mem["key"]), pa.uint64())),
    })
    del mem, meta
    sets: list[list[np.ndarray]] = [[] for _ in range(parts)]
    if verify and rows.size:  # one text at a time, streamed; each set kept as its own array (no concatenation)
        for r, text in io.iter_texts(path, rows.tolist()):
            sets[int(bucket[np.searchsorted(rows, r)])].append(mh.shingle_set64(text, ngram))  # rows ascend
            del text
    order = np.argsort(bucket, kind="stable")
    off = np.concatenate([[0], np.cumsum(np.bincount(bucket, minlength=parts))])
    with work.writer("cand", i, parts, io.exchange.ARROW) as out:  # one file, the buckets in turn
        for b in range(parts):
            if off[b + 1] > off[b]:
                part = t.take(pa.array(order[off[b] : off[b + 1]]))
                if not verify:
                    sets[b] = [np.zeros(0, dtype=np.uint64)] * part.num_rows
                out.arrow(b, _cand_batches(part, sets[b]), count=sum(v.size for v in sets[b]))  # keepers preallocate
                del part
            sets[b] = None
    del t, sets
    io.release_memory()  # the text page and the sets: back to the OS before the next task
    return int(rows.size)


CAND_BATCH_VALUES = 1 << 20  # shingle hashes per record batch of a cand file (8 MB; one big set may exceed it)
RELEASE_BYTES = 16 << 20  # annotate of a batch with this many bytes of text gives freed memory back (io.release_memory)


def _cand_batches(part: pa.Table, sets: list[np.ndarray]):
    """`part` with its `set` column, as record batches of about CAND_BATCH_VALUES hashes: each
    batch concatenates only its own documents' sets, so writing holds the sets once plus a batch."""
    schema = part.schema.append(pa.field("set", pa.large_list(pa.uint64())))
    start = 0
    while start < part.num_rows or (start == 0 and part.num_rows == 0):
        end, total = start, 0
        while end < part.num_rows and (end == start or total + sets[end].size <= CAND_BATCH_VALUES):
            total += sets[end].size
            end += 1
        chunk = sets[start:end]
        soff = np.concatenate([[0], np.cumsum([x.size for x in chunk], dtype=np.int64)]).astype(np.int64)
        values = np.concatenate(chunk) if chunk else np.zeros(0, dtype=np.uint64)
        cols = [c.combine_chunks() for c in part.slice(start, end - start).columns]
        yield pa.RecordBatch.from_arrays(cols + [pa.LargeListArray.from_arrays(pa.array(soff), pa.array(values, pa.uint64()))],
                                         schema=schema)
        del values, chunk, cols
        if part.num_rows == 0:
            return
        start = end


def _read_cand(work: io.Work, p: int, nfiles: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Keeper partition p's candidates from every gather task: the table without its sets, and
    the sets as one uint64 buffer (preallocated from the counts in the files' indexes, filled one record batch
    at a time, so the sets are held once, plus one batch) with offsets."""
    located = work.parts("cand", p, nfiles, io.exchange.ARROW)
    svals = np.empty(sum(part.count for part in located), dtype=np.uint64)
    batches, offs = [], [np.zeros(1, dtype=np.int64)]
    at = 0
    for part in located:
        for batch in work.iter_arrow(part):
            col = batch.column(batch.schema.get_field_index("set"))
            o = col.offsets.to_numpy()
            vals = col.values.to_numpy()[o[0] : o[-1]]
            svals[at : at + vals.size] = vals
            offs.append(o[1:] - o[0] + at)
            at += vals.size
            batches.append(batch.drop_columns(["set"]))
            del vals, o, col, batch
    schema = batches[0].schema.remove_metadata() if batches else None
    t = pa.Table.from_batches([x.replace_schema_metadata(None) for x in batches], schema) if batches else pa.table({})
    return t, svals[:at], np.concatenate(offs)


def _keepers(args) -> tuple[int, int, int, int]:
    """Wave 5 (per component partition): who keeps whom. Returns (#Jaccard checks, #verified
    edges, #clusters of two or more, #dropped)."""
    p, work, nfiles, by_quality, greedy, threshold, verify = args
    t, svals, soff = _read_cand(work, p, nfiles)
    n = t.num_rows
    if n == 0:
        work.write("assign", p, np.zeros(0, dtype=io.ASSIGN_DTYPE), np.zeros(0, dtype=np.int64), nfiles)
        return 0, 0, 0, 0
    doc = t.column("doc").to_numpy()
    id_hi, id_lo = t.column("id_hi").to_numpy(), t.column("id_lo").to_numpy()
    pos = io.rank_positions(id_hi, id_lo, t.column("q").to_numpy() if by_quality else None)
    keys_col = t.column("keys").combine_chunks()
    _, key_ix = np.unique(keys_col.flatten().to_numpy(), return_inverse=True)
    koff = keys_col.offsets.to_numpy()
    keeper, comp_root, checks, edges = _leader_pass(pos, key_ix.ravel(), koff, svals, soff, threshold, verify,
                                                    components=not greedy, comp=t.column("comp").to_numpy())
    roots, root_ix, size = np.unique(comp_root, return_inverse=True, return_counts=True)
    best_pos = np.full(roots.size, n, dtype=np.int64)
    np.minimum.at(best_pos, root_ix, pos)
    by_pos = np.empty(n, dtype=np.int64)
    by_pos[pos] = np.arange(n)
    b = by_pos[best_pos[root_ix]]  # each cluster's best-ranked member
    if not greedy:
        keeper = b
    in_cluster = size[root_ix] > 1
    assign = np.zeros(int(in_cluster.sum()), dtype=io.ASSIGN_DTYPE)
    assign["doc"] = doc[in_cluster]
    assign["c_hi"], assign["c_lo"] = id_hi[b][in_cluster], id_lo[b][in_cluster]
    assign["size"] = size[root_ix][in_cluster]
    assign["k_hi"], assign["k_lo"] = id_hi[keeper][in_cluster], id_lo[keeper][in_cluster]
    work.write("assign", p, assign, io.file_of(assign["doc"]), nfiles)
    dropped = int(np.count_nonzero(keeper != np.arange(n)))
    del svals, t
    io.release_memory()
    return checks, edges, int(np.count_nonzero(size > 1)), dropped


INDEX_MIN = 32  # components at least this big find their candidates through the prefix index


def _leader_pass(pos, key_ix, koff, svals, soff, threshold, verify, components=False, comp=None, index_min=INDEX_MIN):
    """Who keeps whom among the candidate documents of one partition (whole components).

    greedy: documents best first; each is checked against the kept documents that share one of
    its LSH buckets (in rank order; the best match becomes its keeper, none: it is kept). Two
    kept documents that share a bucket were checked when the later one came, so none of them has
    Jaccard >= threshold, and the result equals the lexicographically-first maximal independent
    set of the graph of candidate pairs with Jaccard >= threshold, with one check per copy in a
    cluster of copies instead of all its pairs. Cluster = a kept document and those it keeps.

    components: connected components of that same graph, exactly: a document is checked against
    the earlier members of every other component it shares a bucket with (stopping at the first
    match per component), so every verified pair ends up in one component; the component's best
    document is its keeper. A cluster of copies costs one check per copy.

    Which documents are checked: in a component of fewer than `index_min` documents, every one
    that shares a bucket. In a bigger one (with verification; greedy: once the document's buckets
    hold `index_min` kept documents), only those a prefix filter of
    set-similarity joins (`_Prefixes`) cannot rule out, then sharing a bucket: the filter never
    rules out a pair at Jaccard >= threshold, so the decisions are the same, but a bucket of many
    documents that share a template without being near-duplicates (J ~ 0.77) costs about one
    index probe per document instead of a check against every kept one.
    Returns (keeper index per doc, cluster root per doc, #checks, #verified edges)."""
    n = pos.size
    nkeys = int(key_ix.max()) + 1 if key_ix.size else 0
    sets = [svals[soff[d] : soff[d + 1]] for d in range(n)] if verify else [None] * n
    order = np.argsort(pos).tolist()
    big = np.zeros(n, dtype=bool)
    if verify and n >= index_min:
        if comp is None:
            big[:] = True
        else:
            _, inv, cnt = np.unique(comp, return_inverse=True, return_counts=True)
            big = cnt[inv.ravel()] >= index_min
    keysets = _KeySets(key_ix, koff)
    if not components:
        return _greedy(order, pos.tolist(), key_ix, koff, sets, nkeys, threshold, verify, big.tolist(),
                       lambda: _Prefixes(svals, soff, big, threshold), keysets, index_min)
    pre = _Prefixes(svals, soff, big, threshold) if big.any() else None
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def regroup(g):
        """g (root -> members) keyed by current roots."""
        for r in list(g):
            members = g.pop(r)
            root = find(r)
            if root in g:
                g[root].extend(members)
                continue
            g[root] = members

    def visit(g, d, check):
        """Check d against the members of each other component in g (regrouped)."""
        nonlocal checks, edges
        regroup(g)
        for root, members in g.items():
            if find(root) == find(d):
                continue
            for lo in range(0, len(members), 64):  # chunks: stop at the first match
                chunk = check(members[lo : lo + 64])
                checks += len(chunk)
                hit = _matches(sets, d, chunk, threshold) if verify else chunk
                if hit:  # d joins the component: its root stays, so its member list stays in order
                    edges += 1
                    parent[find(d)] = find(root)
                    break

    groups: list[dict[int, list[int]]] = [{} for _ in range(nkeys)]  # bucket -> root -> members
    index = (defaultdict(dict), defaultdict(dict))  # prefix token -> root -> members (short, long prefixes)
    checks = edges = 0
    for d in order:
        if big[d]:
            short, long = pre.short(d), pre.long(d)
            ok = pre.size_filter(d)
            kd = keysets[d]

            def check(chunk, ok=ok, kd=kd):
                return [c for c in chunk if ok(c) and not kd.isdisjoint(keysets[c])]

            lists: dict[int, list[list[int]]] = {}  # other component -> its member lists in d's index entries
            for probe, table in ((long, index[0]), (short, index[1])):
                for w in probe:
                    g = table.get(w)
                    if g:
                        regroup(g)
                        for root, members in g.items():
                            lists.setdefault(root, []).append(members)
            for root, ls in lists.items():  # each candidate checked once, stopping at the first match
                if find(root) == find(d):
                    continue
                seen: set[int] = set()
                fresh = (c for members in ls for c in members if c not in seen and not seen.add(c))
                while True:
                    chunk = list(itertools.islice(fresh, 64))
                    if not chunk:
                        break
                    chunk = check(chunk)
                    checks += len(chunk)
                    if chunk and (_matches(sets, d, chunk, threshold) if verify else chunk):
                        edges += 1
                        parent[find(d)] = find(root)
                        break
            r = find(d)
            for w in short:
                index[0][w].setdefault(r, []).append(d)
            for w in long:
                index[1][w].setdefault(r, []).append(d)
            continue
        for k in key_ix[koff[d] : koff[d + 1]].tolist():
            g = groups[k]
            visit(g, d, list)
            g.setdefault(find(d), []).append(d)
    root = np.array([find(x) for x in range(n)], dtype=np.int64)
    return root.copy(), root, checks, edges


class _KeySets:
    """Each document's shared LSH buckets as a set, built on first use."""

    def __init__(self, key_ix, koff):
        self.key_ix, self.koff, self.cache = key_ix, koff, {}

    def __getitem__(self, d):
        s = self.cache.get(d)
        if s is None:
            s = self.cache[d] = frozenset(self.key_ix[self.koff[d] : self.koff[d + 1]].tolist())
        return s


class _Prefixes:
    """Prefix filter of set-similarity joins (AllPairs / PPJoin, Bayardo et al. 2007, Xiao et al.
    2008) for the documents `big`: their shingles ranked rarest first within the partition.

    If J(x, y) >= t, then |x & y| >= a = ceil(t / (1 + t) * (|x| + |y|)), and the first shared
    shingle (in that order) lies within the first |x| - a + 1 shingles of x and of y. With
    |y| <= |x|, a >= t |x| and a >= 2t / (1 + t) |y|: the pair shares a shingle within the
    *long* prefix of x (|x| - ceil(t |x|) + 1) and the *short* prefix of y
    (|y| - ceil(2t / (1 + t) |y|) + 1). So probing x's long prefix against the indexed short
    prefixes, and x's short prefix against the long ones, finds every pair at J >= t; with the
    size filter (t |x| <= |y| <= |x| / t) it rules out nothing else than pairs below t. Documents
    sharing a template share its (frequent, so late) shingles; the short prefix holds the
    document's own rare shingles as long as its own part keeps it below the threshold, so they
    meet in no index list."""

    EPS = 1e-6  # prefixes one shingle too long rather than too short under rounding

    def __init__(self, svals, soff, big, t):
        sizes = np.diff(soff)
        keep = np.repeat(big, sizes)
        owner = np.repeat(np.arange(sizes.size), sizes)[keep]
        vals = svals[keep]
        _, inv, cnt = np.unique(vals, return_inverse=True, return_counts=True)
        rank = np.empty(cnt.size, dtype=np.int64)
        rank[np.lexsort([np.arange(cnt.size), cnt])] = np.arange(cnt.size)  # rarest first, then by hash
        tok = rank[inv.ravel()]
        o = np.lexsort([tok, owner])
        self.tok = tok[o]
        bsizes = np.where(big, sizes, 0)
        self.off = np.concatenate([[0], np.cumsum(bsizes)])
        s = bsizes.astype(np.float64)
        self.nlong = np.where(bsizes > 0, bsizes - np.ceil(t * s - self.EPS) + 1, 0).astype(np.int64)
        self.nshort = np.where(bsizes > 0, bsizes - np.ceil(2 * t / (1 + t) * s - self.EPS) + 1, 0).astype(np.int64)
        self.sizes, self.t = sizes, t

    def long(self, d):
        return self.tok[self.off[d] : self.off[d] + self.nlong[d]].tolist()

    def short(self, d):
        return self.tok[self.off[d] : self.off[d] + self.nshort[d]].tolist()

    def size_filter(self, d):
        lo, hi = self.t * self.sizes[d] - self.EPS, self.sizes[d] / self.t + self.EPS
        sizes = self.sizes
        return lambda c: lo <= sizes[c] <= hi


def _greedy(order, posl, key_ix, koff, sets, nkeys, threshold, verify, big=None, make_pre=None, keysets=None,
            index_min=INDEX_MIN):
    """The greedy pass. A document of a big component whose buckets hold at least index_min kept
    documents finds its candidates through the prefix index (built on first need, with every
    kept document of a big component); otherwise from its buckets' kept documents."""
    kept_in: list[list[int]] = [[] for _ in range(nkeys)]
    pre, index, kept_big = None, None, []  # prefix token -> kept documents (short, long prefixes)
    keeper = np.arange(len(posl), dtype=np.int64)
    checks = edges = 0

    def add(y):
        for w in pre.short(y):
            index[0][w].append(y)
        for w in pre.long(y):
            index[1][w].append(y)

    for d in order:
        ks = key_ix[koff[d] : koff[d + 1]].tolist()
        cands = set()
        if big is not None and big[d] and sum(len(kept_in[k]) for k in ks) >= index_min:
            if pre is None:
                pre, index = make_pre(), (defaultdict(list), defaultdict(list))
                for y in kept_big:
                    add(y)
            for w in pre.long(d):
                cands.update(index[0].get(w, ()))
            for w in pre.short(d):
                cands.update(index[1].get(w, ()))
            if cands:
                ok, kd = pre.size_filter(d), keysets[d]
                cands = {c for c in cands if ok(c) and not kd.isdisjoint(keysets[c])}
        else:
            for k in ks:
                cands.update(kept_in[k])
        if cands:
            ranked = sorted(cands, key=posl.__getitem__)
            checks += len(ranked)
            hits = _matches(sets, d, ranked, threshold) if verify else ranked
            if hits:
                edges += len(hits)
                keeper[d] = hits[0]
                continue
        for k in ks:
            kept_in[k].append(d)
        if big is not None and big[d]:
            if pre is None:
                kept_big.append(d)
            else:
                add(d)
    return keeper, keeper.copy(), checks, edges


def _matches(sets: list, d: int, cands: list[int], threshold: float) -> list[int]:
    """The candidates (in the given order) whose true Jaccard with document d is >= threshold;
    many candidates at once in one vectorised lookup of their shingles in d's sorted set (each
    candidate's set is distinct, so per-candidate hit counts are the intersections, however many
    shingles the candidates share among themselves)."""
    sd = sets[d]
    if len(cands) <= 8:
        return [c for c in cands if mh.jaccard_sorted(sd, sets[c]) >= threshold]
    sizes = np.fromiter((sets[c].size for c in cands), dtype=np.int64, count=len(cands))
    flat = np.concatenate([sets[c] for c in cands])
    owner = np.repeat(np.arange(len(cands)), sizes)
    if sd.size:
        at = np.searchsorted(sd, flat)
        at[at == sd.size] = 0
        inter = np.bincount(owner[sd[at] == flat], minlength=len(cands))
    else:
        inter = np.zeros(len(cands), dtype=np.int64)
    union = sd.size + sizes - inter
    ok = (union > 0) & (inter / np.maximum(union, 1) >= threshold)  # the same division as jaccard_sorted
    return [c for c, y in zip(cands, ok.tolist()) if y]


def _dropped_rows(assign: np.ndarray, id_hi: np.ndarray, id_lo: np.ndarray) -> np.ndarray:
    """Rows (of one spill file) whose assignment names another document as keeper."""
    rows = io.row_of(assign["doc"])
    return rows[(assign["k_hi"] != id_hi[rows]) | (assign["k_lo"] != id_lo[rows])]


def _decide(args) -> str:
    """Wave 6 (per spill file): the decision file. With a sweep (work `sweep`), a document the
    sweep drops takes the sweep's assignment (its keeper, its sweep cluster); documents the main
    pass dropped keep theirs, even when their keeper was dropped by the sweep."""
    i, path, work, parts, sweep, sweep_parts = (args + (None, None))[:6]
    assign = work.read("assign", i, parts, io.ASSIGN_DTYPE)
    if sweep is not None:
        later = sweep.read("assign", i, sweep_parts or parts, io.ASSIGN_DTYPE)
        if later.size:
            id_hi, id_lo = io.ids_hex128(io.read_columns(path, ["id"]).column("id"), path)
            gone = np.isin(io.row_of(later["doc"]), _dropped_rows(later, id_hi, id_lo))
            later = later[gone]
            assign = np.concatenate([assign[~np.isin(assign["doc"], later["doc"])], later])
    return io.write_decisions(path, work, f"f{i}.parquet", assign, "near_duplicate",
                              size_col="dup_cluster_size", cluster_col="dup_cluster_id")


# -- in-process entry point -----------------------------------------------------------------------
def near_duplicates(texts: Sequence[str | None], executor: Executor | None = None, *,
                    quality: Sequence[float] | None = None, work_dir: str | None = None,
                    shard_size: int = 100_000, **config) -> Duplicates:
    """Near-duplicate clusters of `texts` by the pipeline's own `minhash_dedup` code (config keys
    as in a recipe). Survivors: lowest index, or highest `quality` with keep: highest_quality."""
    return run_in_process(MinhashDedup(**config), texts, executor, work_dir, shard_size,
                          "dup_cluster_id", "dup_cluster_size", quality)
