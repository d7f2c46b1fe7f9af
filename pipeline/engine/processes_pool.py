"""The `processes` backend of the executor contract (pipeline/engine/pool.py): one ShardWorker per
local process (pipeline/engine/processes.py), for the whole run, without Ray."""
from __future__ import annotations

import functools
import os

from pipeline.engine.pool import WorkerPool
from pipeline.engine.processes import ProcessPool
from pipeline.engine.worker import ShardWorker


def worker_count(recipe, address: str | None, workers: int | None) -> int:
    return workers or recipe.ray.num_workers or recipe.ray.num_cpus or len(os.sched_getaffinity(0))


class Pool(WorkerPool):
    """One ShardWorker per local process, for the whole run (`--executor processes`)."""

    kind = "processes"

    def __init__(self, worker_args: tuple, workers: int, worker_cls: type = ShardWorker):
        self.workers = workers
        self.procs = ProcessPool(functools.partial(worker_cls, *worker_args), workers)

    def _tasks(self, tasks):
        return self.procs.imap_unordered(tasks)  # ProcessPool gives each idle process one

    def close(self) -> None:
        self.procs.close()  # each process's stages' child ends with it
