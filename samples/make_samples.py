#!/usr/bin/env python
"""Regenerate every file under samples/ deterministically.

    python samples/make_samples.py            # writes next to this script (samples/)
    python samples/make_samples.py OUT_DIR    # writes the same tree under OUT_DIR

Everything derives from SEED: page choices, WARC dates and record ids. Gzip members are written
with mtime 0 and tar members with fixed owners and times, so a rerun gives byte-identical files.
The texts were written for refinery (texts.py, special.py, arxiv_src.py, code_src.py); nothing is
copied from real crawls. `manifest.json` lists every planted document and what should happen to it.
"""
from __future__ import annotations

import argparse
import base64
import email.utils
import gzip
import hashlib
import io
import json
import random
import re
import sys
import tarfile
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import arxiv_src  # noqa: E402
import code_src  # noqa: E402
import special  # noqa: E402
import texts  # noqa: E402

from warcio.statusandheaders import StatusAndHeaders  # noqa: E402
from warcio.warcwriter import WARCWriter  # noqa: E402

SEED = 20240117
CRAWL = "CC-SAMPLE-2024-10"
LANG_ORDER = ["en", "de", "fr", "es", "it", "pt", "nl", "ru", "pl", "zh", "ja"]
CJK = {"zh", "ja"}
MAX_UNRELATED_JACCARD = 0.3


def rng_for(*parts: object) -> random.Random:
    """An independent, reproducible random stream per purpose (str seeds hash with SHA-512)."""
    return random.Random(":".join([str(SEED), *map(str, parts)]))


def uuid_from(rng: random.Random) -> str:
    return f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def gzip_bytes(data: bytes, name: str = "") -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name, mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(data)
    return buf.getvalue()


# ================================================================================================
# Text helpers
# ================================================================================================
def join_sentences(lang: str, sentences: list[str]) -> str:
    return ("" if lang in CJK else " ").join(sentences)


def shingles(text: str, lang: str, n: int = 5) -> set:
    """5-word shingles (5-character for Chinese/Japanese), lower-cased, punctuation-free."""
    if lang in CJK:
        chars = [c for c in text if c.isalnum()]
        return {"".join(chars[i : i + n]) for i in range(max(1, len(chars) - n + 1))}
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def slugify(title: str) -> str:
    ascii_ = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")
    return slug[:60] or "article"


class Composer:
    """Builds articles from the sentence banks, keeping same-language articles apart.

    Each article takes most sentences from one topic and a few from a second; among many random
    candidates it keeps the one sharing the fewest sentences with earlier articles of the language.
    """

    def __init__(self) -> None:
        self.history: dict[str, list[set]] = {lang: [] for lang in texts.LANGS}

    def article(self, lang: str, rng: random.Random, n_main: int = 5, n_extra: int = 3):
        topics = texts.LANGS[lang]["topics"]
        names = list(topics)
        best = None
        for _ in range(80):
            main, extra = rng.sample(names, 2)
            pick_main = sorted(rng.sample(range(len(topics[main])), n_main))
            pick_extra = sorted(rng.sample(range(len(topics[extra])), n_extra))
            keys = {(main, i) for i in pick_main} | {(extra, i) for i in pick_extra}
            overlaps = [len(keys & h) for h in self.history[lang]] or [0]
            score = (max(overlaps), sum(overlaps))
            if best is None or score < best[0]:
                best = (score, main, extra, pick_main, pick_extra, keys)
        _, main, extra, pick_main, pick_extra, keys = best
        self.history[lang].append(keys)
        fill = Filler(lang, rng)
        main_s = [fill(topics[main][i]) for i in pick_main]
        extra_s = [fill(topics[extra][i]) for i in pick_extra]
        cut = (len(main_s) + 1) // 2
        paragraphs = [join_sentences(lang, main_s[:cut]), join_sentences(lang, main_s[cut:]),
                      join_sentences(lang, extra_s)]
        title = fill(texts.TITLES[lang][main])
        return title, paragraphs, main


class Filler:
    """Fills {city}/{name}/{year}/{num} slots; one city and one person per article."""

    def __init__(self, lang: str, rng: random.Random):
        spec = texts.LANGS[lang]
        self.city = rng.choice(spec["cities"])
        self.name = rng.choice(spec["names"])
        self.rng = rng

    def __call__(self, template: str) -> str:
        return template.format(city=self.city, name=self.name, year=self.rng.randint(1998, 2022),
                               num=self.rng.randint(3, 40))


# ================================================================================================
# Pages
# ================================================================================================
@dataclass
class Page:
    case: str
    lang: str
    title: str
    paragraphs: list[str]
    host: str
    site: str
    url: str = ""
    layout: str = "modern"
    status: int = 200
    content_type: str = "text/html"
    charset: str = "utf-8"
    charset_decl: str = "both"  # both | header | meta | http-equiv
    payload: bytes | None = None  # non-HTML bodies
    location: str | None = None  # redirects
    group: str | None = None  # duplicate / near-duplicate group
    expect: str = "keep"
    note: str = ""
    year: int = 2024
    author: str = ""

    @property
    def main_text(self) -> str:
        return "\n".join(self.paragraphs)


def esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def sidebar_titles(lang: str, exclude: str) -> list[str]:
    fill = lambda t: t.replace("{city}", texts.LANGS[lang]["cities"][0])  # noqa: E731
    return [fill(t) for k, t in texts.TITLES[lang].items() if fill(t) != exclude][:4]


