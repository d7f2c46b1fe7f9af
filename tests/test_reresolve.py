"""Which documents a dedup stage re-resolves after a retune (pipeline/engine/reresolve.py)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.engine.reresolve import affected, components
from stages.dedup.exact import ExactDedup
from stages.dedup.lines import LineDedup
from stages.dedup.near import MinhashDedup


def _bands(rows: list[list[int]]) -> pa.Array:
    width = len(rows[0]) if rows else 2
    return pa.FixedSizeListArray.from_arrays(pa.array([k for r in rows for k in r], pa.uint64()), width)


def test_components_link_documents_sharing_any_nonzero_key():
    keys = np.array([[1, 2], [3, 2], [5, 6], [0, 0], [6, 7], [0, 0]], dtype=np.uint64)
    comp = components(keys)
    assert comp[0] == comp[1] and comp[2] == comp[4]
    assert len({comp[0], comp[2], comp[3], comp[5]}) == 4  # key 0 (no shingles) links nothing


def test_components_are_scipys_on_random_graphs():
    """The numpy union-find groups documents as scipy's connected_components does, numbered by
    each group's first document."""
    scipy = __import__("pytest").importorskip("scipy.sparse.csgraph")
    from scipy.sparse import coo_matrix

    rng = np.random.default_rng(4)
    for n, width, vocab in [(1, 1, 3), (50, 2, 40), (400, 6, 300), (2000, 14, 5000), (300, 3, 2)]:
        keys = rng.integers(0, vocab, size=(n, width)).astype(np.uint64)  # 0: no key
        comp = components(keys)
        # scipy on the graph linking every two documents that share a nonzero key (in any column)
        a, b = [], []
        for v in set(keys[keys != 0].tolist()):
            docs = np.flatnonzero((keys == v).any(axis=1))
            a += [docs[0]] * len(docs)
            b += docs.tolist()
        a, b = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
        _, ref = scipy.connected_components(coo_matrix((np.ones(a.size), (a, b)), shape=(n, n)), directed=False)
        assert np.array_equal(comp, ref)


def test_only_groups_with_an_added_removed_or_rescored_document_are_redone():
    old_ids = ["a", "b", "c", "d", "e"]
    old = _bands([[1, 10], [1, 11], [2, 12], [2, 13], [3, 14]])  # groups {a,b} {c,d} {e}
    # d no longer reaches the stage, f is new and shares a key with e, a and b are unchanged
    new_ids = ["a", "b", "c", "e", "f"]
    new = _bands([[1, 10], [1, 11], [2, 12], [3, 14], [99, 14]])
    mask, comp = affected(new_ids, [new], old_ids, [old], set())
    assert mask.tolist() == [False, False, True, True, True]
    assert comp[3] == comp[4]
    mask, _ = affected(new_ids, [new], old_ids, [old], {"b"})  # b's ranking score moved
    assert mask.tolist() == [True, True, True, True, True]


def test_a_removed_document_that_bridged_two_groups_redoes_both():
    old_ids = ["a", "b", "c"]
    old = _bands([[1, 10], [1, 2], [3, 2]])  # b links a and c
    mask, _ = affected(["a", "c"], [_bands([[1, 10], [3, 2]])], old_ids, [old], set())
    assert mask.tolist() == [True, True]


def test_exact_hashes_group_by_equal_string():
    old_ids = ["a", "b", "c"]
    old = pa.array(["h1", "h1", "h2"])
    new_ids = ["a", "b", "c", "d"]
    new = pa.array(["h1", "h1", "h2", "h2"])  # d, a new copy of c
    mask, _ = affected(new_ids, [new], old_ids, [old], set())
    assert mask.tolist() == [False, False, True, True]
    mask, _ = affected(["a", "b", "c"], [pa.array(["h1", "h1", None])], old_ids, [old], set())
    assert mask.tolist() == [False, False, False]  # a missing hash links nothing


def test_group_keys_name_what_each_dedup_links_by():
    assert ExactDedup().group_keys() == ["text_hash"]
    assert MinhashDedup(sweep_rows=None).group_keys() == ["minhash_bands"]
    assert MinhashDedup(sweep_rows=4).group_keys() == ["minhash_bands", "minhash_sweep"]  # the sweep links too
    assert LineDedup().group_keys() == []
