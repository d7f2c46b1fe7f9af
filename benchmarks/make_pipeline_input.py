"""Build the whole-pipeline benchmark input: real pages, repeated with edits, as CommonCrawl WARC.

Base pages (real HTML, kept as HTML) come from ../shared/corpora/web: trafilatura's evaluation
set (~1,000 pages), the dolma and resiliparse WARC samples (response records) and the HPLT samples
(raw HTML in the `h` field). Each base page appears once as itself; then copies are added until
the input holds `--mb` MB of main-content text (estimated per base page with resiliparse), each
copy one of:
  exact         the same HTML under another URL (exact dedup's work);
  boilerplate   other navigation/footer blocks (same main text: exact or near duplicate after
                extraction, depending on the extractor);
  near          a few words substituted and a sentence dropped or added (near dedup's work,
                Jaccard mostly above 0.8);
  far           many words substituted and several sentences dropped (should survive dedup).
Records are written as Common Crawl writes them (warcinfo, then request / response / metadata
per page, WARC-Identified-Payload-Type set), in N gzip shards, with a manifest (record id, url,
base page, kind of copy) for the benchmark's agreement measures. Seeded: the same arguments give
byte-identical files. The output belongs outside the repository (default /tmp/refinery-bench/input).

    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 50 --shards 8 --out /tmp/refinery-bench/input
    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 50 --shards 8 --jsonl --out /tmp/refinery-bench/jsonl50
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import re
import sys
import tarfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

CORPORA = Path(os.environ.get("REFINERY_CORPORA") or Path(__file__).resolve().parents[1].parent / "shared" / "corpora")
DEFAULT_OUT = "/tmp/refinery-bench/input"
KINDS = ("exact", "boilerplate", "near", "far")
KIND_WEIGHTS = (0.2, 0.2, 0.4, 0.2)


@dataclass
class Page:
    base: int
    url: str
    html: bytes
    charset: str | None  # declared in the HTTP Content-Type, as the server sent it
    origin: str
    text_bytes: int = 0  # main-content text size (resiliparse), for the size target


# -- base pages ---------------------------------------------------------------------------------
def _trafilatura_pages(path: Path) -> Iterator[tuple[str, bytes, str | None, str]]:
    import zstandard

    with open(path, "rb") as fh:
        stream = zstandard.ZstdDecompressor().stream_reader(fh)
        files: dict[str, bytes] = {}
        evaldata: dict = {}
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                data = tar.extractfile(m).read()  # type: ignore[union-attr]
                if m.name.endswith("evaldata.json"):
                    evaldata = json.loads(data)
                elif m.name.endswith((".html", ".htm")):
                    files[os.path.basename(m.name)] = data
    url_of = {v["file"]: u for u, v in evaldata.items() if isinstance(v, dict) and "file" in v}
    for name in sorted(files):
        url = url_of.get(name) or "https://" + name.rsplit(".", 1)[0] + "/"
        yield url, files[name], None, "trafilatura_eval"


def _warc_pages(path: Path) -> Iterator[tuple[str, bytes, str | None, str]]:
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type != "response" or rec.http_headers is None:
                continue
            if rec.http_headers.get_statuscode() != "200":
                continue
            ctype = rec.http_headers.get_header("Content-Type") or ""
            if "html" not in ctype.lower():
                continue
            body = rec.content_stream().read()
            m = re.search(r"charset=([\w-]+)", ctype, re.I)
            yield rec.rec_headers.get_header("WARC-Target-URI"), body, m.group(1) if m else None, path.name


def _hplt_pages(path: Path) -> Iterator[tuple[str, bytes, str | None, str]]:
    import zstandard

    with open(path, "rb") as fh:
        # A few lines hold invalid UTF-8 (raw bytes of the crawl): replaced, as a reader would.
        text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(fh), encoding="utf-8", errors="replace")
        for line in text:
            row = json.loads(line)
            if row.get("h"):
                yield row["u"], row["h"].encode("utf-8"), "utf-8", path.name


def load_base_pages(corpora: Path = CORPORA, limit: int | None = None, with_eval_set: bool = True) -> list[Page]:
    web = corpora / "web"
    gens = [_trafilatura_pages(web / "trafilatura_eval_html_benchmark.tar.zst")] if with_eval_set else []
    gens += [_warc_pages(p) for p in sorted(web.glob("dolma_sample-*.warc.gz"))]
    gens += [_warc_pages(p) for p in sorted(web.glob("resiliparse_*.warc.gz"))]
    gens += [_hplt_pages(p) for p in sorted(web.glob("hplt_sample100_*.jsonl.zst"))]
    pages: list[Page] = []
    seen: set[str] = set()
    for gen in gens:
        for url, html, charset, origin in gen:
            if url in seen:
                continue
            seen.add(url)
            pages.append(Page(len(pages), url, html, charset, origin))
            if limit is not None and len(pages) >= limit:
                return pages
    return pages


def measure_text(pages: list[Page]) -> None:
    """Main-content text size of each base page (resiliparse: fast, close to what extractors keep)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    for p in pages:
        html = bytes_to_str(p.html, p.charset or detect_encoding(p.html))
        p.text_bytes = len(extract_plain_text(html, main_content=True).encode("utf-8"))


