"""Verification of minhash_dedup with buckets of many candidates that share shingles among themselves.

A dropped document must have a kept near-duplicate (true Jaccard >= threshold) sharing a bucket
with it; a document whose true Jaccard with every kept neighbour is below the threshold is kept.
The shapes: template variants (every document is one template with a window of its own and a few
edits, so candidates share the template's shingles that a document replaced), several clusters
colliding in one bucket, and template farms (documents sharing a template without being
near-duplicates). Decisions are compared with the textbook greedy and exact components over every
candidate pair, in-process, over processes and on Ray; and a template farm is checked to cost
index probes rather than Jaccard checks against every kept document.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pyarrow.parquet as pq

from stages.base import LocalExecutor
from stages.dedup import minhash as mh
from stages.dedup.near import MinhashDedup, _leader_pass, _matches, near_duplicates
from tests.test_near_dedup_shapes import BANDS, T, doc_ids, spill_synthetic




def test_matches_counts_only_each_candidates_own_shared_shingles():
    """Twelve candidates share 600 shingles among themselves that d (200 shingles) does not have:
    none of them is a near-duplicate of d (J = 200 / 800), however many are checked at once."""
    v = np.random.default_rng(0).permutation(np.unique(np.random.default_rng(0).integers(0, 2**63, 800, dtype=np.uint64)))
    d, common = np.sort(v[:200]), v[200:]
    sets = [d] + [np.sort(np.concatenate([d, common])) for _ in range(12)]
    assert _matches(sets, 0, list(range(1, 13)), 0.25) == list(range(1, 13))
    assert _matches(sets, 0, list(range(1, 13)), 0.3) == []
    assert _matches(sets, 0, list(range(1, 4)), 0.3) == []  # the one-by-one path agrees


def variants(data, n_max=60):
    """Token texts (ngram 1): a template of 50 tokens; a few bases, each the template with a window
    of own tokens; documents = a base with 0-5 own edits. Pairs spread around the threshold."""
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    n = data.draw(st.integers(2, n_max))
    nbases = data.draw(st.integers(1, 4))
    template = [f"t{k}" for k in range(50)]
    tok = itertools.count()
    bases = []
    for _ in range(nbases):
        w, a = int(rng.integers(0, 12)), int(rng.integers(0, 40))
        b = list(template)
        for j in range(a, min(50, a + w)):
            b[j] = f"o{next(tok)}"
        bases.append(b)
    texts = []
    for _ in range(n):
        b = list(bases[int(rng.integers(0, nbases))])
        for j in rng.choice(50, int(rng.integers(0, 6)), replace=False):
            b[j] = f"e{next(tok)}"
        texts.append(" ".join(b))
    pool = int(rng.integers(1, 4))  # few bucket keys: big buckets that overlap
    keys = [sorted(set(rng.integers(1, pool + 1, int(rng.integers(1, BANDS + 1))).tolist())) for _ in range(n)]
    return texts, keys


def reference(texts, keys, ids, clusters):
    """Textbook greedy (best = lowest id first) or exact components over candidate pairs at J >= T:
    per document, its keeper (greedy) or its component's best document (components)."""
    sets = [mh.shingle_set64(t, 1) for t in texts]
    n = len(texts)

    def edge(u, v):
        return bool(set(keys[u]) & set(keys[v])) and mh.jaccard_sorted(sets[u], sets[v]) >= T

    order = sorted(range(n), key=lambda k: ids[k])
    if clusters == "greedy":
        kept, keeper = [], {}
        for v in order:
            nb = [u for u in kept if edge(u, v)]
            keeper[v] = nb[0] if nb else v
            if not nb:
                kept.append(v)
        return [keeper[k] for k in range(n)]
    comp = list(range(n))

    def find(x):
        while comp[x] != x:
            x = comp[x]
        return x

    for u, v in itertools.combinations(range(n), 2):
        if edge(u, v):
            comp[find(u)] = find(v)
    best = {}
    for v in order:
        best.setdefault(find(v), v)
    return [best[find(k)] for k in range(n)]


def resolve_rows(paths, executor=None, **cfg):
    stage = MinhashDedup(ngram=1, num_perm=BANDS, bands=BANDS, rows=1, threshold=T, sweep_rows=None, **cfg)
    files = stage.resolve(paths, executor or LocalExecutor())
    return {r["id"]: r for f in files for r in pq.read_table(f).to_pylist()}, stage


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), shards=st.integers(1, 4), parts=st.integers(1, 3),
       clusters=st.sampled_from(["greedy", "components"]))
