"""The `local` backend of the executor contract (pipeline/engine/pool.py): one ShardWorker in
this process, tasks one after the other. For debugging (`--no-ray`) and for inputs too small to pay
for starting workers (`--executor auto`)."""
from __future__ import annotations

from pipeline.engine.pool import WorkerPool
from stages.base import LocalExecutor


class Pool(WorkerPool):
    kind = "local"

    def __init__(self, worker_cls: type, worker_args: tuple, workers: int = 1):
        self.local = worker_cls(*worker_args)

    def _tasks(self, tasks):
        for k, (method, args) in enumerate(tasks):
            yield k, getattr(self.local, method)(*args)

    def executor(self):
        return LocalExecutor()  # its CPU is this process's, booked by the step's own clock

    def close(self) -> None:
        self.local.close()
