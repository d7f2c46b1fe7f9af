"""The `processes` backend of the executor contract (pipeline/engine/pool.py): one ShardWorker per
local process (pipeline/engine/processes.py), for the whole run, without Ray."""
from __future__ import annotations

import os

from pipeline.engine.pool import BookedExecutor, WorkerPool, chunks
from pipeline.engine.processes import ProcessPool
from pipeline.engine.worker import ShardWorker


def worker_count(recipe, address: str | None, workers: int | None) -> int:
    return workers or recipe.ray.num_workers or recipe.ray.num_cpus or len(os.sched_getaffinity(0))


class Pool(WorkerPool):
    """One ShardWorker per local process, for the whole run (`--executor processes`)."""

    kind = "processes"

    def __init__(self, worker_args: tuple, workers: int, worker_cls: type = ShardWorker):
        import functools

        self.workers = workers
        self.procs = ProcessPool(functools.partial(worker_cls, *worker_args), workers)

    def run_parts(self, phase, prev, parts, decisions, prev_files):
        by_index = {s.index: s for s in parts}
        tasks = [("run_many", (phase, prev, [(s, decisions.get(s.index), prev_files.get(s.index)) for s in c]))
                 for c in chunks(list(parts), self.workers)]
        for _, results in self.procs.imap_unordered(tasks):
            for idx, result, seconds in results:
                yield by_index[idx], result, seconds

    def waves(self, items):
        return self.procs.map([("wave_timed", (x,)) for x in items])

    def executor(self):
        return _ProcessExecutor(self)

    def workers_cpu(self):
        from pipeline.engine.run_cpu import worker_process_cpu

        # as many tasks as processes, all idle: one each (ProcessPool gives each idle process one)
        answers = dict(answer for answer, _ in self.procs.map([("call", (worker_process_cpu, None))] * self.workers))
        return sorted(answers.items())

    def close(self) -> None:
        self.procs.close()  # each process's stages' child ends with it


class _ProcessExecutor(BookedExecutor):
    """Parallel map for global stages on the run's worker processes; results in order."""

    def __init__(self, pool: Pool):
        super().__init__(pool.workers)
        self._procs = pool.procs

    def map(self, fn, items):
        return self._booked(self._procs.map([("call", (fn, x)) for x in items]))
