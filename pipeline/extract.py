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


BOILERPLATE_SELECTORS = (
    "aside", "nav", "footer", "form",
    '[class*="author"]', '[class*="byline"]', '[class*="related"]',
    '[class*="comment"]', '[id*="comment"]', '[class*="cookie"]', '[class*="newsletter"]',
)
# A line "ends like a sentence" when its last character is one of these.
_SENTENCE_END = re.compile(r'[.!?:;…"”»)\]。！？]\s*$')


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
    # CSS selectors of elements resiliparse's main-content heuristics keep but that are rarely
    # content (author boxes, related links, comment forms, cookie banners): +0.02 precision on
    # the benchmark for -0.01 recall. [] keeps everything resiliparse keeps.
    skip_elements: list[str] = Field(default_factory=lambda: list(BOILERPLATE_SELECTORS))
    # Post-processing: drop leading and trailing lines shorter than this many words that do not
    # end like a sentence (menus, breadcrumbs, "Share", "Read more" tails). 0 disables.
    edge_trim_words: int = Field(default=12, ge=0)


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
            trim = opts.pop("edge_trim_words")
            self._fn = lambda html: edge_trim(
                extract_plain_text(html, skip_elements=skip, **opts), trim
            )
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


def edge_trim(text: str, min_words: int) -> str:
    """Drop blank and short non-sentence lines from both ends of the text. Main content sits in
    the middle; what survives resiliparse at the edges is mostly navigation and footer."""
    if not min_words or not text:
        return text
    lines = text.split("\n")

    def boiler(line: str) -> bool:
        return not line.strip() or (len(line.split()) < min_words and not _SENTENCE_END.search(line))

    i, j = 0, len(lines)
    while i < j and boiler(lines[i]):
        i += 1
    while j > i and boiler(lines[j - 1]):
        j -= 1
    # A page that is nothing but short lines keeps them: later stages judge it, not the extractor.
    return "\n".join(lines[i:j]) or text


def tidy(text: str) -> str:
    """Trim trailing spaces per line and collapse runs of blank lines (both extractors leave some)."""
    text = _TRAILING_WS.sub("\n", text)
    text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip()
