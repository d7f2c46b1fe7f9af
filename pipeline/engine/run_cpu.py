"""The run's CPU outside shard work and global steps, so the ledger's rows add up to the run's CPU:
the driver process (planning, listing inputs, committing records, waiting on Ray) and, when this
run started its own Ray, Ray's daemons (GCS server, raylet, dashboard and its agents, log monitor).

Shard work and global steps are booked where they run (pipeline/engine/worker.py, the runner's
global steps, with the driver's share of each step noted apart); this module takes the driver's
own CPU over the run and subtracts what of it the ledger already holds. Ray's daemons are read
from /proc (their own user + system time, not their children's: those are the workers, booked as
shard work) just before the run ends. On an attached cluster (`--address`) the daemons are not
this run's and are not counted."""
from __future__ import annotations

import os
import time

from pipeline.engine.ledger import Ledger
from pipeline.sources.sandbox import all_children_cpu, process_cpu

DRIVER = "driver"
RAY_DAEMONS = "ray daemons"


def _own() -> float:
    return time.process_time() + all_children_cpu()


class RunCpu:
    """Started with the run; `book(ledger, ...)` adds the driver's and the daemons' rows."""

    def __init__(self) -> None:
        self.start = _own()

    def book(self, ledger: Ledger, resumed_shard_cpu: float, in_process: bool, own_ray: bool) -> None:
        """`resumed_shard_cpu`: shard work the ledger took from records of an earlier attempt;
        `in_process`: shard work and whole global steps ran in this process (no Ray, no processes)."""
        own = _own() - self.start
        if in_process:
            booked = (ledger.shard_work["cpu_seconds"] - resumed_shard_cpu
                      + sum(t["cpu_seconds"] for t in ledger.global_steps.values()))
        else:
            booked = sum(t.get("driver_cpu_seconds", 0.0) for t in ledger.global_steps.values())
        ledger.add_overhead(DRIVER, max(own - booked, 0.0))
        if own_ray:
            daemons = ray_daemons_cpu()
            if daemons is not None:
                ledger.add_overhead(RAY_DAEMONS, daemons)


def records_shard_cpu(records: list[dict]) -> float:
    """Shard work CPU in the records of an earlier attempt (a resumed run's ledger merges them)."""
    total = 0.0
    for recs in records:
        for rec in recs.values():
            led = rec.get("ledger", rec) if isinstance(rec, dict) else {}
            total += float((led.get("shard_work") or {}).get("cpu_seconds", 0.0))
    return total


def ray_daemons_cpu() -> float | None:
    """CPU seconds of the daemons of the Ray this process started (None when it started none): an
    embedded Ray's GCS server, raylet, dashboard and log monitor are this process's own children
    (Ray's workers are the raylet's, booked as shard work). Read from /proc, not from Ray's private
    node object."""
    me = os.getpid()
    total, found = 0.0, False
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    sandboxes = set(_sandbox_pids())
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and pid not in sandboxes:
            cpu = process_cpu(pid)
            if cpu is not None:
                total, found = total + cpu, True
    return total if found else None


def _sandbox_pids() -> list[int]:
    """This process's own sandbox children (extraction, stages), booked elsewhere."""
    from pipeline.sources.sandbox import live_sandboxes

    return [box.pid for box in live_sandboxes() if box.pid]
