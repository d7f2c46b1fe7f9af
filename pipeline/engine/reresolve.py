"""Which documents a dedup stage must re-resolve after a retune, from the keys the run stored.

A dedup stage decides each group of documents linked by a shared key on its own: exact dedup per
text hash, MinHash dedup per connected component of the LSH candidate graph (documents sharing a
band key; greedy and components mode both decide inside such a component, since every Jaccard
check is between documents sharing a bucket). So when the documents reaching the stage change,
only the groups of the union graph (old and new documents together) that contain a changed
document can change; every other group is the same group with the same members in both runs,
and its stored decisions stand.

Keys: exact dedup's `text_hash` is a stored signal; MinHash band keys are stored by the run in
`OUT/keys/<label>/` (pipeline/engine/barrier.py, `keys_name`), so a retune never recomputes them.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import storage
from stages._arrow import flat

def read_stored_keys(run: str, label: str) -> pa.Table | None:
    """`id` + stored key columns of every document that reached the global stage `label` in RUN
    (its committed `keys/<label>/` files); None when the run stored none (an older run)."""
    files = storage.committed_files(run, f"keys/{label}")
    if not files:
        return None
    t = pa.concat_tables([storage.read_parquet(f) for f in files], promote_options="default")
    keys = [c for c in t.column_names if c != "id"]
    # a keys wave stores the spill's rows: null keys for documents an earlier stage dropped
    return t.filter(pc.is_valid(t.column(keys[0]))) if keys and t.column(keys[0]).null_count else t


def _key_matrix(col: pa.Array) -> np.ndarray:
    """One row of uint64 keys per document (0: no key): a fixed-size list column as it is (band
    keys), a string column (text hashes) through a dictionary: equal strings, equal keys, exactly."""
    if pa.types.is_fixed_size_list(col.type):
        width = col.type.list_size
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        out = np.zeros((len(col), width), dtype=np.uint64)
        if valid.any():
            vals = pc.fill_null(col.filter(pa.array(valid)).flatten(), 0)
            out[valid] = np.asarray(vals.to_numpy(zero_copy_only=False), dtype=np.uint64).reshape(-1, width)
        return out
    enc = pc.dictionary_encode(col)
    idx = np.asarray(pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return (idx + 1).astype(np.uint64)[:, None]  # null -> 0 (no key)


def components(keys: np.ndarray) -> np.ndarray:
    """Connected components of documents (rows of `keys`) linked by any shared nonzero key,
    numbered 0, 1, ... in the order of each component's first document. Union-find in numpy (hook
    the larger root to the smaller, then point every document at its root, until no link joins two
    roots): scipy's connected_components gives the same groups, but importing scipy.sparse costs a
    retune 0.1-0.15 CPU-s, more than the graph of a retune's dedup groups."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    k = keys.ravel()
    doc = np.repeat(np.arange(n, dtype=np.int64), keys.shape[1])
    live = k != 0
    k, doc = k[live], doc[live]
    o = np.lexsort([doc, k])
    k, doc = k[o], doc[o]
    same = np.zeros(k.size, dtype=bool)
    same[1:] = k[1:] == k[:-1]
    first = np.maximum.accumulate(np.where(same, 0, np.arange(k.size)))  # start of each key's run
    a, b = doc[first[same]], doc[same]
    root = np.arange(n, dtype=np.int64)
    while True:
        ra, rb = root[a], root[b]
        cross = ra != rb
        if not cross.any():
            break
        np.minimum.at(root, np.maximum(ra, rb)[cross], np.minimum(ra, rb)[cross])
        while True:  # every document to its root (roots only ever point to smaller roots: no cycles)
            up = root[root]
            if np.array_equal(up, root):
                break
            root = up
    return np.unique(root, return_inverse=True)[1].astype(np.int64).reshape(-1)


def affected(new_ids: list[str], new_keys: list[pa.Array], old_ids: list[str], old_keys: list[pa.Array],
             changed_ids: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """Mask over the new documents: True where its group in the union graph (new documents, and
    old ones no longer reaching the stage) holds a document that was added, removed or otherwise
    changed (`changed_ids`, e.g. a new ranking score). `*_keys`: one array per key column. Also
    returns each new document's group number."""
    old_set, new_set = set(old_ids), set(new_ids)
    gone = [i for i, d in enumerate(old_ids) if d not in new_set]
    ids = list(new_ids) + [old_ids[i] for i in gone]
    cols = []
    for nk, ok in zip(new_keys, old_keys):
        nk, ok = flat(nk), flat(ok)
        cols.append(_key_matrix(pa.concat_arrays([nk, ok.take(pa.array(gone, pa.int64())).cast(nk.type)])))
    keys = np.concatenate(cols, axis=1)
    comp = components(keys)
    moved = np.array([(d not in old_set) or (d not in new_set) or (d in changed_ids) for d in ids], dtype=bool)
    hit = np.zeros(int(comp.max()) + 1 if comp.size else 0, dtype=bool)
    hit[comp[moved]] = True
    return hit[comp[: len(new_ids)]], comp[: len(new_ids)]