# -- edits --------------------------------------------------------------------------------------
_SKIP = re.compile(rb"<(script|style|noscript)\b.*?</\1\s*>", re.S | re.I)
_TEXT = re.compile(rb">([^<]{60,})<")
_WORD = re.compile(rb"[A-Za-z]{3,}")  # ASCII runs: edits stay valid in any ASCII-compatible charset
_SENT = re.compile(rb"(?<=[.!?])\s+")
_BODY_OPEN = re.compile(rb"<body\b[^>]*>", re.I)
_BODY_CLOSE = re.compile(rb"</body\s*>", re.I)

_NAV_WORDS = [b"Home", b"News", b"About us", b"Contact", b"Archive", b"Blog", b"Shop", b"Services", b"Events",
              b"Team", b"Careers", b"Press", b"Support", b"FAQ", b"Login", b"Register", b"Search", b"Sitemap"]
_FOOTER = [b"All rights reserved.", b"Privacy policy", b"Terms of use", b"Imprint", b"Cookie settings",
           b"Follow us on social media", b"Subscribe to our newsletter", b"Powered by a content management system",
           b"This site uses cookies to improve your experience.", b"Back to top"]


def _text_spans(html: bytes) -> list[tuple[int, int]]:
    """Byte spans of long text nodes outside script/style: where the main content lives."""
    blocked = [m.span() for m in _SKIP.finditer(html)]
    spans = []
    j = 0
    for m in _TEXT.finditer(html):
        s, e = m.span(1)
        while j < len(blocked) and blocked[j][1] <= s:
            j += 1
        if j < len(blocked) and blocked[j][0] < e:
            continue
        if len(_WORD.findall(m.group(1))) >= 8:
            spans.append((s, e))
    return spans


def _rewrite(html: bytes, spans: list[tuple[int, int]], fn) -> bytes:
    out, last = [], 0
    for i, (s, e) in enumerate(spans):
        out.append(html[last:s])
        out.append(fn(i, html[s:e]))
        last = e
    out.append(html[last:])
    return b"".join(out)


def _substitute(rng: random.Random, chunk: bytes, rate: float, vocab: list[bytes]) -> bytes:
    def sub(m: re.Match) -> bytes:
        return rng.choice(vocab) if rng.random() < rate else m.group(0)

    return _WORD.sub(sub, chunk)


def _drop_sentence(rng: random.Random, chunk: bytes) -> bytes:
    parts = _SENT.split(chunk)
    if len(parts) < 3:
        return chunk
    del parts[rng.randrange(len(parts))]
    return b" ".join(parts)


