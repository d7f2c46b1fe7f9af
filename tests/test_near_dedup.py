"""MinHash dedup: config, resolve on small spill files, verification, keepers, determinism, real data."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.schema import doc_id, make_record, records_to_table
from stages.dedup import minhash as mh
from stages.base import LocalExecutor
from stages.dedup.near import MinhashDedup, _leader_pass
from stages.registry import get
from tests.helpers import PoolExecutor

F = "data.jsonl"
RNG = random.Random(11)
VOCAB = [f"w{i}" for i in range(5000)]


def words(n, rng=RNG):
    return [rng.choice(VOCAB) for _ in range(n)]


def spill(stage, tmp_path, shards, quality=None, name="spill"):
    d = tmp_path / name
    d.mkdir()
    paths = []
    for i, shard in enumerate(shards):
        t = records_to_table(make_record(source="s", kind="jsonl", file=F, offset=o, text=x) for o, x in shard)
        if quality is not None:
            t = t.append_column("quality_score", pa.array([quality.get(o) for o, _ in shard], pa.float64()))
        p = d / f"part-{i}.parquet"
        pq.write_table(stage.annotate(t), p)
        paths.append(str(p))
    return paths


def decide(stage, paths, ex=None):
    files = stage.resolve(paths, ex or LocalExecutor())
    for f, s in zip(files, paths):
        assert pq.read_table(f).column("id").to_pylist() == pq.read_table(s).column("id").to_pylist()
    return {r["id"]: r for r in pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()}


def i(o):
    return doc_id("s", F, o)


def test_config():
    assert get("minhash_dedup") is MinhashDedup
    c = MinhashDedup().config
    assert (c.num_perm, c.bands, c.rows, c.ngram) == (112, 18, 6, 5)  # recall-leaning: 0.996 at J = 0.8
    assert c.lsh_params()["bands_rows"] == "derived from threshold"
    assert (MinhashDedup(false_negative_weight=0.95).config.bands, MinhashDedup(false_negative_weight=0.95).config.rows) == (14, 8)  # FineWeb's
    d = MinhashDedup(threshold=0.7, num_perm=128).config  # threshold alone derives bands x rows
    assert (d.bands, d.rows) == mh.optimal_bands(0.7, 128, 0.995) != (18, 6)
    assert (MinhashDedup(threshold=0.7).config.bands, MinhashDedup(threshold=0.7).config.rows) == (21, 4)
    assert MinhashDedup(false_negative_weight=0.5).config.bands == mh.optimal_bands(0.8, 112)[0]
    e = MinhashDedup(threshold=0.7, bands=14, rows=8).config  # explicit bands and rows win
    assert (e.bands, e.rows) == (14, 8) and e.lsh_params()["bands_rows"] == "given"
    p = d.lsh_params()["candidate_probability"]
    assert p["0.75"] > 0.95 and p["0.60"] < p["0.70"] < p["0.75"]
    with pytest.raises(ValueError):
        MinhashDedup(bands=20, rows=8)
    with pytest.raises(ValueError):
        MinhashDedup(bands=10)  # rows missing
    with pytest.raises(ValueError):
        MinhashDedup(nonsense=1)
    field = MinhashDedup().spill_fields()[0]
    assert field.name == "minhash_bands" and field.type.list_size == 18


def test_near_duplicates_across_shards(tmp_path):
    base = words(300)
    near = base[:150] + ["inserted"] + base[150:]  # J ~ 0.97
    other = words(300)
    shards = [
        [(0, " ".join(base)), (1, " ".join(other)), (2, None)],
        [(3, " ".join(near).upper() + " !!!"), (4, "")],  # case and punctuation do not matter
        [(5, " ".join(base))],
    ]
    stage = MinhashDedup()
    rows = decide(stage, spill(stage, tmp_path, shards))
    fam = sorted([i(0), i(3), i(5)])
    assert rows[fam[0]]["drop_reason"] is None
    for k in fam[1:]:
        assert rows[k]["drop_reason"] == "near_duplicate" and rows[k]["drop_detail"] == fam[0]
    for k in fam:
        assert rows[k]["dup_cluster_id"] == fam[0] and rows[k]["dup_cluster_size"] == 3
    for o in (1, 2, 4):  # unrelated, null and empty texts: kept, their own cluster of one
        assert rows[i(o)]["drop_reason"] is None
        assert rows[i(o)]["dup_cluster_id"] == i(o) and rows[i(o)]["dup_cluster_size"] == 1
    assert stage.stats["dropped"] == 2


def test_verification_removes_lsh_false_positives(tmp_path):
    base = words(200)
    half = base[:100] + words(100)  # true Jaccard ~ 1/3
    shards = [[(0, " ".join(base)), (1, " ".join(half))]]
    loose = dict(num_perm=16, bands=16, rows=1)  # one equal min-hash makes a candidate
    rows = decide(MinhashDedup(verify=False, **loose), spill(MinhashDedup(**loose), tmp_path, shards, name="a"))
    assert sum(r["drop_reason"] is not None for r in rows.values()) == 1
    stage = MinhashDedup(verify=True, **loose)
    rows = decide(stage, spill(stage, tmp_path, shards, name="b"))
    assert all(r["drop_reason"] is None for r in rows.values())
    assert stage.stats["candidate_documents"] == 2 and stage.stats["jaccard_checks"] == 1 and stage.stats["edges"] == 0


def chain_texts():
    w = words(140)
    a, b, c = w[0:100], w[8:108], w[16:116]
    sets = [mh.shingle_set64(" ".join(x)) for x in (a, b, c)]
    assert mh.jaccard_sorted(sets[0], sets[1]) >= 0.8 and mh.jaccard_sorted(sets[1], sets[2]) >= 0.8
    assert mh.jaccard_sorted(sets[0], sets[2]) < 0.8
    return [(0, " ".join(a)), (1, " ".join(b)), (2, " ".join(c))]


@pytest.mark.parametrize("clusters", ["greedy", "components"])
def test_chain_keepers(tmp_path, clusters):
    loose = dict(num_perm=64, bands=32, rows=2, keep="highest_quality", clusters=clusters)
    stage = MinhashDedup(**loose)
    rows = decide(stage, spill(stage, tmp_path, [chain_texts()], quality={0: 0.9, 1: 0.5, 2: 0.1}))
    assert rows[i(0)]["drop_reason"] is None
    assert rows[i(1)]["drop_detail"] == i(0)
    if clusters == "greedy":  # C is not within the threshold of any kept document
        assert rows[i(2)]["drop_reason"] is None
        assert [(rows[i(o)]["dup_cluster_id"], rows[i(o)]["dup_cluster_size"]) for o in range(3)] == [
            (i(0), 2), (i(0), 2), (i(2), 1)]  # greedy cluster: a kept document and those it keeps
    else:
        assert rows[i(2)]["drop_detail"] == i(0)
        assert all(rows[i(o)]["dup_cluster_id"] == i(0) and rows[i(o)]["dup_cluster_size"] == 3 for o in range(3))


def test_leader_pass_is_the_sequential_greedy_of_verified_candidate_pairs():
    """The leader pass (checks against kept documents only) equals the textbook greedy: best first,
    keep a document iff no kept document shares a bucket with it at Jaccard >= threshold."""
    rng = np.random.default_rng(4)
    for _ in range(40):
        n = int(rng.integers(2, 40))
        keys = [sorted(set(rng.integers(0, 6, size=int(rng.integers(1, 4))).tolist())) for _ in range(n)]
        sets = [np.unique(rng.integers(0, 12, size=8).astype(np.uint64)) for _ in range(n)]
        pos = rng.permutation(n)
        koff = np.concatenate([[0], np.cumsum([len(k) for k in keys])])
        soff = np.concatenate([[0], np.cumsum([s.size for s in sets])])
        args = (pos, np.array(sum(keys, []), dtype=np.int64), koff, np.concatenate(sets), soff, 0.5, True)
        keeper, _, _, _ = _leader_pass(*args)
        _, root, _, _ = _leader_pass(*args, components=True)
        kept, want = [], {}
        for v in sorted(range(n), key=lambda k: pos[k]):
            nb = [u for u in kept if set(keys[u]) & set(keys[v]) and mh.jaccard_sorted(sets[u], sets[v]) >= 0.5]
            want[v] = min(nb, key=lambda k: pos[k]) if nb else v
            if not nb:
                kept.append(v)
        assert keeper.tolist() == [want[k] for k in range(n)]
        comp = list(range(n))  # reference components of the verified candidate graph

        def find(x):
            while comp[x] != x:
                x = comp[x]
            return x

        for v in range(n):
            for u in range(v):
                if set(keys[u]) & set(keys[v]) and mh.jaccard_sorted(sets[u], sets[v]) >= 0.5:
                    comp[find(u)] = find(v)
        want_root = [find(x) for x in range(n)]
        assert all((root[u] == root[v]) == (want_root[u] == want_root[v]) for u in range(n) for v in range(n))


@pytest.mark.slow
def test_independent_of_partitions_workers_and_order(tmp_path):
    rng = random.Random(2)
    bases = [words(200, rng) for _ in range(40)]
    docs = []
    for k in range(200):
        w = list(bases[k % 40])
        for _ in range(rng.randrange(0, 3)):
            w[rng.randrange(len(w))] = rng.choice(VOCAB)
        docs.append((k, " ".join(w)))
    shuffled = docs[:]
    rng.shuffle(shuffled)

    def run(cfg, shards, ex, name):
        stage = MinhashDedup(**cfg)
        got = decide(stage, spill(stage, tmp_path, shards, name=name), ex)
        return {k: (r["drop_reason"], r["drop_detail"], r["dup_cluster_id"], r["dup_cluster_size"]) for k, r in got.items()}

    base = run(dict(partitions=1), [docs], LocalExecutor(), "a")
    assert run(dict(partitions=9), [shuffled[j::4] for j in range(4)], LocalExecutor(), "b") == base
    assert run(dict(partitions=3), [docs[j::3] for j in range(3)], PoolExecutor(2), "c") == base
    kept = sum(v[0] is None for v in base.values())
    assert 40 <= kept < 60  # families collapse (two edits each leave J >= 0.8 to most siblings)


@pytest.mark.slow
def test_real_text_planted_copies(corpora, tmp_path):
    text = (corpora / "quality" / "wikitext2_valid.tokens.txt").read_text(encoding="utf-8")
    paras = [p.split() for p in text.split("\n") if len(p.split()) >= 120][:120]
    rng = random.Random(0)
    docs, pairs = [], []
    for k, w in enumerate(paras):
        docs.append((k, " ".join(w)))
        if k % 2 == 0:  # a copy with ~2% of words substituted (J ~ 0.9) and a boilerplate suffix
            cw = [x if rng.random() > 0.02 else "zzz" for x in w] + "share this page on facebook".split()
            docs.append((1000 + k, " ".join(cw)))
            pairs.append((k, 1000 + k))
    stage = MinhashDedup()
    rows = decide(stage, spill(stage, tmp_path, [docs[0::2], docs[1::2]]))
    for a, b in pairs:
        j = mh.jaccard_sorted(mh.shingle_set64(docs_text(docs, a)), mh.shingle_set64(docs_text(docs, b)))
        if j >= 0.85:
            assert (rows[i(a)]["drop_reason"] is None) != (rows[i(b)]["drop_reason"] is None)
    originals_dropped = [k for k in range(len(paras)) if k % 2 and rows[i(k)]["drop_reason"]]
    assert originals_dropped == []  # distinct Wikipedia paragraphs are never merged


def docs_text(docs, o):
    return next(t for k, t in docs if k == o)


def test_empty_and_textless_spill_files(tmp_path):
    stage = MinhashDedup()
    d = tmp_path / "e"
    d.mkdir()
    empty = stage.annotate(records_to_table([]))
    nulls = stage.annotate(records_to_table([make_record(source="s", kind="jsonl", file=F, offset=k, text=None) for k in range(3)]))
    paths = []
    for k, t in enumerate([empty, nulls, empty]):
        pq.write_table(t, d / f"{k}.parquet")
        paths.append(str(d / f"{k}.parquet"))
    rows = decide(stage, paths)
    assert len(rows) == 3 and all(r["drop_reason"] is None and r["dup_cluster_size"] == 1 for r in rows.values())
    assert stage.resolve([], LocalExecutor()) == []


@pytest.mark.slow
def test_lsh_clusters_equal_datasketch_minhashlsh(corpora, tmp_path):
    """Without verification, our clusters are exactly the components of datasketch's LSH candidates."""
    from datasketch import MinHash, MinHashLSH

    text = (corpora / "quality" / "wikitext2_test.tokens.txt").read_text(encoding="utf-8")
    paras = [p.split() for p in text.split("\n") if len(p.split()) >= 60][:80]
    rng = random.Random(1)
    docs = []
    for k, w in enumerate(paras):
        docs.append((k, " ".join(w)))
        p = rng.uniform(0.0, 0.1)  # copies spanning the LSH S-curve
        docs.append((500 + k, " ".join(x if rng.random() > p else "qq" for x in w)))
    stage = MinhashDedup(verify=False, clusters="components", bands=14, rows=8, sweep_rows=None)  # datasketch has no sweep
    rows = decide(stage, spill(stage, tmp_path, [docs[0::3], docs[1::3], docs[2::3]]))
    ours = {}
    for k, r in rows.items():
        ours.setdefault(r["dup_cluster_id"], set()).add(k)

    lsh = MinHashLSH(num_perm=112, params=(14, 8))
    sketches = {}
    for o, t in docs:
        m = MinHash(num_perm=112, seed=1)
        m.update_batch(mh.shingles(t))
        sketches[i(o)] = m
        lsh.insert(i(o), m)
    parent = {k: k for k in sketches}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for k, m in sketches.items():
        for other in lsh.query(m):
            parent[find(other)] = find(k)
    theirs = {}
    for k in sketches:
        theirs.setdefault(find(k), set()).add(k)
    assert sorted(map(sorted, ours.values())) == sorted(map(sorted, theirs.values()))
    assert sum(len(c) > 1 for c in ours.values()) > 20  # the comparison is not vacuous


