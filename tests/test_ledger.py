from pipeline.engine.ledger import Counts, Ledger


def test_merge_and_roundtrip():
    a, b = Ledger(["read", "s"]), Ledger(["read", "s"])
    a.record("read", "web", docs_in=10, bytes_in=100, kept=9, kept_bytes=90, rejected={"unreadable": [1, 10]})
    a.record("s", "web", docs_in=9, bytes_in=90, kept=7, kept_bytes=70, rejected={"short": [2, 20]})
    b.record("read", "web", docs_in=5, bytes_in=50, kept=5, kept_bytes=50)
    b.record("s", "web", docs_in=5, bytes_in=50, kept=5, kept_bytes=50)
    a.add_input("web", 1, 1000)
    a.merge(b)
    assert a.total("read").docs_in == 15 and a.total("s").rejected == {"short": [2, 20]}
    assert a.check() == []
    again = Ledger.from_dict(a.to_dict())
    assert again.to_dict() == a.to_dict()
    assert again.inputs == {"web": {"files": 1, "bytes": 1000}}


def test_check_finds_lost_documents_and_broken_chain():
    led = Ledger(["read", "s"])
    led.record("read", "web", docs_in=10, bytes_in=0, kept=8, kept_bytes=0, rejected={"x": [1, 0]})
    led.record("s", "web", docs_in=7, bytes_in=0, kept=7, kept_bytes=0)
    problems = led.check()
    assert any("10 documents in but 8 kept + 1 rejected" in p for p in problems)
    assert any("stage read kept 8 documents but stage s received 7" in p for p in problems)


def test_counts_to_dict():
    c = Counts(3, 30, 1, 10, 0, {"a": [2, 20]})
    d = c.to_dict()
    assert d["rejected"] == 2 and d["reasons"]["a"] == {"docs": 2, "bytes": 20}


def test_times_merge_roundtrip_and_stay_out_of_the_counts():
    a, b = Ledger(["read", "s"]), Ledger(["read", "s"])
    for led in (a, b):
        led.record("read", "web", docs_in=4, bytes_in=40, kept=4, kept_bytes=40)
        led.record("s", "web", docs_in=4, bytes_in=40, kept=4, kept_bytes=40, skipped=1)
        led.add_time("s", "web", 0.5, 0.6)
        led.add_global_step("s", 0.1, 0.2)
        led.add_shard_work(1.0, 1.5)
    a.merge(b)
    s = a.to_dict()["stages"][1]["sources"]["web"]
    assert s["cpu_seconds"] == 1.0 and s["wall_seconds"] == 1.2
    assert s["docs_per_cpu_second"] == 6.0  # examined documents (8 in, 2 skipped) per CPU second
    assert a.to_dict()["global_steps"] == {"s": {"cpu_seconds": 0.2, "wall_seconds": 0.4}}
    assert a.to_dict()["shard_work"] == {"cpu_seconds": 2.0, "wall_seconds": 3.0}
    assert Ledger.from_dict(a.to_dict()).to_dict() == a.to_dict()
    assert a.check() == []
    counts = a.to_dict(times=False)
    assert "global_steps" not in counts and "cpu_seconds" not in counts["stages"][1]["total"]