def _add_sentence(rng: random.Random, chunk: bytes, donor: bytes) -> bytes:
    parts = _SENT.split(chunk)
    parts.insert(rng.randrange(len(parts) + 1), donor.strip())
    return b" ".join(parts)


def boilerplate(rng: random.Random) -> tuple[bytes, bytes]:
    links = rng.sample(_NAV_WORDS, rng.randint(4, 9))
    nav = b"<nav class=\"menu-%d\"><ul>" % rng.randrange(1000) + b"".join(
        b"<li><a href=\"/%s\">%s</a></li>" % (w.lower().replace(b" ", b"-"), w) for w in links
    ) + b"</ul></nav>"
    foot = b"<footer><p>" + b" | ".join(rng.sample(_FOOTER, rng.randint(3, 6))) + b"</p><p>&copy; %d</p></footer>" % (
        2000 + rng.randrange(25)
    )
    return nav, foot


def _swap_boilerplate(rng: random.Random, html: bytes) -> bytes:
    nav, foot = boilerplate(rng)
    m = _BODY_OPEN.search(html)
    html = html[: m.end()] + nav + html[m.end():] if m else nav + html
    ends = list(_BODY_CLOSE.finditer(html))
    return html[: ends[-1].start()] + foot + html[ends[-1].start():] if ends else html + foot


def edit(rng: random.Random, page: Page, kind: str, donors: list[bytes]) -> bytes:
    """An edited copy of the page's HTML (see the module docstring for the kinds)."""
    html = page.html
    if kind == "exact":
        return html
    if kind == "boilerplate":
        return _swap_boilerplate(rng, html)
    spans = _text_spans(html)
    if not spans:
        return _swap_boilerplate(rng, html)
    vocab = [w for s, e in spans for w in _WORD.findall(html[s:e])] or [b"lorem"]
    if kind == "near":
        rate, n_drop, n_add = 0.004, 1, 1
    else:  # far
        rate, n_drop, n_add = 0.35, max(2, len(spans) // 3), 3
    drop = set(rng.sample(range(len(spans)), min(n_drop, len(spans))))
    add = set(rng.sample(range(len(spans)), min(n_add, len(spans))))

    def fn(i: int, chunk: bytes) -> bytes:
        chunk = _substitute(rng, chunk, rate, vocab)
        if i in drop:
            chunk = _drop_sentence(rng, chunk)
        if i in add and donors:
            chunk = _add_sentence(rng, chunk, rng.choice(donors))
        return chunk

    out = _rewrite(html, spans, fn)
    return _swap_boilerplate(rng, out) if rng.random() < 0.5 else out


def _donor_sentences(rng: random.Random, pages: list[Page], n: int = 2000) -> list[bytes]:
    out: list[bytes] = []
    for p in rng.sample(pages, min(len(pages), 300)):
        for s, e in _text_spans(p.html)[:5]:
            out += [x for x in _SENT.split(p.html[s:e]) if 40 <= len(x) <= 300]
    rng.shuffle(out)
    return out[:n]


def _copy_url(rng: random.Random, url: str, kind: str, n: int) -> str:
    m = re.match(r"(https?://)([^/]+)(.*)", url or "")
    scheme, host, path = (m.group(1), m.group(2), m.group(3)) if m else ("https://", "example.org", "/" + str(url))
    host = rng.choice([f"mirror{n}.{host}", f"{host}", f"www{n}.{host}"])
    sep = "&" if "?" in path else "?"
    return f"{scheme}{host}{path or '/'}{sep}copy={n}&kind={kind}"


# -- WARC output --------------------------------------------------------------------------------
class ShardWriter:
    """One gzip WARC shard, records as Common Crawl writes them."""

    def __init__(self, path: str, rng: random.Random, shard: int, t0: datetime):
        from warcio.warcwriter import WARCWriter

        self.fh = open(path, "wb")
        self.writer = WARCWriter(self.fh, gzip=True)
        self.rng = rng
        self.t = t0
        info = {"software": "refinery benchmarks/make_pipeline_input.py", "format": "WARC File Format 1.1",
                "isPartOf": "REFINERY-BENCH", "description": "real pages with edited copies, for benchmarking"}
        self._shard = shard
        fields = "".join(f"{k}: {v}\r\n" for k, v in info.items()).encode()
        self.writer.write_record(self.writer.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(fields), warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Record-ID": "<urn:uuid:00000000-0000-4000-8000-%012d>" % shard,
                               "WARC-Date": t0.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               "WARC-Filename": os.path.basename(path)}))

    def _rid(self) -> str:
        return f"<urn:uuid:{uuid.UUID(int=self.rng.getrandbits(128), version=4)}>"

    def write(self, url: str, html: bytes, charset: str | None) -> str:
        from warcio.statusandheaders import StatusAndHeaders

        w = self.writer
        self.t += timedelta(seconds=1)
        date = self.t.strftime("%Y-%m-%dT%H:%M:%SZ")
        req_id, resp_id, meta_id = self._rid(), self._rid(), self._rid()
        host = re.sub(r"^https?://([^/]+).*$", r"\1", url)
        req_http = StatusAndHeaders("GET / HTTP/1.1", [("Host", host), ("User-Agent", "CCBot/2.0"),
                                                       ("Accept", "text/html")], is_http_request=True)
        w.write_record(w.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=req_http,
                                            warc_headers_dict={"WARC-Record-ID": req_id, "WARC-Date": date,
                                                               "WARC-Concurrent-To": resp_id}))
        ctype = "text/html" + (f"; charset={charset}" if charset else "")
        http = StatusAndHeaders("200 OK", [("Content-Type", ctype), ("Content-Length", str(len(html)))],
                                protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(
            url, "response", payload=io.BytesIO(html), http_headers=http, length=None,
            warc_headers_dict={"WARC-Record-ID": resp_id, "WARC-Date": date,
                               "WARC-Identified-Payload-Type": "text/html",
                               "WARC-Warcinfo-ID": "<urn:uuid:00000000-0000-4000-8000-%012d>" % self._shard}))
        meta = b"fetchTimeMs: %d\r\n" % self.rng.randrange(50, 900)
        w.write_record(w.create_warc_record(url, "metadata", payload=io.BytesIO(meta),
                                            warc_content_type="application/warc-fields",
                                            warc_headers_dict={"WARC-Record-ID": meta_id, "WARC-Date": date,
                                                               "WARC-Concurrent-To": resp_id}))
        return resp_id

    def close(self) -> None:
        self.fh.close()


