import numpy as np
import pytest

from pipeline.report.projection import (
    ShardFunnel, funnels_from_ledgers, human_bytes, parse_size, project, shard_funnels, shard_ledgers,
)
from pipeline.report.scan import Group, RunScan


@pytest.mark.parametrize("text,value", [
    ("4.3TB", 4.3e12), ("800GB", 800e9), ("800 gb", 800e9), ("1.2e12", 1.2e12), ("2TiB", 2 * 2**40),
    ("512", 512), ("1.5M", 1.5e6), (".5PB", 0.5e15), ("3e3KB", 3e6),
])
def test_parse_size(text, value):
    assert parse_size(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "TB", "4.3XB", "-1TB", "0", "4.3 T B", "1,000GB"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_human_bytes():
    assert human_bytes(4.3e12) == "4.3 TB" and human_bytes(800e9) == "800 GB" and human_bytes(12) == "12 B"


def funnel(i, src, raw, docs, nbytes, tokens=None):
    return ShardFunnel(i, src, raw, list(docs), list(nbytes), list(tokens or nbytes))


def test_two_shards_by_hand():
    """raw 100 + 100; after the last stage 10 and 30 bytes: ratio 0.2, so 1000 raw -> 200.
    Resamples are {1,1} (ratio 0.1, p=1/4), {2,2} (0.3, p=1/4) or mixed (0.2), so the 5% and 95%
    quantiles are 100 and 300."""
    shards = [funnel(0, "web", 100, [8, 4], [50, 10]), funnel(1, "web", 100, [8, 6], [70, 30])]
    p = project(shards, ["read", "filter"], 1000, resamples=4000)
    assert p.estimates["bytes"][0].point == pytest.approx(600)
    assert p.estimates["bytes"][1].point == pytest.approx(200)
    assert p.estimates["docs"][1].point == pytest.approx(50)  # (4 + 6) / 200 * 1000
    b = p.estimates["bytes"][1]
    assert (b.lo, b.hi) == (pytest.approx(100), pytest.approx(300))
    d = p.to_dict()
    assert d["projected_clean_tokens"] == pytest.approx(200) and d["interval"] == [pytest.approx(100), pytest.approx(300)]
    assert d["raw_bytes"] == 1000 and [s["stage"] for s in d["stages"]] == ["read", "filter"]


def test_equal_ratios_give_a_degenerate_interval():
    shards = [funnel(i, "web", 100 * (i + 1), [i + 1], [20 * (i + 1)]) for i in range(5)]
    e = project(shards, ["read"], 4.3e12).estimates["bytes"][0]
    assert e.point == pytest.approx(0.2 * 4.3e12) and e.lo == pytest.approx(e.point) and e.hi == pytest.approx(e.point)


def test_resampling_is_within_source():
    """One shard per source: every resample is the run itself, so the interval is the point."""
    shards = [funnel(0, "web", 100, [1], [10]), funnel(1, "code", 300, [1], [270])]
    e = project(shards, ["read"], 1000).estimates["bytes"][0]
    assert e.point == pytest.approx(700) and e.lo == pytest.approx(700) and e.hi == pytest.approx(700)


def test_interval_contains_point_on_skewed_shards():
    rng = np.random.default_rng(3)
    shards = []
    for i in range(40):
        raw = float(rng.integers(1_000, 100_000))
        keep = rng.beta(2, 5)
        shards.append(funnel(i, "web" if i % 3 else "wiki", raw, [raw / 100, raw * keep / 100], [raw, raw * keep]))
    p = project(shards, ["read", "f"], 4.3e12)
    for q in ("docs", "bytes", "tokens"):
        for e in p.estimates[q]:
            assert e.lo <= e.point <= e.hi
    assert p.estimates["bytes"][1].hi > p.estimates["bytes"][1].lo  # shards differ: a real interval


def test_shards_without_raw_size_are_left_out_and_none_is_an_error():
    shards = [funnel(0, "web", 0, [5], [50]), funnel(1, "web", 100, [1], [10])]
    assert project(shards, ["read"], 1000).estimates["bytes"][0].point == pytest.approx(100)
    with pytest.raises(ValueError):
        project([funnel(0, "web", 0, [1], [1])], ["read"], 1000)


def _scan() -> RunScan:
    scan = RunScan(["read", "f"])
    scan.shards = {0: {"kept": Group(2, 30, 10), "f": Group(1, 10, 3)},
                   1: {"kept": Group(1, 60, 20), "read": Group(1, 0, 0)}}
    scan.shard_source = {0: "web", 1: "web"}
    return scan


def test_shard_funnels_spread_source_bytes_by_text_read():
    out = shard_funnels(_scan(), {"web": {"files": 2, "bytes": 1000}}, None, {"web": 100})
    assert [f.raw_bytes for f in out] == [pytest.approx(400), pytest.approx(600)]  # 40 and 60 text bytes read
    assert out[0].docs == [3, 2] and out[0].bytes == [40, 30] and out[0].tokens == [13, 10]
    assert out[1].docs == [1, 1] and out[1].bytes == [60, 60]


def test_shard_funnels_with_exact_sizes_count_empty_shards():
    out = shard_funnels(_scan(), {}, {0: ("web", 500.0), 1: ("web", 500.0), 2: ("web", 100.0)})
    assert [(f.index, f.raw_bytes, f.docs) for f in out][2] == (2, 100.0, [0, 0])


def test_per_shard_records_give_the_same_funnels_as_the_part_files(tmp_path):
    """On a runner-made run, the funnels from OUT/shards.jsonl equal those counted in the part
    files with each shard's input size; a file that does not add up, or none, falls back."""
    import shutil

    from pipeline.engine.ledger import Ledger
    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.runner import run
    from pipeline.report.scan import scan_run
    from tests.test_runner import make_recipe

    run(load_recipe(make_recipe(tmp_path)), executor="local", progress=False)
    out = str(tmp_path / "out")
    ledger = Ledger.read(f"{out}/ledger.json")
    scan = scan_run(out, ledger)
    records = shard_ledgers(out, ledger)
    assert records is not None and sorted(records) == [0, 1, 2]
    a = funnels_from_ledgers(records, ledger.stage_order, scan)
    sizes = {i: (r.inputs and sorted(r.inputs)[0], float(sum(v["bytes"] for v in r.inputs.values())))
             for i, r in records.items()}
    b = shard_funnels(scan, ledger.inputs, sizes)
    assert [(f.index, f.source, f.raw_bytes, f.docs, f.bytes, f.tokens) for f in a] == \
           [(f.index, f.source, f.raw_bytes, f.docs, f.bytes, f.tokens) for f in b]
    est = scan_run(out, ledger, exact_token_limit=0)
    for f, g in zip(funnels_from_ledgers(records, ledger.stage_order, est),
                    shard_funnels(est, ledger.inputs, sizes)):
        assert f.tokens == pytest.approx(g.tokens)
    shards = (tmp_path / "out" / "shards.jsonl").read_text().splitlines()
    (tmp_path / "out" / "shards.jsonl").write_text("\n".join(shards[:-1]) + "\n")
    assert shard_ledgers(out, ledger) is None  # no longer adds up to the run's ledger
    (tmp_path / "out" / "shards.jsonl").unlink()
    assert shard_ledgers(out, ledger) is None
    shutil.rmtree(tmp_path / "out" / "_state")  # the report never needs the runner's records
    assert shard_ledgers(out, ledger) is None
