"""HTML main-content extraction: snippet precision/recall/F1 and pages per second on one core.

Data: ../shared/corpora/web/trafilatura_eval_html_benchmark.tar.zst (trafilatura's own eval set:
~990 pages with gold snippets that must (`with`) and must not (`without`) appear in the output).
Scoring is trafilatura's: per page, a `with` snippet found in the output is a true positive, one
missing a false negative; a `without` snippet found is a false positive, one absent a true negative.
A page an extractor returns nothing for scores all `with` as FN and all `without` as TN.

Every variant runs on the same decoded pages in the same process pinned to one CPU; the time is
extraction only (decoding bytes to str happens once, before, with pipeline.sources.encoding, for all).

    PYTHONPATH=. python benchmarks/extraction.py            # all variants, on the report half
    PYTHONPATH=. python benchmarks/extraction.py --half tune --only refinery
    PYTHONPATH=. python benchmarks/extraction.py --only resiliparse --limit 200
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
import time
from pathlib import Path
from typing import Callable

import zstandard

from pipeline.sources.encoding import decode_html
from pipeline.sources.extract import Extractor, ExtractorConfig, ResiliparseOptions, TrafilaturaOptions

DATA = Path(__file__).resolve().parents[1].parent / "shared/corpora/web/trafilatura_eval_html_benchmark.tar.zst"


def half_of(item: dict) -> str:
    """The page's half of the set: `tune` (where refinery's defaults were chosen) or `report`
    (never looked at while tuning). By a hash of the file name, so it is stable."""
    return "tune" if int(hashlib.sha1(item["file"].encode()).hexdigest(), 16) % 2 == 0 else "report"


def load_pages(path: Path, limit: int | None, half: str = "all") -> list[tuple[str, dict]]:
    files: dict[str, bytes] = {}
    evaldata = None
    with open(path, "rb") as fh:
        stream = zstandard.ZstdDecompressor().stream_reader(fh)
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                data = tar.extractfile(m).read()
                if m.name.endswith("evaldata.json"):
                    evaldata = json.loads(data)
                else:
                    files[os.path.basename(m.name)] = data
    assert evaldata is not None, "evaldata.json missing from the archive"
    pages = []
    for url, item in sorted(evaldata.items()):
        data = files.get(item["file"])
        if data is None or (half != "all" and half_of(item) != half):
            continue
        pages.append((decode_html(data).text, item))
        if limit and len(pages) >= limit:
            break
    return pages


def score(output: str | None, item: dict) -> tuple[int, int, int, int]:
    """(tp, fn, fp, tn) for one page, as trafilatura's evaluation counts them."""
    out = output or ""
    tp = fn = fp = tn = 0
    for s in item.get("with") or []:
        if s in out:
            tp += 1
        else:
            fn += 1
    for s in item.get("without") or []:
        if s in out:
            fp += 1
        else:
            tn += 1
    return tp, fn, fp, tn


def _resiliparse_raw(**kw) -> Callable[[str], str]:
    """resiliparse with the library's own defaults plus `kw` (no post-processing)."""
    from resiliparse.extract.html2text import extract_plain_text

    return lambda html: extract_plain_text(html, **kw)


def _trafilatura_raw(**kw) -> Callable[[str], str | None]:
    import trafilatura

    return lambda html: trafilatura.extract(html, **kw)


def _ours(**kw) -> Callable[[str], str | None]:
    return Extractor(ExtractorConfig(**kw))


def variants() -> dict[str, Callable[[str], str | None]]:
    return {
        # trafilatura as a user would call it, and as datatrove / FineWeb call it.
        "trafilatura (library defaults)": _trafilatura_raw(),
        "trafilatura (datatrove: favor_precision, no comments, deduplicate)": _trafilatura_raw(
            favor_precision=True, include_comments=False, deduplicate=True
        ),
        "trafilatura (fast: no_fallback)": _trafilatura_raw(no_fallback=True),
        # resiliparse, library defaults with main_content (what Dolma/DCLM run), then settings.
        "resiliparse main_content (library defaults)": _resiliparse_raw(main_content=True),
        "resiliparse main_content, no alt texts": _resiliparse_raw(main_content=True, alt_texts=False),
        "resiliparse main_content, no alt texts, no comments": _resiliparse_raw(
            main_content=True, alt_texts=False, comments=False
        ),
        "resiliparse main_content, links + noscript": _resiliparse_raw(
            main_content=True, links=True, noscript=True
        ),
        "resiliparse main_content, no list bullets": _resiliparse_raw(main_content=True, list_bullets=False),
        "resiliparse full page (main_content=False)": _resiliparse_raw(main_content=False),
        # refinery's steps on top of resiliparse (no alt texts, no comments), one at a time.
        "resiliparse + boilerplate selectors": _ours(
            name="resiliparse", fallback="none",
            resiliparse=ResiliparseOptions(block_filter=False, edge_trim_words=0)
        ),
        "resiliparse + selectors + block filter": _ours(
            name="resiliparse", fallback="none", resiliparse=ResiliparseOptions(edge_trim_words=0)
        ),
        "resiliparse + edge trim only": _ours(
            name="resiliparse", fallback="none",
            resiliparse=ResiliparseOptions(skip_elements=[], block_filter=False)
        ),
        "refinery fast path (resiliparse + selectors + block filter + edge trim)": _ours(
            name="resiliparse", fallback="none"),
        "refinery default (fast path, trafilatura for pages under 800 chars)": _ours(),
        "refinery, trafilatura's readability comparison on every doubted page (the default before 2026-11-24)": _ours(
            fallback_readability_below_chars=10**9, fallback_baseline="whole"),
        "refinery, fallback without trafilatura's baseline (whole-page text)": _ours(fallback_baseline="off"),
        "refinery, fallback with trafilatura's baseline whole (the default before 2026-11-25)": _ours(
            fallback_baseline="whole"),
        "refinery, fallback under 200 chars, or under 800 when under 55% of resiliparse's output": _ours(
            fallback_max_kept=0.55),
    }


