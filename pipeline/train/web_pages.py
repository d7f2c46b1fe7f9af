"""A labelled web-page set for measuring a quality score: main content vs the same pages' boilerplate and link lists.

Built from trafilatura's evaluation pages (../shared/corpora/web/trafilatura_eval_html_benchmark.tar.zst):
for each page, `evaldata.json` names snippets a main-content extractor must output (`with`) and must
not (`without`). Each page's HTML is cut into text blocks (paragraphs, headings, list items, table
cells, ... one line each), and three kinds of document are made of them:

- `article`: the blocks under the smallest element holding every `with` snippet (the main content),
  without any block holding a `without` snippet;
- `boilerplate`: for each `without` snippet, the blocks of the largest region around it (header,
  footer, sidebar, teaser box) that holds no `with` snippet and no article block;
- `list`: the page's link lists outside the article (list items, one per line): menus, "related
  posts", archives, tag clouds: what a category or collection page consists of.

Each document keeps its page's site (host name) as `group`; `split_by_site` cuts the set by a hash
of the site, so no page of a site used for tuning is reported on. The 923 pages of `tests/eval` and
the 110 of `tests/cache` are two sets (the second never tuned on). Page contents belong to their
authors: these documents measure and tune a score, they are never training text of a shipped model.
"""
from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

BLOCK_TAGS = frozenset("p h1 h2 h3 h4 h5 h6 li td th dd dt blockquote pre figcaption caption address summary".split())
CONTAINER_TAGS = frozenset("div section article aside header footer nav main ul ol table form span body".split())
_SPACE = re.compile(r"\s+")
MIN_DOC_CHARS = 40  # shorter pieces say too little to score


@dataclass(frozen=True)
class WebDoc:
    text: str
    kind: str  # article, boilerplate, list
    site: str
    page: str
    lang: str | None = None

    @property
    def hq(self) -> bool:
        return self.kind == "article"


def _norm(s: str) -> str:
    return _SPACE.sub(" ", s).strip()


def _blocks(root) -> list:
    """Block elements that hold no other block element (their text is one line)."""
    out = []
    for el in root.iter():
        if not isinstance(el.tag, str) or el.tag not in BLOCK_TAGS:
            continue
        if any(isinstance(c.tag, str) and c.tag in BLOCK_TAGS for c in el.iterdescendants()):
            continue
        out.append(el)
    return out


def _text(el) -> str:
    return _norm(el.text_content())


def page_documents(html: bytes, with_: list[str], without: list[str], site: str, page: str) -> list[WebDoc]:
    """The article, boilerplate and list documents of one page (see the module docstring)."""
    import lxml.html

    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    for bad in tree.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    blocks = [b for b in _blocks(tree) if _text(b)]
    texts = {b: _text(b) for b in blocks}
    w_norm = [_norm(s) for s in with_ if _norm(s)]
    wo_norm = [_norm(s) for s in without if _norm(s)]
    hits = [b for b in blocks if any(s in texts[b] for s in w_norm)]
    if not hits:
        return []
    # smallest element holding every `with` block
    paths = [list(b.iterancestors())[::-1] + [b] for b in hits]
    lca = None
    for level in zip(*paths):
        if all(x is level[0] for x in level):
            lca = level[0]
        else:
            break
    if lca is None or lca.tag in ("html", "body"):
        lca = None
    boiler_blocks = {b for b in blocks if any(s in texts[b] for s in wo_norm)}
    in_article = set(_blocks(lca)) if lca is not None else set(hits)
    article = [b for b in blocks if b in in_article and b not in boiler_blocks]
    out: list[WebDoc] = []
    text = "\n".join(texts[b] for b in article)
    if len(text) >= MIN_DOC_CHARS:
        out.append(WebDoc(text, "article", site, page))
    taken: set = set(article)
    for b in blocks:
        if b not in boiler_blocks or b in taken:
            continue
        region = b
        for anc in b.iterancestors():  # grow while the region holds no article block
            if anc.tag in ("html", "body") or (lca is not None and (anc is lca or lca in set(anc.iterdescendants()))):
                break
            inner = _blocks(anc)
            if any(x in in_article or x in hits for x in inner):
                break
            region = anc
        members = [x for x in (_blocks(region) if region is not b else [b]) if x in texts and x not in taken]
        taken.update(members)
        text = "\n".join(texts[x] for x in members)
        if len(text) >= MIN_DOC_CHARS:
            out.append(WebDoc(text, "boilerplate", site, page))
    items = [texts[b] for b in blocks if b.tag == "li" and b not in in_article and b.xpath(".//a")]
    if len(items) >= 5:
        text = "\n".join(items)
        if len(text) >= MIN_DOC_CHARS:
            out.append(WebDoc(text, "list", site, page))
    return out


def site_of(url: str) -> str:
    host = urlsplit(url).hostname or url
    return host[4:] if host.startswith("www.") else host


def read_benchmark(archive: Path, folder: str = "eval") -> list[WebDoc]:
    """The documents of every page of `tests/<folder>` (eval: 923 pages, cache: 110) that the
    evaluation data describes, in a stable order."""
    pages: dict[str, bytes] = {}
    meta = None
    import zstandard

    with open(archive, "rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as zs:
        with tarfile.open(fileobj=io.BufferedReader(zs), mode="r|") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                name = m.name.lstrip("./")
                if name == "tests/evaldata.json":
                    meta = json.load(tar.extractfile(m))
                elif name.startswith(f"tests/{folder}/") and name.endswith(".html"):
                    pages[name.rsplit("/", 1)[1]] = tar.extractfile(m).read()
    if meta is None:
        raise ValueError(f"{archive}: no tests/evaldata.json")
    out: list[WebDoc] = []
    for url, entry in sorted(meta.items()):
        html = pages.get(entry.get("file", ""))
        if html is None:
            continue
        out += page_documents(html, entry.get("with", []), entry.get("without", []), site_of(url), entry["file"])
    return out


def site_hash(site: str, seed: int) -> float:
    """A stable number in [0, 1) per site and seed."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{site}".encode()).digest()[:8], "big") / 2**64


def split_by_site(docs: list[WebDoc], seed: int, tune_fraction: float = 0.5) -> tuple[list[WebDoc], list[WebDoc]]:
    """(tune, report): every page of a site lands on one side."""
    tune = [d for d in docs if site_hash(d.site, seed) < tune_fraction]
    report = [d for d in docs if site_hash(d.site, seed) >= tune_fraction]
    return tune, report


def with_languages(docs: list[WebDoc]) -> list[WebDoc]:
    """Each page's language (the langid stage's model on the page's article text, else all its text)."""
    from stages.langid import LangID

    lid = LangID()
    lid.ensure_setup()
    by_page: dict[str, str] = {}
    for d in docs:
        if d.kind == "article" or d.page not in by_page:
            by_page[d.page] = by_page.get(d.page, "") if d.kind != "article" else ""
    text_of: dict[str, str] = {}
    for d in docs:
        if d.kind == "article":
            text_of[d.page] = d.text
        else:
            text_of.setdefault(d.page, d.text)
    pages = sorted(text_of)
    preds = lid.predict([text_of[p].replace("\n", " ")[:2000] for p in pages], k=1)
    lang = {p: (pr[0][0] if pr else None) for p, pr in zip(pages, preds)}
    return [WebDoc(d.text, d.kind, d.site, d.page, lang.get(d.page)) for d in docs]
