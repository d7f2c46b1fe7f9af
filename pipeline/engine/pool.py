"""The executor contract: a run's workers, whatever runs them.

A `WorkerPool` holds one `ShardWorker` (pipeline/engine/worker.py) per worker for the whole run, so
models load once per worker, and offers the run three things:
  - `run_parts`: each part through a phase, results as parts finish;
  - `waves`: a barrier group's per-part waves (`ShardWorker.wave`), results in order;
  - `executor()`: the same idle workers lent to a global stage's `resolve` (`stages.base.Executor`);
and `close`. One module per backend implements it (its `_tasks`, `close` and worker `count`):

    pipeline/engine/local_pool.py     local      one ShardWorker in this process (debugging, small inputs)
    pipeline/engine/processes.py      processes  local worker processes without Ray (`--processes`)
    pipeline/engine/ray_pool.py       ray        one Ray actor per worker, local or on a cluster

The mixture's tokenization uses the same pools with a `TaskWorker` (pipeline/mixture/tokenize.py).
`choose` picks the backend in one place (`refinery run --executor auto|local|processes|ray`;
`--no-ray`, `--processes` and `--ray` are aliases) and `open_pool` starts it. A new backend is one
module with a `Pool(WorkerPool)` and one line in `_BACKENDS`.
"""
from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from typing import Any, Iterator, Sequence

from pipeline import storage
from pipeline.errors import ConfigError
from stages.base import Executor

log = logging.getLogger("refinery")

EXECUTORS = ("auto", "local", "processes", "ray")
_BACKENDS = {"local": "pipeline.engine.local_pool", "processes": "pipeline.engine.processes",
             "ray": "pipeline.engine.ray_pool"}

# Below this many bytes of local input, an embedded Ray costs more than it saves: starting and
# stopping Ray alone is about 5 CPU-s (GCS, raylet, dashboard and runtime-env agents, log monitor;
# BENCHMARKS.md, "Start-up"), and each actor loads the models again (~1.5 CPU-s), while 4 MiB of
# JSONL text is a few CPU-seconds of work in one process.
SMALL_INPUT_BYTES = 4 << 20


class WorkerPool:
    """The contract; see the module docstring. A backend implements `_tasks` (its way of running a
    worker's methods) and `close`, and is built from (worker class, its arguments, how many)."""

    kind = ""
    workers = 1

    @staticmethod
    def count(recipe, address: str | None, workers: int | None) -> int:
        """How many workers the backend runs (the ray backend starts or attaches to Ray here)."""
        return 1

    def _tasks(self, tasks: list[tuple[str, tuple]]) -> Iterator[tuple[int, Any]]:
        """(position in `tasks`, result) of each task, a (worker method, arguments) pair run on
        whichever worker is idle next, as tasks finish."""
        raise NotImplementedError

    def _in_order(self, tasks: list[tuple[str, tuple]]) -> list:
        out: list[Any] = [None] * len(tasks)
        for k, result in self._tasks(tasks):
            out[k] = result
        return out

    def _shared(self, fn):
        """`fn` as a task argument sent to every worker (Ray stores it once)."""
        return fn

    def run_parts(self, phase, prev, parts: Sequence, decisions: dict, prev_files: dict) -> Iterator[tuple[Any, dict, float]]:
        """(part, its record, seconds of work) for each part through `phase`, as parts finish."""
        by_index = {s.index: s for s in parts}
        tasks = [("run_many", (phase, prev, [(s, decisions.get(s.index), prev_files.get(s.index)) for s in c]))
                 for c in chunks(list(parts), self.workers)]
        for _, results in self._tasks(tasks):
            for idx, result, seconds in results:
                yield by_index[idx], result, seconds

    def waves(self, items: list) -> list[tuple[dict, float]]:
        """`ShardWorker.wave` for each item, results in order."""
        return self._in_order([("wave", (x,)) for x in items])

    def executor(self) -> Executor:
        """A parallel map on the same workers for a global stage (`cpu_seconds`: CPU spent on them)."""
        return BookedExecutor(self)

    def workers_cpu(self) -> list[tuple[int, float]] | None:
        """Each worker process's (pid, CPU seconds since it started), asked of it
        (`run_cpu.worker_process_cpu`), for the ledger's worker start-up row (unused when the
        workers are this process); None when they cannot answer."""
        from pipeline.engine.run_cpu import worker_process_cpu

        try:  # as many tasks as workers, all idle: one each; read before close() ends them
            return sorted(dict(a for a, _ in self._in_order([("call", (worker_process_cpu, None))] * self.workers)).items())
        except Exception:  # noqa: BLE001 - a lost worker: no worker row rather than a failed run
            log.warning("could not ask the workers for their CPU: no worker start-up row in the ledger")
            return None

    def close(self) -> None:
        raise NotImplementedError


