"""The `processes` backend of the executor contract (pipeline/engine/pool.py): one ShardWorker per
local process, for the whole run, without Ray (`refinery run --executor processes`).

Why: on one machine an embedded Ray is overhead a mid-sized run pays in full: about 2 s to start
before the first part, and its own processes (GCS, raylet, agents) and each actor's Ray runtime
using CPU beside the work; without them a 50 MB run on 2 workers used 2.3-5.5 CPU-s (4-9%) less
(BENCHMARKS.md, "Without Ray: `--processes`"). These processes do what the run asks
of Ray's actors, the way datatrove's LocalPipelineExecutor uses a process pool: each builds its
object once (a ShardWorker: models load once) and keeps it; each task goes to the next idle
process, and its answer is the method's result or the exception it raised, raised again here. A
process that dies (killed, out of memory) is started again and its task redone, at most `retries`
times per task (Ray's max_task_retries): a part is idempotent (state.py's commit protocol).

Processes start as fresh interpreters (subprocess, as the sandbox children do), not by
multiprocessing's spawn, which re-imports the caller's __main__ and so re-runs a script that calls
`run()` without a main guard. They ignore Ctrl-C (the driver ends them) and die with the driver
(PR_SET_PDEATHSIG); their own sandbox children die with them. Messages are pickled, with
cloudpickle only where plain pickle fails (a closure a global stage maps).
"""
from __future__ import annotations

import functools
import logging
import os
import pickle
import subprocess
import sys
import threading
import traceback
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator, Sequence

from pipeline.engine.pool import WorkerPool
from pipeline.errors import RunError

log = logging.getLogger("refinery")

RETRIES = 3  # a task whose process dies is redone at most this many times (Ray's max_task_retries here)


