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