def test_template_variants_in_shared_buckets_property(tmp_path_factory, data, shards, parts, clusters):
    texts, keys = variants(data)
    ids = doc_ids(len(texts), data.draw(st.integers(0, 1000)))
    paths = spill_synthetic(tmp_path_factory.mktemp("v"), texts, keys, ids, shards, np.random.default_rng(0))
    rows, _ = resolve_rows(paths, clusters=clusters, partitions=parts)
    want = reference(texts, keys, ids, clusters)
    got = [ids.index(rows[ids[d]]["drop_detail"]) if rows[ids[d]]["drop_reason"] else d for d in range(len(texts))]
    assert got == want


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), index_min=st.sampled_from([0, 1, 5, 10**9]),
       t=st.sampled_from([0.5, 0.7, 0.8, 0.9]))
def test_leader_pass_with_and_without_the_prefix_index_equals_the_reference(seed, index_min, t):
    """Both candidate sources (shared buckets; prefix index, then shared buckets) give the
    textbook greedy and the exact components of the verified candidate graph, at any threshold."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 50))
    template = rng.integers(0, 1 << 40, 30).astype(np.uint64)
    sets = []
    for _ in range(n):
        s = template[rng.random(30) < rng.uniform(0.6, 1.0)]
        s = np.unique(np.concatenate([s, rng.integers(1 << 41, (1 << 41) + 60, int(rng.integers(0, 12))).astype(np.uint64)]))
        sets.append(s)
    keys = [sorted(set(rng.integers(0, 3, size=int(rng.integers(1, 3))).tolist())) for _ in range(n)]
    pos = rng.permutation(n)
    koff = np.concatenate([[0], np.cumsum([len(k) for k in keys])])
    soff = np.concatenate([[0], np.cumsum([s.size for s in sets])])
    comp = np.full(n, 7)  # the component labels: one group holding every candidate pair
    args = (pos, np.array(sum(keys, []), dtype=np.int64), koff, np.concatenate(sets), soff, t, True)
    keeper, _, _, _ = _leader_pass(*args, comp=comp, index_min=index_min)
    _, root, _, _ = _leader_pass(*args, components=True, comp=comp, index_min=index_min)

    def edge(u, v):
        return bool(set(keys[u]) & set(keys[v])) and mh.jaccard_sorted(sets[u], sets[v]) >= t

    kept, want = [], {}
    for v in sorted(range(n), key=lambda k: pos[k]):
        nb = [u for u in kept if edge(u, v)]
        want[v] = min(nb, key=lambda k: pos[k]) if nb else v
        if not nb:
            kept.append(v)
    assert keeper.tolist() == [want[k] for k in range(n)]
    ref = list(range(n))

    def find(x):
        while ref[x] != x:
            x = ref[x]
        return x

    for u, v in itertools.combinations(range(n), 2):
        if edge(u, v):
            ref[find(u)] = find(v)
    assert all((root[u] == root[v]) == (find(u) == find(v)) for u in range(n) for v in range(n))


def farm(n: int, seed: int = 0, template_words: int = 400, own_words: int = 60) -> list[str]:
    """n documents sharing a template of `template_words` words, each with `own_words` words of its
    own: pairwise Jaccard about 0.77 at ngram 5 (not near-duplicates at 0.8)."""
    rng = np.random.default_rng(seed)
    template = " ".join(f"w{k}" for k in rng.integers(0, 10**6, template_words))
    return [template + " " + " ".join(f"x{k}" for k in rng.integers(0, 10**9, own_words)) for _ in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("clusters", ["greedy", "components"])
def test_template_farm_costs_no_check_per_kept_pair(clusters):
    """600 template documents (J ~ 0.77 to each other, one LSH bucket for most) and 3 near-copies of
    five of them: the copies are dropped, the rest kept, with far fewer Jaccard checks than the
    ~180,000 pairs a check against every kept document in a shared bucket would cost."""
    texts = farm(600)
    for k in range(5):
        w = texts[k].split()
        for c in range(3):
            texts.append(" ".join(w[:-1 - c] + [f"copy{k}_{c}"]))
    stage_kw = dict(clusters=clusters)
    res = near_duplicates(texts, **stage_kw)
    assert res.kept == list(range(600))
    assert all(res.keeper[600 + 3 * k + c] == k for k in range(5) for c in range(3))
    stage = MinhashDedup(**stage_kw)
    from stages.dedup.in_process import run_in_process

    run_in_process(stage, texts, None, None, 100_000, "dup_cluster_id", "dup_cluster_size")
    assert stage.stats["largest_bucket"] >= 100
    assert stage.stats["jaccard_checks"] < 2_000


@pytest.mark.slow
def test_through_the_runner_in_process_processes_and_ray(tmp_path, ray_local):
    """Template variants through `refinery run`: every dropped document has a kept near-duplicate,
    no kept pair is at J >= threshold, and the kept ids are the same in-process, on 2 worker
    processes and on 1 Ray worker."""
    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.runner import run
    from tests.helpers import kept_ids, write_jsonl, write_recipe

    rng = np.random.default_rng(3)
    template = [f"w{k}" for k in rng.integers(0, 10**6, 300)]
    texts = []
    for c in range(4):  # four clusters: a window of own words, then copies with 3 edits
        base = list(template)
        a = int(rng.integers(0, 240))
        base[a : a + 60] = [f"c{c}_{k}" for k in range(60)]
        for _ in range(10):
            copy = list(base)
            for j in rng.choice(300, 3, replace=False):
                copy[j] = f"e{rng.integers(10**9)}"
            texts.append(" ".join(copy))
    for s in range(20):  # template documents with own windows: near-duplicates of nothing
        b = list(template)
        a = int(rng.integers(0, 240))
        b[a : a + 60] = [f"s{s}_{k}" for k in range(60)]
        texts.append(" ".join(b))
    order = rng.permutation(len(texts))
    for s in range(3):
        write_jsonl(tmp_path / "in" / f"s{s}.jsonl", [{"text": texts[k]} for k in order[s::3]])
    recipe = load_recipe(str(write_recipe(tmp_path / "r.yaml", f"""