def dumps(obj: Any) -> bytes:
    """Plain pickle; cloudpickle (by value) for what plain pickle cannot name, e.g. a closure."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        import cloudpickle

        return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _portable_error(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling, else a RuntimeError with its type and text."""
    try:
        pickle.loads(dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - e.g. an exception class whose __init__ needs other arguments
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _worker_main(read_fd: int, write_fd: int) -> None:
    """Entry point of a worker interpreter: the first message is (factory, die_with_parent); then
    each message is (method, args), answered with (True, result) or (False, exception, traceback)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the driver decides
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        setup = inbox.recv_bytes()
    except EOFError:  # the driver went away before it was set up
        os._exit(0)
    obj, failed, die_with_parent = None, None, True
    try:
        factory, die_with_parent = pickle.loads(setup)
        obj = factory()
    except Exception as exc:  # noqa: BLE001 - every task answers with it (a bad model file, a factory this
        failed = exc, traceback.format_exc()  # interpreter cannot import: its message, not a death)
    if die_with_parent:
        from pipeline.sources.sandbox import _die_with_parent

        _die_with_parent()
    while True:
        try:
            data = inbox.recv_bytes()
        except (EOFError, OSError):  # the driver closed the pool (or died)
            break
        try:
            if failed is not None:
                raise failed[0]
            method, args = pickle.loads(data)
            answer = dumps((True, getattr(obj, method)(*args)))
        except Exception as exc:  # noqa: BLE001 - raised again in the driver
            tb = failed[1] if failed is not None else traceback.format_exc()
            answer = dumps((False, _portable_error(exc), tb))
        try:
            outbox.send_bytes(answer)
        except OSError:
            break
    close = getattr(obj, "close", None)
    if callable(close):
        close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no interpreter teardown: the OS frees the models at once


class _Process:
    """One worker process and its two pipes."""

    def __init__(self, factory_bytes: bytes, name: str):
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        # one CPU's worth of native threads (BLAS, OpenMP, Arrow's pool), as Ray gives an actor of
        # one CPU: N workers with a thread per core each would contend for the N cores
        env.setdefault("OMP_NUM_THREADS", "1")
        code = f"from pipeline.engine.processes import _worker_main; _worker_main({to_child_r}, {to_parent_w})"
        self.proc = subprocess.Popen([sys.executable, "-c", code, name], pass_fds=(to_child_r, to_parent_w),
                                     env=env, stdin=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(to_parent_w)
        self.send = Connection(to_child_w, readable=False)
        self.recv = Connection(to_parent_r, writable=False)
        # readable when the process ends, even if a child of its own still holds its pipe open
        self.sentinel: int | None = None
        try:
            self.sentinel = os.pidfd_open(self.proc.pid) if hasattr(os, "pidfd_open") else None
        except OSError:  # an old kernel or a sandbox that refuses it: the pipe's end still tells
            pass
        self.send.send_bytes(factory_bytes)

    def exit_text(self) -> str:
        """How the process ended, for the log: its exit code or the signal that killed it."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "unresponsive"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def stop(self, timeout: float = 10.0) -> None:
        """Close its inbox: it closes its object and exits; killed if it takes longer than `timeout`
        (0: killed at once, e.g. mid-task)."""
        self.send.close()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.recv.close()
        if self.sentinel is not None:
            os.close(self.sentinel)
            self.sentinel = None


class ProcessPool:
    """`workers` local processes, each holding `factory()` for the pool's life. A task is
    (method name, arguments), called on that object in whichever process is idle next."""

    def __init__(self, factory: Callable[[], Any], workers: int, retries: int = RETRIES,
                 name: str = "refinery-worker"):
        self.workers = workers
        self.retries = retries
        self.name = name
        # only from the main thread: PR_SET_PDEATHSIG fires when the starting *thread* ends
        self._setup = dumps((factory, threading.current_thread() is threading.main_thread()))
        self._procs: list[_Process | None] = [self._start() for _ in range(workers)]
        self._busy: dict[int, int] = {}  # slot -> task of the running imap_unordered

    def _start(self) -> _Process:
        return _Process(self._setup, self.name)

    def pids(self) -> list[int]:
        return [p.proc.pid for p in self._procs if p is not None]

    def imap_unordered(self, tasks: Sequence[tuple[str, tuple]]) -> Iterator[tuple[int, Any]]:
        """(position in `tasks`, result) as each task completes. A task's exception is raised
        here as itself (the worker's traceback as a note); a task whose process died is redone on
        a new process, up to `retries` times, then RunError. Left early (an error, Ctrl-C), the
        processes still busy are killed: started again only when there is work for them."""
        todo = deque(range(len(tasks)))
        tries = [0] * len(tasks)
        payload: dict[int, bytes] = {}
        busy: dict[int, int] = {}  # slot -> task
        self._busy = busy  # close() kills these at once, even while this generator is suspended
        try:
            while todo or busy:
                for slot in range(self.workers):
                    if not todo:
                        break
                    if slot in busy:
                        continue
                    k = todo.popleft()
                    if k not in payload:
                        payload[k] = dumps(tasks[k])
                    if self._procs[slot] is None:
                        self._procs[slot] = self._start()
                    busy[slot] = k
                    try:
                        self._procs[slot].send.send_bytes(payload[k])  # type: ignore[union-attr]
                    except OSError:  # it died while idle: seen as its pipe's end below
                        pass
                watch: dict[Any, int] = {}
                for slot in busy:
                    proc = self._procs[slot]
                    assert proc is not None
                    watch[proc.recv] = slot
                    if proc.sentinel is not None:
                        watch[proc.sentinel] = slot
                for slot in sorted({watch[x] for x in wait(list(watch))}):
                    k = busy.pop(slot)
                    conn = self._procs[slot].recv  # type: ignore[union-attr]
                    try:
                        if not conn.poll():  # the process ended without answering
                            raise EOFError
                        data = conn.recv_bytes()
                    except (EOFError, OSError):
                        self._lost(slot, k, tries, tasks[k][0])
                        todo.appendleft(k)
                        continue
                    payload.pop(k, None)
                    ok, value, *tb = pickle.loads(data)
                    if not ok:
                        if tb and hasattr(value, "add_note"):
                            value.add_note(f"in {self.name} process:\n{tb[0].rstrip()}")
                        raise value
                    yield k, value
        finally:
            self._stop_busy(busy)

    def _stop_busy(self, busy: dict[int, int]) -> None:
        """Kill the processes still running a task of a call left early (an error, Ctrl-C, or the
        pool closed while it was suspended): their answers must not reach a later call."""
        for slot in busy:
            if self._procs[slot] is not None:
                self._procs[slot].stop(0)  # type: ignore[union-attr]
            self._procs[slot] = None
        busy.clear()

    def _lost(self, slot: int, task: int, tries: list[int], method: str) -> None:
        proc = self._procs[slot]
        assert proc is not None
        how = proc.exit_text()
        proc.stop(0)
        self._procs[slot] = None
        tries[task] += 1
        if tries[task] > self.retries:
            raise RunError(f"a worker process died {tries[task]} times running the same task ({method}; last: {how});"
                           " rerun to resume")
        log.warning("worker process %d died (%s) running %s; redoing it on a new process (retry %d of %d)",
                    proc.proc.pid, how, method, tries[task], self.retries)

    def map(self, tasks: Sequence[tuple[str, tuple]]) -> list:
        """Results in the order of `tasks`."""
        out: list[Any] = [None] * len(tasks)
        for k, value in self.imap_unordered(tasks):
            out[k] = value
        return out

    def close(self) -> None:
        """Stop every process (each closes its object); safe to call twice."""
        self._stop_busy(self._busy)
        procs, self._procs = self._procs, [None] * self.workers
        for p in procs:
            if p is not None:
                p.send.close()  # all told first: they close at once
        for p in procs:
            if p is not None:
                p.stop()


class Pool(WorkerPool):
    """One ShardWorker per local process, for the whole run (`--executor processes`)."""

    kind = "processes"

    @staticmethod
    def count(recipe, address: str | None, workers: int | None) -> int:
        return workers or recipe.ray.num_workers or recipe.ray.num_cpus or len(os.sched_getaffinity(0))

    def __init__(self, worker_cls: type, worker_args: tuple, workers: int):
        self.workers = workers
        self.procs = ProcessPool(functools.partial(worker_cls, *worker_args), workers)

    def _tasks(self, tasks):
        return self.procs.imap_unordered(tasks)  # ProcessPool gives each idle process one

    def close(self) -> None:
        self.procs.close()  # each process's stages' child ends with it
