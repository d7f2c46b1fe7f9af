"""Do the ledger's CPU rows add up to the run's CPU? For each executor, one `run()` of a recipe in a
fresh process that measures its CPU from outside the ledger: its own (getrusage SELF) plus every
descendant's, from just before `run()` to after Ray is shut down and every descendant has ended.
Descendants are counted by getrusage CHILDREN (the process makes itself a child subreaper, so
orphans are reaped by it and counted too), except the children of a parent that ignores SIGCHLD
(Ray's raylet: its workers and agents are reaped uncounted), whose CPU a thread reads from /proc
every 0.1 s (column `raylet-reaped`; at most 0.1 s of each such process's CPU is missed). Prints
the ledger's rows' sum, the measured total (stopping Ray included, which the ledger does not
count) and sum / total; `--rows`: each row.

    nice python benchmarks/ledger_cpu.py mixtures/sample.yaml --executors local,processes,ray --workers 2

`run()` does not run the recipe's mixture (`refinery run` does, after; the ledger does not count it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import ctypes, json, os, resource, sys, threading, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.sources.sandbox import live_sandboxes

TICK = os.sysconf("SC_CLK_TCK")
ME = os.getpid()
lost_seen = {}  # pid -> its CPU (own + reaped children's) when last seen, for children of a SIGCHLD-ignoring parent
reaped = set()

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return out

def ignores_sigchld(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("SigIgn:"):
                    return int(line.split()[1], 16) >> 16 & 1
    except OSError:
        pass
    return 0

def stat_cpu(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            f = fh.read().rsplit(b")", 1)[1].split()
        return sum(int(x) for x in f[11:15]) / TICK
    except OSError:
        return None

def poll(stop):
    # a parent that ignores SIGCHLD (Ray's raylet) reaps its children without counting them: read theirs live
    while not stop.wait(0.1):
        todo = [ME]
        while todo:
            pid = todo.pop()
            kids = children(pid)
            if kids and ignores_sigchld(pid):
                for k in kids:
                    c = stat_cpu(k)
                    if c is not None:
                        lost_seen[k] = c
            todo += kids

def reap():
    # every descendant (orphans reparent to this subreaper), so getrusage(CHILDREN) holds them all
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)
        else:
            reaped.add(pid)
    print("still running after 20 s:", children(ME), file=sys.stderr)

recipe_path, out, executor, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
recipe = load_recipe(recipe_path, output=out)
stop = threading.Event()
poller = threading.Thread(target=poll, args=(stop,), daemon=True)
poller.start()
c0 = cpu()
res = run(recipe, executor=executor, workers=workers, progress=False, overwrite=True)
if "ray" in sys.modules and sys.modules["ray"].is_initialized():
    sys.modules["ray"].shutdown()
for box in live_sandboxes():  # a reader's extraction child outlives the run in this process
    box.close()
time.sleep(0.3)
stop.set()
poller.join()
reap()
lost = sum(c for pid, c in lost_seen.items() if pid not in reaped)
c2 = cpu() + lost
led = res.ledger
rows = {s: led.total(s).cpu_s for s in led.stages}
rows.update({f"{k} (global step)": v["cpu_seconds"] for k, v in led.global_steps.items()})
rows["other shard work"] = led.shard_work["cpu_seconds"] - sum(led.total(s).cpu_s for s in led.stages)
rows.update(led.overhead)
print(json.dumps({"rows": rows, "ledger": led.cpu_seconds(), "measured": c2 - c0,
                  "unreaped": lost}))
"""


def measure(recipe: str, executor: str, workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ledger-cpu-") as out:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, "-c", _CHILD, recipe, os.path.join(out, "out"), executor,
                               str(workers)], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"{executor}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recipe")
    ap.add_argument("--executors", default="local,processes,ray")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", action="store_true", help="print every row of each run")
    args = ap.parse_args()
    print(f"{'executor':<10} {'ledger CPU-s':>13} {'measured CPU-s':>15} {'sum/total':>10} {'raylet-reaped':>14}")
    for ex in args.executors.split(","):
        r = measure(args.recipe, ex, args.workers)
        print(f"{ex:<10} {r['ledger']:>13.2f} {r['measured']:>15.2f} {r['ledger'] / r['measured']:>10.1%}"
              f" {r['unreaped']:>14.2f}", flush=True)
        if args.rows:
            for name, cpu in r["rows"].items():
                print(f"    {name:<40} {cpu:8.2f}")


if __name__ == "__main__":
    main()
