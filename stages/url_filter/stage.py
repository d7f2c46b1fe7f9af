"""URL filter: documents rejected for where they live, before anything reads their text.

datatrove's URLFilter (what FineWeb runs first), with its lists and its defaults, decision for
decision (docs/url_filter.md: parity on every URL of the shared corpora and on 100,000 generated
URLs), plus the user's own lists and allow lists. In datatrove's order, a URL is rejected when:

  1. its registered domain is on a domain blocklist             url_domain_blocked
  2. its full host (subdomain included) is on one               url_subdomain_blocked
  3. the URL itself is on a URL blocklist                       url_blocked
  4. one of its words is a banned word                          url_banned_word
  5. at least `soft_word_threshold` of its words are soft-banned url_soft_banned_words
  6. a banned subword occurs in its normalised form             url_banned_subword

An allow list wins over all of them (the URL, its registered domain or its host on an allow list:
kept). A URL Python's `urllib.parse.urlsplit` refuses (an unbalanced `[` in the host) is rejected
as `url_unparseable`: datatrove would decide on tldextract's lenient reading of it. A document
without a URL (null or empty) passes unexamined and is counted as skipped in the ledger.

As in datatrove: the domain is found by tldextract (the public suffix list snapshot it ships; it
never fetches one), with its case kept (`Example.COM` is not `example.com`); words are the URL
split at every run of characters other than ASCII letters and digits, case kept, and compared
with the lists' lower-cased words; subwords are searched in the URL lower-cased with every other
character removed.

The signals keep what each cause found, so `refinery retune` and the report re-decide a change of
`soft_word_threshold` without reading the URLs again.
"""
from __future__ import annotations

import urllib.parse
from typing import Callable, Sequence

import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from stages._arrow import set_column
from stages.base import Stage, StageConfig
from stages.url_filter import lists
from stages.url_filter.lists import NON_ALNUM, SHIPPED_CATEGORIES, normalize

DOMAIN = "url_domain_blocked"
SUBDOMAIN = "url_subdomain_blocked"
URL = "url_blocked"
BANNED_WORD = "url_banned_word"
SOFT_WORDS = "url_soft_banned_words"
SUBWORD = "url_banned_subword"
UNPARSEABLE = "url_unparseable"

# datatrove URLFilter's reason for each of ours (the parity benchmark compares through it)
DATATROVE_REASONS = {DOMAIN: "domain", SUBDOMAIN: "subdomain", URL: "url", BANNED_WORD: "hard_blacklisted",
                     SOFT_WORDS: "soft_blacklisted", SUBWORD: "blacklisted_subword"}

# hosts whose tldextract answer is remembered (a crawl's URLs share hosts); cleared when full
HOST_CACHE = 200_000