name: t
output: {tmp_path / "out"}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"], batch_size: 8}}
stages:
  - stage: minhash_dedup
""")))
    run(recipe, executor="local", progress=False)
    local = kept_ids(tmp_path / "out")
    kept_texts = [t for f in sorted((tmp_path / "out" / "kept").glob("*.parquet"))
                  for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]
    sets = {t: mh.shingle_set64(t) for t in texts}
    kept_sets = [sets[t] for t in kept_texts]
    for t in texts:
        if t not in kept_texts:
            assert max(mh.jaccard_sorted(sets[t], k) for k in kept_sets) >= 0.8
    assert all(mh.jaccard_sorted(a, b) < 0.8 for a, b in itertools.combinations(kept_sets, 2))
    assert len(local) == 4 + 20
    run(recipe, workers=2, executor="processes", progress=False, overwrite=True)
    assert kept_ids(tmp_path / "out") == local
    run(recipe, workers=1, progress=False, overwrite=True)
    assert kept_ids(tmp_path / "out") == local


def test_sweep_partitions_hold_no_more_entries_than_partition_entries():
    """The sweep's waves are partitioned for its own band count (28 per kept document against the
    main pass's 18), so no partition of either pass exceeds `partition_entries`."""
    from stages.dedup.in_process import run_in_process

    rng = np.random.default_rng(5)
    texts = [" ".join(f"w{k}" for k in rng.integers(0, 5000, 80)) for _ in range(200)]
    texts += [t + " extra" for t in texts[:20]]
    stage = MinhashDedup(partition_entries=1_000)
    res = run_in_process(stage, texts, None, None, 60, "dup_cluster_id", "dup_cluster_size")
    s = stage.stats
    assert s["partitions"] == 4 and s["sweep_partitions"] == 6  # 200 kept x 28 sweep bands / 1,000
    assert s["band_entries"] <= s["partitions"] * 1_000 and s["sweep_band_entries"] <= s["sweep_partitions"] * 1_000
    assert res.kept == list(range(200))
    assert res.kept == near_duplicates(texts, partitions=1).kept


def test_sweep_partitions_are_sized_from_the_documents_the_main_pass_kept():
    """The sweep bands only the main pass's survivors: where it drops most documents, partitions
    sized from all of them would be mostly empty (here 14 of 200 entries each for 1,000), and a
    worker's memory would then vary with the share of duplicates, not follow `partition_entries`."""
    from stages.dedup.in_process import run_in_process

    rng = np.random.default_rng(6)
    base = [" ".join(f"w{k}" for k in rng.integers(0, 5000, 80)) for _ in range(100)]
    texts = base + [t for t in base for _ in range(4)]  # 4 exact copies of each: the main pass drops 400
    stage = MinhashDedup(partition_entries=1_000)
    res = run_in_process(stage, texts, None, None, 100, "dup_cluster_id", "dup_cluster_size")
    s = stage.stats
    assert res.kept == list(range(100)) and s["dropped"] == 400
    assert s["partitions"] == 9 and s["sweep_band_entries"] == 2_800
    assert s["sweep_partitions"] == 3  # 2,800 / 1,000 rounded up (before: 9 x 28 / 18 = 14)
    assert res.kept == near_duplicates(texts, partitions=1).kept
