"""refinery's default extractor against trafilatura's library defaults on real crawl pages (no gold).

trafilatura's eval set (benchmarks/extraction.py) scores snippets; it cannot see a lost paragraph
that no snippet names, or boilerplate no `without` snippet names. These pages are the base pages of
the benchmark crawl that are NOT in that eval set (../shared/corpora/web: the HPLT samples' raw
HTML, the dolma and resiliparse WARC samples, as benchmarks/make_pipeline_input.py loads them), so
nothing here was tuned on the set the extraction goal is reported on.

Per page: token-level agreement of the two texts (multiset overlap of word tokens; CJK, Thai,
Lao, Khmer, Myanmar and Tibetan characters count one token each): `p` = share of our tokens that
trafilatura also keeps, `r` = share of trafilatura's tokens we also keep; characters of each. The
pages where they disagree most were read, and a reader's judgement of each is in
benchmarks/data/extraction_web_labels.tsv (who got the main content right; what each lost or
kept). With `--labels`, those judgements are summarised per half (sha1(url) % 2: tune / report).
`--candidate` lists the pages a config change alters, for reading; `--verdicts` summarises the
reader's verdicts on such changes (benchmarks/data/extraction_web_fallback_labels.tsv). Results and
what was chosen from them: docs/sources.md, "On real crawl pages, without gold".

    PYTHONPATH=. python benchmarks/extraction_web.py --corpora /work/shared/corpora --half all
    PYTHONPATH=. python benchmarks/extraction_web.py --corpora /work/shared/corpora --worst 30 --dump /tmp/extweb
    PYTHONPATH=. python benchmarks/extraction_web.py --corpora /work/shared/corpora --half tune \
        --candidate '{"fallback_baseline": "whole"}'
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

LABELS = Path(__file__).resolve().parent / "data" / "extraction_web_labels.tsv"
_NOSPACE = "\u0e00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_NOSPACE}]|[^\W{_NOSPACE}]+")


def half_of(url: str) -> str:
    return "tune" if int(hashlib.sha1(url.encode()).hexdigest(), 16) % 2 == 0 else "report"


def tokens(text: str | None) -> Counter:
    return Counter(t.lower() for t in _TOKEN.findall(text or ""))


def agreement(ours: str | None, theirs: str | None) -> tuple[float, float, int, int]:
    """(share of our tokens in theirs, share of theirs in ours, our token count, theirs).
    An empty side counts as 1.0 for the share of its own tokens kept by the other."""
    a, b = tokens(ours), tokens(theirs)
    na, nb = sum(a.values()), sum(b.values())
    both = sum((a & b).values())
    return (both / na if na else 1.0), (both / nb if nb else 1.0), na, nb


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def load(corpora: Path):
    from make_pipeline_input import load_base_pages

    from pipeline.sources.encoding import decode_html

    for page in load_base_pages(corpora, with_eval_set=False):
        yield page.url, page.origin, decode_html(page.html, page.charset).text


def extract_all(corpora: Path, config: dict | None = None) -> list[dict]:
    import trafilatura

    from pipeline.sources.extract import Extractor, ExtractorConfig

    ours = Extractor(ExtractorConfig(**{**(config or {}), "time_limit": 0}))
    rows = []
    for url, origin, html in load(corpora):
        t0 = time.process_time()
        text, used = ours.extract(html)
        t1 = time.process_time()
        try:
            theirs = trafilatura.extract(html)
        except Exception:  # noqa: BLE001 - as the library fails on a page
            theirs = None
        t2 = time.process_time()
        p, r, na, nb = agreement(text, theirs)
        rows.append(dict(url=url, origin=origin, half=half_of(url), used=used, ours=text or "",
                         theirs=theirs or "", p=p, r=r, ours_tokens=na, theirs_tokens=nb,
                         ours_chars=len(text or ""), theirs_chars=len(theirs or ""),
                         ours_cpu=t1 - t0, theirs_cpu=t2 - t1, html_chars=len(html)))
    return rows


def summarise(rows: list[dict], name: str) -> str:
    if not rows:
        return f"| {name} | 0 |"
    n = len(rows)
    tok_o = sum(r["ours_tokens"] for r in rows)
    tok_t = sum(r["theirs_tokens"] for r in rows)
    mp = sum(r["p"] for r in rows) / n
    mr = sum(r["r"] for r in rows) / n
    low_r = sum(r["r"] < 0.5 and r["theirs_tokens"] >= 50 for r in rows)
    low_p = sum(r["p"] < 0.5 and r["ours_tokens"] >= 50 for r in rows)
    fb = sum(r["used"] != "resiliparse" for r in rows)
    speed = sum(r["theirs_cpu"] for r in rows) / max(sum(r["ours_cpu"] for r in rows), 1e-9)
    return (f"| {name} | {n} | {mp:.3f} | {mr:.3f} | {f1(mp, mr):.3f} | {tok_o / max(tok_t, 1):.2f} | "
            f"{low_r} | {low_p} | {fb} | {speed:.1f}x |")


def read_labels(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return list(csv.DictReader((line for line in fh if not line.startswith("#")), delimiter="\t"))


def _flat(text: str | None) -> str:
    return " / ".join(line.strip() for line in (text or "").split("\n") if line.strip())


def candidate_changes(corpora: Path, overrides: dict, half: str = "all") -> list[tuple]:
    """(url, half, default text, candidate text, extractor used by each) for every page whose text
    the candidate config changes."""
    from pipeline.sources.extract import Extractor, ExtractorConfig

    default = Extractor(ExtractorConfig(time_limit=0))
    candidate = Extractor(ExtractorConfig(**{**overrides, "time_limit": 0}))
    out = []
    for url, _, html in load(corpora):
        h = half_of(url)
        if half != "all" and h != half:
            continue
        a, ua = default.extract(html)
        b, ub = candidate.extract(html)
        if (a or "") != (b or ""):
            out.append((url, h, a or "", b or "", ua, ub))
    return out


def verdict_summary(rows: list[dict]) -> list[str]:
    """Markdown table: per candidate and half, how many changed pages the reader judged better,
    worse, mixed or the same with the candidate than with the default."""
    cands = [c[: -len("_verdict")] for c in rows[0] if c.endswith("_verdict")] if rows else []
    kinds = ("better", "worse", "mixed", "same")
    out = ["| candidate | half | pages changed | " + " | ".join(kinds) + " |", "|---|---|---:|" + "---:|" * len(kinds)]
    for cand in cands:
        for half in ("tune", "report"):
            got = [r[cand + "_verdict"] for r in rows if r["half"] == half and r[cand + "_verdict"] != "-"]
            if got:
                out.append(f"| {cand} | {half} | {len(got)} | " + " | ".join(str(got.count(k)) for k in kinds) + " |")
    return out


def label_summary(labels: list[dict]) -> list[str]:
    """Markdown table of the reader's judgements per half: who was right, and each extractor's faults."""
    halves = ("tune", "report")
    keys = [("winner", w) for w in ("refinery", "trafilatura", "both", "neither")]
    faults = sorted({f for lab in labels for col in ("ours_wrong", "theirs_wrong")
                     for f in lab[col].split(",") if f != "-"})
    keys += [(col, f) for col in ("ours_wrong", "theirs_wrong") for f in faults]
    out = ["| pages read | " + " | ".join(halves) + " | all |", "|---|" + "---:|" * (len(halves) + 1)]
    out.append("| pages | " + " | ".join(str(sum(lab["half"] == h for lab in labels)) for h in halves)
               + f" | {len(labels)} |")
    for col, value in keys:
        name = {"winner": "right:", "ours_wrong": "refinery", "theirs_wrong": "trafilatura"}[col]
        counts = [sum(lab["half"] == h and value in lab[col].split(",") for lab in labels) for h in halves]
        if sum(counts):
            out.append(f"| {name} {value} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared/corpora")
    ap.add_argument("--half", choices=("tune", "report", "all"), default="all")
    ap.add_argument("--worst", type=int, default=0, help="list the N pages with the lowest r and the N with the lowest p")
    ap.add_argument("--dump", type=Path, default=None, help="write each page's two texts here (for reading)")
    ap.add_argument("--labels", type=Path, default=None, help="summarise the reader's judgements in this TSV")
    ap.add_argument("--config", default=None, help="ExtractorConfig overrides as JSON (a candidate change)")
    ap.add_argument("--candidate", default=None,
                    help="ExtractorConfig overrides as JSON: list the pages (of --half) whose text it changes against "
                         "the default, with the start of both texts, for reading; nothing else is run")
    ap.add_argument("--verdicts", type=Path, default=None,
                    help="summarise a reader's verdicts on candidates (benchmarks/data/extraction_web_fallback_labels.tsv)")
    ap.add_argument("--json", type=Path, default=None, help="also write per-page rows (without texts) here")
    args = ap.parse_args()

    if args.verdicts:
        print("\n".join(verdict_summary(read_labels(args.verdicts))))
        return
    if args.candidate:
        changed = candidate_changes(args.corpora, json.loads(args.candidate), args.half)
        for i, (url, half, a, b, ua, ub) in enumerate(changed, 1):
            print(f"#{i} {half} {url}\n  default  [{len(a)}, {ua}]: {_flat(a)[:300]}\n"
                  f"  candidate[{len(b)}, {ub}]: {_flat(b)[:300]}")
        print(f"{len(changed)} pages changed ({args.half})")
        return
    rows = extract_all(args.corpora, json.loads(args.config) if args.config else None)
    if args.half != "all":
        rows = [r for r in rows if r["half"] == args.half]
    print(f"{len(rows)} pages ({args.half}); p = share of refinery's tokens trafilatura keeps too, r = share of "
          f"trafilatura's tokens refinery keeps; means over pages; CPU speed = trafilatura CPU-s / refinery CPU-s, "
          f"in-process, same run")
    print("\n| pages | n | mean p | mean r | F1 of means | our tokens / theirs | r < 0.5 | p < 0.5 | fallback text kept "
          "| CPU speed vs trafilatura |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(summarise(rows, "all"))
    for origin in sorted({r["origin"] for r in rows}):
        print(summarise([r for r in rows if r["origin"] == origin], origin))
    if args.worst:
        for key, what in (("r", "we keep least of trafilatura's text"), ("p", "trafilatura keeps least of ours")):
            print(f"\n{what}:")
            big = [r for r in rows if (r["theirs_tokens"] if key == "r" else r["ours_tokens"]) >= 30]
            for r in sorted(big, key=lambda r: r[key])[: args.worst]:
                print(f"  {key}={r[key]:.2f} ours={r['ours_chars']} theirs={r['theirs_chars']} {r['half']} "
                      f"{r['used']} {r['url']}")
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        for i, r in enumerate(rows):
            stem = hashlib.sha1(r["url"].encode()).hexdigest()[:10]
            (args.dump / f"{stem}.ours.txt").write_text(r["url"] + "\n\n" + r["ours"])
            (args.dump / f"{stem}.traf.txt").write_text(r["url"] + "\n\n" + r["theirs"])
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k not in ("ours", "theirs")} for r in rows],
                                        indent=1))
    if args.labels:
        print("\n" + "\n".join(label_summary(read_labels(args.labels))))


if __name__ == "__main__":
    main()
