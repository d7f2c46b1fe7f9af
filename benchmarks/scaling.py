"""Scaling efficiency of `refinery run` at W workers (#20 item 6): wall(1) / (W * wall(W)).

Two ways of running, as users do:
- embedded: each `refinery run` starts and stops its own Ray (`--ray`, so even a tiny input uses Ray);
- attached: a one-node Ray cluster with W CPUs started here once with `ray start --head --block` on
  free ports, its own temp dir and its own auth token (tests/raycluster.py: other jobs' Ray on this
  machine are never touched, and a plain `ray.init()` elsewhere cannot find this one), then
  `refinery run --address 127.0.0.1:PORT`. It is stopped by killing exactly its own processes,
  never by `ray stop` (which would stop every Ray on the machine). CPU seconds of attached runs
  include the cluster's daemons since it started; only their wall time is compared.

Runs alternate 1 worker / W workers, `--repeat` times per mode, so load from other jobs hits both
alike; medians are reported. Every run's kept set must equal the first 1-worker run's (same answer
with 1 or W workers, embedded or attached); a difference is printed and fails the command (exit 1).
A wall-time ratio means something only on an otherwise idle machine: the load average before and
after each run is printed beside it.

    PYTHONPATH=. python benchmarks/scaling.py --mb 200 --workers 2 --repeat 3      # #20 item 6
    PYTHONPATH=. python benchmarks/scaling.py --mb 0.5 --repeat 1                   # does it work?
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pipeline_vs_datatrove as pvd  # noqa: E402
from raycluster import RayCluster  # noqa: E402  (`ray start` on free ports, own temp dir, never `ray stop`)


def one(input_dir: str, work: str, w: int, args, mode: str, rep: int, address: str | None) -> pvd.RunStats:
    load = pvd._loadavg()
    st = pvd.run_ours(input_dir, work, w, args, address=address, tag=f"-{mode}-w{w}-r{rep}",
                      monitor_root=os.getpid() if address else None, force_ray=True)
    print(f"  {mode}, {w} worker(s), run {rep + 1}: {st.wall:.1f}s wall, {st.cpu:.1f} CPU-s "
          f"({pvd._kinds(st)}){' ' + st.note if st.note else ''}; load {load} before, {pvd._loadavg()} after",
          flush=True)
    return st


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0, help="MB of main-content text in the built input")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--input", help="an existing input directory of pipeline_vs_datatrove.py (else built)")
    ap.add_argument("--work", default="/tmp/refinery-bench/scaling", help="outputs (replaced)")
    ap.add_argument("--workers", type=int, default=2, help="W")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (mode, workers), alternating")
    ap.add_argument("--modes", nargs="+", default=["embedded", "attached"], choices=["embedded", "attached"])
    ap.add_argument("--results", help="JSON results (default WORK/scaling.json)")
    args = ap.parse_args(argv)
    # The recipe pipeline_vs_datatrove.py writes: refinery's default extractor and stages.
    rargs = pvd.main_defaults()
    input_dir, info = pvd.ensure_input(argparse.Namespace(input=args.input, shards=args.shards, seed=args.seed),
                                       args.mb)
    os.makedirs(args.work, exist_ok=True)
    W = args.workers
    print(f"input: {input_dir} ({info.get('documents', '?')} documents, {info.get('html_mb', '?')} MB HTML); "
          f"1 vs {W} workers, {args.repeat} run(s) each, modes {args.modes}", flush=True)
    runs: dict[str, list[pvd.RunStats]] = {}
    reference: set[str] | None = None
    differs = []

    def record(mode: str, w: int, st: pvd.RunStats) -> None:
        nonlocal reference
        runs.setdefault(f"{mode} w{w}", []).append(st)
        if not st.ok:
            return
        kept = pvd.ours_sets(st.extra["out"])["kept"]
        if reference is None:
            reference = kept
        elif kept != reference:
            differs.append(f"{mode}, {w} worker(s): {len(kept ^ reference)} documents differ from the first run")

    for mode in args.modes:
        head, saved = None, dict(os.environ)
        if mode == "attached":
            env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
            try:
                head = RayCluster(env, nodes=1, cpus=W).start()
            except (RuntimeError, OSError) as exc:
                print(f"attached: the Ray head did not start: {exc}", flush=True)
                continue
            os.environ.update(head.env)  # its token: every `refinery run --address` needs it
            print(f"attached: Ray head at {head.address}, temp dir {head.dirs[0]}", flush=True)
        try:
            for rep in range(args.repeat):
                for w in (1, W):
                    record(mode, w, one(input_dir, args.work, w, rargs, mode, rep, head.address if head else None))
        finally:
            if head is not None:
                head.stop()
                os.environ.clear()
                os.environ.update(saved)

    res: dict = {"input": info, "input_dir": input_dir, "workers": W, "repeat": args.repeat,
                 "machine": pvd.machine_info(), "runs": {k: [vars(s) for s in v] for k, v in runs.items()}}
    print()
    failed = bool(differs)
    for mode in args.modes:
        one_w = [s.wall for s in runs.get(f"{mode} w1", []) if s.ok]
        many = [s.wall for s in runs.get(f"{mode} w{W}", []) if s.ok]
        if not one_w or not many:
            print(f"{mode}: no complete pair of runs")
            failed = True
            continue
        t1, tw = pvd._median(one_w), pvd._median(many)
        eff = t1 / (W * tw)
        res[mode] = {"wall_1": one_w, f"wall_{W}": many, "median_1": t1, f"median_{W}": tw, "efficiency": eff}
        print(f"{mode}: wall(1) {t1:.1f}s, wall({W}) {tw:.1f}s (medians of {[round(x, 1) for x in one_w]} and "
              f"{[round(x, 1) for x in many]}): efficiency wall(1) / ({W} * wall({W})) = {eff:.3f}")
    for d in differs:
        print(f"kept set differs: {d}")
    if not differs and reference is not None:
        print(f"kept sets: identical in every run ({len(reference)} documents)")
    path = args.results or os.path.join(args.work, "scaling.json")
    with open(path, "w") as fh:
        json.dump(res, fh, indent=2, default=str)
    print(f"results: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
