"""Memory per worker of a whole run: the peak resident memory (VmHWM) of every process a
`refinery run` starts, by role: the driver, each worker (a Ray actor `ray::ShardWorker`, or a
`--processes` worker), each worker's extraction child (`refinery-extraction`, the crawl reader's
pages) and stages child (`refinery-stages`, the per-document stages under stage_time_limit), and,
with Ray, its daemons. "Per worker in all" adds a worker's own peak to its children's.

The run is the benchmark recipe (read and extract, langid, quality, MinHash and exact dedup) on a
benchmark input (make_pipeline_input.py), its process tree sampled every 0.2 s.

    PYTHONPATH=. python benchmarks/worker_memory.py --input /tmp/refinery-bench/input-50mb-8s-seed0 --workers 2
    PYTHONPATH=. python benchmarks/worker_memory.py --input /tmp/refinery-bench/input-50mb-8s-seed0 --workers 2 --processes
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RECIPE = """name: memory
output: {out}
sources:
  web:
    kind: commoncrawl
    paths: ["{input}/*.warc.gz"]
stages:
  - stage: langid
    languages: [en]
  - stage: quality
  - stage: minhash_dedup
  - stage: exact_dedup
"""


def _status(pid: int) -> dict[str, str]:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")


def descendants(root: int) -> dict[int, int]:
    """pid -> parent pid of every live process below `root` (and root)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                parent[int(d)] = int(_status(int(d))["PPid"])
            except (OSError, KeyError, ValueError):
                pass
    out, frontier = {root: parent.get(root, 0)}, [root]
    while frontier:
        p = frontier.pop()
        for c, pp in parent.items():
            if pp == p and c not in out:
                out[c] = p
                frontier.append(c)
    return out


def role(pid: int, driver: int, cmd: str) -> str:
    if pid == driver:
        return "driver"
    for name in ("refinery-extraction", "refinery-stages"):
        if cmd.rstrip().endswith(name):
            return name
    if "ShardWorker" in cmd:
        return "worker"
    if "pipeline.engine.processes" in cmd or "multiprocessing" in cmd or "refinery-worker" in cmd:
        return "worker"
    for daemon in ("raylet", "gcs_server", "DashboardAgent", "RuntimeEnvAgent", "dashboard", "log_monitor",
                   "monitor.py", "runtime_env", "ray::IDLE", "default_worker"):
        if daemon in cmd:
            return "ray: " + daemon.replace(".py", "")
    return "other: " + cmd[:60]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", required=True, help="a benchmark input directory (make_pipeline_input.py)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--processes", action="store_true", help="--processes workers instead of an embedded Ray")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.yaml")
        Path(path).write_text(RECIPE.format(out=os.path.join(tmp, "out"), input=os.path.abspath(args.input)))
        cmd = [sys.executable, "-m", "pipeline.cli", "run", path, "--workers", str(args.workers), "--quiet",
               "--processes" if args.processes else "--ray"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peak: dict[int, int] = {}  # pid -> VmHWM kB
        info: dict[int, tuple[str, int]] = {}  # pid -> (role, parent)
        t0 = time.time()
        while proc.poll() is None:
            for pid, ppid in descendants(proc.pid).items():
                try:
                    hwm = int(_status(pid)["VmHWM"].split()[0])
                    cmdline = _cmdline(pid)
                except (OSError, KeyError, ValueError):
                    continue
                peak[pid] = max(peak.get(pid, 0), hwm)
                info[pid] = (role(pid, proc.pid, cmdline), ppid)
            time.sleep(0.2)
        err = proc.stderr.read()
        if proc.returncode != 0:
            print(err[-3000:], file=sys.stderr)
            return 1
    print(f"run: {time.time() - t0:.0f} s wall, {args.workers} workers, "
          f"{'--processes' if args.processes else 'Ray'}, load average {os.getloadavg()[0]:.1f}")
    by_role: dict[str, list[int]] = defaultdict(list)
    for pid, kb in peak.items():
        by_role[info[pid][0]].append(kb)
    print(f"{'process':24} {'count':>5} {'peak RSS per process, MiB':>28}")
    for r in sorted(by_role):
        v = sorted(by_role[r])
        span = f"{v[0] >> 10}" if v[0] >> 10 == v[-1] >> 10 else f"{v[0] >> 10} to {v[-1] >> 10}"
        print(f"{r:24} {len(v):>5} {span:>28}")
    totals = []
    for pid, (r, _) in info.items():
        if r == "worker":
            kids = [c for c, (_, pp) in info.items() if pp == pid and info[c][0].startswith("refinery-")]
            totals.append((peak[pid] + sum(peak[c] for c in kids)) >> 10)
    if totals:
        print(f"per worker in all (worker + its extraction and stages children): "
              f"{min(totals)} to {max(totals)} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