class UrlFilterConfig(StageConfig):
    categories: list[str] = Field(
        default_factory=lambda: ["adult"],
        description="blocklist categories from the list datatrove ships (url_filterblacklistsv0_3_0.tar.gz: its "
                    "domains and URLs, the UT1 adult category as datatrove assembled it; 'adult' is the one it "
                    "ships); [] for none. Other UT1 categories: download them and name their files in "
                    "block_domains / block_urls")
    block_domains: list[str] = Field(
        default_factory=list, description="files (local paths or fsspec URLs) of domains to block, one a line, "
                                          "# comments; a domain or a full host (subdomain) matches")
    block_urls: list[str] = Field(default_factory=list, description="files of full URLs to block, one a line")
    word_lists: bool = Field(
        True, description="use datatrove's banned_words.txt, soft_banned_words.txt and banned_subwords.txt")
    banned_words: list[str] = Field(default_factory=list, description="files of more banned URL words, one a line")
    soft_banned_words: list[str] = Field(
        default_factory=list, description="files of more soft-banned URL words, one a line")
    banned_subwords: list[str] = Field(
        default_factory=list, description="files of more banned subwords (matched inside the normalised URL)")
    soft_word_threshold: int = Field(
        2, ge=1, description="reject when this many distinct soft-banned words are in the URL (datatrove's default 2)")
    allow_domains: list[str] = Field(
        default_factory=list, description="files of domains or hosts always kept (an allow list wins over every cause)")
    allow_urls: list[str] = Field(default_factory=list, description="files of full URLs always kept")
    url_column: str = Field("url", description="the column holding the document's URL")

    @field_validator("categories")
    @classmethod
    def _known_categories(cls, v: list[str]) -> list[str]:
        for c in v:
            if c not in SHIPPED_CATEGORIES:
                raise ValueError(f"unknown UT1 category {c!r}: datatrove ships {', '.join(SHIPPED_CATEGORIES)}; "
                                 "give other categories' files in block_domains / block_urls")
        return v

    @model_validator(mode="after")
    def _readable_lists(self) -> "UrlFilterConfig":
        for key in _FILE_KEYS:
            for path in getattr(self, key):
                try:
                    lists.read_list_file(path, words=key in _WORD_KEYS)
                except ValueError as exc:
                    raise ValueError(f"{key}: {exc}") from None
        return self


_WORD_KEYS = ("banned_words", "soft_banned_words", "banned_subwords")
_FILE_KEYS = ("block_domains", "block_urls", "allow_domains", "allow_urls") + _WORD_KEYS


