"""The `ray` backend of the executor contract (pipeline/engine/pool.py): one Ray actor per worker,
on an embedded local Ray or a cluster (`--address`, the recipe's `ray.address`, RAY_ADDRESS).

A lost actor is restarted and its part redone: part work is idempotent (each attempt writes files
of its own; the part's record names the winner's, pipeline/engine/state.py).

Maps over the actors survive losing some of them (`map_unordered`: a node's raylet and workers
killed, a preempted machine): the work of a lost actor is given to the actors that are left.
Why not `ray.util.ActorPool`: its map stops at the first error, and the error of a lost actor is
Ray's (ActorDiedError, or ActorUnavailableError while Ray restarts it and no node has room), which
reached the user as a traceback. Shard work and a global stage's tasks are idempotent (each attempt
writes files of its own, a record names the winner's; pipeline/engine/state.py), so a task whose
actor was lost is simply submitted again, to another actor. An actor is lost when Ray says so, or
when it has not been alive for DOWN_SECONDS (Ray keeps the task of an actor that waits for a node
with room to restart on, maybe for ever, without an error). The lost actor is not used again in
the run: it is killed for good and taken out of the list of actors the caller passed (a restart
that waits for room on a node would hold every later task given to it). When no actor is left,
RunError says so, in one line, and that a rerun resumes."""
from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from pipeline.engine.pool import WorkerPool
from pipeline.errors import RunError

log = logging.getLogger("refinery")

MAX_ATTEMPTS = 4  # submissions of one item before the run gives up on it
POLL_SECONDS = 5.0  # how often running tasks' actors are looked at while none finishes
# An actor not alive (restarting, waiting for a node with room, dead) for this long is lost: a
# worker process that crashed is back within seconds on its own node.
DOWN_SECONDS = 30.0


def _lost_errors() -> tuple[type[BaseException], ...]:
    import ray.exceptions as rx

    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "NodeDiedError", "WorkerCrashedError",
             "ObjectLostError", "OwnerDiedError", "LocalRayletDiedError")
    return tuple(getattr(rx, n) for n in names if isinstance(getattr(rx, n, None), type))


def map_unordered(actors: Sequence[Any], submit: Callable[[Any, Any], Any], items: Sequence[Any]
                  ) -> Iterator[tuple[int, Any]]:
    """(index of the item, its result) as tasks finish; `submit(actor, item)` returns an ObjectRef.
    At most one task per actor at a time (as ActorPool). A task's own error (RayTaskError) is raised
    as it is; a lost actor's task is resubmitted to another actor."""
    import ray

    lost = _lost_errors()
    todo = list(range(len(items)))[::-1]  # a stack: items go out in order
    attempts = [0] * len(items)
    idle = list(actors)
    running: dict[Any, tuple[int, Any]] = {}  # ObjectRef -> (item index, actor)
    last_error = "no error"  # a line, not the exception: its traceback holds this frame and its ObjectRefs
    down_since: dict[str, float] = {}  # actor id -> when it was first seen not alive
    while todo or running:
        while todo and idle:
            i, actor = todo.pop(), idle.pop(0)
            attempts[i] += 1
            running[submit(actor, items[i])] = (i, actor)
        if not running:  # items left, no actor left
            raise RunError(f"every Ray worker of the run was lost (last: {last_error}); rerun to resume")
        ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_SECONDS)
        if not ready:  # a task whose actor is down for good never ends: Ray waits for room to restart it
            for ref, (i, actor) in list(running.items()):
                down = _down_for(actor, down_since)
                if down >= DOWN_SECONDS:
                    running.pop(ref)
                    last_error = f"RuntimeError: its actor was not alive for {down:.0f} s"
                    todo.append(i)
                    _retire(actors, actor, f"not alive for {down:.0f} s")
            continue
        (ref,) = ready
        i, actor = running.pop(ref)
        try:
            result = ray.get(ref)
        except lost as exc:
            last_error = _one_line(exc)
            if attempts[i] >= MAX_ATTEMPTS:
                raise RunError(f"a task was lost {attempts[i]} times with its Ray worker ({_one_line(exc)}); "
                               "rerun to resume") from None
            todo.append(i)  # to another actor
            _retire(actors, actor, last_error)
            continue
        idle.append(actor)
        yield i, result


def _down_for(actor: Any, down_since: dict[str, float]) -> float:
    """Seconds the actor has been seen not alive in the GCS's actor table (0 when alive or when
    the table cannot be read)."""
    try:
        from ray._private.state import state

        key = actor._actor_id.hex()
        alive = (state.actor_table(key) or {}).get("State") == "ALIVE"
    except Exception:  # noqa: BLE001 - a Ray without this private table: rely on Ray's own errors
        return 0.0
    if alive:
        down_since.pop(key, None)
        return 0.0
    return time.monotonic() - down_since.setdefault(key, time.monotonic())


def _retire(actors: Sequence[Any], actor: Any, why: str) -> None:
    """Stop using a lost actor: killed for good (a restart Ray would schedule when a node has room
    would queue later tasks behind it, maybe forever) and taken out of the run's list of actors;
    the log says why and how many are left."""
    import ray

    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - already gone
        pass
    if isinstance(actors, list) and actor in actors:
        actors.remove(actor)
    log.warning("a Ray worker was lost (%s); its work goes to the %d worker(s) left", why, len(actors))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


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


@contextlib.contextmanager
def stopping_ray():
    """Shut Ray down in the background while the block runs (the report): stopping the embedded
    Ray's processes is mostly waiting for them to exit, 1.5 to 2.5 s of idle wall time."""
    ray = sys.modules.get("ray")  # not imported: this run never started Ray
    if ray is None or not ray.is_initialized():
        yield
        return
    took = {}
    # Ray objects in reference cycles (a lost actor's error, the frames it holds) freed while Ray is
    gc.collect()  # up: collected after the shutdown, Ray's core worker ends the process with exit 1

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


class Pool(WorkerPool):
    kind = "ray"

    @staticmethod
    def count(recipe, address: str | None, workers: int | None) -> int:
        import ray

        init_ray(address or recipe.ray.address, recipe.ray.num_cpus)
        return workers or recipe.ray.num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))

    def __init__(self, worker_cls: type, worker_args: tuple, workers: int):
        import ray

        self.workers = workers
        remote = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=3)(worker_cls)
        self.actors = [remote.remote(*worker_args) for _ in range(workers)]

    def _tasks(self, tasks):
        from ray.exceptions import RayTaskError

        try:  # survives a lost node
            yield from map_unordered(self.actors, lambda actor, t: getattr(actor, t[0]).remote(*t[1]), tasks)
        except RayTaskError as exc:  # a task's own error (e.g. OSError: disk full), not Ray's wrapper of it
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, BaseException) else exc) from None

    def _shared(self, fn):
        import ray

        return ray.put(fn)

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)  # its stages' child ends with it (its pipe closes)
