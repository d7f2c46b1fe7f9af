"""Pages whose extracted text holds a passage twice while the page holds it once.

For each page of trafilatura's eval set (../shared/corpora/web/trafilatura_eval_html_benchmark.tar.zst),
`pipeline.api.extract` with the given extractor configs. An output "repeats" when a 300-character
block of its whitespace-collapsed text occurs again at least 300 characters further on. For such a
page the block is then looked for in the page's own text (lxml, scripts and styles dropped; letters
and digits only, so entities, bullets and how nodes are joined do not matter) and in
trafilatura.extract's output: a repeat the page does not hold is the extractor's, and if
trafilatura.extract repeats it too, it is trafilatura's.

    PYTHONPATH=. python benchmarks/extract_repeats.py [--limit N] [--config '{}' --config '{"name": "trafilatura"}']
"""
from __future__ import annotations

import argparse
import json
import os
import tarfile
from pathlib import Path

import zstandard

DATA = Path(__file__).resolve().parents[1].parent / "shared/corpora/web/trafilatura_eval_html_benchmark.tar.zst"


def pages(path: Path, limit: int | None):
    n = 0
    with open(path, "rb") as fh, tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(fh), mode="r|") as tar:
        for m in tar:
            if m.isfile() and m.name.endswith(".html"):
                yield os.path.basename(m.name), tar.extractfile(m).read()
                n += 1
                if limit and n >= limit:
                    return


def repeated_block(text: str, k: int = 300) -> str | None:
    t = " ".join(text.split())
    for i in range(0, max(0, len(t) - k), 50):
        b = t[i:i + k]
        if t.find(b, i + k) >= 0:
            return b
    return None


def squash(s: str) -> str:
    return "".join(c for c in s if c.isalnum())


def page_text(raw: bytes, charset: str | None) -> str:
    import lxml.html

    try:
        doc = lxml.html.fromstring(raw.decode(charset or "utf-8", "replace"))
    except Exception:
        return ""
    for bad in doc.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    return "".join(doc.itertext())


def main(argv: list[str] | None = None) -> int:
    import trafilatura

    from pipeline import api

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--config", action="append", help="api.extract keyword arguments as JSON (repeatable)")
    a = ap.parse_args(argv)
    configs = [json.loads(c) for c in (a.config or ["{}", '{"name": "trafilatura"}'])]
    stats = {json.dumps(c): {"pages": 0, "repeat": 0, "page_once": 0, "trafilatura_too": 0, "by": {}} for c in configs}
    for name, raw in pages(a.data, a.limit):
        for cfg in configs:
            s = stats[json.dumps(cfg)]
            r = api.extract(raw, **cfg)
            s["pages"] += 1
            block = repeated_block(r.text or "")
            if block is None:
                continue
            s["repeat"] += 1
            s["by"][r.extractor] = s["by"].get(r.extractor, 0) + 1
            probe = squash(block)[:80]
            if squash(page_text(raw, r.charset)).count(probe) >= 2:
                continue
            s["page_once"] += 1
            html = raw.decode(r.charset or "utf-8", "replace")
            own = trafilatura.extract(html, favor_precision=True, include_tables=True)
            too = squash(own or "").count(probe) >= 2
            s["trafilatura_too"] += too
            print(f"{json.dumps(cfg)} {name}: repeats a block the page holds once ({r.extractor}; "
                  f"trafilatura.extract {'repeats it too' if too else 'does not'})", flush=True)
    for cfg, s in stats.items():
        print(f"{cfg}: {s['pages']} pages, {s['repeat']} outputs repeat a 300-character block (by extractor: "
              f"{s['by']}), {s['page_once']} of them a block the page holds once, "
              f"{s['trafilatura_too']} of those repeated by trafilatura.extract too")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
