"""WARC reading speed on one core: refinery's reader vs the warcio-based path a datatrove user runs.

Input: the real WARC files in ../shared/corpora/web (Common Crawl excerpt, Dolma samples, the
Common Crawl whirlwind page), read `--repeat` times. Measured in one process pinned to one CPU:

1. parsing only: warcio ArchiveIterator vs FastWARC (resiliparse) ArchiveIterator, reading every
   response payload;
2. end to end, records to text: refinery's CommonCrawlSource (FastWARC, charset chain,
   resiliparse + block filter) vs warcio + trafilatura with datatrove's settings (what
   datatrove's WarcReader + Trafilatura extractor do), and refinery's reader with
   `extractor: trafilatura`.

    PYTHONPATH=. python benchmarks/warc_read.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

CORPORA = Path(__file__).resolve().parents[1].parent / "shared/corpora/web"
FILES = ["resiliparse_CC-MAIN-2020-34_excerpt.warc.gz", "dolma_sample-0000.warc.gz",
         "dolma_sample-0001.warc.gz", "commoncrawl_whirlwind.warc.gz"]


def parse_warcio(paths: list[Path]) -> int:
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    rec.content_stream().read()
                    n += 1
    return n


def parse_fastwarc(paths: list[Path]) -> int:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            for rec in ArchiveIterator(fh, record_types=WarcRecordType.response, auto_decode="all"):
                rec.reader.read()
                n += 1
    return n


def e2e_datatrove_like(paths: list[Path]) -> int:
    """warcio + charset detection + trafilatura.extract(favor_precision, no comments, deduplicate)."""
    import trafilatura
    from warcio.archiveiterator import ArchiveIterator

    from pipeline.sources.encoding import decode_html

    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type != "response":
                    continue
                ctype = (rec.http_headers.get_header("Content-Type") or "") if rec.http_headers else ""
                if "html" not in ctype:
                    continue
                html = decode_html(rec.content_stream().read()).text
                trafilatura.extract(html, favor_precision=True, include_comments=False, deduplicate=True)
                n += 1
    return n


def e2e_refinery(paths: list[Path], extractor: str) -> int:
    from pipeline.sources.commoncrawl import CommonCrawlConfig, CommonCrawlSource

    src = CommonCrawlSource("b", CommonCrawlConfig(kind="commoncrawl", paths=[str(p) for p in paths],
                                                   extractor=extractor))
    n = 0
    for url, id_path in src.files():
        for table in src.read(url, id_path):
            n += table.num_rows
    return n


def timed(fn, repeat: int) -> tuple[float, int]:
    fn()  # warm-up (imports)
    t0 = time.perf_counter()
    n = 0
    for _ in range(repeat):
        n += fn()
    return time.perf_counter() - t0, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    paths = [CORPORA / f for f in FILES if (CORPORA / f).exists()]
    if not paths:
        sys.exit(f"no WARC files under {CORPORA}")

    rows = []
    for name, fn in [
        ("parse: warcio", lambda: parse_warcio(paths)),
        ("parse: FastWARC (refinery)", lambda: parse_fastwarc(paths)),
        ("records→text: warcio + trafilatura (datatrove settings)", lambda: e2e_datatrove_like(paths)),
        ("records→text: refinery reader, extractor=trafilatura", lambda: e2e_refinery(paths, "trafilatura")),
        ("records→text: refinery reader, extractor=resiliparse (default)", lambda: e2e_refinery(paths, "resiliparse")),
    ]:
        secs, n = timed(fn, args.repeat)
        rows.append((name, n / secs, n))
        print(f"  {name}: {n / secs:.1f} records/s", file=sys.stderr)

    print(f"\n{len(paths)} WARC files x {args.repeat}, one CPU core\n")
    print("| path | records/s | vs baseline |")
    print("|---|---:|---:|")
    base_parse, base_e2e = rows[0][1], rows[2][1]
    for name, rate, _ in rows:
        base = base_parse if name.startswith("parse") else base_e2e
        print(f"| {name} | {rate:.1f} | {rate / base:.1f}x |")


if __name__ == "__main__":
    main()