def _cpu_seconds(fn) -> float:
    """CPU seconds used so far by this process and by `fn`'s extraction child, if it has one
    (refinery extracts in a sandbox process). CPU time is what load from other processes on a
    shared machine disturbs least; wall time is reported beside it."""
    t = os.times()
    total = t.user + t.system
    sandbox = getattr(fn, "_sandbox", None)
    proc = getattr(sandbox, "_proc", None)
    if proc is not None:
        try:
            with open(f"/proc/{proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):  # not Linux: the child's time is not counted
            pass
    return total


def _reset_trafilatura() -> None:
    try:
        from trafilatura.meta import reset_caches

        reset_caches()
    except ImportError:  # pragma: no cover
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--limit", type=int, default=None, help="first N pages only (quick look)")
    ap.add_argument("--half", choices=("tune", "report", "all"), default="report",
                    help="which half of the set to score (default: report, the half nothing was tuned on)")
    ap.add_argument("--only", nargs="+", default=None, help="run variants whose name contains any of these")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--speed-pages", type=int, default=300, help="pages timed per round (0 = all)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (best is kept)")
    ap.add_argument("--core", type=int, default=None, help="the CPU to pin to (default: the first allowed)")
    args = ap.parse_args()

    if hasattr(os, "sched_setaffinity"):  # one core, honestly (extraction children inherit it)
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0] if args.core is None else args.core})
    pages = load_pages(args.data, args.limit, args.half)
    print(f"{len(pages)} pages ({args.half} half) with gold snippets from {args.data.name}; one CPU core",
          file=sys.stderr)

    chosen = {k: v for k, v in variants().items() if not args.only or any(o in k for o in args.only)}
    rows = []
    for name, fn in chosen.items():  # quality: every page, once
        fn(pages[0][0])  # warm-up: imports, lazy model/regex init
        _reset_trafilatura()  # its deduplicate cache would otherwise carry over between variants
        tp = fn_ = fp = tn = 0
        for html, item in pages:
            a, b, c, d = score(fn(html), item)
            tp, fn_, fp, tn = tp + a, fn_ + b, fp + c, tn + d
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn_) if tp + fn_ else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        acc = (tp + tn) / (tp + tn + fp + fn_)
        rows.append(dict(variant=name, precision=p, recall=r, f1=f1, accuracy=acc, tp=tp, fn=fn_, fp=fp, tn=tn))
        print(f"  {name}: F1 {f1:.3f}", file=sys.stderr)

    # Speed: variants interleaved round by round on the same pages, best round kept, so load
    # from other processes on the machine hits every variant alike.
    speed_pages = pages[: args.speed_pages] if args.speed_pages else pages
    best = {name: float("inf") for name in chosen}
    best_cpu = {name: float("inf") for name in chosen}
    for rnd in range(args.rounds):
        for name, fn in chosen.items():
            _reset_trafilatura()
            c0 = _cpu_seconds(fn)
            t0 = time.perf_counter()
            for html, _ in speed_pages:
                fn(html)
            best[name] = min(best[name], time.perf_counter() - t0)
            best_cpu[name] = min(best_cpu[name], _cpu_seconds(fn) - c0)
        print(f"  speed round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    for row in rows:
        row["pages_per_s"] = len(speed_pages) / best[row["variant"]]
        row["pages_per_cpu_s"] = len(speed_pages) / max(best_cpu[row["variant"]], 1e-9)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nquality on {len(pages)} pages; speed on {len(speed_pages)} pages, best of {args.rounds} "
          f"interleaved rounds, one core; load average {load:.1f} at the end")

    base = next((r for r in rows if r["variant"].startswith("trafilatura (library defaults")), None)
    print(f"\n| variant | precision | recall | F1 | accuracy | pages/s (1 core) | speed vs trafilatura (defaults) "
          f"| pages/CPU-s | CPU speed vs trafilatura |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = f"{r['pages_per_s'] / base['pages_per_s']:.1f}x" if base else "n/a"
        cpu_ratio = f"{r['pages_per_cpu_s'] / base['pages_per_cpu_s']:.1f}x" if base else "n/a"
        print(f"| {r['variant']} | {r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | "
              f"{r['accuracy']:.3f} | {r['pages_per_s']:.1f} | {ratio} | {r['pages_per_cpu_s']:.1f} | {cpu_ratio} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
