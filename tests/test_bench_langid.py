"""The web-page mode of benchmarks/langid.py: the reader's labels file is what its header says, and the
verdicts and the longest-lines candidate compute what the docs claim."""
from __future__ import annotations

import hashlib

import pytest

from benchmarks.langid import WEB_LABELS, longest_lines, verdict

KINDS = {"text", "mixed", "boilerplate", "short", "error"}
REASONS = {"rejected-no-list", "rejected-de-fr-en", "rejected-en-english-signal", "sample-rejected-en", "sample-kept",
           "disagrees-cld2-or-hplt", "cld2-relabelled", "prefix-whole-longest-differ", "unicode-spaces-relabel"}


def rows():
    for line in WEB_LABELS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            yield line.split("\t")


def test_labels_file_is_well_formed():
    seen = set()
    for cols in rows():
        assert len(cols) == 8, cols
        url, half, because, lang, reader, kind, right, _ = cols
        assert url not in seen
        seen.add(url)
        # the same halves as benchmarks/toxicity.py's web pages
        assert half == ("tune" if int(hashlib.sha1(url.encode()).hexdigest(), 16) % 2 == 0 else "report")
        assert set(because.split(",")) <= REASONS and kind in KINDS and right in {"yes", "no", "unclear"}
        assert lang and reader
        if right == "yes":  # a right label is the reader's language
            assert lang == reader, url
    assert len(seen) == 294


def test_every_rejected_page_was_read():
    because = [set(c[2].split(",")) for c in rows()]
    assert sum("rejected-de-fr-en" in b for b in because) == 199
    assert sum("rejected-no-list" in b for b in because) == 3
    assert all("rejected-de-fr-en" in b for b in because if "rejected-no-list" in b)


def test_verdict():
    row = {"read": {"lang": "fr", "reader": "zh", "right": "no"}}
    assert verdict(row, "fr") == "no"
    assert verdict(row, "zh") == "yes"
    assert verdict(row, "ja") == "no"
    assert verdict({"read": {"lang": "en", "reader": "de", "right": "unclear"}}, "de") == "unclear"
    assert verdict({"read": None}, "en") == "unread"


@pytest.mark.parametrize("budget", [5, 12, 100])
def test_longest_lines(budget):
    text = "ab\n\n  a much longer line  \nmid line\n"
    out = longest_lines(text, budget)
    assert out.splitlines()[0] == "a much longer line"
    assert out == ("a much longer line" if budget <= 18 else "a much longer line\nmid line\nab")