def test_spill_without_band_column_is_refused(tmp_path):
    t = records_to_table([make_record(source="s", kind="jsonl", file=F, offset=0, text="a b c d e f")])
    p = tmp_path / "s.parquet"
    pq.write_table(t, p)  # written without annotate's spill column, as a conforming writer would
    with pytest.raises(ValueError, match="minhash_bands"):
        MinhashDedup().resolve([str(p)], LocalExecutor())


def _hide(paths, offsets, seed=5):
    """Give the documents at `offsets` random main band keys: the main LSH pass never compares them
    with anything (what LSH does to a near-duplicate pair with probability 1 - S-curve)."""
    rng = np.random.default_rng(seed)
    hidden = {i(o) for o in offsets}
    for p in paths:
        t = pq.read_table(p)
        col = t.column("minhash_bands").combine_chunks()
        width = col.type.list_size
        keys = np.asarray(col.flatten().to_numpy(), dtype=np.uint64).reshape(-1, width).copy()
        for r, d in enumerate(t.column("id").to_pylist()):
            if d in hidden:
                keys[r] = rng.integers(1, 2**63, width, dtype=np.uint64)
        arr = pa.FixedSizeListArray.from_arrays(pa.array(keys.ravel(), pa.uint64()), width)
        pq.write_table(t.set_column(t.column_names.index("minhash_bands"), "minhash_bands", arr), p)


