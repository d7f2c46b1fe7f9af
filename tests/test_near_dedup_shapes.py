"""minhash_dedup on any cluster shape: cliques, stars and chains of 1 to 10,000 members, across shards.

Band keys are synthetic (so the candidate graph is exactly the planted shape) and texts are token
sets with `ngram: 1` (so the true Jaccard of every pair is planted too); everything after the
spill files is the real resolve. Shapes, with threshold 0.8:
  clique: every member shares one bucket; texts = 40 common tokens + 1 own token (J = 0.95);
  star:   hub and leaves share one bucket; leaf = hub + 8 own tokens (J(hub, leaf) = 0.83,
          J(leaf, leaf) = 0.71): one kept if the hub is best, else the hub is dropped and every
          leaf is kept (each checked against all kept leaves: the quadratic worst case);
  chain:  member i shares a bucket of two with i+1; a window of 40 tokens moving by 4
          (J(i, i+1) = 0.82, J(i, i+2) = 0.67).
"""
from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stages.base import LocalExecutor
from stages.dedup import minhash as mh
from stages.dedup.near import MinhashDedup, near_duplicates

BANDS = 3
T = 0.8


def plant(shapes: list[tuple[str, int]]) -> tuple[list[str], list[list[int]], list[int]]:
    """(texts, shared keys per doc, cluster number per doc) for the planted clusters."""
    texts, keys, cluster = [], [], []
    tok = itertools.count()
    key = itertools.count(1)
    for c, (shape, n) in enumerate(shapes):
        first = len(texts)
        if shape == "clique":
            common, k = [f"t{next(tok)}" for _ in range(40)], next(key)
            for _ in range(n):
                texts.append(" ".join(common + [f"t{next(tok)}"]))
                keys.append([k] if n > 1 else [])
        elif shape == "star":
            hub, k = [f"t{next(tok)}" for _ in range(40)], next(key)
            texts.append(" ".join(hub))
            keys.append([k] if n > 1 else [])
            for _ in range(n - 1):
                texts.append(" ".join(hub + [f"t{next(tok)}" for _ in range(8)]))
                keys.append([k])
        else:  # chain
            base = len(texts) * 10_000
            for j in range(n):
                texts.append(" ".join(f"c{base + 4 * j + x}" for x in range(40)))
                keys.append([])
            for j in range(n - 1):
                k = next(key)
                keys[first + j].append(k)
                keys[first + j + 1].append(k)
        cluster += [c] * n
    return texts, keys, cluster


def doc_ids(n: int, salt: int) -> list[str]:
    """Ids whose order is unrelated to the shape (a hash), so any member may be the best."""
    return [xxhash.xxh3_128_hexdigest(f"{salt}:{k}") for k in range(n)]


def spill_synthetic(tmp_path, texts, keys, ids, shards: int, rng) -> list[str]:
    """Spill files with the planted band keys; unused bands get a key of their own."""
    n = len(texts)
    bands = np.zeros((n, BANDS), dtype=np.uint64)
    for d, ks in enumerate(keys):
        own = [(1 << 62) + d * BANDS + b for b in range(BANDS)]
        row = (list(ks) + own)[:BANDS] if len(ks) <= BANDS else None
        if row is None:  # more shared keys than bands: spread over extra rows is not possible
            raise AssertionError("plant fewer keys per document than bands")
        bands[d] = row
    order = rng.permutation(n)
    paths = []
    for s in range(shards):
        rows = np.sort(order[s::shards])
        t = pa.table({
            "id": pa.array([ids[r] for r in rows], pa.string()),
            "text": pa.array([texts[r] for r in rows], pa.string()),
            "minhash_bands": pa.FixedSizeListArray.from_arrays(pa.array(bands[rows].ravel(), pa.uint64()), BANDS),
        })
        p = tmp_path / f"part-{s}.parquet"
        pq.write_table(t, p)
        paths.append(str(p))
    return paths


def resolve(paths, **cfg) -> dict[str, dict]:
    stage = MinhashDedup(ngram=1, num_perm=BANDS, bands=BANDS, rows=1, threshold=T, **cfg)
    files = stage.resolve(paths, LocalExecutor())
    return {r["id"]: r for f in files for r in pq.read_table(f).to_pylist()}