def render_modern(p: Page) -> str:
    bp = texts.BOILERPLATE[p.lang]
    nav = "\n".join(f'      <li><a href="/{slugify(n) or "section"}/">{esc(n)}</a></li>' for n in bp["nav"])
    related = "\n".join(f'      <li><a href="/{slugify(t)}/">{esc(t)}</a></li>' for t in sidebar_titles(p.lang, p.title))
    links = "\n".join(f'    <li><a href="/{slugify(n) or "page"}">{esc(n)}</a></li>' for n in bp["links"])
    body = "\n".join(f"    <p>{esc(x)}</p>" for x in p.paragraphs)
    meta_charset = f'  <meta charset="{p.charset}">\n' if p.charset_decl in ("both", "meta") else ""
    byline = f'    <p class="byline">{esc(bp["by"])} {esc(p.author)} | <time datetime="{p.year}-02-12">{p.year}-02-12</time></p>\n' if p.author else ""
    desc = esc(p.paragraphs[0][:150]) if p.paragraphs else ""
    return f"""<!DOCTYPE html>
<html lang="{p.lang}">
<head>
{meta_charset}  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{esc(p.title)} | {esc(p.site)}</title>
  <meta name="description" content="{desc}">
  <link rel="stylesheet" href="/assets/site.css">
  <script>window.dataLayer = window.dataLayer || []; function gtag(){{dataLayer.push(arguments);}}</script>
</head>
<body>
  <header class="site-header">
    <a class="logo" href="/">{esc(p.site)}</a>
    <nav class="main-nav">
    <ul>
{nav}
    </ul>
    </nav>
    <form class="search" action="/search"><input type="text" name="q" placeholder="{esc(bp['search'])}"><button>{esc(bp['search'])}</button></form>
  </header>
  <div class="cookie-notice"><p>{esc(bp['cookie'])}</p><button>OK</button></div>
  <div class="container">
  <main id="content">
  <article>
    <h1>{esc(p.title)}</h1>
{byline}{body}
    <div class="share">{esc(bp['share'])}: <a href="#">Facebook</a> <a href="#">X</a> <a href="#">E-mail</a></div>
  </article>
  </main>
  <aside class="sidebar">
    <h2>{esc(bp['related'])}</h2>
    <ul>
{related}
    </ul>
    <h2>{esc(bp['newsletter'])}</h2>
    <p>{esc(bp['newsletter_text'])}</p>
  </aside>
  </div>
  <footer class="site-footer">
  <ul>
{links}
  </ul>
  <p>&copy; {p.year} {esc(p.site)}. {esc(bp['rights'])}</p>
  </footer>
</body>
</html>
"""


def render_classic(p: Page) -> str:
    """An older div layout (HTML 4.01), with the charset in <meta http-equiv> when declared in the page."""
    bp = texts.BOILERPLATE[p.lang]
    menu = " | ".join(f'<a href="/{slugify(n) or "s"}.html">{esc(n)}</a>' for n in bp["nav"])
    left = "<br>\n".join(f'<a href="/{slugify(t)}.html">{esc(t)}</a>' for t in sidebar_titles(p.lang, p.title))
    body = "\n".join(f"<p>{esc(x)}</p>" for x in p.paragraphs)
    if p.charset_decl in ("both", "http-equiv"):
        meta = f'<meta http-equiv="Content-Type" content="text/html; charset={p.charset}">\n'
    elif p.charset_decl == "meta":
        meta = f'<meta charset="{p.charset}">\n'
    else:
        meta = ""
    return f"""<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<html>
<head>
{meta}<title>{esc(p.site)} - {esc(p.title)}</title>
<link rel="stylesheet" type="text/css" href="/style.css">
</head>
<body bgcolor="#ffffff">
<div id="header"><img src="/img/logo.gif" alt="{esc(p.site)}" width="400" height="60"></div>
<div id="menu">{menu}</div>
<div id="wrapper">
<div id="left" class="sidebar">
<b>{esc(bp['related'])}</b><br>
{left}
</div>
<div id="content" class="story">
<h2>{esc(p.title)}</h2>
{body}
</div>
</div>
<div id="footer">&copy; {p.year} {esc(p.site)} - {esc(bp['rights'])} - {" - ".join(esc(x) for x in bp['links'])}</div>
</body>
</html>
"""


def render_list(p: Page) -> str:
    """A page whose main content is a list of lines (bullets, teasers, tables, menus)."""
    html = render_modern(p)
    lines = "\n".join(f"    <p>{esc(x)}</p>" if i == 0 else f"    {esc(x)}<br>" for i, x in enumerate(p.paragraphs))
    body = "\n".join(f"    <p>{esc(x)}</p>" for x in p.paragraphs)
    return html.replace(body, lines)


def render_heavy(p: Page) -> str:
    """Boilerplate-heavy: a mega menu, a long link sidebar, a tag cloud and a long legal footer
    around a main content of one line. Without main-content extraction it looks like a page."""
    bp = texts.BOILERPLATE[p.lang]
    html = render_modern(p)
    titles = list(dict.fromkeys(t.replace("{city}", c) for t in texts.TITLES[p.lang].values()
                                for c in texts.LANGS[p.lang]["cities"][:4]))
    mega = "\n".join(f'      <li><a href="/{slugify(t)}/">{esc(t)}</a></li>' for t in titles)
    tags = " ".join(f'<a class="tag" href="/tag/{slugify(n)}">{esc(n)}</a>' for n in bp["nav"] + bp["links"])
    legal = " ".join([bp["cookie"], bp["newsletter_text"], bp["rights"]] * 2)
    html = html.replace("    </ul>\n    <h2>", f"{mega}\n    </ul>\n    <div class=\"tags\">{tags}</div>\n    <h2>", 1)
    return html.replace("  </footer>", f"  <p class=\"legal\">{esc(legal)}</p>\n  </footer>", 1)


def page_bytes(p: Page) -> bytes:
    if p.payload is not None:
        return p.payload
    html = {"modern": render_modern, "classic": render_classic, "list": render_list, "heavy": render_heavy}[p.layout](p)
    return html.encode(p.charset)


# ================================================================================================
# Non-HTML and error bodies
# ================================================================================================
def fake_pdf(title: str) -> bytes:
    stream = f"BT /F1 18 Tf 72 720 Td ({title}) Tj ET".encode("latin-1")
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def fake_jpeg(rng: random.Random) -> bytes:
    """JFIF header, a comment segment and random entropy-coded bytes: enough to look like a photo."""
    head = bytes.fromhex("ffd8ffe000104a46494600010101004800480000")
    comment = b"refinery sample image"
    com = b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment
    return head + com + bytes(rng.getrandbits(8) for _ in range(1500)) + b"\xff\xd9"


def error_html(code: int, text: str) -> str:
    return (f"<!DOCTYPE html>\n<html><head><title>{code} {text}</title></head>\n<body>\n<h1>{text}</h1>\n"
            f"<p>The requested URL was not found on this server.</p>\n<hr><address>nginx</address>\n</body></html>\n")