def plan(rng: random.Random, pages: list[Page], target_bytes: int, base_share: float) -> list[tuple[int, str, int]]:
    """(base page, kind, copy number) for every document: base pages once (a random subset
    holding about `base_share` of the target when the target is small), then copies."""
    order = list(range(len(pages)))
    rng.shuffle(order)
    bases: list[int] = []
    total = 0
    for b in order:
        if total >= base_share * target_bytes:
            break
        bases.append(b)
        total += pages[b].text_bytes
    docs = [(b, "original", 0) for b in bases]
    copies = dict.fromkeys(bases, 0)
    while total < target_bytes:
        b = rng.choice(bases)
        copies[b] += 1
        docs.append((b, rng.choices(KINDS, KIND_WEIGHTS)[0], copies[b]))
        total += pages[b].text_bytes
    rng.shuffle(docs)
    return docs


class JsonlWriter:
    """One JSONL shard of extracted text (`--jsonl`): {"id", "url", "text"} per page, the text
    resiliparse's main content, for comparing tools that read text rather than WARC."""

    def __init__(self, path: str, rng: random.Random):
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.encoding import bytes_to_str, detect_encoding

        self.fh = open(path, "w", encoding="utf-8")
        self.rng = rng
        self._text = lambda html, cs: extract_plain_text(bytes_to_str(html, cs or detect_encoding(html)),
                                                         main_content=True)

    def write(self, url: str, html: bytes, charset: str | None) -> str | None:
        rid = f"<urn:uuid:{uuid.UUID(int=self.rng.getrandbits(128), version=4)}>"
        text = self._text(html, charset).strip()
        if not text:
            return None  # nothing to compare on
        self.fh.write(json.dumps({"id": rid, "url": url, "text": text}, ensure_ascii=False) + "\n")
        return rid

    def close(self) -> None:
        self.fh.close()