def check(texts, keys, cluster, ids, rows, clusters):
    """The guarantees, checked against every candidate pair (documents sharing a bucket)."""
    sets = [mh.shingle_set64(t, 1) for t in texts]
    index = {i: d for d, i in enumerate(ids)}
    kept = [d for d in range(len(texts)) if rows[ids[d]]["drop_reason"] is None]
    by_key: dict[int, list[int]] = {}
    for d, ks in enumerate(keys):
        for k in ks:
            by_key.setdefault(k, []).append(d)
    # every dropped document names a kept keeper that is a verified near-duplicate of it
    for d in range(len(texts)):
        r = rows[ids[d]]
        if r["drop_reason"] is not None:
            k = index[r["drop_detail"]]
            assert rows[ids[k]]["drop_reason"] is None
            if clusters == "greedy":
                assert set(keys[k]) & set(keys[d]) and mh.jaccard_sorted(sets[d], sets[k]) >= T
    if clusters == "greedy":  # no two kept documents sharing a bucket are near-duplicates
        kept_set = set(kept)
        for members in by_key.values():
            live = [d for d in members if d in kept_set]
            if len(live) > 200:  # a sample of the pairs of a big bucket
                live = [live[j] for j in np.random.default_rng(0).choice(len(live), 200, replace=False)]
            for a, b in itertools.combinations(live, 2):
                assert mh.jaccard_sorted(sets[a], sets[b]) < T
    else:  # every planted shape is connected at J >= T: exactly one kept per cluster
        per = np.bincount(np.array(cluster)[kept], minlength=max(cluster) + 1)
        assert per.tolist() == [1] * (max(cluster) + 1)


def expected_greedy_kept(texts, keys, ids) -> set[int]:
    """The textbook greedy (best = lowest id first) on candidate pairs with Jaccard >= T."""
    sets = [mh.shingle_set64(t, 1) for t in texts]
    kept: list[int] = []
    for d in sorted(range(len(texts)), key=lambda k: ids[k]):
        if not any(set(keys[u]) & set(keys[d]) and mh.jaccard_sorted(sets[u], sets[d]) >= T for u in kept):
            kept.append(d)
    return set(kept)


shape = st.tuples(st.sampled_from(["clique", "star", "chain"]), st.integers(1, 40))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=st.lists(shape, min_size=1, max_size=5), shards=st.integers(1, 8), parts=st.integers(1, 4),
       salt=st.integers(0, 1000), clusters=st.sampled_from(["greedy", "components"]))
@pytest.mark.slow
def test_any_shape_property(tmp_path_factory, shapes, shards, parts, salt, clusters):
    texts, keys, cluster = plant(shapes)
    ids = doc_ids(len(texts), salt)
    rng = np.random.default_rng(salt)
    paths = spill_synthetic(tmp_path_factory.mktemp("s"), texts, keys, ids, shards, rng)
    rows = resolve(paths, clusters=clusters, partitions=parts)
    check(texts, keys, cluster, ids, rows, clusters)
    if clusters == "greedy":
        got = {d for d in range(len(texts)) if rows[ids[d]]["drop_reason"] is None}
        assert got == expected_greedy_kept(texts, keys, ids)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["clique", "star", "chain"])
@pytest.mark.parametrize("clusters", ["greedy", "components"])
def test_big_shapes(tmp_path, shape, clusters):
    """10,000 members over 8 shards (plus small clusters around them), both survivor modes."""
    shapes = [(shape, 10_000), ("clique", 3), ("chain", 5), ("star", 4), ("clique", 1)]
    texts, keys, cluster = plant(shapes)
    ids = doc_ids(len(texts), 7)
    ids[0] = "0" * 32  # the hub (or first member) is the best: the leaf-first order is tested below
    paths = spill_synthetic(tmp_path, texts, keys, ids, 8, np.random.default_rng(0))
    rows = resolve(paths, clusters=clusters, partitions=3)
    check(texts, keys, cluster, ids, rows, clusters)
    kept = [d for d in range(len(texts)) if rows[ids[d]]["drop_reason"] is None]
    big = [d for d in kept if cluster[d] == 0]
    if clusters == "components" or shape != "chain":
        assert big == [0]
    else:  # a path: greedy keeps between a third and a half
        assert 3_333 <= len(big) <= 5_000
    if clusters == "components":
        assert {rows[ids[d]]["dup_cluster_size"] for d in range(10_000)} == {10_000}


def test_star_with_a_leaf_first(tmp_path):
    """The worst order for greedy: the best document is a leaf, so the hub is dropped and every
    other leaf (J = 0.71 to each other) is kept after a check against every kept leaf."""
    texts, keys, cluster = plant([("star", 800), ("clique", 4)])
    ids = doc_ids(len(texts), 3)
    ids[1] = "0" * 32  # a leaf
    paths = spill_synthetic(tmp_path, texts, keys, ids, 4, np.random.default_rng(1))
    rows = resolve(paths, clusters="greedy", partitions=2)
    check(texts, keys, cluster, ids, rows, "greedy")
    kept = [d for d in range(len(texts)) if rows[ids[d]]["drop_reason"] is None]
    assert [d for d in kept if cluster[d] == 0] == list(range(1, 800))
    assert rows[ids[0]]["drop_detail"] == ids[1]