# ================================================================================================
# Page plan: what goes in each shard
# ================================================================================================
class Planner:
    def __init__(self) -> None:
        self.composer = Composer()
        self.rng = rng_for("plan")
        self.url_counter = 0
        self.site_turn: dict[str, int] = {}

    def site(self, lang: str, turn: int | None = None) -> tuple[str, str]:
        sites = texts.SITES[lang]
        if turn is None:
            turn = self.site_turn.get(lang, 0)
            self.site_turn[lang] = turn + 1
        return sites[turn % len(sites)]

    def url(self, host: str, title: str, section: str = "news") -> str:
        self.url_counter += 1
        return f"https://{host}/{section}/2024/{slugify(title)}-{1000 + self.url_counter * 7}.html"

    def author(self, lang: str) -> str:
        return self.rng.choice(texts.LANGS[lang]["names"])

    def good(self, lang: str, case: str = "good", n_main: int = 5, n_extra: int = 3, **kw) -> Page:
        title, paragraphs, _ = self.composer.article(lang, self.rng, n_main, n_extra)
        host, site = self.site(lang)
        kw.setdefault("layout", self.rng.choice(["modern", "modern", "classic"]))
        p = Page(case=case, lang=lang, title=title, paragraphs=paragraphs, host=host, site=site,
                 author=self.author(lang), **kw)
        p.url = self.url(host, title)
        return p

    def fixed(self, case: str, lang: str, title: str, paragraphs: list[str], expect: str, layout="modern", **kw) -> Page:
        host, site = self.site(lang)
        p = Page(case=case, lang=lang, title=title, paragraphs=list(paragraphs), host=host, site=site,
                 layout=layout, expect=expect, author=kw.pop("author", ""), **kw)
        p.url = self.url(host, title, "page")
        return p

    def copy(self, p: Page, *, case: str, other_site: bool, group: str, expect: str, query: str = "", **changes) -> Page:
        host, site = self.site(p.lang) if other_site else (p.host, p.site)
        q = Page(**{**p.__dict__, "paragraphs": list(p.paragraphs)})
        q.case, q.group, q.expect, q.host, q.site = case, group, expect, host, site
        for k, v in changes.items():
            setattr(q, k, v)
        q.url = (p.url + query) if query else self.url(host, p.title)
        return q


def near_dup_edit(p: Page, *, subs: int = 0, add: bool = False, remove: bool = False) -> list[str]:
    """Lightly edited copy of an article's paragraphs: word substitutions, an added or removed sentence."""
    paragraphs = list(p.paragraphs)
    if remove:
        # drop the last sentence of the middle paragraph
        parts = re.split(r"(?<=[.!?])\s+", paragraphs[1])
        paragraphs[1] = " ".join(parts[:-1]) if len(parts) > 1 else paragraphs[1]
    if subs:
        pairs = special.SUBSTITUTIONS[p.lang]
        done = 0
        for i in range(len(paragraphs)):
            for old, new in pairs:
                if done >= subs:
                    break
                pattern = re.compile(rf"\b{re.escape(old)}\b")
                if pattern.search(paragraphs[i]):
                    paragraphs[i] = pattern.sub(new, paragraphs[i], count=1)
                    done += 1
    if add:
        paragraphs[-1] = paragraphs[-1] + " " + special.EXTRA_SENTENCE[p.lang]
    return paragraphs


