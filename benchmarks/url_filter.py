"""The URL filter against datatrove's URLFilter (defaults, its shipped lists): decisions and speed.

URLs: every URL in ../shared/corpora (WARC/WET/WAT target URIs, every absolute link and canonical
URL in the HTML of the WARC responses, of HPLT's pages and of trafilatura's evaluation pages, HPLT's
`u` field), and a seeded generated set: blocked domains of datatrove's list under random
subdomains and in other cases, its blocked URLs, hosts of the corpora with banned, soft-banned and
subwords put in paths, queries and hosts with every kind of separator, IPv4 and IPv6 hosts, ports,
user info, full-width dots, punycode, no scheme, stray brackets.

Decisions compared: keep or drop and the cause (datatrove's reason names mapped to refinery's). A
URL Python's urlsplit refuses is refinery's `url_unparseable` reject (datatrove decides on
tldextract's reading of it): counted apart. Speed: seconds per URL of each, on the same URLs in the
same run, lists loaded beforehand (setup timed apart). Both use tldextract's shipped suffix list
snapshot (datatrove's default would first try to download one).

    PYTHONPATH=. python benchmarks/url_filter.py [--generated 100000] [--seed 0] [--rounds 3]
"""
from __future__ import annotations

import argparse
import collections
import gzip
import io
import json
import random
import re
import tarfile
import time
import warnings
from pathlib import Path
from typing import Iterator

import xxhash
import zstandard

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
CHUNK = 2000  # URLs timed at a time (see main)


def _reasons() -> dict[str, str]:
    from stages.url_filter.stage import DATATROVE_REASONS
    return {theirs: ours for ours, theirs in DATATROVE_REASONS.items()}


REASONS = _reasons()  # datatrove's reason -> refinery's
_LINK = re.compile(rb"""(?:href|src|content)\s*=\s*["']?(https?://[^"'\s<>]{1,2000})""", re.IGNORECASE)


def _html_urls(html: bytes) -> list[str]:
    return [m.decode("utf-8", "replace") for m in _LINK.findall(html)]


def _warc_urls(path: Path) -> Iterator[str]:
    from fastwarc.warc import ArchiveIterator

    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, parse_http=False):
            uri = rec.headers.get("WARC-Target-URI")
            if uri:
                yield uri
            body = rec.reader.read()
            if b"<" in body[:65536]:
                yield from _html_urls(body)
            if path.name.endswith(".wat.gz"):
                yield from (u.decode("utf-8", "replace") for u in re.findall(rb'"url":"(https?://[^"]{1,2000})"', body))