@pytest.mark.slow
def test_ten_thousand_identical_documents_over_eight_shards(tmp_path):
    """Real annotate (MinHash signatures and band keys), 8 shards: exactly one survivor."""
    text = " ".join(f"word{k % 97} x{k}" for k in range(100))
    stage = MinhashDedup()
    paths = []
    ids = doc_ids(10_000, 1)
    for s in range(8):
        rows = list(range(s, 10_000, 8))
        t = pa.table({"id": [ids[r] for r in rows], "text": [text] * len(rows)})
        p = tmp_path / f"part-{s}.parquet"
        pq.write_table(stage.annotate(t), p)
        paths.append(str(p))
    files = stage.resolve(paths, LocalExecutor())
    out = pa.concat_tables([pq.read_table(f) for f in files])
    reasons = out.column("drop_reason").to_pylist()
    assert reasons.count(None) == 1
    assert out.column("id").to_pylist()[reasons.index(None)] == min(ids)
    assert set(out.column("dup_cluster_size").to_pylist()) == {10_000}
    assert stage.stats["jaccard_checks"] < 3 * 10_000  # one check per copy, not all pairs


def test_issue_examples_in_process():
    """The issue's reproductions through the in-process entry point (no Ray, no recipe)."""
    rng = np.random.default_rng(3)
    vocab = [f"w{k}" for k in range(3000)]

    def doc():
        return [vocab[k] for k in rng.integers(0, 3000, 300)]

    same = " ".join(doc())
    assert near_duplicates([same] * 20).kept == [0]
    base = doc()
    near40 = [" ".join(base[:-1] + [f"last{k}"]) for k in range(40)]
    assert len(near_duplicates(near40).kept) == 1
    near200 = [" ".join(base[:-1] + [f"end{k}"]) for k in range(200)]
    assert len(near_duplicates(near200, shard_size=50).kept) == 1  # 4 shards
    a, b = doc(), doc()
    mixed = [" ".join(a[:-1] + [f"a{k}"]) for k in range(60)] + [" ".join(b[:-1] + [f"b{k}"]) for k in range(60)]
    mixed += [" ".join(doc()) for _ in range(10)]
    res = near_duplicates(mixed)
    assert len(res.kept) == 12 and res.kept[:2] == [0, 60]
    assert res.keeper[5] == 0 and res.cluster[70] == 60 and res.cluster_size[70] == 60


@pytest.mark.slow
def test_pipeline_end_to_end_in_process_and_on_ray(tmp_path, ray_local):
    """The issue's cases through `refinery run`'s runner: one kept per cluster, same ids on 1 and 2
    Ray workers as in-process, and the LSH parameters in the ledger."""
    import json

    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.runner import run
    from tests.helpers import kept_ids, write_jsonl, write_recipe

    rng = np.random.default_rng(9)
    vocab = [f"w{k}" for k in range(3000)]

    def doc():
        return [vocab[k] for k in rng.integers(0, 3000, 300)]

    same, a, b = " ".join(doc()), doc(), doc()
    texts = [same] * 20 + [" ".join(a[:-1] + [f"a{k}"]) for k in range(60)]
    texts += [" ".join(b[:-1] + [f"b{k}"]) for k in range(60)] + [" ".join(doc()) for _ in range(10)]
    order = rng.permutation(len(texts))
    for s in range(4):
        write_jsonl(tmp_path / "in" / f"s{s}.jsonl", [{"text": texts[k]} for k in order[s::4]])
    recipe = load_recipe(str(write_recipe(tmp_path / "r.yaml", f"""
name: t
output: {tmp_path / "out"}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"], batch_size: 16}}
stages:
  - stage: minhash_dedup
    threshold: 0.7
""")))
    run(recipe, executor="local", progress=False)
    local = kept_ids(tmp_path / "out")
    assert len(local) == 13  # one per cluster (20 copies, 60, 60) and the 10 unrelated documents
    ledger = json.loads((tmp_path / "out" / "ledger.json").read_text())
    stage = next(s for s in ledger["stages"] if s["stage"] == "minhash_dedup")
    assert (stage["params"]["bands"], stage["params"]["rows"]) == (21, 4)
    assert stage["params"]["bands_rows"] == "derived from threshold"
    for workers in (1, 2):
        run(recipe, workers=workers, progress=False, overwrite=True)
        assert kept_ids(tmp_path / "out") == local
