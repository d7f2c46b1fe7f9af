"""Deciding a page on its URL before it is extracted.

A reader that extracts text from HTML (commoncrawl WARC responses) spends most of its time in the
extractor. When the first stage a source's documents meet decides on the URL alone
(`Stage.rejects_before_text`, the URL filter), the reader asks it first: a page that stage rejects
whatever its text is never extracted. Its row goes on with empty text, and the stage rejects it
as it would have, so the rejection is booked under that stage in the ledger (not under `read`),
with its reason and detail, and the documents kept are the ones running the stage after
extraction keeps. Only rejections no retune can revive are taken early: a retune re-decides from
the stored signals, and a revived document needs its text.
"""
from __future__ import annotations

from typing import Any, Callable

from stages.base import Stage

# metadata key a page skipped this way carries
NOT_EXTRACTED = "not_extracted"


def gate_for(stages: list[Stage], source: str, kind: str) -> Callable[[str | None], bool] | None:
    """The predicate of the first stage that examines this source's documents, if it decides on
    the URL alone; None otherwise (a global stage comes first, or a stage that reads the text)."""
    for st in stages:
        if not st.applies_to(source, kind):
            continue  # passes the documents on unexamined
        return None if st.needs_all_documents else st.rejects_before_text()
    return None


def install(sources: dict[str, Any], stages: list[Stage]) -> None:
    """Give each source that can use one (it has a `url_gate` attribute) its predicate."""
    for name, src in sources.items():
        if hasattr(src, "url_gate"):
            src.url_gate = gate_for(stages, name, src.kind)
