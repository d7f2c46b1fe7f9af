"""The run's CPU outside shard work and global steps, so the ledger's rows add up to the run's CPU:
the driver process (planning, listing inputs, committing records, waiting on Ray); each worker
process's CPU outside its parts and global-step calls (`--processes` and Ray: starting the
interpreter, imports, building the stages, a Ray actor's runtime, idle time between parts); and,
when this run started its own Ray, Ray's daemons (GCS server, raylet, dashboard and runtime-env
agents, log monitor, the idle Ray workers it starts beside the actors).

Shard work and global steps are booked where they run (pipeline/engine/worker.py, the runner's
global steps, with the driver's share of each step noted apart); this module takes the driver's
own CPU over the run and subtracts what of it the ledger already holds, and likewise each worker
process's own CPU (its sandbox children's included, asked of the worker at the end of the run:
`worker_process_cpu`) less the shard work and global-step CPU booked on the workers. Ray's daemons
are read from /proc (each daemon and its descendants, the actors excepted) just before the run
ends. On an attached cluster (`--address`) the daemons are not this run's and are not counted."""
from __future__ import annotations

import os
import time

from pipeline.engine.ledger import Ledger
from pipeline.sources.sandbox import all_children_cpu, live_sandboxes, process_cpu

DRIVER = "driver"
RAY_DAEMONS = "ray daemons"
WORKERS = "worker start-up / idle"


def _own() -> float:
    return time.process_time() + all_children_cpu()


class RunCpu:
    """Started with the run; `book(ledger, ...)` adds the driver's and the daemons' rows."""

    def __init__(self) -> None:
        self.start = _own()

    def book(self, ledger: Ledger, resumed_shard_cpu: float, in_process: bool, own_ray: bool,
             workers: list[tuple[int, float]] | None = None) -> None:
        """`resumed_shard_cpu`: shard work the ledger took from records of an earlier attempt;
        `in_process`: shard work and whole global steps ran in this process (no Ray, no processes);
        `workers`: each worker process's (pid, `worker_process_cpu`) at the end of the run (None:
        not known, e.g. in process)."""
        own = _own() - self.start
        shard_work = ledger.shard_work["cpu_seconds"] - resumed_shard_cpu
        driver_steps = sum(t.get("driver_cpu_seconds", 0.0) for t in ledger.global_steps.values())
        if in_process:
            booked = shard_work + sum(t["cpu_seconds"] for t in ledger.global_steps.values())
        else:
            booked = driver_steps
        ledger.add_overhead(DRIVER, max(own - booked, 0.0))
        if workers and not in_process:
            on_workers = shard_work + sum(t["cpu_seconds"] for t in ledger.global_steps.values()) - driver_steps
            ledger.add_overhead(WORKERS, max(sum(cpu for _, cpu in workers) - on_workers, 0.0))
        if own_ray:
            daemons = ray_daemons_cpu(exclude={pid for pid, _ in workers or ()})
            if daemons is not None:
                ledger.add_overhead(RAY_DAEMONS, daemons)


def worker_process_cpu(_=None) -> tuple[int, float]:
    """(pid, CPU seconds) of the calling worker process since it started, its sandbox children's
    (extraction, stages) included, the same clocks its parts are booked with. Sent to every worker
    at the end of a run (`WorkerPool.workers_cpu`)."""
    return os.getpid(), time.process_time() + all_children_cpu()


def ray_daemons_cpu(exclude: set[int] = frozenset()) -> float | None:  # type: ignore[assignment]
    """CPU seconds of the daemons of the Ray this process started (None when it started none): an
    embedded Ray's GCS server, raylet, dashboard and log monitor are this process's own children,
    and the raylet's children its agents and worker processes. Each is counted with its
    descendants, except the processes in `exclude` (the actors, booked as shard work and worker
    start-up) and theirs. Read from /proc, not from Ray's private node object. The raylet ignores
    SIGCHLD, so an ended Ray worker's CPU is nowhere to read: an actor's is read before it ends."""
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    kids: dict[int, list[int]] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(pid)
    skip = set(exclude) | {box.pid for box in live_sandboxes() if box.pid}  # booked elsewhere
    total, found = 0.0, False
    todo = [pid for pid in kids.get(me, []) if pid not in skip]
    while todo:
        pid = todo.pop()
        cpu = process_cpu(pid, reaped=True)
        if cpu is not None:
            total, found = total + cpu, True
        todo.extend(k for k in kids.get(pid, []) if k not in skip)
    return total if found else None