def build(out: str, mb: float, shards: int, seed: int, corpora: Path = CORPORA, limit: int | None = None,
          quiet: bool = False, base_share: float = 0.4, with_eval_set: bool = True, jsonl: bool = False) -> dict:
    t0 = time.time()
    rng = random.Random(seed)
    pages = load_base_pages(corpora, limit, with_eval_set)
    measure_text(pages)
    donors = _donor_sentences(random.Random(seed + 1), pages)
    docs = plan(rng, pages, int(mb * 1e6), base_share)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith((".warc.gz", ".jsonl")) or f in ("manifest.jsonl", "input.json"):
            os.remove(os.path.join(out, f))
    start = datetime(2024, 5, 18, 0, 0, 0, tzinfo=timezone.utc)
    ext = "jsonl" if jsonl else "warc.gz"
    writers = [JsonlWriter(os.path.join(out, f"bench-{i:05d}.jsonl"), random.Random(seed * 1000 + i)) if jsonl else
               ShardWriter(os.path.join(out, f"bench-{i:05d}.warc.gz"), random.Random(seed * 1000 + i), i, start)
               for i in range(shards)]
    html_bytes = text_bytes = 0
    counts: dict[str, int] = {}
    with open(os.path.join(out, "manifest.jsonl"), "w", encoding="utf-8") as man:
        for n, (b, kind, copy) in enumerate(docs):
            page = pages[b]
            drng = random.Random(f"{seed}:{b}:{copy}")
            html = page.html if kind == "original" else edit(drng, page, kind, donors)
            url = (page.url if kind == "original" else _copy_url(drng, page.url, kind, copy)).replace(" ", "%20")
            shard = n % shards
            rid = writers[shard].write(url, html, page.charset)
            if rid is None:
                continue
            man.write(json.dumps({"record_id": rid, "url": url, "base": b, "kind": kind, "copy": copy,
                                  "shard": shard}) + "\n")
            html_bytes += len(html)
            text_bytes += page.text_bytes
            counts[kind] = counts.get(kind, 0) + 1
    for w in writers:
        w.close()
    info = {
        "seed": seed, "mb_target": mb, "shards": shards, "base_pages": len({b for b, _, _ in docs}), "documents": len(docs),
        "kinds": counts, "html_mb": round(html_bytes / 1e6, 2), "text_mb_estimate": round(text_bytes / 1e6, 2),
        f"{ext.replace('.', '_')}_mb": round(sum(os.path.getsize(os.path.join(out, f"bench-{i:05d}.{ext}"))
                                                 for i in range(shards)) / 1e6, 2),
        "seconds": round(time.time() - t0, 1),
    }
    with open(os.path.join(out, "input.json"), "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=2)
    if not quiet:
        print(json.dumps(info, indent=2))
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (outside the repository)")
    ap.add_argument("--mb", type=float, default=50.0, help="MB of main-content text to reach (HTML is ~10x more)")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base-share", type=float, default=0.4,
                    help="share of the text target made of distinct base pages (capped by the corpus)")
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument("--jsonl", action="store_true",
                    help="write JSONL shards of extracted text (id, url, text) instead of WARC")
    args = ap.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    if Path(args.out).resolve().is_relative_to(repo):
        print(f"refusing to write generated data inside the repository: {args.out}", file=sys.stderr)
        return 2
    if not (args.corpora / "web").is_dir():
        print(f"corpora not found: {args.corpora}/web", file=sys.stderr)
        return 2
    build(args.out, args.mb, args.shards, args.seed, args.corpora, base_share=args.base_share, jsonl=args.jsonl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
