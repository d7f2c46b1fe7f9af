"""The `ray` backend of the executor contract (pipeline/engine/pool.py): one Ray actor per worker,
on an embedded local Ray or a cluster (`--address`, the recipe's `ray.address`, RAY_ADDRESS).

A lost actor is restarted and its part redone: part work is idempotent (each attempt writes files
of its own; the part's record names the winner's, pipeline/engine/state.py)."""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from pipeline.engine import ray_tasks
from pipeline.engine.pool import WorkerPool
from pipeline.engine.worker import ShardWorker

log = logging.getLogger("refinery")


def init_ray(address: str | None, num_cpus: int | None) -> bool:
    """Attach to the cluster at `address` or RAY_ADDRESS, else start an embedded local Ray of
    `num_cpus`; nothing when this process already has Ray. True if it started or attached now."""
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": True}
    main = threading.current_thread() is threading.main_thread()
    on_term = signal.getsignal(signal.SIGTERM) if main else None
    if address:
        ray.init(address=address, **kwargs)
    else:  # "local": a new embedded Ray, never some other job's cluster on this machine
        # No metrics: nothing reads them in an embedded Ray (no dashboard), and exporting them
        # costs its agent and every worker CPU all run long (BENCHMARKS.md, "Where refinery's CPU goes at 50 MB").
        ray.init(address="local", num_cpus=num_cpus, _system_config={"enable_metrics_collection": False}, **kwargs)
    if callable(on_term):  # ray.init puts its native handler first, which dumps a stack on SIGTERM
        signal.signal(signal.SIGTERM, on_term)
    return True


def worker_count(recipe, address: str | None, workers: int | None) -> int:
    import ray

    init_ray(address or recipe.ray.address, recipe.ray.num_cpus)
    return workers or recipe.ray.num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))


@contextlib.contextmanager
def stopping_ray():
    """Shut Ray down in the background while the block runs (the report): stopping the embedded
    Ray's processes is mostly waiting for them to exit, 1.5 to 2.5 s of idle wall time."""
    ray = sys.modules.get("ray")  # not imported: this run never started Ray
    if ray is None or not ray.is_initialized():
        yield
        return
    took = {}

    def stop() -> None:
        t = time.time()
        ray.shutdown()
        took["stop"] = time.time() - t

    stopper = threading.Thread(target=stop, name="ray-shutdown")
    stopper.start()
    t0 = time.time()
    try:
        yield
    finally:
        block = time.time() - t0
        stopper.join()
        log.info("Ray stopped in %.1fs, beside %.1fs of the run's last step; waited %.1fs for it",
                 took.get("stop", 0.0), block, time.time() - t0 - block)


@contextlib.contextmanager
def _workers_own_errors():
    """Raise a failed actor task's own error (e.g. OSError: disk full), not Ray's wrapper of it."""
    from ray.exceptions import RayTaskError

    try:
        yield
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        raise (cause if isinstance(cause, BaseException) else exc) from None


class Pool(WorkerPool):
    kind = "ray"

    def __init__(self, worker_args: tuple, workers: int, worker_cls: type = ShardWorker):
        import ray

        self.workers = workers
        remote = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=3)(worker_cls)
        self.actors = [remote.remote(*worker_args) for _ in range(workers)]

    def _tasks(self, tasks):
        with _workers_own_errors():  # survives a lost node (ray_tasks)
            yield from ray_tasks.map_unordered(self.actors, lambda actor, t: getattr(actor, t[0]).remote(*t[1]), tasks)

    def _shared(self, fn):
        import ray

        return ray.put(fn)

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)  # its stages' child ends with it (its pipe closes)
