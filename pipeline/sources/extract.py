"""HTML to main-content text, with the extractor chosen in the recipe.

Two real extractors, both measured in benchmarks/extraction.py (results in docs/sources.md), and
the default that combines them: resiliparse first, trafilatura for the pages it doubts (text shorter
than 800 characters: about one page in eight on trafilatura's eval set, more than half of short crawl
pages), which reaches trafilatura's F1 at about 6x its CPU speed on that set (docs/sources.md). The fallback
runs trafilatura's own steps, with its readability comparison only where trafilatura's own text is
short too, and its last resort (the page's whole text) filtered as the fast path filters stray lines.
- resiliparse (Dolma's and DCLM's choice): a C++ DOM walk with main-content heuristics,
  ~25x faster than trafilatura. refinery adds three cheap, measured steps on top of it:
  boilerplate CSS selectors, a block filter on resiliparse's minimal-HTML output (link-dense
  blocks and short stray lines go), and trimming short lines at the edges of the text.
- trafilatura (datatrove's and FineWeb's choice): lxml plus many heuristics and fallbacks;
  the most precise on its own benchmark, and the slowest.
"""
from __future__ import annotations

import functools
import html as _html
import re
from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.sources.encoding import decode_html

# The extraction child's name (in ps, and for `sandbox.children_cpu`: its CPU is booked to read).
EXTRACTION_PROCESS = "refinery-extraction"

_BLANK_RUNS = re.compile(r"\n{3,}")
# from the start of a run only (the lookbehind): "[ \t]+\n" alone retried at every space of a run not
# followed by a newline, time quadratic in the run (40,000 spaces: 0.66 s; now 2,000,000: 0.02 s)
_TRAILING_WS = re.compile(r"(?<![ \t])[ \t]+\n")

BOILERPLATE_SELECTORS = (
    "aside", "nav", "footer", "form", "figcaption",
    '[class*="author"]', '[class*="byline"]', '[class*="related"]',
    '[class*="comment"]', '[id*="comment"]', '[class*="cookie"]', '[class*="newsletter"]',
)
# A line "ends like a sentence" when its last character is one of these (a trailing ':' is a
# label such as "Read more:", not a sentence).
_SENTENCE_END = re.compile(r'[.!?…"”»)\]。！？]\s*$')
# Blocks of resiliparse's minimal-HTML output (it emits only these tags, plus <a>, <br>).
_BLOCK = re.compile(r"<(p|h[1-6]|pre|blockquote|ul|ol)\b[^>]*>(.*?)</\1>", re.S)
_LIST_ITEM = re.compile(r"<li\b[^>]*>(.*?)</li>", re.S)
_LINK = re.compile(r"<a\b[^>]*>(.*?)</a>", re.S)
_TAG = re.compile(r"<[^>]+>")


class ResiliparseOptions(BaseModel):
    """Options of resiliparse.extract.html2text.extract_plain_text, and of refinery's steps."""

    model_config = ConfigDict(extra="forbid")

    main_content: bool = True
    alt_texts: bool = False
    list_bullets: bool = True
    noscript: bool = False
    comments: bool = False  # comment sections as content
    form_fields: bool = False
    post_meta: bool = True
    # CSS selectors of elements resiliparse's main-content heuristics keep but that are rarely
    # content (author boxes, related links, comment forms, cookie banners). [] disables.
    skip_elements: list[str] = Field(default_factory=lambda: list(BOILERPLATE_SELECTORS))
    # Block filter over the minimal-HTML output: drop paragraphs and list items whose text is
    # mostly link text, and stray text outside any paragraph shorter than `bare_min_words`
    # that does not end like a sentence. False gives resiliparse's plain-text output.
    block_filter: bool = True
    max_link_density: float = Field(default=0.5, ge=0, le=1)
    bare_min_words: int = Field(default=5, ge=0)
    # Drop leading lines shorter than this many words that do not end like a sentence, and
    # trailing lines shorter than it (menus, breadcrumbs, "Share", "Read more" tails). 0 disables.
    edge_trim_words: int = Field(default=12, ge=0)


class TrafilaturaOptions(BaseModel):
    """Options passed to trafilatura.extract. Defaults are datatrove's (favor_precision,
    no comments) except `deduplicate`: trafilatura's deduplication is a process-wide cache of text
    blocks already seen, so a page's text would depend on which pages the same worker extracted
    before it, and the kept set on the number of workers. Deduplication is the dedup stages' job."""

    model_config = ConfigDict(extra="forbid")

    favor_precision: bool = True
    favor_recall: bool = False
    include_comments: bool = False
    include_tables: bool = True
    deduplicate: bool = False
    fast: bool = False  # trafilatura's no_fallback: skip the readability/justext fallbacks


class ExtractorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Literal["resiliparse", "trafilatura"] = "resiliparse"
    resiliparse: ResiliparseOptions = Field(default_factory=ResiliparseOptions)
    trafilatura: TrafilaturaOptions = Field(default_factory=TrafilaturaOptions)
    fallback: Literal["trafilatura", "none"] = Field(
        default="trafilatura",
        description="with name=resiliparse: a page the fast path doubts (see fallback_below_chars) is "
                    "extracted again by trafilatura (library defaults), whose text is kept when it has "
                    "more distinct content")
    fallback_below_chars: int = Field(
        default=800, ge=0,
        description="the fast path may doubt a page whose text is shorter than this (tuned on one half of "
                    "trafilatura's eval set, reported on the other: docs/sources.md)")
    fallback_always_below_chars: int = Field(
        default=200, ge=0,
        description="...and always doubts one whose text is shorter than this")
    fallback_readability_below_chars: int = Field(
        default=800, ge=0,
        description="inside the fallback, trafilatura's readability comparison (the costliest of its steps on "
                    "the pages the fast path doubts) runs only when trafilatura's own extraction is shorter than "
                    "this too; otherwise trafilatura goes on as it would have (jusText check, baseline). Chosen "
                    "on the tune half of trafilatura's eval set (docs/sources.md)")
    fallback_max_kept: float = Field(
        default=1.0, ge=0, le=1,
        description="between the two lengths, the fast path doubts a page only when its text is less than "
                    "this fraction of resiliparse's own output (minimal HTML with links, in characters): "
                    "its block filter and edge trim threw most of it away as links and stray lines. "
                    "1 (the default) doubts every page under fallback_below_chars; 0.55 sends 28% fewer "
                    "pages to trafilatura at the same F1 on the tune half, but loses 0.004 F1 on the report "
                    "half (docs/sources.md)")
    fallback_baseline: Literal["whole", "filtered", "off"] = Field(
        default="filtered",
        description="inside the fallback, trafilatura's last resort when its own text is under 250 characters "
                    "(`baseline`: the page's whole text, menus and footers included): `filtered` (the default) "
                    "drops its lines that the fast path's block filter and edge trim would drop as stray text "
                    "(under bare_min_words words and not ending like a sentence; short lines at the edges); "
                    "`whole` keeps it as trafilatura does; `off` skips it, so trafilatura's own short text "
                    "competes with the fast path's. On real crawl pages the baseline ran on 54 of 251 pages, "
                    "mostly keeping menus; chosen on the tune half of those pages (docs/sources.md)")
    time_limit: float = Field(
        default=30.0, ge=0,
        description="seconds one page may take; slower pages are rejected (extract_timeout). Extraction "
                    "then runs in a child process that can be killed; 0 runs in-process with no limit")
    memory_limit_mb: int = Field(
        default=0, ge=0,
        description="address-space cap of the extraction process in MiB (0: 2 GiB or a quarter of RAM); "
                    "only with a time limit")