def plan_warc(pl: Planner) -> dict[int, list[Page]]:
    shards: dict[int, list[Page]] = {0: [], 1: [], 2: []}

    # -- ordinary good pages: English x4, every other language x2, in each shard --------------
    for s in range(3):
        for lang in LANG_ORDER:
            for _ in range(4 if lang == "en" else 2):
                shards[s].append(pl.good(lang))

    # -- exact duplicates (same article, different URLs) -----------------------------------
    # A: en s0+s1, B: fr s0+s2, C: de s1+s2, D: es s0+s1+s2 (syndicated on other sites),
    # E: it twice in s1 (same site, tracking query string).
    dup_specs = [("A", "en", [0, 1]), ("B", "fr", [0, 2]), ("C", "de", [1, 2]), ("D", "es", [0, 1, 2])]
    for g, lang, where in dup_specs:
        orig = pl.good(lang, case="exact_dup", group=f"exact-{g}", expect="keep (first of group)")
        shards[where[0]].append(orig)
        for s in where[1:]:
            shards[s].append(pl.copy(orig, case="exact_dup", other_site=True, group=f"exact-{g}",
                                     expect="dedup_exact: duplicate"))
    e = pl.good("it", case="exact_dup", group="exact-E", expect="keep (first of group)")
    shards[1].append(e)
    shards[1].append(pl.copy(e, case="exact_dup", other_site=False, group="exact-E",
                             expect="dedup_exact: duplicate", query="?utm_source=newsletter&utm_medium=email"))

    # -- near duplicates (edited copies) ----------------------------------------------------
    nd_specs = [
        ("N1", "en", 0, 1, dict(subs=3), False),
        ("N2", "en", 1, 2, dict(add=True), True),
        ("N3", "en", 2, 2, dict(remove=True, subs=1), True),
        ("N4", "de", 0, 2, dict(subs=2, add=True), False),
        ("N5", "fr", 1, 2, dict(remove=True), True),
    ]
    for g, lang, s_orig, s_copy, edit, other_site in nd_specs:
        orig = pl.good(lang, case="near_dup", n_main=7, n_extra=4, group=f"near-{g}", expect="keep (first of group)")
        shards[s_orig].append(orig)
        edited = near_dup_edit(orig, **edit)
        shards[s_copy].append(pl.copy(orig, case="near_dup", other_site=other_site, group=f"near-{g}",
                                      expect="dedup_minhash: near-duplicate", paragraphs=edited,
                                      note="edit: " + ", ".join(f"{k}={v}" for k, v in edit.items())))

    # -- PII: kept (after masking) ----------------------------------------------------------
    for s, idx in [(0, 0), (0, 2), (1, 1), (1, 3), (2, 4), (2, 5)]:
        lang, title, paras = special.PII[idx]
        shards[s].append(pl.fixed("pii", lang, title, paras, "keep, pii masked", author=pl.author(lang)))

    # -- spam / keyword stuffing --------------------------------------------------------------
    spam = [(0, "en", "Cheap replica watches best price", special.SPAM_WATCHES),
            (0, "de", "Kredit ohne Schufa sofort", special.SPAM_LOANS_DE),
            (1, "en", "Cheap flights cheap hotels", special.SPAM_FLIGHTS),
            (2, "en", "Online casino bonus free spins", special.SPAM_CASINO)]
    for s, lang, title, paras in spam:
        shards[s].append(pl.fixed("spam", lang, title, paras, "quality: gopher_repetition / fineweb dup lines"))

    # -- very short pages ---------------------------------------------------------------------
    for s, idx in [(0, 0), (0, 2), (1, 1), (1, 3), (2, 4), (2, 5)]:
        lang, title, paras = special.SHORT[idx]
        shards[s].append(pl.fixed("short", lang, title, paras, "quality: too few words"))

    # -- boilerplate-heavy, thin main content -------------------------------------------------
    for s, idx in [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4), (2, 5)]:
        lang, title, paras = special.THIN_CONTENT[idx]
        shards[s].append(pl.fixed("boilerplate_heavy", lang, title, paras,
                                  "extract: (almost) empty main text; quality: too few words", layout="heavy"))

    # -- C4 / Gopher / FineWeb rule cases -----------------------------------------------------
    rule_cases = [
        (0, "lorem_ipsum", "Lorem ipsum", special.LOREM, "modern", "quality: c4 lorem ipsum"),
        (0, "javascript", "Online shop", special.JAVASCRIPT_WARNING, "list", "quality: c4 javascript lines / too few sentences"),
        (0, "no_terminal_punct", "Garden shop", special.NO_PUNCTUATION_LINES, "list", "quality: c4 lines without terminal punctuation; fineweb line punct ratio"),
        (1, "lorem_ipsum", "Welcome", special.LOREM_WITH_ENGLISH, "modern", "quality: c4 lorem ipsum"),
        (1, "bullets", "Farm shop", special.BULLETS, "list", "quality: gopher bullet lines"),
        (1, "ellipsis", "Latest stories", special.ELLIPSIS, "list", "quality: gopher ellipsis lines"),
        (2, "curly_braces", "Newsletter stylesheet", special.CURLY_BRACES, "list", "quality: c4 curly bracket"),
        (2, "hashtags", "My summer", special.HASHTAGS, "list", "quality: gopher symbol ratio"),
        (2, "numbers_table", "League table", special.NUMBERS_TABLE, "list", "quality: gopher alphabetic words ratio / too few words"),
        (2, "duplicate_lines", "Sailing club", special.DUPLICATE_LINES, "list", "quality: gopher duplicate lines; fineweb char dup ratio"),
        (2, "short_lines", "Menu", special.SHORT_LINES, "list", "quality: fineweb short line ratio"),
    ]
    for s, case, title, paras, layout, expect in rule_cases:
        shards[s].append(pl.fixed(case, "en", title, paras, expect, layout=layout))

    # -- toxic forum rants --------------------------------------------------------------------
    for s, idx in [(0, 0), (0, 4), (1, 1), (2, 2)]:
        lang, title, paras = special.TOXIC[idx]
        shards[s].append(pl.fixed("toxic", lang, title, paras, "toxicity: toxic", author="anonymous"))

    # -- legacy charsets (kept, must decode correctly) ----------------------------------------
    shards[0].append(pl.good("fr", case="charset_header_only", charset="windows-1252", charset_decl="header",
                             layout="classic", note="windows-1252 declared only in the HTTP Content-Type header"))
    shards[1].append(pl.good("de", case="charset_meta_only", charset="iso-8859-1", charset_decl="meta",
                             layout="modern", note="iso-8859-1 declared only in <meta charset>"))
    shards[2].append(pl.good("ru", case="charset_cp1251", charset="windows-1251", charset_decl="both",
                             layout="classic", note="windows-1251 in the header and <meta http-equiv>"))

    # -- non-HTML and non-200 responses (the reader rejects them) ------------------------------
    jrng = rng_for("jpeg")
    shards[0].append(Page("non_html", "en", "Annual report", [], "www.valleyweekly.org", "Valley Weekly",
                          url="https://www.valleyweekly.org/files/annual-report-2023.pdf", content_type="application/pdf",
                          payload=fake_pdf("Valley Weekly annual report 2023"), expect="read: non-HTML"))
    shards[1].append(Page("non_html", "en", "Photo", [], "news.harlowbay-gazette.com", "Harlow Bay Gazette",
                          url="https://news.harlowbay-gazette.com/media/harbour-sunset.jpg", content_type="image/jpeg",
                          payload=fake_jpeg(jrng), expect="read: non-HTML"))
    shards[2].append(Page("non_html", "de", "Fahrplan", [], "www.talbote-online.de", "Talbote Online",
                          url="https://www.talbote-online.de/downloads/fahrplan-2024.pdf", content_type="application/pdf",
                          payload=fake_pdf("Fahrplan 2024"), expect="read: non-HTML"))
    shards[0].append(Page("http_404", "en", "Not Found", [], "www.millbrook-courier.co.uk", "Millbrook Courier",
                          url="https://www.millbrook-courier.co.uk/news/2019/old-story-123.html", status=404,
                          payload=error_html(404, "Not Found").encode(), expect="read: HTTP status 404"))
    shards[1].append(Page("http_301", "fr", "Moved", [], "www.echo-des-vallees.fr", "L'Écho des vallées",
                          url="http://www.echo-des-vallees.fr/actualites", status=301,
                          location="https://www.echo-des-vallees.fr/actualites/", payload=b"",
                          expect="read: HTTP status 301"))
    shards[2].append(Page("http_302", "nl", "Found", [], "www.polderpost.nl", "De Polderpost",
                          url="http://www.polderpost.nl/login", status=302,
                          location="https://www.polderpost.nl/account/login?next=%2F",
                          payload=b'<html><body><a href="https://www.polderpost.nl/account/login?next=%2F">Moved</a></body></html>\n',
                          expect="read: HTTP status 302"))

    # Interleave so planted cases are spread through each file, deterministically.
    for s in shards:
        rng_for("order", s).shuffle(shards[s])
    return shards


