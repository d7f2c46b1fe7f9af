"""benchmarks/extraction_web.py: the reader's labels file is what its header says, and the agreement
measure counts what the docs say it counts."""
from __future__ import annotations

import hashlib

from benchmarks.extraction_web import LABELS, agreement, half_of, label_summary, read_labels, tokens

WINNERS = {"refinery", "trafilatura", "both", "neither"}
FAULTS = {"-", "main-missed", "heading-missed", "boilerplate-kept", "nav-kept", "comments", "soft-hyphens"}


def test_labels_file_is_well_formed():
    labels = read_labels(LABELS)
    assert len(labels) == 41  # 23 lowest-r + 18 lowest-p, as the header says
    assert len({lab["url"] for lab in labels}) == len(labels)
    for lab in labels:
        assert lab["half"] == ("tune" if int(hashlib.sha1(lab["url"].encode()).hexdigest(), 16) % 2 == 0 else "report")
        assert lab["half"] == half_of(lab["url"])
        assert lab["winner"] in WINNERS, lab
        for col in ("ours_wrong", "theirs_wrong"):
            assert set(lab[col].split(",")) <= FAULTS, lab
        assert lab["read_because"] in ("lowest-r", "lowest-p")
        p, r = float(lab["p"]), float(lab["r"])
        # the selection rules of the header
        assert (r < 0.62) if lab["read_because"] == "lowest-r" else (p < 0.5 and r >= 0.62), lab
        assert lab["note"]


def test_tokens_split_scripts_without_spaces_per_character():
    assert tokens("Hello, World! hello") == {"hello": 2, "world": 1}
    assert tokens("东北大学 news") == {"东": 1, "北": 1, "大": 1, "学": 1, "news": 1}
    assert sum(tokens("นาฬิกา").values()) == len("นาฬิกา")  # Thai: one token per character
    assert tokens("Привет мир") == {"привет": 1, "мир": 1}


def test_agreement_is_multiset_overlap_in_both_directions():
    p, r, na, nb = agreement("a a b c", "a b d d d d")
    assert (na, nb) == (4, 6)
    assert p == 2 / 4  # 'a' once and 'b' of ours are in theirs
    assert r == 2 / 6
    assert agreement("", "x y") == (1.0, 0.0, 0, 2)
    assert agreement(None, None) == (1.0, 1.0, 0, 0)


def test_label_summary_counts_each_fault_per_half():
    labels = [dict(half="tune", winner="refinery", ours_wrong="-", theirs_wrong="comments,nav-kept"),
              dict(half="report", winner="trafilatura", ours_wrong="main-missed", theirs_wrong="nav-kept")]
    rows = label_summary(labels)
    assert "| pages | 1 | 1 | 2 |" in rows
    assert "| right: refinery | 1 | 0 | 1 |" in rows
    assert "| trafilatura nav-kept | 1 | 1 | 2 |" in rows
    assert "| refinery main-missed | 0 | 1 | 1 |" in rows
    assert not any("right: neither" in row for row in rows)  # no zero rows


def test_fallback_verdicts_file_is_well_formed_and_gives_the_documented_counts():
    from benchmarks.extraction_web import verdict_summary

    path = LABELS.parent / "extraction_web_fallback_labels.tsv"
    rows = read_labels(path)
    kinds = {"better", "worse", "mixed", "same", "-"}
    assert len({r["url"] for r in rows}) == len(rows)
    for r in rows:
        assert r["half"] == half_of(r["url"])
        assert r["off_verdict"] in kinds and r["filtered_verdict"] in kinds and r["note"]
        if r["half"] == "report":
            assert r["off_verdict"] == "-"  # the report half was read once, for the chosen candidate only
    table = verdict_summary(rows)
    # docs/sources.md, "On real crawl pages, without gold"
    assert "| off | tune | 25 | 15 | 2 | 2 | 6 |" in table
    assert "| filtered | tune | 24 | 16 | 2 | 0 | 6 |" in table
    assert "| filtered | report | 27 | 11 | 2 | 2 | 12 |" in table
    assert not any("| off | report" in row for row in table)
