"""Distributed connected components (large-star / small-star over Parquet partitions)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from stages.base import LocalExecutor
from stages.dedup import components as cc
from stages.dedup import io
from tests.helpers import PoolExecutor


def run(tmp_path, a, b, parts, producers=2, ex=None):
    work = io.Work(str(tmp_path / "w"))
    e = io._from_table(cc.both_ways(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)), cc.EDGE_DTYPE)
    for i in range(producers):
        mine = e[i::producers]
        work.write("g", i, mine, io.node_partition(mine["a"], parts), parts)
    stats = cc.label(work, "g", producers, parts, 3, _bucket3, ex or LocalExecutor())
    lab = np.concatenate([work.read("labels", b, parts, cc.LABEL_DTYPE) for b in range(3)])
    return stats, dict(zip(lab["doc"].tolist(), lab["comp"].tolist()))


def _bucket3(doc):
    return (doc % 3).astype(np.int64)


def reference(a, b):
    nodes = np.unique(np.concatenate([a, b]))
    ia, ib = np.searchsorted(nodes, a), np.searchsorted(nodes, b)
    _, comp = connected_components(coo_matrix((np.ones(len(a)), (ia, ib)), shape=(nodes.size,) * 2), directed=False)
    smallest = {}
    for n, c in zip(nodes.tolist(), comp.tolist()):
        smallest[c] = min(smallest.get(c, n), n)
    return {n: smallest[c] for n, c in zip(nodes.tolist(), comp.tolist())}


@pytest.mark.parametrize("parts", [1, 4])
def test_random_graphs_match_scipy(tmp_path, parts):
    rng = np.random.default_rng(parts)
    for k in range(4):
        n = int(rng.integers(5, 400))
        a, b = rng.integers(0, n, 300) * 7919, rng.integers(0, n, 300) * 7919  # sparse node numbers
        keep = a != b
        stats, got = run(tmp_path / f"{k}", a[keep], b[keep], parts)
        want = reference(a[keep], b[keep])
        assert got == want
        assert stats["nodes"] == len(want) and stats["components"] == len(set(want.values()))


def test_long_chain_and_big_star_converge_in_few_rounds(tmp_path):
    n = 10_000
    perm = np.random.default_rng(0).permutation(n)  # a path visiting node numbers in random order
    stats, got = run(tmp_path / "chain", perm[:-1], perm[1:], 4)
    assert set(got.values()) == {0} and len(got) == n
    assert stats["rounds"] <= 30
    stats, got = run(tmp_path / "star", np.full(n - 1, n - 1), np.arange(n - 1), 4)
    assert set(got.values()) == {0} and stats["components"] == 1


@pytest.mark.slow
def test_processes_give_the_same_labels(tmp_path):
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 500, 400), rng.integers(0, 500, 400)
    keep = a != b
    _, one = run(tmp_path / "a", a[keep], b[keep], 3)
    _, two = run(tmp_path / "b", a[keep], b[keep], 3, ex=PoolExecutor(2))
    assert one == two == reference(a[keep], b[keep])
