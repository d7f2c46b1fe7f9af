"""The local process pool (pipeline/engine/processes.py): one object per process for the pool's
life, tasks to idle processes, errors raised as themselves, lost processes replaced, nothing left."""
import errno
import os
import signal
import time

import pytest

from pipeline.engine.processes import ProcessPool
from pipeline.errors import RunError


def _first(marker: str) -> bool:
    """True for exactly one caller, whichever process asks first (two processes may ask at once)."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


class Counter:
    """Built once per process: `built` says how many times this process built one."""

    builds = 0

    def __init__(self, tag: str):
        Counter.builds += 1
        self.tag, self.calls = tag, 0

    def who(self, x):
        self.calls += 1
        return os.getpid(), Counter.builds, self.calls, self.tag, x

    def sleep_then(self, seconds, x):
        time.sleep(seconds)
        return x

    def fail(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    def apply(self, fn, x):
        return fn(x)

    def die_once(self, marker, x):
        if _first(marker):
            os.kill(os.getpid(), signal.SIGKILL)
        return x

    def fork_then_die_once(self, marker, x):
        """Dies leaving a forked child that holds the answer pipe open for 30 s."""
        if _first(marker):
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            os.kill(os.getpid(), signal.SIGKILL)
        return x

    def die(self, x):
        os.kill(os.getpid(), signal.SIGKILL)


class Broken:
    def __init__(self):
        raise ValueError("model file missing")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is not alive
        return fh.read().split(")")[-1].split()[0] != "Z"


@pytest.fixture
def pool():
    p = ProcessPool(lambda: Counter("t"), 2)
    yield p
    p.close()


def test_each_process_builds_its_object_once_and_keeps_it(pool):
    out = pool.map([("who", (i,)) for i in range(20)])
    assert [o[4] for o in out] == list(range(20))  # in order
    pids = {o[0] for o in out}
    assert pids <= set(pool.pids()) and os.getpid() not in pids
    assert all(o[1] == 1 and o[3] == "t" for o in out)  # built once in each process
    assert sum(max(o[2] for o in out if o[0] == p) for p in pids) == 20  # the same object took every call


@pytest.mark.slow
def test_tasks_go_to_idle_processes_and_results_come_as_they_complete(pool):
    # both processes started and built first: on a loaded machine a start can outlast the slow task
    assert len({r[0] for r in pool.map([("who", (0,)), ("who", (1,))])}) == 2  # one task each
    t = time.time()
    done = [k for k, _ in pool.imap_unordered([("sleep_then", (5, "slow")), ("sleep_then", (0, "a")),
                                                ("sleep_then", (0, "b")), ("sleep_then", (0, "c"))])]
    assert done[-1] == 0 and sorted(done) == [0, 1, 2, 3]  # the others went to the idle process
    assert time.time() - t < 60  # a hang, not a speed: the order above is the check


def test_an_error_in_a_task_is_raised_as_itself(pool):
    with pytest.raises(OSError) as info:
        pool.map([("who", (0,)), ("fail", ("/out/x.parquet",))])
    assert info.value.errno == errno.ENOSPC and info.value.filename == "/out/x.parquet"
    assert any("in refinery-worker process" in n for n in getattr(info.value, "__notes__", []))
    assert pool.map([("who", (1,))])[0][4] == 1  # the pool still works


def test_a_failing_set_up_is_raised_on_the_first_task():
    p = ProcessPool(Broken, 1)
    try:
        with pytest.raises(ValueError, match="model file missing"):
            p.map([("anything", ())])
    finally:
        p.close()


def test_closures_cross_by_cloudpickle(pool):
    k = 7
    assert pool.map([("apply", (lambda x: x * k, i)) for i in range(4)]) == [0, 7, 14, 21]


@pytest.mark.slow
def test_a_killed_process_is_replaced_and_its_task_redone(pool, tmp_path):
    before = set(pool.pids())
    out = pool.map([("die_once", (str(tmp_path / "m"), i)) for i in range(6)])
    assert out == list(range(6)) and (tmp_path / "m").exists()
    # a process is started again when there is work for it: if the other one already did the rest
    # (and the redone task), its place stays empty until the next call
    assert len(before - set(pool.pids())) == 1
    pids = {r[0] for r in pool.map([("sleep_then", (0.5, None)), ("who", (0,)), ("sleep_then", (0.5, None))])
            if r is not None}
    assert len(pool.pids()) == 2 and len(set(pool.pids()) - before) == 1 and pids <= set(pool.pids())


@pytest.mark.slow
def test_a_death_is_seen_even_when_a_child_of_the_process_holds_its_pipe(pool, tmp_path):
    t = time.time()
    assert pool.map([("fork_then_die_once", (str(tmp_path / "m"), i)) for i in range(2)]) == [0, 1]
    assert time.time() - t < 120  # a hang, not a speed


@pytest.mark.slow
def test_a_task_that_keeps_killing_its_process_stops_the_run(pool):
    with pytest.raises(RunError, match="died 4 times"):
        pool.map([("die", (0,))])


@pytest.mark.slow
def test_close_ends_every_process_and_leaving_early_kills_the_busy_ones():
    p = ProcessPool(lambda: Counter("t"), 2)
    pids = p.pids()
    it = p.imap_unordered([("sleep_then", (60, 0)), ("sleep_then", (0, 1))])
    assert next(it)[0] == 1
    it.close()  # as a KeyboardInterrupt in the loop would
    busy = [pid for pid in pids if pid not in p.pids()]
    assert len(busy) == 1 and not _alive(busy[0])
    assert p.map([("who", (5,))])[0][4] == 5  # a new process takes the busy one's place
    left = p.pids()
    p.close()
    p.close()
    assert not any(_alive(pid) for pid in pids + left)


def _imported(name):
    import sys

    return name in sys.modules


@pytest.mark.slow
def test_a_run_on_worker_processes_never_imports_ray(tmp_path):
    """Neither the driver of a `--processes` run nor its workers (which build the recipe's stages,
    read, and run a global stage's map) import Ray: that is the point of the mode."""
    import functools
    import subprocess
    import sys

    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.worker import ShardWorker
    from pipeline.schema import full_schema
    from tests.helpers import write_jsonl, write_recipe

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"document {i} has some words"} for i in range(20)])
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages:
  - stage: langid
    languages: [en]
  - stage: exact_dedup