class UrlFilter(Stage):
    name = "url_filter"
    Config = UrlFilterConfig
    reasons = (DOMAIN, SUBDOMAIN, URL, BANNED_WORD, SOFT_WORDS, SUBWORD, UNPARSEABLE)
    decision_keys = ("soft_word_threshold",)
    threshold_signals = {"soft_word_threshold": "url_soft_words"}
    runs_in_worker = True  # a few set lookups and two linear scans of the URL per document
    default_skip_kinds = ("arxiv", "code")  # their `url` is a file path, not where a page lives

    config: UrlFilterConfig

    # -- declarations ---------------------------------------------------------------------
    def signal_fields(self) -> list[pa.Field]:
        return [
            pa.field("url_block", pa.string()),
            pa.field("url_block_match", pa.string()),
            pa.field("url_soft_words", pa.int32()),
            pa.field("url_soft_matches", pa.string()),
            pa.field("url_subword", pa.string()),
            pa.field("url_allowed", pa.bool_()),
        ]

    def signal_descriptions(self) -> dict[str, str]:
        return {
            "url_block": "the first cause no threshold moves (url_domain_blocked, url_subdomain_blocked, url_blocked, "
                         "url_banned_word, url_unparseable); null: none",
            "url_block_match": "what matched it: the list and the domain, host or URL, or the banned word",
            "url_soft_words": "distinct soft-banned words in the URL (null: not counted, url_block or an allow list decided)",
            "url_soft_matches": "those words, comma-separated",
            "url_subword": "the first banned subword found in the normalised URL (looked for when url_block is null)",
            "url_allowed": "an allow list names the URL, its domain or its host (kept whatever else matched); "
                           "null: the document has no URL (passed unexamined, counted as skipped)",
        }

    # -- setup ----------------------------------------------------------------------------
    def setup(self) -> None:
        import ahocorasick

        c = self.config
        self._domains: list[tuple[str, set[str]]] = []
        self._urls: list[tuple[str, set[str]]] = []
        for cat in c.categories:
            domains, urls = lists.shipped_blocklist()
            self._domains.append((f"datatrove:{cat}", domains))
            self._urls.append((f"datatrove:{cat}", urls))
        self._domains += [(p, lists.read_list_file(p, words=False)) for p in c.block_domains]
        self._urls += [(p, lists.read_list_file(p, words=False)) for p in c.block_urls]
        self._allow_domains = set().union(*(lists.read_list_file(p, words=False) for p in c.allow_domains))
        self._allow_urls = set().union(*(lists.read_list_file(p, words=False) for p in c.allow_urls))

        def words(kind: str) -> set[str]:
            out = lists.shipped_words(kind) if c.word_lists else set()
            for p in getattr(c, kind):
                out |= lists.read_list_file(p, words=True)
            return out - {""}

        self._banned = frozenset(words("banned_words"))
        self._soft = frozenset(words("soft_banned_words"))
        subwords = words("banned_subwords")
        self._automaton = None
        if subwords:
            auto = ahocorasick.Automaton(ahocorasick.STORE_ANY)
            for w in sorted(subwords):
                auto.add_word(w, w)
            auto.make_automaton()
            self._automaton = auto
        from tldextract import TLDExtract
        from tldextract.remote import lenient_netloc

        # the suffix list snapshot tldextract ships: no download, no cache written
        self._tld = TLDExtract(suffix_list_urls=(), cache_dir=None)
        self._netloc = lenient_netloc  # the host as tldextract reads it from a URL
        self._hosts: dict[str, tuple[str | None, str | None]] = {}
        self._domain_sets = [entries for _, entries in self._domains] + [self._allow_domains]
        # a list holding "" names every host without a registered domain (IP addresses, localhost)
        self._empty_listed = any("" in entries for entries in self._domain_sets)

    # -- one URL --------------------------------------------------------------------------
    def _host_block(self, url: str) -> tuple[str | None, str | None]:
        """(cause, match) from the URL's host: the domain lists (registered domain, then full
        host), or ("allowed", host) when an allow list names either. Remembered per host."""
        netloc = self._netloc(url)
        hit = self._hosts.get(netloc)
        if hit is not None:
            return hit
        if not self._listed_suffix(netloc):  # no list can name its domain or host
            hit = (None, None)
            self._remember(netloc, hit)
            return hit
        info = self._tld._extract_netloc(netloc, None)
        registered, fqdn = info.top_domain_under_public_suffix, info.fqdn
        hit = (None, None)
        if registered in self._allow_domains or fqdn in self._allow_domains:
            hit = ("allowed", registered if registered in self._allow_domains else fqdn)
        else:
            for cause, name in ((DOMAIN, registered), (SUBDOMAIN, fqdn)):
                lst = next((label for label, entries in self._domains if name in entries), None)
                if lst is not None:
                    hit = (cause, f"{lst}: {name}")
                    break
        self._remember(netloc, hit)
        return hit

    def _remember(self, netloc: str, hit: tuple[str | None, str | None]) -> None:
        if len(self._hosts) >= HOST_CACHE:
            self._hosts.clear()
        self._hosts[netloc] = hit

    def _listed_suffix(self, netloc: str) -> bool:
        """Is any dot-separated tail of the host (the whole host included) on a domain list?

        tldextract's registered domain and full host are each such a tail of the host (with the
        full-width dots it reads as dots made dots) or empty, so when no tail is listed neither is,
        and tldextract need not be asked (it costs more than the rest of the filter)."""
        if not netloc.isascii():
            netloc = netloc.replace("\u3002", ".").replace("\uff0e", ".").replace("\uff61", ".")
        sets = self._domain_sets
        if self._empty_listed:
            return True
        tail = netloc
        while True:
            for entries in sets:
                if tail in entries:
                    return True
            i = tail.find(".")
            if i < 0:
                return False
            tail = tail[i + 1:]

    def examine(self, url: str) -> tuple[str | None, str | None, int | None, str | None, str | None, bool]:
        """The signals of one non-empty URL: (block cause, its match, soft word count, soft words,
        subword, allowed). Once a cause no threshold moves is found (or an allow list names the
        URL), the words are not looked at: the decision is made whatever the threshold."""
        if not self._ready:
            self.ensure_setup()
        if "[" in url or "]" in url or not url.isascii():  # what urlsplit can refuse (brackets, NFKC)
            try:
                urllib.parse.urlsplit(url)
            except ValueError as exc:
                return UNPARSEABLE, str(exc), None, None, None, False
        cause, match = self._host_block(url)
        if cause == "allowed" or url in self._allow_urls:
            return None, None, None, None, None, True
        if cause is None:
            for label, entries in self._urls:
                if url in entries:
                    cause, match = URL, label
                    break
        if cause is not None:
            return cause, match, None, None, None, False
        url_words = set(NON_ALNUM.split(url))
        banned = url_words & self._banned
        if banned:
            return BANNED_WORD, min(banned), None, None, None, False
        soft = url_words & self._soft
        subword = None
        if self._automaton is not None:
            found = next(self._automaton.iter(normalize(url)), None)
            if found is not None:
                subword = found[1]
        if soft:
            return None, None, len(soft), ",".join(sorted(soft)), subword, False
        return None, None, 0, None, subword, False

    def reason(self, cause: str | None, soft: int | None, subword: str | None, allowed: bool | None) -> str | None:
        """The decision from one document's signals (datatrove's order; an allow list wins)."""
        if allowed is None or allowed:  # no URL, or an allow list names it
            return None
        if cause is not None:
            return cause
        if soft >= self.config.soft_word_threshold:
            return SOFT_WORDS
        return SUBWORD if subword is not None else None

    def rejects_before_text(self) -> Callable[[str | None], bool]:
        """A predicate on a record's URL: True when this stage rejects the document whatever its
        text and whatever a retune changes (a cause no threshold moves), so a reader may skip
        extracting it (pipeline/sources/url_gate.py). A soft-word rejection alone is not: a retune
        may revive it, and it then needs its text."""
        def rejects(url: str | None) -> bool:
            if not url:
                return False
            cause, _, _, _, subword, allowed = self.examine(url)
            return not allowed and (cause is not None or subword is not None)
        return rejects

    # -- batches --------------------------------------------------------------------------
    def annotate(self, batch: pa.Table) -> pa.Table:
        self.ensure_setup()
        col = self.config.url_column
        urls = batch.column(col).to_pylist() if col in batch.column_names else [None] * batch.num_rows
        none = (None,) * 6
        examine = self.examine
        rows = [examine(url) if url else none for url in urls]
        out = list(zip(*rows)) if rows else [()] * 6
        for f, vals in zip(self.signal_fields(), out):
            batch = set_column(batch, f.name, pa.array(vals, f.type))
        return batch

    def decide(self, batch: pa.Table) -> Sequence[str | None]:
        cols = [batch.column(n).to_pylist() for n in ("url_block", "url_soft_words", "url_subword", "url_allowed")]
        return [self.reason(*row) for row in zip(*cols)]

    def drop_details(self, batch: pa.Table, reasons: Sequence[str | None]) -> list[str | None]:
        """What each rejected document's cause matched: the list and domain, the word(s)."""
        names = ["url_block_match", "url_soft_words", "url_soft_matches", "url_subword"]
        if any(n not in batch.column_names for n in names):  # no signals stored: no detail to give
            return [None] * len(reasons)
        rows = batch.select(names).to_pylist()
        out: list[str | None] = []
        for reason, r in zip(reasons, rows):
            if reason is None:
                out.append(None)
            elif reason == SOFT_WORDS:
                out.append(f"{r['url_soft_words']} soft-banned words (threshold {self.config.soft_word_threshold}): "
                           f"{r['url_soft_matches']}")
            elif reason == SUBWORD:
                out.append(r["url_subword"])
            elif reason in self.reasons:
                out.append(r["url_block_match"])
            else:
                out.append(None)
        return out

    def unexamined(self, batch: pa.Table) -> int:
        """Documents this stage passed without a URL to examine (booked as skipped)."""
        return batch.column("url_allowed").null_count if "url_allowed" in batch.column_names else 0
