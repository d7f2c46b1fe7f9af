"""The report's cost on finished runs, one checkout against another: CPU and wall seconds of
`write_report`, and whether the two write the same report files.

The report is serial work every `refinery run` pays after its workers are done, so it bounds scaling efficiency. For
each run directory, each round copies the run without its `report/` (so no measurement an earlier
report stored is reused) and writes the report in a fresh interpreter of each checkout in turn,
with the stages imported first, as the driver of a run has them. Prints per checkout the medians,
and fails (exit 1) if any report file differs between the two.

    PYTHONPATH=. python benchmarks/report_cost.py RUN [RUN ...] --before /work/main --rounds 3
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = """
import json, os, sys, time
from pipeline.report.build import write_report
import stages.registry as registry
registry.available()  # the driver of a run has every stage imported
assert os.path.realpath(registry.__file__).startswith(sys.argv[2] + os.sep), registry.__file__  # this checkout's code
load = os.getloadavg()[0]
t, c = time.time(), time.process_time()
write_report(sys.argv[1])
print(json.dumps({"wall": time.time() - t, "cpu": time.process_time() - c, "load": load}))
"""


def one(checkout: str, run: str, where: str) -> dict:
    """The report of a copy of `run` at `where` (one path for every checkout: the report names it)."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(run, where, ignore=lambda d, names: ["report"] if os.path.samefile(d, run) else [])
    checkout = os.path.realpath(checkout)
    env = dict(os.environ, PYTHONPATH=checkout)
    # run in the checkout: `python -c` puts the working directory first on sys.path
    res = subprocess.run([sys.executable, "-c", CODE, where, checkout], env=env, capture_output=True, text=True,
                         cwd=checkout)
    if res.returncode:
        raise SystemExit(f"{checkout}: the report failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def same_tree(a: str, b: str) -> list[str]:
    """Files that differ (or exist on one side only) between two report directories."""
    cmp = filecmp.dircmp(a, b)
    out = [os.path.join(a, n) for n in cmp.left_only + cmp.right_only + cmp.funny_files]
    out += [os.path.join(a, n) for n in cmp.common_files if not filecmp.cmp(os.path.join(a, n), os.path.join(b, n),
                                                                            shallow=False)]
    for sub in cmp.common_dirs:
        out += same_tree(os.path.join(a, sub), os.path.join(b, sub))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="finished runs' output directories (left unchanged)")
    ap.add_argument("--before", required=True, help="the other checkout (e.g. /work/main)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    failed = False
    with tempfile.TemporaryDirectory(prefix="report-cost-") as tmp:
        for run in args.runs:
            got: dict[str, list[dict]] = {"before": [], "after": []}
            where = os.path.join(tmp, "run")
            for r in range(args.rounds):
                for side, checkout in (("before", args.before), ("after", HERE)):
                    got[side].append(one(checkout, run, where))
                    if r == 0:  # the first round's report files, for the comparison
                        shutil.copytree(os.path.join(where, "report"), os.path.join(tmp, side))
            diff = same_tree(os.path.join(tmp, "before"), os.path.join(tmp, "after"))
            failed |= bool(diff)
            for side in ("before", "after"):
                xs = got[side]
                print(f"{run} {side} ({args.before if side == 'before' else HERE}): report CPU-s median "
                      f"{statistics.median(x['cpu'] for x in xs):.2f} {[round(x['cpu'], 2) for x in xs]}, wall median "
                      f"{statistics.median(x['wall'] for x in xs):.2f}, load {[round(x['load'], 1) for x in xs]}")
            print(f"{run}: report files {'identical' if not diff else 'DIFFER: ' + ', '.join(diff)}")
            for side in ("before", "after"):
                shutil.rmtree(os.path.join(tmp, side))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
