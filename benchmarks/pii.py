"""PII masking benchmark: refinery's `pii` stage against datatrove's PIIFormatter, same texts, 1 core.

Texts (real, read in place from ../shared/corpora): HPLT Common Crawl + Internet Archive pages
(extracted text), 4chan threads (Paloma), UCI SMS spam collection (phone numbers are common there).
datatrove's PIIFormatter masks e-mails and public IPv4 only; refinery also masks phones and IPv6, so
the timing is given twice: refinery with the same job (e-mails + IPs) and with everything on.

Phones, second part: recall on the phone examples of tests/test_pii.py (North American forms
with any exchange, real numbers from the corpora, international numbers) and false positives on text without
PII (WikiText-2, Gutenberg books, OpenStax textbooks, XQuAD: edited prose full of dates, years,
prices, page ranges and coordinates), refinery's patterns against the `phonenumbers` library
(Google's libphonenumber in Python) with leniency POSSIBLE and VALID, default region US.

National formats, third part (`--national`): libphonenumber's own example numbers (the fixed-line and
mobile example of every region in the `phonenumbers` metadata) written NATIONAL and INTERNATIONAL, plus
variants (national without the trunk prefix, hyphens for spaces, digits only), each in "Call X now";
masked = `find_phones` returns exactly X. Reported over the top-40 regions (stages/_phones.py) and all
245, with the stage's default regions and with every region recognised; then the false positives of
each on the text without PII and the hand-written negatives, and the stage's cost per MB of that text
against `--before FILE` (an earlier stages/pii.py, e.g. main's), same run, alternating.

    PYTHONPATH=. python benchmarks/pii.py [--corpora ../shared/corpora] [--examples 10]
    PYTHONPATH=. python benchmarks/pii.py --national [--before ../main/stages/pii.py]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
from pathlib import Path

from pipeline.schema import make_record, records_to_table
from stages.pii import PIIMasker
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH
from benchmarks._timing import best_time  # noqa: E402

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


def example_numbers(regions) -> list[tuple[str, str, str, str]]:
    """(region, type, form, text) for the fixed-line and mobile example numbers of `regions`."""
    import phonenumbers
    from phonenumbers import PhoneNumberFormat as F, PhoneNumberType as T

    out = []
    for region in regions:
        prefix = phonenumbers.PhoneMetadata.metadata_for_region(region).national_prefix or ""
        for kind, t in (("fixed", T.FIXED_LINE), ("mobile", T.MOBILE)):
            num = phonenumbers.example_number_for_type(region, t)
            if num is None:
                continue
            national = phonenumbers.format_number(num, F.NATIONAL)
            out.append((region, kind, "national", national))
            out.append((region, kind, "international", phonenumbers.format_number(num, F.INTERNATIONAL)))
            if prefix and "".join(ch for ch in national if ch.isdigit()).startswith(prefix):
                out.append((region, kind, "national without trunk prefix", _strip_trunk(national, prefix)))
            if " " in national:
                out.append((region, kind, "national, hyphens for spaces", national.replace(" ", "-")))
            out.append((region, kind, "national, digits only", "".join(ch for ch in national if ch.isdigit())))
    return out


def _strip_trunk(national: str, prefix: str) -> str:
    """"8 (912) 345-67-89" -> "(912) 345-67-89", "(06 1) 234 5678" -> "(1) 234 5678"."""
    i, left = 0, len(prefix)
    chars = list(national)
    while left:
        if chars[i].isdigit():
            chars[i] = ""
            left -= 1
        i += 1
    out = "".join(chars)
    out = out.replace("( ", "(").replace("()", "").lstrip(" -")
    return out


def national_report(corpora: Path, before: Path | None, repeats: int) -> None:
    import importlib.util
    import time

    import phonenumbers

    from stages._phones import TOP_REGIONS
    from stages.pii import find_phones

    every = tuple(sorted(phonenumbers.SUPPORTED_REGIONS))
    settings = {"default regions (top 40)": TOP_REGIONS, "all 245 regions": every}
    forms = ("national", "international", "national without trunk prefix", "national, hyphens for spaces",
             "national, digits only")
    print("libphonenumber example numbers masked whole (fixed-line + mobile examples, `Call X now`):")
    print("| examples of | phone_regions | " + " | ".join(forms) + " | national + international |")
    print("|---|---|" + "---:|" * (len(forms) + 1))
    for over, regs in (("top 40", TOP_REGIONS), ("all 245", every)):
        ex = example_numbers(regs)
        for sname, sregs in settings.items():
            hit = {f: [0, 0] for f in forms}
            for _, _, form, text in ex:
                hit[form][1] += 1
                hit[form][0] += find_phones(f"Call {text} now", sregs) == [text]
            both = [hit[f] for f in ("national", "international")]
            cell = lambda h: f"{h[0]}/{h[1]} ({h[0] / max(h[1], 1):.1%})"
            print(f"| {over} | {sname} | " + " | ".join(cell(hit[f]) for f in forms)
                  + f" | {cell([sum(b[0] for b in both), sum(b[1] for b in both)])} |")
            if over == "top 40" and sname.startswith("default"):
                missed = [f"{r} {t}" for r, _, form, t in ex if form in ("national", "international")
                          and find_phones(f"Call {t} now", sregs) != [t]]
                print(f"  missed (top 40, national/international): {missed}")

    sys_path = str(ROOT / "tests")
    import sys

    sys.path.insert(0, sys_path)
    import test_pii

    negatives = next(m.args[1] for m in test_pii.test_not_phones.pytestmark if m.name == "parametrize")
    clean = no_pii_texts(corpora)
    mb = sum(len(t.encode()) for v in clean.values() for t in v) / 1e6
    finders = {f"this branch, {k}": (lambda t, r=r: find_phones(t, r)) for k, r in settings.items()}
    if before is not None:
        spec = importlib.util.spec_from_file_location("pii_before", before)
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
        finders = {f"before ({before})": old.find_phones, **finders}
    print(f"\nfalse positives: {len(negatives)} hand-written non-phones (tests/test_pii.py), text without PII "
          f"({mb:.1f} MB: " + ", ".join(clean) + ")")
    print("| phone finder | non-phones matched | matches in text without PII | e.g. |")
    print("|---|---:|---:|---|")
    for name, fn in finders.items():
        neg = [t for t in negatives if fn(t)]
        found = [p for v in clean.values() for t in v for p in fn(t)]
        print(f"| {name} | {len(neg)} | {len(found)} | {', '.join(repr(x) for x in (neg + found)[:6])} |")
    # the stage's cost per MB: PIIMasker.mask (e-mails, IPs, phones) of each version, alternating rounds
    from stages._phones import national_phone, valid_anywhere
    from stages.pii import PIIMasker

    maskers = {"this branch (top 40)": PIIMasker(), "this branch (all 245 regions)": PIIMasker(phone_regions=list(every))}
    if before is not None:
        maskers = {"before": old.PIIMasker(), **maskers}
    sets = {"text without PII": [t for v in clean.values() for t in v],
            "web pages, 4chan, SMS": [t for v in load_texts(corpora).values() for t in v]}
    for label, texts in sets.items():
        mb = sum(len(t.encode()) for t in texts) / 1e6
        best = {name: float("inf") for name in maskers}
        for _ in range(repeats):
            for name, masker in maskers.items():
                national_phone.cache_clear()  # each round starts cold, as a new page would
                valid_anywhere.cache_clear()
                t0 = time.process_time()
                for t in texts:
                    masker.mask(t)
                best[name] = min(best[name], time.process_time() - t0)
        first = next(iter(best.values()))
        print(f"\npii stage (mask) on {label}, {mb:.1f} MB, 1 core, best of {repeats} alternating rounds:")
        for name, secs in best.items():
            print(f"  {name:32s} {secs / mb * 1000:7.1f} ms/MB  {mb / secs:6.1f} MB/s  x{secs / first:.2f} of the first")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--examples", type=int, default=0, help="print this many masked phone matches")
    ap.add_argument("--phones-only", action="store_true", help="only the phone comparison with phonenumbers")
    ap.add_argument("--national", action="store_true", help="only libphonenumber's example numbers, false positives, cost")
    ap.add_argument("--before", type=Path, default=None, help="an earlier stages/pii.py to compare with (--national)")
    args = ap.parse_args(argv)

    if args.national:
        national_report(args.corpora, args.before, args.repeats)
        return

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