# ================================================================================================
# WARC writing (Common Crawl layout)
# ================================================================================================
STATUS_TEXT = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found"}
SERVERS = ["nginx", "Apache", "nginx/1.18.0 (Ubuntu)", "cloudflare", "Apache/2.4.57 (Debian)"]


class CCWarc:
    """Writes request/response/metadata triples with Common Crawl's headers and header order."""

    def __init__(self, out, filename: str, start: datetime, rng: random.Random):
        self.writer = WARCWriter(out, gzip=True)
        self.filename = filename
        self.clock = start
        self.rng = rng
        self.warcinfo_id = uuid_from(rng)

    def _write(self, uri: str, rec_type: str, headers: list[tuple[str, str]], payload: bytes,
               http: StatusAndHeaders | None = None, content_type: str = "") -> None:
        rec = self.writer.create_warc_record(
            uri, rec_type, payload=io.BytesIO(payload), length=len(payload),
            warc_headers=StatusAndHeaders("WARC/1.0", headers), http_headers=http,
            warc_content_type=content_type)
        self.writer.write_record(rec)

    def warcinfo(self) -> None:
        fields = (f"isPartOf: {CRAWL}\r\npublisher: refinery samples\r\n"
                  "description: Sample crawl written for the refinery project (invented pages, Common Crawl layout)\r\n"
                  "operator: refinery maintainers\r\nhostname: sample-crawler-1\r\n"
                  "software: refinery samples/make_samples.py (Common Crawl WARC layout)\r\n"
                  "robots: checked via crawler-commons 1.4 (https://github.com/crawler-commons/crawler-commons)\r\n"
                  "format: WARC File Format 1.1\r\n"
                  "conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n").encode()
        headers = [("WARC-Type", "warcinfo"), ("WARC-Date", self.stamp()), ("WARC-Record-ID", self.warcinfo_id),
                   ("Content-Length", "0"), ("Content-Type", "application/warc-fields"),
                   ("WARC-Filename", self.filename), ("WARC-Block-Digest", sha1_b32(fields))]
        self._write("", "warcinfo", headers, fields, content_type="application/warc-fields")

    def stamp(self) -> str:
        return self.clock.strftime("%Y-%m-%dT%H:%M:%SZ")

    def page(self, p: Page) -> dict:
        self.clock += timedelta(seconds=self.rng.randint(2, 90))
        ip = ip_for(p.host)
        body = page_bytes(p)
        path = "/" + p.url.split("://", 1)[1].split("/", 1)[1] if p.url.count("/") > 2 else "/"
        host = p.url.split("://", 1)[1].split("/", 1)[0]
        req_id, resp_id, meta_id = uuid_from(self.rng), uuid_from(self.rng), uuid_from(self.rng)

        req_http = StatusAndHeaders(f"GET {path} HTTP/1.1", [
            ("User-Agent", "CCBot/2.0 (https://commoncrawl.org/faq/)"),
            ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            ("Accept-Language", "en-US,en;q=0.5"), ("Accept-Encoding", "br,gzip"),
            ("Host", host), ("Connection", "Keep-Alive")], is_http_request=True)
        req_block = req_http.to_bytes()
        self._write(p.url, "request", [
            ("WARC-Type", "request"), ("WARC-Date", self.stamp()), ("WARC-Record-ID", req_id),
            ("Content-Length", "0"), ("Content-Type", "application/http; msgtype=request"),
            ("WARC-Warcinfo-ID", self.warcinfo_id), ("WARC-IP-Address", ip), ("WARC-Target-URI", p.url),
            ("WARC-Payload-Digest", sha1_b32(b"")), ("WARC-Block-Digest", sha1_b32(req_block))],
            b"", http=req_http)

        resp_http = StatusAndHeaders(f"{p.status} {STATUS_TEXT[p.status]}", self.http_headers(p, body),
                                     protocol="HTTP/1.1")
        resp_block = resp_http.to_bytes() + body
        ident = p.content_type
        headers = [
            ("WARC-Type", "response"), ("WARC-Date", self.stamp()), ("WARC-Record-ID", resp_id),
            ("Content-Length", "0"), ("Content-Type", "application/http; msgtype=response"),
            ("WARC-Warcinfo-ID", self.warcinfo_id), ("WARC-Concurrent-To", req_id), ("WARC-IP-Address", ip),
            ("WARC-Target-URI", p.url), ("WARC-Payload-Digest", sha1_b32(body)),
            ("WARC-Block-Digest", sha1_b32(resp_block))]
        if body:
            headers.append(("WARC-Identified-Payload-Type", ident))
        self._write(p.url, "response", headers, body, http=resp_http)

        meta = self.metadata_fields(p, body)
        self._write(p.url, "metadata", [
            ("WARC-Type", "metadata"), ("WARC-Date", self.stamp()), ("WARC-Record-ID", meta_id),
            ("Content-Length", "0"), ("Content-Type", "application/warc-fields"),
            ("WARC-Warcinfo-ID", self.warcinfo_id), ("WARC-Concurrent-To", resp_id), ("WARC-Target-URI", p.url),
            ("WARC-Payload-Digest", sha1_b32(meta)), ("WARC-Block-Digest", sha1_b32(meta))],
            meta, content_type="application/warc-fields")
        return {"record_id": resp_id, "date": self.stamp()}

    def http_headers(self, p: Page, body: bytes) -> list[tuple[str, str]]:
        date = email.utils.format_datetime(self.clock - timedelta(seconds=1), usegmt=True)
        ctype = p.content_type
        if p.content_type == "text/html" and p.charset_decl in ("both", "header"):
            ctype = f"text/html; charset={p.charset.upper() if p.charset == 'utf-8' else p.charset}"
        server = SERVERS[sum(p.host.encode()) % len(SERVERS)]
        headers = [("Date", date), ("Server", server), ("Content-Type", ctype)]
        if p.location:
            headers.append(("Location", p.location))
        if p.content_type == "text/html" and body:
            headers += [("Vary", "Accept-Encoding"), ("X-Crawler-Content-Encoding", "gzip"),
                        ("Cache-Control", "max-age=600")]
        elif body:
            headers += [("Last-Modified", email.utils.format_datetime(self.clock - timedelta(days=40), usegmt=True)),
                        ("Accept-Ranges", "bytes")]
        headers.append(("Content-Length", str(len(body))))
        return headers

    def metadata_fields(self, p: Page, body: bytes) -> bytes:
        lines = [f"fetchTimeMs: {self.rng.randint(80, 1400)}"]
        if p.status == 200 and p.content_type == "text/html":
            spec = texts.LANGS[p.lang]
            cld2 = {"reliable": True, "text-bytes": len(p.main_text.encode("utf-8")) + 300,
                    "languages": [{"code": p.lang, "code-iso-639-3": spec["iso3"],
                                   "text-covered": round(self.rng.uniform(0.9, 0.99), 2),
                                   "score": float(self.rng.randint(700, 1700)), "name": spec["cld2"]}]}
            charset = {"utf-8": "UTF-8", "windows-1252": "windows-1252", "iso-8859-1": "ISO-8859-1",
                       "windows-1251": "windows-1251"}[p.charset]
            lines += [f"charset-detected: {charset}",
                      "languages-cld2: " + json.dumps(cld2, ensure_ascii=False, separators=(",", ":"))]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def ip_for(host: str) -> str:
    h = hashlib.sha1(host.encode()).digest()
    return f"{[81, 85, 93, 104, 145, 151, 178, 185, 188, 212][h[0] % 10]}.{h[1]}.{h[2]}.{1 + h[3] % 254}"