class Extractor:
    """Callable html(str) -> text (maybe empty), or None when the extractor itself failed.

    Raises SandboxTimeout when a page takes longer than `time_limit` and SandboxCrash when the
    extraction process dies on it (e.g. out of memory): the reader rejects that page and goes on.
    """

    def __init__(self, config: ExtractorConfig | None = None):
        self.config = config or ExtractorConfig()
        self._fn = None
        self._sandbox = None
        if self.config.time_limit:
            from pipeline.sources.sandbox import Sandbox, default_memory_limit

            cap = self.config.memory_limit_mb << 20 or default_memory_limit()
            self._sandbox = Sandbox(functools.partial(_build, self.config.model_dump()),
                                    self.config.time_limit, cap, name=EXTRACTION_PROCESS)
        else:
            self._fn = _build(self.config.model_dump())

    @property
    def name(self) -> str:
        return self.config.name

    def __call__(self, html: str) -> str | None:
        return self.extract(html)[0]

    def extract(self, html: str) -> tuple[str | None, str]:
        """(text, the extractor that produced it): the fallback's name when it was used."""
        if not html:
            return "", self.name
        if self._sandbox is not None:
            return self._sandbox(html)
        return self._fn(html)

    def extract_payload(self, payload: bytes, http_charset: str | None = None
                        ) -> tuple[str | None, str, tuple[str, str, int]]:
        """`extract` of an undecoded page: (text, extractor, (charset, charset source, replaced
        bytes)), decoded as `encoding.decode_html` decodes it, in the extraction process. Why there:
        the payload crosses the pipe as bytes (a copy) instead of a decoded str (encoded to UTF-8 to
        be pickled, decoded again on the other side), and the worker never decodes it: 0.25 CPU-s
        per 1,000 crawl pages (BENCHMARKS.md, "Where refinery's CPU goes at 50 MB")."""
        if self._sandbox is not None:
            return self._sandbox((payload, http_charset))
        return self._fn((payload, http_charset))

    def extract_payloads(self, pages: list[tuple[bytes, str | None]]) -> list:
        """`extract_payload` of several (payload, HTTP charset) pages in one round trip to the
        extraction process (`Sandbox.map`: same answers, page by page, under the same time limit
        per page); a page's SandboxTimeout, SandboxCrash or error is returned in its place."""
        if self._sandbox is not None:
            return self._sandbox.map(list(pages))
        out = []
        for page in pages:
            try:
                out.append(self._fn(page))
            except Exception as exc:  # noqa: BLE001 - in its place, as the sandbox gives it
                out.append(exc)
        return out

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()


def _build(config: dict):
    """The page -> (text, extractor) function for a config (a dict, so it pickles to the sandbox
    process). It also takes (payload bytes, HTTP charset): see `Extractor.extract_payload`."""
    c = ExtractorConfig.model_validate(config)
    extract = _build_text(c)

    def run(page):
        if isinstance(page, str):
            return extract(page)
        decoded = decode_html(*page)
        found = (decoded.charset, decoded.charset_source, decoded.replaced)
        return (*extract(decoded.text), found) if decoded.text else ("", c.name, found)
    return run


def _build_text(c: ExtractorConfig):
    """The html(str) -> (text, extractor) function for a config."""
    if c.name == "trafilatura":
        slow = _trafilatura(c.trafilatura)

        def extract_slow(html: str) -> tuple[str | None, str]:
            try:
                return drop_invented_repeats(tidy(slow(html) or ""), html), c.name
            except Exception:  # extractor bugs on hostile HTML
                return None, c.name
        return extract_slow

    fast = _resiliparse(c.resiliparse)
    slow = (_trafilatura_fallback(c.fallback_readability_below_chars, c.fallback_baseline, c.resiliparse)
            if c.fallback == "trafilatura" else None)

    def extract(html: str) -> tuple[str | None, str]:
        try:
            text, raw_chars = fast(html)
            text = tidy(text)
        except Exception:  # extractor bugs on hostile HTML
            text, raw_chars = None, 0
        if slow is not None and doubts(text, raw_chars, c):
            try:
                other = drop_invented_repeats(tidy(slow(html) or ""), html)
            except Exception:
                other = ""
            if distinct_chars(other) > distinct_chars(text or ""):  # more content, not the same twice
                return other, "trafilatura (fallback)"
        return text, c.name
    return extract


def doubts(text: str | None, raw_chars: int, c: ExtractorConfig) -> bool:
    """Whether the fast path's text is suspect enough to pay for trafilatura (about 30 times the
    fast path's cost per page). Nearly all of the fast path's losses to trafilatura are pages it
    returns little text for. `fallback_max_kept` < 1 adds a second piece of evidence for texts
    between the two lengths: was the text short because the page is (most of what resiliparse
    found survived), or because the block filter threw most of it away?"""
    if text is None:
        return True
    n = len(text)
    return n < c.fallback_always_below_chars or (
        n < c.fallback_below_chars and n < c.fallback_max_kept * raw_chars)


def _resiliparse(o: ResiliparseOptions):
    """html -> (text, characters of resiliparse's own output before refinery's steps)."""
    from resiliparse.extract.html2text import extract_plain_text

    kw = dict(main_content=o.main_content, alt_texts=o.alt_texts, list_bullets=o.list_bullets,
              noscript=o.noscript, comments=o.comments, form_fields=o.form_fields,
              post_meta=o.post_meta, skip_elements=list(o.skip_elements) or None)
    if o.block_filter:
        def run(html: str) -> tuple[str, int]:
            out = extract_plain_text(html, preserve_formatting="minimal_html", links=True, **kw)
            return edge_trim(filter_blocks(out, o.max_link_density, o.bare_min_words), o.edge_trim_words), len(out)
    else:
        def run(html: str) -> tuple[str, int]:
            out = extract_plain_text(html, preserve_formatting=True, **kw)
            return edge_trim(out, o.edge_trim_words), len(out)
    return run


