"""Run one function per record in a child process, under a time and a memory limit.

Why a process: the work that can stall a shard runs in C (resiliparse's DOM walk is quadratic in
nesting depth: a 1.1 MB page of 100,000 nested divs takes minutes; lxml has its own cliffs), and C
code cannot be interrupted from Python (a signal handler runs only when the C call returns). A
child process can be killed. It is started once (a fresh interpreter: forking a Ray worker's
threads is unsafe, and multiprocessing's spawn would re-run the user's __main__) and reused for
every record, so the cost per record is one pipe round trip (tens of microseconds,
measured in benchmarks/extraction.py); after a timeout or a crash it is restarted.

`Sandbox.map` sends several records in one message and the child answers once for all of them.
Why: each round trip puts both processes to sleep and wakes them again, and on a busy machine a
wake-up costs far more CPU than the pipe itself (on 992 crawl pages: 0.28 CPU-s of the worker's
reading one page per message, 0.20 sixteen per message; docs/measurements/2026-11-28-history.md, "Item 2, 50 MB, under
load"). The time limit stays per record: the child arms a timer (SIGALRM at its default action,
which ends the process even inside C code) before each record, and a batch that does not come back
whole is redone one record at a time, so each record gets exactly the answer `__call__` gives it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import weakref
from multiprocessing.connection import Connection
from typing import Any, Callable


STARTUP_LIMIT = 300  # seconds a new child may take to import and build its function


# CPU seconds of this process's sandbox children, so the ledger books them to the work they did.
_ENDED_CPU: dict[str, float] = {}  # name -> CPU of children that have ended (killed, restarted, closed)
_LIVE: "weakref.WeakSet[Sandbox]" = weakref.WeakSet()
try:
    _TICK = float(os.sysconf("SC_CLK_TCK"))
except (ValueError, OSError, AttributeError):  # pragma: no cover
    _TICK = 100.0


def process_cpu(pid: int, reaped: bool = False) -> float | None:
    """User + system CPU seconds of a live process, with `reaped` its reaped children's too (Linux
    /proc; None where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return sum(int(f) for f in fields[11:15 if reaped else 13]) / _TICK
    except (OSError, IndexError, ValueError):
        return None


def live_sandboxes() -> list["Sandbox"]:
    """Every sandbox of this process that has not been collected."""
    return list(_LIVE)


def all_children_cpu() -> float:
    """`children_cpu` of every name: what this process's sandbox children have used so far."""
    return sum(_ENDED_CPU.values()) + sum(box.live_cpu() for box in list(_LIVE))


def children_cpu(name: str) -> float:
    """CPU seconds every sandbox child named `name` of this process has used so far, start-up
    (imports, models) included: ended children and the live ones. A caller that reads it before
    and after a piece of work gets the child's part of that work."""
    return _ENDED_CPU.get(name, 0.0) + sum(box.live_cpu() for box in list(_LIVE) if box.name == name)


class SandboxTimeout(Exception):
    """The record took longer than the time limit; the child was killed."""


class SandboxCrash(Exception):
    """The child died on the record (out of memory under the cap, a crash in C code)."""


class _Batch:
    """Several records for one round trip (`Sandbox.map`), each under `limit` seconds."""

    def __init__(self, items: list, limit: float):
        self.items = items
        self.limit = limit


class SandboxSetupError(SandboxCrash):
    """Building the child's function raised (a missing model file, a bad setting): its message.
    A crash to callers that book a crash per record (extraction); the stages' runner stops on it."""