def write_warc(path: Path, pages: list[Page], shard: int) -> list[dict]:
    start = datetime(2024, 2, 20 + shard, 3, 0, 0, tzinfo=timezone.utc) + timedelta(minutes=shard * 17)
    buf = io.BytesIO()
    w = CCWarc(buf, path.name, start, rng_for("warc", shard))
    w.warcinfo()
    rows = []
    for p in pages:
        info = w.page(p)
        rows.append(manifest_row(p, f"commoncrawl/{path.name}", **info))
    path.write_bytes(buf.getvalue())
    return rows


def manifest_row(p: Page, file: str, **extra) -> dict:
    row = {"file": file, "url": p.url, "case": p.case, "lang": p.lang, "expect": p.expect}
    if p.group:
        row["group"] = p.group
    if p.note:
        row["note"] = p.note
    if p.payload is None:
        row["main_text_sha1"] = hashlib.sha1(p.main_text.encode("utf-8")).hexdigest()
        row["extracted_form_sha1"] = hashlib.sha1(extracted_form(p).encode("utf-8")).hexdigest()
    row.update(extra)
    return row


# ================================================================================================
# WET (Common Crawl's extracted-text format): conversion records
# ================================================================================================
def wet_text(p: Page, with_chrome: bool) -> str:
    """Common Crawl's WET text: title, then block texts one per line (with some page chrome)."""
    if not with_chrome:
        return p.main_text
    bp = texts.BOILERPLATE[p.lang]
    lines = [f"{p.title} | {p.site}", *p.paragraphs, f"© {p.year} {p.site}. {bp['rights']}"]
    return "\n".join(lines)


def cross_format_source(pages: list[Page], lang: str, group: str) -> Page:
    """Mark a WARC page whose extracted text reappears verbatim in the WET or JSONL samples.

    It gets the plain layout without a byline, so a main-content extractor returns exactly
    `extracted_form(page)`: the headline, then one paragraph per line (trafilatura's output)."""
    src = next(p for p in pages if p.case == "good" and p.lang == lang and p.layout == "modern")
    src.group, src.case, src.expect, src.author = group, "exact_dup", "keep (first of group)", ""
    return src


def extracted_form(p: Page) -> str:
    return p.title + "\n" + p.main_text


def plan_wet(pl: Planner, warc: dict[int, list[Page]]) -> list[tuple[Page, str]]:
    out: list[tuple[Page, str]] = []
    for lang in LANG_ORDER:
        for _ in range(2):
            p = pl.good(lang)
            out.append((p, wet_text(p, with_chrome=True)))
    # exact duplicate of a WARC page's main text (group exact-F); the WARC copy is in shard 0
    src = cross_format_source(warc[0], "en", "exact-F")
    dup = Page(**{**src.__dict__, "paragraphs": list(src.paragraphs)})
    dup.url = pl.url("www.valleyweekly.org", src.title, "reprints")
    dup.expect = "dedup_exact: duplicate of a WARC page's extracted text"
    out.append((dup, extracted_form(src)))
    cases = [
        ("spam", "en", "Best essay writing service", special.WET_SPAM, "quality: gopher_repetition"),
        ("toxic", "en", "Re: Investment advice thread", special.WET_TOXIC, "toxicity: toxic"),
        ("pii", "en", "Allotment association AGM", special.WET_PII, "keep, pii masked"),
        ("short", "en", "Page not available", ["This page is not available in your region."], "quality: too few words"),
        ("toxic", "en", "Re: Worst referee of the season", special.TOXIC[3][2], "toxicity: toxic"),
    ]
    for case, lang, title, paras, expect in cases:
        p = pl.fixed(case, lang, title, paras, expect)
        out.append((p, wet_text(p, with_chrome=True)))
    rng_for("order", "wet").shuffle(out)
    return out