def _trafilatura(t: TrafilaturaOptions):
    import trafilatura

    def run(html: str) -> str | None:
        return trafilatura.extract(
            html, favor_precision=t.favor_precision, favor_recall=t.favor_recall,
            include_comments=t.include_comments, include_tables=t.include_tables,
            deduplicate=t.deduplicate, no_fallback=t.fast,
        )
    return run


def _trafilatura_fallback(readability_below: int, use_baseline: str = "whole",
                          ro: ResiliparseOptions | None = None):
    """trafilatura.extract with its library defaults (no comments), run from trafilatura's own steps
    (those of trafilatura.core.bare_extraction for plain-text output) with one change: its
    readability comparison, which re-extracts the whole page with a second algorithm and keeps that
    text when it is more than twice as long, runs only when trafilatura's own text is shorter than
    `readability_below`. On the pages the fast path doubts, readability is about 40% of trafilatura's
    time and only changed the result where trafilatura's own text was short (docs/sources.md).
    Calling the steps directly also skips building trafilatura's options object for every page, and
    its content extraction runs with its XPath filters matched in Python on trees of lxml's
    C-level element classes (trafilatura_steps: same elements and text, a quarter less CPU).
    With another trafilatura whose steps are not where this expects them, it is trafilatura.extract."""
    try:
        from copy import copy

        from trafilatura.baseline import baseline
        from trafilatura.external import SANITIZED_XPATH
        from trafilatura.htmlprocessing import convert_tags, tree_cleaning
        from trafilatura.settings import DEFAULT_CONFIG
        from trafilatura.settings import Extractor as Options
        from trafilatura.utils import normalize_unicode
        from trafilatura.xml import xmltotxt

        from pipeline.sources import trafilatura_steps

        o = Options(config=DEFAULT_CONFIG, output_format="txt", comments=False, tables=True)
        extract_content = trafilatura_steps.extract_content()
        load_html = trafilatura_steps.load_html()
        compare_extraction, justext_rescue = trafilatura_steps.compare_extraction()
    except (ImportError, TypeError, AttributeError):  # pragma: no cover - another trafilatura
        return _trafilatura(TrafilaturaOptions(favor_precision=False))

    def run(html: str) -> str | None:
        try:
            return steps(html)
        except (TypeError, ValueError):  # as trafilatura.extract: lxml refuses the page
            return None

    def steps(html: str) -> str | None:
        tree = load_html(html)
        if tree is None:
            return None
        tree_backup = copy(tree)
        cleaned = tree_cleaning(tree, o)
        cleaned_backup = copy(cleaned)
        cleaned = convert_tags(cleaned, o, None)
        body, text, n = extract_content(cleaned, o)
        if n < readability_below:
            # readability may change the tree it gets; trafilatura gives it a copy and keeps the
            # original for its baseline below, which parsing the page again gives as well (rarely needed)
            body, text, n = compare_extraction(cleaned_backup, tree_backup, body, text, n, o)
            tree_backup = None
        elif body.xpath(SANITIZED_XPATH) or n < o.min_extracted_size:  # compare_extraction's jusText step
            body2, text2, n2, used = justext_rescue(cleaned_backup, o, body, 0, "")
            if used and not n > 4 * n2:
                body, text, n = body2, text2, n2
        whole = False
        if n < o.min_extracted_size and use_baseline != "off":
            body, text, n = baseline(html if tree_backup is None else tree_backup)
            whole = use_baseline == "filtered"
        if n < o.min_output_size:
            return None
        out = normalize_unicode(xmltotxt(body, o.formatting))
        return filter_stray_lines(out, ro or ResiliparseOptions()) if whole else out
    return run


# -- post-processing ---------------------------------------------------------------------------
def _plain(fragment: str) -> str:
    # The checks skip the regex and unescape on fragments without markup or entities (most of
    # them): a third of the block filter's time, measured on the eval set.
    if "<" in fragment:
        fragment = _TAG.sub("", fragment.replace("<br>", "\n"))
    return _html.unescape(fragment) if "&" in fragment else fragment


def _link_density(fragment: str, text: str) -> float:
    if "<a" not in fragment:
        return 0.0
    linked = sum(len(_plain(m).strip()) for m in _LINK.findall(fragment))
    return linked / max(len(text), 1)


