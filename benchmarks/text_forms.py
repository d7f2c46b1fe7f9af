"""What each change of form of a WARC page's text costs, per MB, from read to kept (docs/architecture.md,
"The text's path").

Reads the HTML responses of WARC files, then times, in this process (CPU seconds, best of
`--rounds`), every conversion the text goes through in a `refinery run` of a commoncrawl source:

  payload -> extraction process   the HTTP body (bytes) pickled to the extraction child (Sandbox)
  bytes -> str                    the charset decode there (encoding.decode_html)
  text <- extraction process      the extracted text (str) pickled back
  rows -> Arrow                   the reader's rows (dicts) to an Arrow table (schema.records_to_table)
  batch concat                    a reader's small tables joined into one batch (worker._concat)
  Arrow -> stage process          the batch pickled to the stages' child and back (time_limit.py), per
                                  per-document stage that does not run in the worker
  Arrow -> str list               the text column as Python strings, per stage that reads the text
  Arrow -> Parquet                the kept batch written (zstd), as a part's writer does

and, for scale, the extraction itself (resiliparse). Each figure is CPU seconds per MB of the form
converted (HTML bytes for the first two, UTF-8 text for the rest).

    PYTHONPATH=. python benchmarks/text_forms.py --input '/tmp/refinery-bench/input/bench-0000[01].warc.gz'
"""
from __future__ import annotations

import argparse
import glob
import io
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq  # noqa: E402
from fastwarc.warc import ArchiveIterator, WarcRecordType  # noqa: E402

from benchmarks._timing import best_time  # noqa: E402
from pipeline.engine.worker import _concat  # noqa: E402
from pipeline.schema import make_record, records_to_table  # noqa: E402
from pipeline.sources.encoding import decode_html  # noqa: E402
from pipeline.sources.extract import Extractor, ExtractorConfig  # noqa: E402

DEFAULT = str(Path(__file__).resolve().parents[2] / "shared" / "corpora" / "web" / "commoncrawl_whirlwind.warc.gz")


def payloads(pattern: str, limit: int) -> list[tuple[bytes, str | None]]:
    out = []
    for path in sorted(glob.glob(pattern)):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh, record_types=WarcRecordType.response):
                ctype = (rec.http_headers.get("Content-Type") or "") if rec.http_headers else ""
                if "html" in ctype:
                    out.append((rec.reader.read(), rec.http_charset))
                if len(out) >= limit:
                    return out
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", default=DEFAULT, help="WARC files (a glob)")
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1000, help="rows per batch (a source's batch_size)")
    args = ap.parse_args()

    pages = payloads(args.input, args.pages)
    html_mb = sum(len(p) for p, _ in pages) / 1e6
    htmls = [decode_html(p, cs).text for p, cs in pages]
    extract = Extractor(ExtractorConfig(time_limit=0, fallback="none"))
    texts = [extract(h) or "" for h in htmls]
    text_mb = sum(len(t.encode()) for t in texts) / 1e6
    rows = [make_record(source="cc", kind="commoncrawl", file="f.warc.gz", offset=i, text=t, url=f"https://x/{i}")
            for i, t in enumerate(texts)]
    table = records_to_table(rows)
    pieces = [records_to_table(rows[i:i + 16]) for i in range(0, len(rows), 16)]  # the reader's page batches

    def parquet() -> None:
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd")

    steps = [
        ("payload -> extraction process", html_mb, lambda: [pickle.loads(pickle.dumps(p, 5)) for p in pages]),
        ("bytes -> str (charset decode)", html_mb, lambda: [decode_html(p, cs) for p, cs in pages]),
        ("extraction itself (for scale)", html_mb, lambda: [extract(h) for h in htmls]),
        ("text <- extraction process", text_mb, lambda: [pickle.loads(pickle.dumps(t, 5)) for t in texts]),
        ("rows -> Arrow", text_mb, lambda: records_to_table(rows)),
        ("batch concat", text_mb, lambda: [_concat(pieces[i:i + args.batch // 16])
                                           for i in range(0, len(pieces), args.batch // 16)]),
        ("Arrow -> stage process, per stage", text_mb,
         lambda: [pickle.loads(pickle.dumps(table.slice(i, args.batch), 5)) for i in range(0, len(rows), args.batch)]),
        ("Arrow -> str list, per stage reading text", text_mb, lambda: table.column("text").to_pylist()),
        ("Arrow -> Parquet (zstd)", text_mb, parquet),
    ]
    print(f"{len(pages):,} HTML pages, {html_mb:.1f} MB of HTML, {text_mb:.2f} MB of extracted text; "
          f"CPU seconds per MB, best of {args.rounds}")
    for name, mb, fn in steps:
        s = best_time(fn, args.rounds)
        print(f"{name:44s} {s / mb * 1000:8.1f} ms/MB  ({s:.3f} s for {mb:.2f} MB)")


if __name__ == "__main__":
    main()