def write_wet(path: Path, items: list[tuple[Page, str]]) -> list[dict]:
    rng = rng_for("wet")
    clock = datetime(2024, 2, 23, 5, 0, 0, tzinfo=timezone.utc)
    writer = WARCWriter(buf := io.BytesIO(), gzip=True)
    info_id = uuid_from(rng)
    fields = (f"Software-Info: refinery samples/make_samples.py\r\nExtracted-Date: "
              f"{email.utils.format_datetime(clock + timedelta(days=8), usegmt=True)}\r\n"
              f"robots: checked via crawler-commons 1.4 (https://github.com/crawler-commons/crawler-commons)\r\n"
              f"isPartOf: {CRAWL}\r\noperator: refinery maintainers\r\n"
              f"description: Sample crawl written for the refinery project (invented pages, Common Crawl layout)\r\n"
              f"publisher: refinery samples\r\n\r\n").encode()
    hdrs = [("WARC-Type", "warcinfo"), ("WARC-Date", (clock + timedelta(days=8)).strftime("%Y-%m-%dT%H:%M:%SZ")),
            ("WARC-Filename", path.name), ("WARC-Record-ID", info_id), ("Content-Type", "application/warc-fields"),
            ("Content-Length", "0"), ("WARC-Block-Digest", sha1_b32(fields))]
    writer.write_record(writer.create_warc_record("", "warcinfo", payload=io.BytesIO(fields), length=len(fields),
                                                  warc_headers=StatusAndHeaders("WARC/1.0", hdrs),
                                                  warc_content_type="application/warc-fields"))
    rows = []
    for p, text in items:
        clock += timedelta(seconds=rng.randint(2, 90))
        body = text.encode("utf-8")
        rec_id, refers = uuid_from(rng), uuid_from(rng)
        hdrs = [("WARC-Type", "conversion"), ("WARC-Target-URI", p.url),
                ("WARC-Date", clock.strftime("%Y-%m-%dT%H:%M:%SZ")), ("WARC-Record-ID", rec_id),
                ("WARC-Refers-To", refers), ("WARC-Block-Digest", sha1_b32(body)),
                ("WARC-Identified-Content-Language", texts.LANGS[p.lang]["iso3"]),
                ("Content-Type", "text/plain"), ("Content-Length", "0"), ("WARC-Payload-Digest", sha1_b32(body))]
        writer.write_record(writer.create_warc_record(p.url, "conversion", payload=io.BytesIO(body), length=len(body),
                                                      warc_headers=StatusAndHeaders("WARC/1.0", hdrs),
                                                      warc_content_type="text/plain"))
        row = manifest_row(p, f"wet/{path.name}", record_id=rec_id)
        row["text_sha1"] = hashlib.sha1(body).hexdigest()
        rows.append(row)
    path.write_bytes(buf.getvalue())
    return rows


# ================================================================================================
# JSONL (forum / wiki-like documents)
# ================================================================================================
def plan_jsonl(pl: Planner, warc: dict[int, list[Page]]) -> list[dict]:
    docs: list[dict] = []
    rng = rng_for("jsonl")

    def add(text: str, case: str, lang: str, expect: str, url: str, source: str, group: str | None = None):
        n = len(docs) + 1
        doc = {"id": f"{source}-{n:04d}", "url": url, "text": text, "source": source,
               "created": f"2023-{1 + n % 12:02d}-{1 + (n * 7) % 28:02d}T{(n * 5) % 24:02d}:{(n * 13) % 60:02d}:00Z"}
        docs.append(doc)
        row = {"file": "jsonl/web-0000.jsonl.gz", "id": doc["id"], "url": url, "case": case, "lang": lang,
               "expect": expect, "line": n, "text_sha1": hashlib.sha1(text.encode("utf-8")).hexdigest()}
        if group:
            row["group"] = group
        return row

    rows = []
    kept: list[tuple[Page, str]] = []
    for lang in LANG_ORDER:
        for k in range(2):
            p = pl.good(lang)
            source = "wiki" if k == 0 else "forum"
            text = (p.title + "\n\n" + "\n\n".join(p.paragraphs)) if source == "wiki" else "\n\n".join(p.paragraphs)
            url = f"https://{'wiki' if source == 'wiki' else 'forum'}.sample-community.org/{lang}/{slugify(p.title)}-{len(docs) + 1}"
            rows.append(add(text, "good", lang, "keep", url, source))
            kept.append((p, text))
    # exact copies of WARC main texts (groups exact-G, exact-H, exact-I): one per shard
    for s, g in zip(range(3), "GHI"):
        src = cross_format_source(warc[s], ("de", "nl", "pl")[s], f"exact-{g}")
        rows.append(add(extracted_form(src), "exact_dup", src.lang, "dedup_exact: duplicate of a WARC page's extracted text",
                        f"https://forum.sample-community.org/{src.lang}/reposted-{s}", "forum", f"exact-{g}"))
    # exact duplicate inside the file (group exact-J) and a near duplicate (group near-N6)
    p, text = kept[0]
    rows[0]["group"], rows[0]["case"], rows[0]["expect"] = "exact-J", "exact_dup", "keep (first of group)"
    rows.append(add(text, "exact_dup", p.lang, "dedup_exact: duplicate", docs[0]["url"] + "?mirror=1", "wiki", "exact-J"))
    p, text = kept[2]
    rows[2]["group"], rows[2]["case"], rows[2]["expect"] = "near-N6", "near_dup", "keep (first of group)"
    edited = text.replace("Das", "Dieses", 1).replace(" und ", " sowie ", 1) + " " + special.EXTRA_SENTENCE["de"]
    rows.append(add(edited, "near_dup", p.lang, "dedup_minhash: near-duplicate", docs[2]["url"] + "-v2", "wiki", "near-N6"))
    # bad documents
    rows.append(add("Thanks!", "short", "en", "quality: too few words", "https://forum.sample-community.org/en/t/1", "forum"))
    rows.append(add("+1 same problem here", "short", "en", "quality: too few words", "https://forum.sample-community.org/en/t/2", "forum"))
    rows.append(add("", "empty", "en", "quality: empty text", "https://forum.sample-community.org/en/t/3", "forum"))
    rows.append(add("\n\n".join(special.JSONL_TOXIC), "toxic", "en", "toxicity: toxic",
                    "https://forum.sample-community.org/en/t/4", "forum"))
    rows.append(add("\n\n".join(special.JSONL_PII), "pii", "en", "keep, pii masked",
                    "https://forum.sample-community.org/en/t/5", "forum"))
    rows.append(add("\n".join(special.SPAM_FLIGHTS[::-1]), "spam", "en", "quality: gopher_repetition",
                    "https://forum.sample-community.org/en/t/6", "forum"))
    order = list(range(len(docs)))
    rng.shuffle(order)
    docs = [docs[i] for i in order]
    for new_line, i in enumerate(order, 1):
        rows[i]["line"] = new_line
    rows = [rows[i] for i in order]
    return docs, rows