def corpus_urls(root: Path = CORPORA) -> list[str]:
    """Every URL found in the corpora, first occurrence order, each once."""
    found: list[str] = []
    web = root / "web"
    for p in sorted(web.glob("*.warc*.gz")):
        found += _warc_urls(p)
    for p in sorted(web.glob("hplt_*.jsonl.zst")):
        with zstandard.open(p, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                d = json.loads(line)
                found.append(d.get("u") or "")
                found += _html_urls((d.get("h") or "").encode("utf-8", "replace"))
    tz = web / "trafilatura_eval_html_benchmark.tar.zst"
    if tz.exists():
        with zstandard.open(tz, "rb") as raw, tarfile.open(fileobj=io.BytesIO(raw.read()), mode="r:") as tar:
            for m in tar:
                if m.isfile() and m.name.endswith(".html"):
                    found += _html_urls(tar.extractfile(m).read())
    for p in sorted((root / "quality").glob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                found += re.findall(r"https?://[^\s\"'<>]{1,2000}", line)
    return [u for u in dict.fromkeys(found) if u]


def page_urls(root: Path = CORPORA) -> dict[str, list[str]]:
    """Per file, the URLs of the pages themselves (WARC responses and WET conversions, HPLT's `u`):
    what a crawl run feeds the stage, one URL a document."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    out: dict[str, list[str]] = {}
    web = root / "web"
    for p in sorted(web.glob("*.warc.gz")) + sorted(web.glob("*.warc.wet.gz")):
        with open(p, "rb") as f:
            out[p.name] = [r.headers.get("WARC-Target-URI") for r in ArchiveIterator(
                f, record_types=WarcRecordType.response | WarcRecordType.conversion)]
    for p in sorted(web.glob("hplt_*.jsonl.zst")):
        with zstandard.open(p, "rt", encoding="utf-8", errors="replace") as f:
            out[p.name] = [json.loads(line).get("u") for line in f]
    return out


def generated_urls(n: int, seed: int, hosts: list[str], blocked_domains: list[str], blocked_urls: list[str],
                   words: dict[str, list[str]]) -> list[str]:
    """`n` URLs that exercise every cause and every corner of the host and word parsing."""
    rng = random.Random(seed)
    seps = ["/", "-", "_", ".", "+", "%20", "?q=", "#", "&x=", "~", "=", ":", ""]
    plain = ["news", "home", "blog", "index", "shop", "page", "2024", "article", "video", "en", "de", "cat", "img"]
    tlds = ["com", "org", "co.uk", "de", "ru", "com.br", "blogspot.com", "github.io", "xn--p1ai", "example", "local"]

    def word() -> str:
        kind = rng.random()
        if kind < 0.12:
            w = rng.choice(words["banned_words"])
        elif kind < 0.35:
            w = rng.choice(words["soft_banned_words"])
        elif kind < 0.45:
            w = rng.choice(words["banned_subwords"])
            if rng.random() < 0.5:  # split by separators: still a subword of the normalised URL
                cut = rng.randrange(1, max(2, len(w)))
                w = w[:cut] + rng.choice(["-", ".", "_", "/"]) + w[cut:]
        else:
            w = rng.choice(plain)
        r = rng.random()
        return w.upper() if r < 0.1 else w.capitalize() if r < 0.2 else w

    def host() -> str:
        r = rng.random()
        if r < 0.3:
            h = rng.choice(blocked_domains)
        elif r < 0.6:
            h = rng.choice(hosts)
        elif r < 0.7:
            h = ".".join(word() for _ in range(rng.randint(1, 2))) + "." + rng.choice(tlds)
        elif r < 0.75:
            h = ".".join(str(rng.randrange(256)) for _ in range(4))
        elif r < 0.78:
            h = f"[2001:db8::{rng.randrange(65536):x}]"
        else:
            h = f"{rng.choice(plain)}{rng.randrange(1000)}.{rng.choice(tlds)}"
        r = rng.random()
        if r < 0.35:
            h = rng.choice(["www.", "m.", "en.", "a.b.", "cdn-3.", "xxx.", "sex."]) + h
        if rng.random() < 0.08:
            h = h.upper() if rng.random() < 0.5 else h.capitalize()
        if rng.random() < 0.03:
            h = h.replace(".", rng.choice(["\u3002", "\uff0e", "\uff61"]), 1)
        if rng.random() < 0.03:
            h = h + "."
        if rng.random() < 0.05:
            h = h + f":{rng.choice([80, 443, 8080, 99999])}"
        if rng.random() < 0.02:
            h = "user:pw@" + h
        return h

    out: list[str] = []
    while len(out) < n:
        r = rng.random()
        if r < 0.05 and blocked_urls:
            u = rng.choice(blocked_urls)
            out.append(u if rng.random() < 0.5 else "http://" + u)
            continue
        path = "".join(rng.choice(seps) + word() for _ in range(rng.randint(0, 6)))
        scheme = rng.choice(["http://", "https://", "https://", "", "//", "ftp://", "HTTP://"])
        u = scheme + host() + ("/" + path if path and not path.startswith("/") else path)
        if rng.random() < 0.005:
            u = u.replace("://", "://[", 1)  # a bracket urlsplit refuses
        if rng.random() < 0.01:
            u = u + rng.choice(["/", "?", "#", " ", "/é"])
        out.append(u)
    return out


def datatrove_filter():
    """datatrove's URLFilter with its defaults, on tldextract's shipped snapshot (no download)."""
    from datatrove.pipeline.filters.url_filter import URLFilter
    from tldextract import TLDExtract

    flt = URLFilter()
    flt.tldextractor = TLDExtract(suffix_list_urls=(), cache_dir=None)
    flt.download_data()
    return flt


def datatrove_decisions(flt, urls: list[str]) -> list[str | None]:
    from datatrove.data import Document

    out: list[str | None] = []
    with warnings.catch_warnings():  # tldextract's DeprecationWarning for registered_domain, once a URL
        warnings.simplefilter("ignore", DeprecationWarning)
        for u in urls:
            got = flt.filter(Document(text="", id="x", metadata={"url": u}))
            out.append(None if got is True else REASONS[got[1]])
    return out


def our_stage():
    from stages.url_filter.stage import UrlFilter

    st = UrlFilter()
    st.ensure_setup()
    return st


def our_decisions(st, urls: list[str]) -> list[str | None]:
    import pyarrow as pa

    batch = pa.table({"url": pa.array(urls, pa.string())})
    return list(st.decide(st.annotate(batch)))


def generated_for(st, n: int, seed: int, corpus: list[str]) -> list[str]:
    from tldextract.remote import lenient_netloc
    from stages.url_filter import lists

    # a sample that does not depend on the set's (hash-seeded) order
    sample = sorted(d for d in st._domains[0][1] if xxhash.xxh32_intdigest(d, seed) % 228 == 0)
    urls = sorted(st._urls[0][1])
    hosts = sorted({lenient_netloc(u) for u in corpus} - {""})
    words = {k: sorted(lists.shipped_words(k)) for k in lists.WORD_FILES}
    return generated_urls(n, seed, hosts, sample, urls, words)


def compare(ours: list[str | None], theirs: list[str | None], urls: list[str]) -> tuple[int, int, list]:
    """(agreeing, unparseable, mismatches [(url, ours, theirs)])."""
    agree, unparseable, bad = 0, 0, []
    for u, a, b in zip(urls, ours, theirs):
        if a == "url_unparseable":
            unparseable += 1
        elif a == b:
            agree += 1
        else:
            bad.append((u, a, b))
    return agree, unparseable, bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generated", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    t = time.perf_counter()
    st = our_stage()
    our_setup = time.perf_counter() - t
    t = time.perf_counter()
    flt = datatrove_filter()
    their_setup = time.perf_counter() - t
    corpus = corpus_urls()
    sets = {"corpora": corpus, "generated": generated_for(st, args.generated, args.seed, corpus)}
    total_ours = total_theirs = 0.0
    n_all = 0
    our_decisions(st, sets["corpora"][:1000])  # both warmed up (tldextract reads its snapshot on first use)
    datatrove_decisions(flt, sets["corpora"][:1000])
    for name, urls in sets.items():
        # CPU per chunk of URLs, ours and datatrove's alternated chunk by chunk, the least of each
        # chunk over the rounds kept: load from other processes on a shared machine comes and goes
        # within seconds, and hits both alike
        chunks = [urls[i: i + CHUNK] for i in range(0, len(urls), CHUNK)]
        best_ours = [float("inf")] * len(chunks)
        best_theirs = [float("inf")] * len(chunks)
        ours, theirs = [], []
        for _ in range(args.rounds):
            st._hosts.clear()  # each round starts with no host remembered
            ours, theirs = [], []
            for k, chunk in enumerate(chunks):
                t = time.process_time()
                ours += our_decisions(st, chunk)
                best_ours[k] = min(best_ours[k], time.process_time() - t)
                t = time.process_time()
                theirs += datatrove_decisions(flt, chunk)
                best_theirs[k] = min(best_theirs[k], time.process_time() - t)
        t_ours, t_theirs = [sum(best_ours)], [sum(best_theirs)]
        total_ours += min(t_ours)
        total_theirs += min(t_theirs)
        n_all += len(urls)
        agree, unparseable, bad = compare(ours, theirs, urls)
        dropped = sum(r is not None for r in theirs)
        by_reason = collections.Counter(r for r in ours if r is not None)
        print(f"{name}: {len(urls):,} URLs, datatrove drops {dropped:,}; identical decisions {agree:,}, "
              f"url_unparseable {unparseable:,}, different {len(bad):,}")
        print("  refinery's rejects: " + ", ".join(f"{r} {n:,}" for r, n in by_reason.most_common()))
        for u, a, b in bad[:10]:
            print(f"  DIFFERENT {u!r}: refinery {a}, datatrove {b}")
        print(f"  CPU per URL (least of {args.rounds} rounds per chunk of {CHUNK}): refinery {min(t_ours) / len(urls) * 1e6:.2f} us, "
              f"datatrove {min(t_theirs) / len(urls) * 1e6:.2f} us, ratio {min(t_theirs) / min(t_ours):.2f}x")
    gate = st.rejects_before_text()
    for name, urls in page_urls().items():
        reasons = our_decisions(st, urls)
        print(f"pages of {name}: {len(urls):,}, rejected {sum(r is not None for r in reasons):,}, "
              f"of which decided before extraction {sum(gate(u) for u in urls):,}")
    print(f"all {n_all:,} URLs: datatrove / refinery CPU per URL = {total_theirs / total_ours:.2f}x")
    print(f"setup (lists loaded): refinery {our_setup:.1f} s, datatrove {their_setup:.1f} s (wall)")


if __name__ == "__main__":
    main()
