"""Maps over the run's Ray actors that survive losing some of them (a node's raylet and workers
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

import logging
import time
from typing import Any, Callable, Iterator, Sequence

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
    last_error: BaseException | None = None
    down_since: dict[str, float] = {}  # actor id -> when it was first seen not alive
    while todo or running:
        while todo and idle:
            i, actor = todo.pop(), idle.pop(0)
            attempts[i] += 1
            running[submit(actor, items[i])] = (i, actor)
        if not running:  # items left, no actor left
            raise RunError(f"every Ray worker of the run was lost (last: {_one_line(last_error)}); rerun to resume")
        ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_SECONDS)
        if not ready:  # a task whose actor is down for good never ends: Ray waits for room to restart it
            for ref, (i, actor) in list(running.items()):
                down = _down_for(actor, down_since)
                if down >= DOWN_SECONDS:
                    running.pop(ref)
                    last_error = RuntimeError(f"its actor was not alive for {down:.0f} s")
                    todo.append(i)
                    _retire(actors, actor, f"not alive for {down:.0f} s")
            continue
        (ref,) = ready
        i, actor = running.pop(ref)
        try:
            result = ray.get(ref)
        except lost as exc:
            last_error = exc
            if attempts[i] >= MAX_ATTEMPTS:
                raise RunError(f"a task was lost {attempts[i]} times with its Ray worker ({_one_line(exc)}); "
                               "rerun to resume") from None
            todo.append(i)  # to another actor
            _retire(actors, actor, _one_line(exc))
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


def _one_line(exc: BaseException | None) -> str:
    if exc is None:
        return "no error"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