def write_jsonl_gz(path: Path, docs: list[dict], name: str) -> None:
    data = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode("utf-8")
    path.write_bytes(gzip_bytes(data, name))


# ================================================================================================
# Tar helpers (arXiv and code)
# ================================================================================================
def tar_bytes(members: list[tuple[str, bytes]], compress: bool, mtime: int = 1705500000) -> bytes:
    """A tar with fixed owners and times; members in the given order."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return gzip_bytes(raw.getvalue()) if compress else raw.getvalue()


def write_arxiv(out: Path) -> list[dict]:
    d = out / "arxiv"
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    (d / "2401.00001.tar.gz").write_bytes(tar_bytes(arxiv_src.multi_file_members(), compress=True))
    rows.append({"file": "arxiv/2401.00001.tar.gz", "case": "multi_file", "expect": "keep (main.tex with \\input/\\include expanded)"})
    (d / "2401.00002.gz").write_bytes(gzip_bytes(arxiv_src.SINGLE_TEX.encode("utf-8"), "2401.00002"))
    rows.append({"file": "arxiv/2401.00002.gz", "case": "single_tex_gz", "expect": "keep (gzipped single .tex, no tar)"})
    (d / "2401.00003.tar.gz").write_bytes(tar_bytes([("paper.pdf", fake_pdf("A PDF-only submission"))], compress=True))
    rows.append({"file": "arxiv/2401.00003.tar.gz", "case": "pdf_only", "expect": "read: no tex source"})
    bulk = [
        ("2401/2401.00004.gz", gzip_bytes(arxiv_src.BULK_SINGLE_TEX.encode("utf-8"), "2401.00004")),
        ("2401/2401.00005.gz", tar_bytes(arxiv_src.bulk_multi_members(), compress=True)),
        ("2401/2401.00006.pdf", fake_pdf("Scanned lecture notes")),
    ]
    (d / "arXiv_src_2401_001.tar").write_bytes(tar_bytes(bulk, compress=False))
    rows += [
        {"file": "arxiv/arXiv_src_2401_001.tar", "member": "2401/2401.00004.gz", "case": "bulk_single_tex_gz", "expect": "keep"},
        {"file": "arxiv/arXiv_src_2401_001.tar", "member": "2401/2401.00005.gz", "case": "bulk_gzipped_tar", "expect": "keep"},
        {"file": "arxiv/arXiv_src_2401_001.tar", "member": "2401/2401.00006.pdf", "case": "bulk_pdf_only", "expect": "read: no tex source"},
    ]
    return rows


def write_code(out: Path) -> list[dict]:
    d = out / "code"
    d.mkdir(parents=True, exist_ok=True)
    members, rows = code_src.repo_members()
    (d / "repos.tar.gz").write_bytes(tar_bytes(members, compress=True))
    stack_rows, stack_manifest = code_src.stack_rows()
    write_jsonl_gz(d / "stack-0000.jsonl.gz", stack_rows, "stack-0000.jsonl")
    return rows + stack_manifest


# ================================================================================================
# Checks and main
# ================================================================================================
def check_unrelated(pages: list[tuple[str, str, str | None]]) -> float:
    """Max Jaccard of 5-shingles between pages of the same language that are not in one group."""
    sh = [(lang, group, shingles(text, lang)) for lang, text, group in pages]
    worst = 0.0
    for i in range(len(sh)):
        for j in range(i + 1, len(sh)):
            (la, ga, a), (lb, gb, b) = sh[i], sh[j]
            if la != lb or (ga is not None and ga == gb):
                continue
            worst = max(worst, jaccard(a, b))
    return worst


def near_dup_similarity(warc: dict[int, list[Page]]) -> dict[str, float]:
    groups: dict[str, list[Page]] = {}
    for s in sorted(warc):
        for p in warc[s]:
            if p.case == "near_dup":
                groups.setdefault(p.group, []).append(p)
    return {g: round(jaccard(shingles(a.main_text, a.lang), shingles(b.main_text, b.lang)), 3)
            for g, (a, b) in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default=str(HERE), help="output directory (default: samples/)")
    out = Path(ap.parse_args(argv).out)
    pl = Planner()
    warc = plan_warc(pl)
    wet = plan_wet(pl, warc)
    docs, jsonl_rows = plan_jsonl(pl, warc)

    # unrelated articles must not be near-duplicates of each other
    articles = [(p.lang, p.main_text, p.group) for s in warc for p in warc[s]
                if p.case in ("good", "exact_dup", "near_dup", "charset_header_only", "charset_meta_only", "charset_cp1251")
                and not (p.expect.startswith("dedup"))]
    articles += [(p.lang, p.main_text, p.group) for p, _ in wet if p.case == "good"]
    worst = check_unrelated(articles)
    if worst >= MAX_UNRELATED_JACCARD:
        raise SystemExit(f"unrelated articles too similar: max Jaccard {worst:.3f}")

    manifest: dict[str, list] = {"commoncrawl": [], "wet": [], "jsonl": [], "arxiv": [], "code": []}
    (out / "commoncrawl").mkdir(parents=True, exist_ok=True)
    for s in range(3):
        manifest["commoncrawl"] += write_warc(out / "commoncrawl" / f"CC-SAMPLE-{s:05d}.warc.gz", warc[s], s)
    (out / "wet").mkdir(parents=True, exist_ok=True)
    manifest["wet"] = write_wet(out / "wet" / "CC-SAMPLE-00003.warc.wet.gz", wet)
    (out / "jsonl").mkdir(parents=True, exist_ok=True)
    write_jsonl_gz(out / "jsonl" / "web-0000.jsonl.gz", docs, "web-0000.jsonl")
    manifest["jsonl"] = jsonl_rows
    manifest["arxiv"] = write_arxiv(out)
    manifest["code"] = write_code(out)
    manifest["checks"] = {"max_unrelated_jaccard_5shingles": round(worst, 3),
                          "near_duplicate_jaccard_5shingles": near_dup_similarity(warc)}
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote samples to {out} (max unrelated Jaccard {worst:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
