"""PII masking benchmark: refinery's `pii` stage against datatrove's PIIFormatter, same texts, 1 core.

Texts (real, read in place from ../shared/corpora): HPLT Common Crawl + Internet Archive pages
(extracted text), 4chan threads (Paloma), UCI SMS spam collection (phone numbers are common there).
datatrove's PIIFormatter masks e-mails and public IPv4 only; refinery also masks phones and IPv6, so
the timing is given twice: refinery with the same job (e-mails + IPs) and with everything on.

    PYTHONPATH=. python benchmarks/pii.py [--corpora ../shared/corpora] [--examples 10]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
from pathlib import Path

from pipeline.schema import make_record, records_to_table
from stages.pii import PIIMasker
from benchmarks._timing import best_time

ROOT = Path(__file__).resolve().parents[1]


def load_texts(corpora: Path) -> dict[str, list[str]]:
    import zstandard

    out: dict[str, list[str]] = {}
    web = []
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(open(corpora / "web" / name, "rb"))
        for line in io.TextIOWrapper(raw, encoding="utf-8", errors="replace"):
            t = json.loads(line).get("t")
            if t:
                web.append(t)
    out["hplt web pages"] = web
    with gzip.open(corpora / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        out["4chan threads"] = [json.loads(l)["text"] for l in f if l.strip()]
    sms = (corpora / "quality" / "uci_sms_spam_collection.tsv").read_text(encoding="utf-8", errors="replace")
    out["sms"] = [l.split("\t", 1)[1] for l in sms.splitlines() if "\t" in l]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--examples", type=int, default=0, help="print this many masked phone matches")
    args = ap.parse_args(argv)

    from datatrove.pipeline.formatters import PIIFormatter

    groups = load_texts(args.corpora)
    texts = [t for ts in groups.values() for t in ts]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    table = records_to_table(
        make_record(source="bench", kind="jsonl", file="pii", offset=i, text=t) for i, t in enumerate(texts)
    )
    full = PIIMasker()
    same_job = PIIMasker(mask_phones=False)
    dt = PIIFormatter()

    print(f"{len(texts)} texts, {mb:.2f} MB: " + ", ".join(f"{k} {len(v)}" for k, v in groups.items()))
    print("| source | docs | e-mails | phones | IPs | datatrove e-mails+IPs changed docs | refinery changed docs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, ts in groups.items():
        counts = [full.mask(t) for t in ts]
        dt_changed = sum(1 for t in ts if dt.format(t) != t)
        ours_changed = sum(1 for t, c in zip(ts, counts) if c[0] != t)
        e, p, i = (sum(c[k] for c in counts) for k in (1, 2, 3))
        print(f"| {name} | {len(ts)} | {e} | {p} | {i} | {dt_changed} | {ours_changed} |")

    if args.examples:
        from stages.pii import find_phones

        shown = [p for ts in list(groups.values())[:2] for t in ts for p in find_phones(t)]
        print("phones masked in web pages and 4chan: " + " | ".join(shown[: args.examples]))

    t_full = best_time(lambda: full.annotate(table), args.repeats)
    t_same = best_time(lambda: same_job.annotate(table), args.repeats)
    t_dt = best_time(lambda: [dt.format(t) for t in texts], args.repeats)
    print(f"speed, 1 core, best of {args.repeats}:")
    print(f"  datatrove PIIFormatter (e-mails + IPv4)   {len(texts) / t_dt:9.0f} docs/s {mb / t_dt:7.2f} MB/s")
    print(f"  refinery pii (e-mails + IPv4/IPv6)        {len(texts) / t_same:9.0f} docs/s {mb / t_same:7.2f} MB/s"
          f"  ratio {t_dt / t_same:.2f}x")
    print(f"  refinery pii (e-mails + IPs + phones)     {len(texts) / t_full:9.0f} docs/s {mb / t_full:7.2f} MB/s"
          f"  ratio {t_dt / t_full:.2f}x")

    # A page with an e-mail address and an inline base64 image (a long run of address characters).
    import base64
    import random

    blob = base64.b64encode(random.Random(0).randbytes(40_000)).decode()
    page = "Contact: someone@example.com <img src='data:image/png;base64," + blob + "'>"
    t_dt1 = best_time(lambda: dt.format(page), 1)
    t_ours1 = best_time(lambda: full.mask(page), 1)
    print(f"one page with an e-mail and a {len(blob) // 1000} kB base64 image:"
          f" datatrove {t_dt1:.3f} s, refinery {t_ours1:.4f} s")


if __name__ == "__main__":
    main()
