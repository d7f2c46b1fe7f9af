"""PII masking benchmark: refinery's `pii` stage against datatrove's PIIFormatter, same texts, 1 core.

Texts (real, read in place from ../shared/corpora): HPLT Common Crawl + Internet Archive pages
(extracted text), 4chan threads (Paloma), UCI SMS spam collection (phone numbers are common there).
datatrove's PIIFormatter masks e-mails and public IPv4 only; refinery also masks phones and IPv6, so
the timing is given twice: refinery with the same job (e-mails + IPs) and with everything on.

Phones, second part: recall on the phone examples of tests/test_pii.py (issue #18's North American
forms, real numbers from the corpora, international numbers) and false positives on text without
PII (WikiText-2, Gutenberg books, OpenStax textbooks, XQuAD: edited prose full of dates, years,
prices, page ranges and coordinates), refinery's patterns against the `phonenumbers` library
(Google's libphonenumber in Python) with leniency POSSIBLE and VALID, default region US.

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


def no_pii_texts(corpora: Path, names=("wikitext2", "gutenberg", "openstax", "xquad")) -> dict[str, list[str]]:
    """Texts that should hold no phone number: edited books and encyclopedia articles."""
    import zstandard

    q = corpora / "quality"

    def jsonl(path: Path) -> list[str]:
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
        return [json.loads(l)["text"] for l in io.TextIOWrapper(raw, encoding="utf-8") if l.strip()]

    read = {
        "wikitext2": lambda: [a for f in ("wikitext2_valid.tokens.txt", "wikitext2_test.tokens.txt")
                              for a in (q / f).read_text(encoding="utf-8").split("\n = ")],
        "gutenberg": lambda: jsonl(q / "gutenberg_books" / "gutenberg_books.jsonl.zst"),
        "openstax": lambda: jsonl(q / "openstax_textbooks" / "openstax_textbooks.jsonl.zst"),
        "xquad": lambda: jsonl(q / "xquad_wikipedia" / "xquad_paragraphs.jsonl.zst"),
    }
    return {n: read[n]() for n in names}


def phone_comparison(corpora: Path) -> None:
    """Recall on the test examples and matches on text without PII: refinery vs phonenumbers."""
    import time

    import phonenumbers
    from phonenumbers import Leniency, PhoneNumberMatcher

    from stages.pii import find_phones

    sys_path = str(ROOT / "tests")
    import sys

    sys.path.insert(0, sys_path)
    import test_pii

    examples = next(m.args[1] for m in test_pii.test_phones_masked.pytestmark if m.name == "parametrize")
    negatives = next(m.args[1] for m in test_pii.test_not_phones.pytestmark if m.name == "parametrize")
    tools = {
        "refinery pii": lambda t: find_phones(t),
        "phonenumbers POSSIBLE": lambda t: [m.raw_string for m in PhoneNumberMatcher(t, "US", leniency=Leniency.POSSIBLE)],
        "phonenumbers VALID": lambda t: [m.raw_string for m in PhoneNumberMatcher(t, "US", leniency=Leniency.VALID)],
    }
    clean = no_pii_texts(corpora)
    print(f"phones: {len(examples)} examples to mask, {len(negatives)} hand-written non-phones, text without PII: "
          + ", ".join(f"{k} {sum(len(t.encode()) for t in v) / 1e6:.1f} MB" for k, v in clean.items()))
    print("| tool | examples masked whole | hand-written non-phones matched | " + " | ".join(f"matches in {k}" for k in clean)
          + " | MB/s (text without PII) |")
    print("|---|---:|---:|" + "---:|" * len(clean) + "---:|")
    for name, fn in tools.items():
        whole = sum(1 for e in examples if fn(f"Call {e} now") == [e])
        neg = sum(1 for t in negatives if fn(t))
        counts, seen, mb, secs = [], [], 0.0, 0.0
        for texts in clean.values():
            t0 = time.process_time()
            found = [p for t in texts for p in fn(t)]
            secs += time.process_time() - t0
            mb += sum(len(t.encode()) for t in texts) / 1e6
            counts.append(len(found))
            seen += found[:4]
        print(f"| {name} | {whole}/{len(examples)} | {neg}/{len(negatives)} | " + " | ".join(map(str, counts))
              + f" | {mb / secs:.1f} |")
        if seen:
            print(f"  e.g. {name}: " + ", ".join(repr(x) for x in seen[:12]))
    del phonenumbers


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--examples", type=int, default=0, help="print this many masked phone matches")
    ap.add_argument("--phones-only", action="store_true", help="only the phone comparison with phonenumbers")
    args = ap.parse_args(argv)

    phone_comparison(args.corpora)
    if args.phones_only:
        return

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
