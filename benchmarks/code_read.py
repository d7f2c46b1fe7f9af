"""Code reader on a real directory of repositories: documents kept and rejected per reason,
top languages, licences found, and files per second on one core.

No bundled code corpus exists in ../shared/corpora, so the default input is the installed
site-packages of the project's virtualenv (each top-level folder treated as a repository):
real, mixed-language code with vendored folders, generated files, data and binaries.

    PYTHONPATH=. python benchmarks/code_read.py [--path DIR_OR_GLOB] [--limit-repos N]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import sysconfig
import time

from pipeline.sources.code import CodeConfig, CodeSource


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=sysconfig.get_paths()["purelib"])
    ap.add_argument("--limit-repos", type=int, default=60, help="first N repos (sorted), 0 = all")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    src = CodeSource("code", CodeConfig(kind="code", paths=[args.path]))
    units = [u for u in src.files() if os.path.isdir(u[0])]
    if args.limit_repos:
        units = units[: args.limit_repos]
    reasons: collections.Counter = collections.Counter()
    langs: collections.Counter = collections.Counter()
    licenses: collections.Counter = collections.Counter()
    n = 0
    nbytes = 0
    t0 = time.perf_counter()
    for url, id_path in units:
        for t in src.read(url, id_path):
            for r in t.to_pylist():
                n += 1
                reasons[r["drop_reason"] or "kept"] += 1
                if r["drop_reason"] is None:
                    m = json.loads(r["metadata"])
                    langs[m["language"]] += 1
                    licenses[m.get("license") or "none"] += 1
                    nbytes += len(r["text"].encode("utf-8"))
    secs = time.perf_counter() - t0
    print(f"{len(units)} repos under {args.path}: {n} rows in {secs:.1f} s = {n / secs:.0f} rows/s "
          f"({nbytes / secs / 1e6:.1f} MB/s of kept text), one core\n", file=sys.stderr)
    print("| outcome | files |\n|---|---:|")
    for k, v in reasons.most_common():
        print(f"| {k} | {v} |")
    print("\n| language (kept) | files |\n|---|---:|")
    for k, v in langs.most_common(12):
        print(f"| {k} | {v} |")
    print("\n| licence (kept files) | files |\n|---|---:|")
    for k, v in licenses.most_common(8):
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()
