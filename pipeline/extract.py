"""HTML to main-content text, with the extractor chosen in the recipe.

Two real extractors, both measured in benchmarks/extraction.py (results in docs/sources.md):
- resiliparse (Dolma's and DCLM's choice): a C++ DOM walk with main-content heuristics.
- trafilatura (datatrove's and FineWeb's choice): lxml plus many heuristics and fallbacks.
The default is the one the benchmark supports; the other stays one recipe key away.
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING_WS = re.compile(r"[ \t]+\n")


class ResiliparseOptions(BaseModel):
    """Options passed to resiliparse.extract.html2text.extract_plain_text."""

    model_config = ConfigDict(extra="forbid")

    main_content: bool = True
    preserve_formatting: bool = True
    alt_texts: bool = False
    links: bool = False
    list_bullets: bool = True
    noscript: bool = False
    comments: bool = False
    form_fields: bool = False
    post_meta: bool = True
    # Skip elements that resiliparse's main-content heuristics keep but that are rarely content.
    skip_elements: list[str] = Field(default_factory=list)


class TrafilaturaOptions(BaseModel):
    """Options passed to trafilatura.extract. Defaults are datatrove's (favor_precision,
    no comments, deduplicate)."""

    model_config = ConfigDict(extra="forbid")

    favor_precision: bool = True
    favor_recall: bool = False
    include_comments: bool = False
    include_tables: bool = True
    deduplicate: bool = True
    fast: bool = False  # trafilatura's no_fallback: skip the readability/justext fallbacks


class ExtractorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Literal["resiliparse", "trafilatura"] = "resiliparse"
    resiliparse: ResiliparseOptions = Field(default_factory=ResiliparseOptions)
    trafilatura: TrafilaturaOptions = Field(default_factory=TrafilaturaOptions)


class Extractor:
    """Callable html(str) -> text (maybe empty), or None when the extractor itself failed.
    Never raises: a page the extractor chokes on must not end the shard."""

    def __init__(self, config: ExtractorConfig | None = None):
        self.config = config or ExtractorConfig()
        if self.config.name == "resiliparse":
            from resiliparse.extract.html2text import extract_plain_text

            opts = self.config.resiliparse.model_dump()
            skip = opts.pop("skip_elements") or None
            self._fn = lambda html: extract_plain_text(html, skip_elements=skip, **opts)
        else:
            import trafilatura

            t = self.config.trafilatura
            self._fn = lambda html: trafilatura.extract(
                html,
                favor_precision=t.favor_precision,
                favor_recall=t.favor_recall,
                include_comments=t.include_comments,
                include_tables=t.include_tables,
                deduplicate=t.deduplicate,
                no_fallback=t.fast,
            )

    @property
    def name(self) -> str:
        return self.config.name

    def __call__(self, html: str) -> str | None:
        if not html:
            return ""
        try:
            text = self._fn(html)
        except Exception:  # extractor bugs on hostile HTML
            return None
        return tidy(text or "")


def tidy(text: str) -> str:
    """Trim trailing spaces per line and collapse runs of blank lines (both extractors leave some)."""
    text = _TRAILING_WS.sub("\n", text)
    text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip()
