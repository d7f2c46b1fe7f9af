"""arXiv reader on the 17 real submissions: outcome, reason, main file, files inlined, missing
inputs, macros expanded, characters kept, and time per submission (one core).

    PYTHONPATH=. python benchmarks/arxiv_sources.py [--drop-appendix]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pipeline.sources.arxiv import ArxivConfig, ArxivSource

CORPUS = Path(__file__).resolve().parents[1].parent / "shared/corpora/arxiv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=str(CORPUS / "*"))
    ap.add_argument("--drop-appendix", action="store_true")
    args = ap.parse_args()
    src = ArxivSource("arxiv", ArxivConfig(kind="arxiv", paths=[args.path], drop_appendix=args.drop_appendix))
    print("| submission | outcome | main file | files inlined | missing inputs | macros expanded | chars | ms |")
    print("|---|---|---|---:|---|---:|---:|---:|")
    total = 0.0
    kept = 0
    units = src.files()
    if units:
        list(src.read(*units[0]))  # warm-up: imports and fsspec set-up are not a submission's cost
    for url, id_path in units:
        t0 = time.perf_counter()
        rows = [r for t in src.read(url, id_path) for r in t.to_pylist()]
        ms = (time.perf_counter() - t0) * 1000
        total += ms
        for r in rows:
            m = json.loads(r["metadata"])
            outcome = "text" if r["drop_reason"] is None else f"{r['drop_reason']}: {r['drop_detail']}"
            kept += r["drop_reason"] is None
            print(f"| {r['url']} | {outcome} | {m.get('main_file') or ''} | {len(m.get('files_used') or [])} | "
                  f"{', '.join(m.get('missing_inputs') or [])} | {m.get('macros_expanded', 0)} | "
                  f"{len(r['text'] or '')} | {ms:.0f} |")
    print(f"\n{len(units)} submissions, {kept} with text, {total / 1000:.2f} s in total")


if __name__ == "__main__":
    main()