class BookedExecutor(Executor):
    """A global stage's map on a pool's workers (`TaskWorker.call`), results in order; the CPU
    seconds each call took on its worker are booked to the step."""

    def __init__(self, pool: WorkerPool):
        self.pool = pool
        self.cpu_seconds = 0.0  # spent on the workers, for the ledger's global-step time

    def map(self, fn, items):
        fn = self.pool._shared(fn)
        out = []
        for result, cpu in self.pool._in_order([("call", (fn, x)) for x in items]):
            self.cpu_seconds += cpu
            out.append(result)
        return out

    @property
    def parallelism(self) -> int:
        return self.pool.workers


def chunks(shards: list, workers: int, per_worker: int = 8, most: int = 32) -> list[list]:
    """Parts in consecutive groups, one call each. Why: each call costs the driver about a
    millisecond of CPU and a round trip, which counts when there are many parts (a crawl of 90,000
    large files is 90,000 parts); each part in a group still commits on its own. Groups stay small
    enough that every worker gets about `per_worker` of them, so the load still balances (largest
    first)."""
    size = max(1, min(most, len(shards) // max(1, workers * per_worker)))
    return [shards[i:i + size] for i in range(0, len(shards), size)]


def small_local_input(recipe, shards: Sequence, address: str | None) -> bool:
    """True for a run that would start its own Ray (no --address, recipe address, RAY_ADDRESS or
    running Ray in this process) on local input files of under SMALL_INPUT_BYTES in all, with a
    local output."""
    if address or recipe.ray.address or os.environ.get("RAY_ADDRESS"):
        return False
    if storage.is_url(recipe.output):
        return False  # object-store output: keep the path that is tested against real clusters
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return False
    total = 0
    for s in shards:
        path = storage.normalize(s.url)
        if storage.is_url(path):
            return False  # size unknown without a listing call: keep Ray
        try:
            total += os.path.getsize(path)
        except OSError:
            continue  # unreadable entries become reject rows; they cost nothing to run
        if total >= SMALL_INPUT_BYTES:
            return False
    return True


def choose(name: str, recipe, shards: Sequence, address: str | None) -> str:
    """The backend a run uses: `name` (one of EXECUTORS), with `auto` resolved (local for a small
    local input that would start its own Ray, else ray). A choice that cannot be is one ConfigError line."""
    if name not in EXECUTORS:
        raise ConfigError(f"--executor {name!r}: expected one of {', '.join(EXECUTORS)}")
    if name == "processes" and address:
        raise ConfigError("--processes runs the workers on this machine without Ray; --address attaches to a Ray"
                          " cluster: choose one")
    if name != "auto":
        return name
    return "local" if small_local_input(recipe, shards, address) else "ray"


def backend(kind: str) -> type[WorkerPool]:
    """Backend `kind`'s `Pool` class (its module is imported only now: Ray only for ray)."""
    return importlib.import_module(_BACKENDS[kind]).Pool


def open_pool(kind: str, worker_cls: type, worker_args: tuple, workers: int) -> WorkerPool:
    """Start backend `kind`'s pool of `workers` workers, each `worker_cls(*worker_args)`: a run's
    ShardWorkers, or TaskWorkers (the mixture's tokenization, used only through `executor()`)."""
    return backend(kind)(worker_cls, worker_args, workers)


class TaskWorker:
    """A pool's worker that runs the functions `executor().map` sends it (a global stage's tasks,
    the mixture's tokenization); `call` returns the result and the CPU seconds it took, booked to
    the step."""

    def call(self, fn, item):
        start = time.process_time()
        return fn(item), time.process_time() - start

    def close(self) -> None:
        pass
