"""The `local` backend of the executor contract (pipeline/engine/pool.py): one ShardWorker in
this process, parts one after the other. For debugging (`--no-ray`) and for inputs too small to pay
for starting workers (`--executor auto`)."""
from __future__ import annotations

from pipeline.engine.pool import WorkerPool
from pipeline.engine.worker import ShardWorker
from stages.base import LocalExecutor


def worker_count(recipe, address: str | None, workers: int | None) -> int:
    return 1


class Pool(WorkerPool):
    kind = "local"

    def __init__(self, worker_args: tuple, workers: int = 1, worker_cls: type = ShardWorker):
        self.local = worker_cls(*worker_args)

    def run_parts(self, phase, prev, parts, decisions, prev_files):
        for s in parts:
            yield (s, *self.local.run_timed(phase, prev, s, decisions.get(s.index), prev_files.get(s.index))[1:])

    def waves(self, items):
        return [self.local.wave_timed(x) for x in items]

    def executor(self):
        return LocalExecutor()

    def close(self) -> None:
        self.local.close()