@pytest.mark.slow
@pytest.mark.parametrize("clusters", ["greedy", "components"])
def test_sweep_among_kept_documents_finds_pairs_the_main_bands_never_compared(tmp_path, clusters):
    rng = random.Random(4)
    docs, pairs = [], []
    for k in range(12):  # pairs at Jaccard ~0.9, and a few bigger families
        w = words(150, rng)
        c = list(w)
        c[rng.randrange(len(c))] = rng.choice(VOCAB)
        docs += [(2 * k, " ".join(w)), (2 * k + 1, " ".join(c))]
        pairs.append((2 * k, 2 * k + 1))
    for k in range(30):
        docs.append((100 + k, " ".join(words(150, rng))))  # unrelated
    hidden = [b for _, b in pairs[:8]]  # main LSH never compares these with their partner

    def run(sweep_rows, shards, parts, ex, name):
        stage = MinhashDedup(clusters=clusters, sweep_rows=sweep_rows, partitions=parts)
        paths = spill(stage, tmp_path, shards, name=name)
        _hide(paths, hidden)
        got = decide(stage, paths, ex)
        return {o: (got[i(o)]["drop_reason"], got[i(o)]["drop_detail"]) for o, _ in docs}, stage

    plain, _ = run(None, [docs[0::2], docs[1::2]], 1, LocalExecutor(), "plain")
    assert all(plain[a] == plain[b] == (None, None) for a, b in pairs[:8])  # both kept: the goal clause broken
    assert all((plain[a][0] is None) != (plain[b][0] is None) for a, b in pairs[8:])
    swept, stage = run(4, [docs[0::2], docs[1::2]], 1, LocalExecutor(), "swept")
    assert stage.stats["sweep_dropped"] == len(hidden) and stage.stats["sweep_jaccard_checks"] >= len(hidden)
    for a, b in pairs:  # one of each pair kept, the other names it (lowest id first)
        lo, hi = sorted((a, b), key=i)
        assert swept[lo] == (None, None) and swept[hi] == ("near_duplicate", i(lo))
    assert all(swept[o] == (None, None) for o in range(100, 130))
    shuffled = docs[:]
    rng.shuffle(shuffled)
    again, _ = run(4, [shuffled[j::3] for j in range(3)], 5, PoolExecutor(2), "again")
    assert again == swept  # deterministic: partitions, workers, order
    assert MinhashDedup(sweep_rows=4).params()["sweep"] == {"bands": 28, "rows": 4, "candidate_probability": 0.9999996}
    with pytest.raises(ValueError):
        MinhashDedup(sweep_rows=0)
