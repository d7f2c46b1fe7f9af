"""benchmarks/toxicity_url.py puts each page in the URL filter's group: rejected, flagged (one
soft-banned word, under the threshold of two), or neither."""
from __future__ import annotations

import pytest

from benchmarks.toxicity_url import groups


@pytest.mark.slow
def test_pages_are_grouped_by_the_url_filters_decision():
    rows = [{"url": "https://example.org/articles/bullshit-detector"},  # one soft-banned word: flagged
            {"url": "https://example.org/bullshit/asshole"},  # two: rejected
            {"url": "https://example.org/articles/gardening"},
            {"url": "https://example.org/"}]
    assert groups(rows) == ["flagged", "rejected", "neither", "neither"]