def filter_blocks(minimal_html: str, max_link_density: float, bare_min_words: int) -> str:
    """resiliparse minimal-HTML → plain text, without link-dense blocks and short stray lines.
    Paragraphs are separated by a blank line, list items by a newline with a bullet."""
    out: list[str] = []

    def bare(segment: str) -> None:
        if not segment or segment.isspace():  # the usual gap between two blocks
            return
        for line in _plain(segment).split("\n"):
            t = line.strip()
            if t and (len(t.split()) >= bare_min_words or _SENTENCE_END.search(t)):
                out.append(t)

    pos = 0
    for m in _BLOCK.finditer(minimal_html):
        bare(minimal_html[pos:m.start()])
        pos = m.end()
        tag, inner = m.group(1), m.group(2)
        if tag in ("ul", "ol"):
            items = []
            for li in _LIST_ITEM.findall(inner) or [inner]:
                t = " ".join(_plain(li).split())
                if t and _link_density(li, t) <= max_link_density:
                    items.append("• " + t)
            if items:
                out.append("\n".join(items))
            continue
        t = _plain(inner).strip()
        if not t:
            continue
        if tag != "pre":
            t = "\n".join(" ".join(x.split()) for x in t.split("\n") if x.strip())
            if _link_density(inner, t) > max_link_density:
                continue
        out.append(t)
    bare(minimal_html[pos:])
    return "\n\n".join(out)


def filter_stray_lines(text: str, o: ResiliparseOptions) -> str:
    """Plain text (trafilatura's baseline: a page's whole text) filtered as the fast path filters
    text outside any block: lines under `bare_min_words` words that do not end like a sentence go
    (menus, buttons, footers), then the edge trim."""
    lines = [t for t in (line.strip() for line in text.split("\n"))
             if t and (len(t.split()) >= o.bare_min_words or _SENTENCE_END.search(t))]
    return edge_trim("\n".join(lines), o.edge_trim_words) if lines else ""


def edge_trim(text: str, min_words: int) -> str:
    """Drop blank and short lines from both ends: at the start those shorter than `min_words`
    that do not end like a sentence, at the end any shorter than `min_words`. Main content sits
    in the middle; what survives at the edges is mostly navigation, teasers and footers."""
    if not min_words or not text:
        return text
    lines = text.split("\n")
    i, j = 0, len(lines)
    while i < j and (not lines[i].strip() or (len(lines[i].split()) < min_words and not _SENTENCE_END.search(lines[i]))):
        i += 1
    while j > i and (not lines[j - 1].strip() or len(lines[j - 1].split()) < min_words):
        j -= 1
    # A page that is nothing but short lines keeps them: later stages judge it, not the extractor.
    return "\n".join(lines[i:j]) or text


def distinct_chars(text: str) -> int:
    """Characters in the text's distinct lines (whitespace folded): trafilatura sometimes emits a
    page's content twice, which is not more content."""
    seen: set[str] = set()
    for line in text.split("\n"):
        line = " ".join(line.split())
        if line:
            seen.add(line)
    return sum(map(len, seen))


def drop_invented_repeats(text: str, html: str, min_chars: int = 80) -> str:
    """`text` without the extra copies of a paragraph (a line of at least `min_chars`) that the
    extractor wrote more often than the page holds it: trafilatura's content extraction writes some
    forum posts twice (katzen-forum.net in its own eval set; upstream's issues too). A paragraph the
    page itself repeats keeps as many copies as the page has (counted by its first 50 characters
    in the unescaped HTML, so markup between the words cannot hide a copy)."""
    lines = text.split("\n")
    counts = Counter(line for line in lines if len(line) >= min_chars)
    repeated = [line for line, n in counts.items() if n > 1]
    if not repeated:
        return text
    page = _html.unescape(html)
    allowed = {line: max(1, page.count(line[:50])) for line in repeated}
    seen: Counter = Counter()
    out = []
    for line in lines:
        if line in allowed:
            seen[line] += 1
            if seen[line] > allowed[line]:
                continue
        out.append(line)
    return tidy("\n".join(out))


def tidy(text: str) -> str:
    """Trim trailing spaces per line and collapse runs of blank lines (both extractors leave some)."""
    # The substring checks skip a regex scan of the whole text when there is nothing to fix (the
    # block filter's output has neither): a third of the fast path's post-processing time.
    if " \n" in text or "\t\n" in text:
        text = _TRAILING_WS.sub("\n", text)
    if "\n\n\n" in text:
        text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip()
