"""The trafilatura fallback with its XPath filters in Python against trafilatura's own steps.

Collects the pages of crawl WARC files that the default extractor doubts (or every page with
`--all`), runs the fallback as refinery calls it twice per round, once with
`pipeline.sources.trafilatura_steps` (its `extract_content`, `load_html` and `compare_extraction`) and once with
trafilatura's unchanged ones, alternating, and prints the CPU seconds of each and whether every page's text is identical.
`--readability-below 1000000000` runs trafilatura's readability comparison on every page (so each
step runs, as `trafilatura.extract` would).

    PYTHONPATH=. python benchmarks/trafilatura_steps.py \
        /tmp/refinery-bench/input-50mb-8s-seed0/bench-00000.warc.gz \
        /tmp/refinery-bench/input-50mb-8s-seed0/bench-00001.warc.gz
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from extraction_doubt import crawl_pages  # noqa: E402
from pipeline.sources import trafilatura_steps  # noqa: E402
from pipeline.sources.extract import ExtractorConfig, _resiliparse, _trafilatura_fallback, doubts, tidy  # noqa: E402


def doubted(paths: list[str], every: bool) -> list[str]:
    c = ExtractorConfig()
    fast = _resiliparse(c.resiliparse)
    pages = []
    for path in paths:
        for html, _ in crawl_pages(path):
            if every:
                pages.append(html)
                continue
            try:
                text, raw = fast(html)
                text = tidy(text)
            except Exception:  # noqa: BLE001 - as the extractor treats it
                text, raw = None, 0
            if doubts(text, raw, c):
                pages.append(html)
    return pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("warc", nargs="+")
    ap.add_argument("--all", action="store_true", help="every HTML page, not only the doubted ones")
    ap.add_argument("--readability-below", type=int, default=ExtractorConfig().fallback_readability_below_chars)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    pages = doubted(args.warc, args.all)
    python = _trafilatura_fallback(args.readability_below)
    compiled = trafilatura_steps.extract_content, trafilatura_steps.load_html, trafilatura_steps.compare_extraction
    from trafilatura import external, main_extractor, utils

    trafilatura_steps.extract_content = lambda: main_extractor.extract_content
    trafilatura_steps.load_html = lambda: utils.load_html
    trafilatura_steps.compare_extraction = lambda: (external.compare_extraction, external.justext_rescue)
    try:
        xpath = _trafilatura_fallback(args.readability_below)
    finally:
        (trafilatura_steps.extract_content, trafilatura_steps.load_html,
         trafilatura_steps.compare_extraction) = compiled
    for html in pages[:20]:  # warm both
        python(html), xpath(html)
    cpu: dict[str, list[float]] = {"trafilatura's steps": [], "filters in Python": []}
    texts = {}
    for _ in range(args.rounds):
        for name, fn in (("trafilatura's steps", xpath), ("filters in Python", python)):
            t = time.process_time()
            texts[name] = [fn(html) for html in pages]
            cpu[name].append(time.process_time() - t)
    a, b = texts.values()
    differ = sum(x != y for x, y in zip(a, b))
    print(f"{len(pages)} pages; CPU-s per round: " + "; ".join(
        f"{k} {' / '.join(f'{v:.2f}' for v in vs)}" for k, vs in cpu.items()))
    print(f"identical text on {len(pages) - differ} of {len(pages)} pages")
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
