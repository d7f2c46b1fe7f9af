"""Scaling efficiency of `refinery run` at W workers: wall(1) / (W * wall(W)).

Two ways of running, as users do:
- embedded: each `refinery run` starts and stops its own Ray (`--ray`, so even a tiny input uses Ray);
- attached: a one-node Ray cluster with W CPUs started here once with `ray start --head --block` on
  free ports, its own temp dir and its own auth token (tests/raycluster.py: other jobs' Ray on this
  machine are never touched, and a plain `ray.init()` elsewhere cannot find this one), then
  `refinery run --address 127.0.0.1:PORT`. It is stopped by killing exactly its own processes,
  never by `ray stop` (which would stop every Ray on the machine). CPU seconds of attached runs
  include the cluster's daemons since it started; only their wall time is compared (the per-role
  split below subtracts what the cluster had used before each run);
- embedded-one-core (not run by default): as embedded, but the 1-worker runs keep all their
  processes on one core, so neither run has a core to spare for the driver, Ray's daemons and the
  report (with 1 worker on 2 cores they run beside the worker for free).

Beside the wall times, each run prints what does not depend on the machine's load: the CPU-s of
every process that is not a worker doing shard work (driver, raylet, GCS, each daemon, idle Ray
workers), and from its run.log the serial steps (set-up and Ray's start, the global steps, the
report, Ray's stop, the time outside `run()`) and each phase's worker-seconds lost to waiting
(W * phase wall - the parts' work: actors starting, the last part's tail).

Runs alternate 1 worker / W workers, `--repeat` times per mode, so load from other jobs hits both
alike; medians are reported. Every run's kept set must equal the first 1-worker run's (same answer
with 1 or W workers, embedded or attached); a difference is printed and fails the command (exit 1).
A wall-time ratio means something only on an otherwise idle machine: the load average before and
after each run is printed beside it.

    PYTHONPATH=. python benchmarks/scaling.py --mb 200 --workers 2 --repeat 3      # BENCHMARKS.md, "Scaling"
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


# Process roles by command line, first match wins (a Ray worker's command line names the raylet).
ROLES = (("pipeline.cli", "driver"), ("ray::ShardWorker", "workers"), ("pipeline.sources.sandbox", "worker children"),
         ("default_worker", "other Ray workers"), ("ray::IDLE", "other Ray workers"),
         ("DashboardAgent", "dashboard agent"), ("dashboard/agent.py", "dashboard agent"),
         ("RuntimeEnvAgent", "runtime-env agent"), ("runtime_env/agent", "runtime-env agent"),
         ("dashboard/dashboard.py", "dashboard head"), ("log_monitor", "log monitor"),
         ("autoscaler", "autoscaler monitor"), ("monitor.py", "autoscaler monitor"),
         ("/raylet/raylet", "raylet"), ("gcs_server", "GCS"))
SHARD_WORK = ("workers", "worker children")  # the rest is what a run pays besides its shards


def _role(cmd: str) -> str:
    return next((r for key, r in ROLES if key in cmd), "other")


def _tree_cpu(root: int) -> dict[int, float]:
    """CPU-s so far of every process below `root` (an attached cluster's daemons before a run)."""
    mon = pvd.ProcMonitor(root, include_root=False)
    mon._snapshot()
    return dict(mon.cpu)


def cpu_by_role(st: pvd.RunStats, before: dict[int, float] | None = None) -> dict[str, float]:
    """The run's CPU-s per process role; `before`: CPU-s the same processes had used before the run
    (a standing cluster's daemons), subtracted."""
    out: dict[str, float] = {}
    for pid, cmd, cpu in st.extra.get("cpu_by_process", []):
        r = _role(cmd)
        out[r] = out.get(r, 0.0) + cpu - (before or {}).get(pid, 0.0)
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def steps(out: str) -> dict:
    """Wall seconds of a run's steps from its run.log (and the CLI's output beside it): set-up and
    Ray's start, each phase's wall time, the shard work in it and the worker-seconds it lost
    (W * wall - work: waiting, start-up, the last part's tail), the global steps, the report and
    Ray's stop."""
    import re

    res: dict = {"phases": []}
    try:
        text = open(os.path.join(out, "run.log"), encoding="utf-8").read()
    except OSError:
        return res
    m = re.search(r"(\d+) worker\(s\)(?: \(Ray(?:, ([\d.]+)s of it to start or attach)?\))?; set-up took ([\d.]+)s", text)
    if m:
        res["workers"], res["setup"] = int(m.group(1)), float(m.group(3))
        res["ray_start"] = float(m.group(2)) if m.group(2) else None
    work: dict[int, float] = {}
    for ph, sec in re.findall(r"phase (\d+): .* done: \d+ documents in, ([\d.]+)s of work", text):
        work[int(ph)] = work.get(int(ph), 0.0) + float(sec)
    for ph, wall in re.findall(r"phase (\d+): \d+ shards in \d+ parts in ([\d.]+)s", text):
        w = res.get("workers", 1)
        res["phases"].append({"phase": int(ph), "wall": float(wall), "work": round(work.get(int(ph), 0.0), 2),
                              "lost": round(w * float(wall) - work.get(int(ph), 0.0), 2)})
    res["global_steps"] = round(sum(float(x) for x in re.findall(r"global step took ([\d.]+)s", text)), 2)
    m = re.search(r"report took ([\d.]+)s(?: \(([\d.]+) CPU-s)?", text)
    res["report"] = float(m.group(1)) if m else None
    res["report_cpu"] = float(m.group(2)) if m and m.group(2) else None
    try:  # the global steps' CPU (driver and actors) from the ledger
        with open(os.path.join(out, "ledger.json"), encoding="utf-8") as fh:
            gs = json.load(fh).get("global_steps") or {}
        res["global_steps_cpu"] = round(sum(float(v.get("cpu_seconds", 0.0)) for v in gs.values()), 2)
    except (OSError, ValueError, AttributeError):
        pass
    m = re.search(r"Ray stopped in ([\d.]+)s, beside ([\d.]+)s of the run's last step; waited ([\d.]+)s", text)
    if m:
        res["ray_stop"], res["ray_stop_waited"] = float(m.group(1)), float(m.group(3))
    try:
        m = re.search(r"done in ([\d.]+)s with", open(out + ".log", encoding="utf-8").read())
        res["run"] = float(m.group(1)) if m else None
    except OSError:
        pass
    return res


def one(input_dir: str, work: str, w: int, args, mode: str, rep: int, address: str | None) -> pvd.RunStats:
    load = pvd._loadavg()
    before = _tree_cpu(os.getpid()) if address else None
    st = pvd.run_ours(input_dir, work, w, args, address=address, tag=f"-{mode}-w{w}-r{rep}",
                      monitor_root=os.getpid() if address else None, force_ray=True)
    roles = cpu_by_role(st, before)
    st.extra["cpu_by_role"] = roles
    st.extra["steps"] = sp = steps(st.extra["out"])
    besides = sum(v for k, v in roles.items() if k not in SHARD_WORK)
    print(f"  {mode}, {w} worker(s), run {rep + 1}: {st.wall:.1f}s wall, {st.cpu:.1f} CPU-s "
          f"({pvd._kinds(st)}){' ' + st.note if st.note else ''}; load {load} before, {pvd._loadavg()} after",
          flush=True)
    print(f"    CPU-s besides shard work {besides:.2f}: " + ", ".join(f"{k} {v:.2f}" for k, v in roles.items()
                                                                  if k not in SHARD_WORK), flush=True)
    print("    steps (wall s): " + ", ".join(
        [f"set-up {sp.get('setup')} (Ray {sp.get('ray_start')})"]
        + [f"phase {p['phase']} {p['wall']} (work {p['work']}, lost {p['lost']} worker-s)" for p in sp["phases"]]
        + [f"global steps {sp.get('global_steps')} ({sp.get('global_steps_cpu')} CPU-s)", f"run {sp.get('run')}",
           f"report {sp.get('report')} ({sp.get('report_cpu')} CPU-s)",
           f"Ray stop {sp.get('ray_stop')} (waited {sp.get('ray_stop_waited')})",
           f"outside run() {round(st.wall - sp['run'], 1) if sp.get('run') else None}"]), flush=True)
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
    ap.add_argument("--modes", nargs="+", default=["embedded", "attached"],
                    choices=["embedded", "attached", "embedded-one-core"],
                    help="embedded-one-core: as embedded, but the 1-worker runs keep every process (driver, Ray, "
                         "the worker) on one core, as the W-worker runs have no core to spare either")
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
                    pin = mode == "embedded-one-core" and w == 1 and hasattr(os, "sched_setaffinity")
                    cores = os.sched_getaffinity(0) if pin else None
                    if pin:  # inherited by the run's every process (the driver starts Ray's)
                        os.sched_setaffinity(0, {min(cores)})
                    try:
                        st = one(input_dir, args.work, w, rargs, mode, rep, head.address if head else None)
                    finally:
                        if pin:
                            os.sched_setaffinity(0, cores)
                    record(mode, w, st)
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
        res.setdefault(mode, {}).update({"wall_1": one_w, f"wall_{W}": many, "median_1": t1, f"median_{W}": tw,
                                         "efficiency": eff})
        print(f"{mode}: wall(1) {t1:.1f}s, wall({W}) {tw:.1f}s (medians of {[round(x, 1) for x in one_w]} and "
              f"{[round(x, 1) for x in many]}): efficiency wall(1) / ({W} * wall({W})) = {eff:.3f}")
        for w in (1, W):
            ok = [s for s in runs.get(f"{mode} w{w}", []) if s.ok]
            besides = [sum(v for k, v in s.extra["cpu_by_role"].items() if k not in SHARD_WORK) for s in ok]
            sps = [s.extra["steps"] for s in ok]

            def med(f):
                xs = [x for x in (f(sp) for sp in sps) if x is not None]
                return round(pvd._median(xs), 2) if xs else None
            p0 = lambda sp: sp["phases"][0] if sp.get("phases") else {}  # noqa: E731
            line = {"CPU-s besides shard work": round(pvd._median(besides), 2) if besides else None,
                    "set-up": med(lambda sp: sp.get("setup")), "Ray start": med(lambda sp: sp.get("ray_start")),
                    "phase 0": med(lambda sp: p0(sp).get("wall")), "its shard work": med(lambda sp: p0(sp).get("work")),
                    "worker-s lost in it": med(lambda sp: p0(sp).get("lost")),
                    "global steps": med(lambda sp: sp.get("global_steps")),
                    "their CPU-s": med(lambda sp: sp.get("global_steps_cpu")), "report": med(lambda sp: sp.get("report")),
                    "report CPU-s": med(lambda sp: sp.get("report_cpu"))}
            after = [s.wall - s.extra["steps"]["run"] for s in ok if s.extra["steps"].get("run")]
            line["outside run()"] = round(pvd._median(after), 2) if after else None  # CLI start, report, Ray stop
            res.setdefault(mode, {})[f"medians_w{w}"] = line
            print(f"  {w} worker(s), medians: " + ", ".join(f"{k} {v}" for k, v in line.items()))
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