def _child_main(read_fd: int, write_fd: int) -> None:
    """Entry point of the child interpreter: the first message is (factory, memory_limit, die_with_parent)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        factory, memory_limit, die_with_parent = inbox.recv()
    except EOFError:  # the parent went away before it was set up (e.g. Ctrl-C at a run's start): no traceback
        return
    if die_with_parent:  # a killed worker must not leave a child stuck in C code behind
        _die_with_parent()
    try:
        _serve(inbox, outbox, factory, memory_limit)
    except (OSError, EOFError):  # the parent went away while this answered (a run stopped at start-up)
        return


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the parent thread that started it ends (prctl
    PR_SET_PDEATHSIG); the parent asks for it only from its main thread, whose end is the process's."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _serve(inbox: Connection, outbox: Connection, factory: Callable[[], Callable[[Any], Any]],
           memory_limit: int) -> None:
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    try:
        fn = factory()
    except Exception as exc:  # noqa: BLE001 - e.g. a model file missing: the parent says so, once
        outbox.send((False, f"{type(exc).__name__}: {exc}"))
        return
    outbox.send((True, "ready"))  # start-up (imports, models) never counts against a record's limit
    while True:
        try:
            arg = inbox.recv()
        except EOFError:  # the parent went away
            return
        try:
            outbox.send((True, _run_batch(fn, arg) if isinstance(arg, _Batch) else fn(arg)))
        except MemoryError:
            outbox.send((False, "out of memory"))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
            outbox.send((False, f"{type(exc).__name__}: {exc}"))


def _run_batch(fn: Callable[[Any], Any], batch: _Batch) -> list[tuple[bool, Any]]:
    """(True, result) or (False, the error's message) per record. A record that runs past the limit
    ends this process (SIGALRM's default action: no handler needed, so C code is stopped too); a
    MemoryError ends the whole batch (the heap may be in any state): the parent redoes it singly."""
    import signal

    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    out: list[tuple[bool, Any]] = []
    try:
        for item in batch.items:
            if batch.limit:
                signal.setitimer(signal.ITIMER_REAL, batch.limit)
            try:
                out.append((True, fn(item)))
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - this record's error, raised in the parent for it
                out.append((False, f"{type(exc).__name__}: {exc}"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return out


class Sandbox:
    """`sandbox(arg)` returns `factory()(arg)` computed in the child process.

    Raises SandboxTimeout after `time_limit` seconds, SandboxCrash if the child dies, and
    RuntimeError with the child's message if the function raised. `factory` must be picklable
    (a module-level function or functools.partial of one): it builds the function in the child.
    """

    def __init__(self, factory: Callable[[], Callable[[Any], Any]], time_limit: float,
                 memory_limit: int = 0, name: str = "refinery-sandbox"):
        self.factory = factory
        self.name = name  # the child's argument: tells its processes apart in ps and in CPU accounting
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self._cpu = 0.0  # the live child's CPU when last read (kept if it dies and is reaped)
        _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        """The running child's process id (None when none is running)."""
        return self._proc.pid if self._proc is not None and self._proc.returncode is None else None

    def live_cpu(self) -> float:
        """CPU seconds of the current child (0 when none is running)."""
        if self._proc is not None:
            cpu = process_cpu(self._proc.pid)
            if cpu is not None and self._proc.returncode is None:
                self._cpu = cpu
        return self._cpu if self._proc is not None else 0.0

    def cpu_seconds(self) -> float:
        """CPU seconds of every child this sandbox started (the one running included)."""
        return self._ended + self.live_cpu()

    _ended = 0.0  # CPU of this sandbox's children that have ended

    def _start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        code = f"from pipeline.sources.sandbox import _child_main; _child_main({to_child_r}, {to_parent_w})"
        self._proc = subprocess.Popen([sys.executable, "-c", code, self.name], pass_fds=(to_child_r, to_parent_w),
                                      env=env, stdin=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(to_parent_w)
        self._send = Connection(to_child_w, readable=False)
        self._recv = Connection(to_parent_r, writable=False)
        main = threading.current_thread() is threading.main_thread()  # Ray runs an actor's methods there
        self._send.send((self.factory, self.memory_limit, main))
        if not self._recv.poll(STARTUP_LIMIT):
            self.close()
            raise SandboxCrash(f"the worker process did not start within {STARTUP_LIMIT} s")
        try:
            ok, value = self._recv.recv()
        except (EOFError, OSError):
            code = self._proc.poll() if self._proc is not None else None
            self.close()
            raise SandboxCrash(f"the worker process failed to start (exit code {code})") from None
        if not ok:  # its set-up raised: no record is to blame, and a restart would fail the same way
            self.close()
            raise SandboxSetupError(f"the worker process failed to start: {value}")

    def close(self) -> None:
        if self._proc is not None:
            cpu = self.live_cpu()  # read before the kill: a reaped child's /proc entry is gone
            self._ended += cpu
            _ENDED_CPU[self.name] = _ENDED_CPU.get(self.name, 0.0) + cpu
            self._cpu = 0.0
            if self._proc.poll() is None:
                self._proc.kill()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        for conn in (self._send, self._recv):
            if conn is not None:
                conn.close()
        self._proc = self._send = self._recv = None

    def __call__(self, arg: Any) -> Any:
        if self._proc is None or self._proc.poll() is not None:
            self.close()
            self._start()
        try:
            self._send.send(arg)
            ready = self._recv.poll(self.time_limit)
        except (BrokenPipeError, EOFError, OSError):
            self.close()
            raise SandboxCrash("the worker process died") from None
        if not ready:
            self.close()
            raise SandboxTimeout(f"more than {self.time_limit:g} s")
        try:
            ok, value = self._recv.recv()
        except (EOFError, OSError):
            code = self._proc.poll() if self._proc is not None else None
            self.close()
            raise SandboxCrash(f"the worker process died (exit code {code})") from None
        if not ok:
            if value == "out of memory":
                self.close()  # its heap may be in any state
                raise SandboxCrash(f"out of memory (cap {self.memory_limit >> 20} MiB)")
            raise RuntimeError(value)
        self.live_cpu()  # kept up to date, in case the child dies before it is next read
        return value

    def map(self, items: list) -> list:
        """`[self(item) for item in items]` in one round trip, each item's exception (SandboxTimeout,
        SandboxCrash, RuntimeError) in its place instead of raised. When the batch does not come
        back whole (a record ran past the limit, the child died or ran out of memory), the child
        is restarted and the batch is redone one item at a time, so every item gets the answer
        `__call__` gives it; the items before the faulty one are computed twice (rare: hostile input)."""
        if len(items) <= 1:
            return [self._one(item) for item in items]
        try:
            if self._proc is None or self._proc.poll() is not None:
                self.close()
                self._start()
        except SandboxCrash:  # it cannot start: each item gets the error a call gets
            return [self._one(item) for item in items]
        answers = None
        try:
            self._send.send(_Batch(items, self.time_limit))
            # the child stops a record at the limit itself; this wait only guards against a stuck pipe
            if self._recv.poll(self.time_limit * len(items) + 5 if self.time_limit else None):
                ok, value = self._recv.recv()
                if ok and isinstance(value, list) and len(value) == len(items):
                    answers = value
        except (BrokenPipeError, EOFError, OSError):
            pass
        if answers is None:
            self.close()
            return [self._one(item) for item in items]
        self.live_cpu()
        return [value if ok else RuntimeError(value) for ok, value in answers]

    def _one(self, item: Any) -> Any:
        try:
            return self(item)
        except (SandboxCrash, SandboxTimeout, RuntimeError) as exc:
            return exc

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self) -> dict:  # a live child does not travel: the copy starts its own
        state = self.__dict__.copy()
        state["_proc"] = state["_send"] = state["_recv"] = None
        state["_cpu"] = state["_ended"] = 0.0
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        _LIVE.add(self)


def default_memory_limit() -> int:
    """A cap for one record's child: 2 GiB, or less on a machine with little memory."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 2 << 30
    return int(min(2 << 30, total // 4))