""")
    prog = ("import sys; from pipeline.cli import main; "
            f"code = main(['run', {str(path)!r}, '--quiet', '--processes', '--workers', '2']); "
            "print('ray' in sys.modules); sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300,
                          cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"
    recipe = load_recipe(str(path))
    schema = full_schema(f for spec in recipe.stages for f in spec.build().signal_fields())
    pool = ProcessPool(functools.partial(ShardWorker, recipe, schema, None), 1)
    try:
        (ray, _), (stages, _) = pool.map([("call", (_imported, "ray")), ("call", (_imported, "stages.langid"))])
        assert stages and not ray
    finally:
        pool.close()


def _env(name):
    return os.environ.get(name)


@pytest.mark.parametrize("given, seen", [(None, "1"), ("3", "3")])  # the user's own setting wins
def test_workers_get_one_cpu_of_native_threads_as_ray_actors_do(monkeypatch, given, seen):
    if given is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", given)
    p = ProcessPool(lambda: Counter("t"), 1)
    try:
        assert p.map([("apply", (_env, "OMP_NUM_THREADS"))]) == [seen]
    finally:
        p.close()


def test_close_kills_a_busy_process_at_once_when_the_caller_was_interrupted_outside_the_loop():
    """A Ctrl-C in the caller's own code leaves the generator suspended, not closed: close() must
    not wait for the busy process to finish its task."""
    p = ProcessPool(lambda: Counter("t"), 2)
    it = p.imap_unordered([("sleep_then", (60, 0)), ("sleep_then", (0, 1))])
    assert next(it)[0] == 1
    busy = p.pids()
    t = time.time()
    p.close()
    assert time.time() - t < 30 and not any(  # the busy task sleeps 60 s
        _alive(pid) for pid in busy)
    del it


def test_a_factory_the_worker_cannot_import_is_its_error_not_a_death():
    import pickle

    p = ProcessPool(lambda: Counter("t"), 1)
    p.close()
    p._setup = pickle.dumps((_Unimportable(), True))  # unpickling it in the worker fails
    p._procs = [p._start()]
    with pytest.raises(Exception, match="no_such_module"):
        p.map([("who", (1,))])
    p.close()


class _Unimportable:
    def __reduce__(self):
        return (__import__, ("no_such_module_for_the_worker",))
