"""Should a page whose URL the URL filter flags get a lower toxicity threshold? Measured on labelled pages.

    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 56 --shards 8 --jsonl --out /tmp/refinery-bench/jsonl56
    PYTHONPATH=. python benchmarks/toxicity_url.py /tmp/refinery-bench/jsonl56

The pages are the original pages of a make_pipeline_input.py --jsonl directory (real crawl and
trafilatura-benchmark pages with their URLs, never trained on), labelled by
benchmarks/data/toxicity_web_labels.tsv (toxic / unsure; every other page clean; halves by a hash of
the URL, as `benchmarks/toxicity.py --web`). Each page goes through the URL filter stage at its
defaults (datatrove's adult blocklist and word lists, 2 soft-banned words to reject) and is put in
one group: rejected by its URL, flagged (at least one soft-banned word in the URL, not rejected), or
neither. The toxicity stage scores every page with the model in every language it has (the pages
are mostly in languages it does not judge by default, and a combined rule is about the model's
score). Printed per half and group: pages, toxic pages, and at each threshold the toxic pages caught
and the clean pages rejected; a lower threshold for flagged pages is worth it only where it catches
toxic pages the default (0.95) misses without rejecting more clean ones, on the tune half first.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH

THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95)


def groups(rows: list[dict]) -> list[str]:
    """rejected / flagged / neither per page, by the URL filter stage at its defaults."""
    import pyarrow as pa

    from pipeline.schema import make_record, records_to_table
    from stages._arrow import set_column
    from stages.url_filter.stage import UrlFilter

    stage = UrlFilter()
    table = records_to_table(make_record(source="w", kind="jsonl", file="w", offset=i, text="")
                             for i in range(len(rows)))
    table = set_column(table, "url", pa.array([r["url"] for r in rows], pa.string()))
    ann = stage.annotate(table)
    reasons = stage.decide(ann)
    soft = ann.column("url_soft_words").to_pylist()
    return ["rejected" if reason else "flagged" if (s or 0) >= 1 else "neither" for reason, s in zip(reasons, soft)]


def main(argv: list[str] | None = None) -> None:
    from benchmarks.toxicity import web_pages
    from stages.toxicity import MODEL_LANGUAGES, Toxicity

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", type=Path, help="a make_pipeline_input.py --jsonl directory")
    args = ap.parse_args(argv)
    rows = web_pages(args.pages)
    for r, g in zip(rows, groups(rows)):
        r["group"] = g
    stage = Toxicity(languages=sorted(MODEL_LANGUAGES))
    scores = stage.score_documents([r["text"] for r in rows], [r["lang"] for r in rows])
    for r, (s, _) in zip(rows, scores):
        r["score"] = s if r["lang"] else 0.0
    print(f"{len(rows)} pages; by URL: " + ", ".join(
        f"{g} {sum(r['group'] == g for r in rows)} ({sum(r['group'] == g and r['label'] == 'toxic' for r in rows)} toxic)"
        for g in ("rejected", "flagged", "neither")))
    print("| half | URL group | pages (toxic) | " + " | ".join(f"score >= {t}: toxic caught, clean rejected" for t in THRESHOLDS) + " |")
    print("|---|---|---:|" + "---:|" * len(THRESHOLDS))
    for half in ("tune", "report"):
        for g in ("rejected", "flagged", "neither"):
            rs = [r for r in rows if r["half"] == half and r["group"] == g and r["label"] != "unsure"]
            tox = [r for r in rs if r["label"] == "toxic"]
            clean = [r for r in rs if r["label"] == "clean"]
            cells = []
            for t in THRESHOLDS:
                caught = sum(r["score"] >= t for r in tox)
                rejected = sum(r["score"] >= t for r in clean)
                cells.append(f"{caught}/{len(tox)}, {rejected}/{len(clean)}")
            print(f"| {half} | {g} | {len(rs)} ({len(tox)}) | " + " | ".join(cells) + " |")
    for r in rows:
        if r["label"] == "toxic":
            print(f"toxic page: {r['half']:6s} {r['group']:8s} score {r['score']:.3f} lang {r['lang']} {r['url'][:90]}")


if __name__ == "__main__":
    main()
