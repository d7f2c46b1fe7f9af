"""The per-record sandbox: results come back, a slow record is killed at the limit, a dying or
out-of-memory child is reported and replaced, and the next record is served."""
from __future__ import annotations

import functools
import time

import pytest

from pipeline.sources.sandbox import Sandbox, SandboxCrash, SandboxTimeout


def _work(kind: str):
    import os

    def fn(arg):
        if arg == "sleep":
            time.sleep(60)
        if arg == "die":
            os._exit(3)
        if arg == "hog":
            return len(bytearray(1 << 31))  # 2 GiB under a 512 MiB cap
        if arg == "raise":
            raise ValueError("bad record")
        return f"{kind}:{arg}"
    return fn


@pytest.fixture
def box():
    sb = Sandbox(functools.partial(_work, "ok"), time_limit=5.0, memory_limit=512 << 20)
    yield sb
    sb.close()


def test_results_come_back_in_order(box):
    assert [box(str(i)) for i in range(5)] == [f"ok:{i}" for i in range(5)]


def test_the_child_carries_its_name_in_its_command_line():
    """What `ps` and the benchmarks' CPU accounting tell the extraction and stages children apart by."""
    sb = Sandbox(functools.partial(_work, "ok"), time_limit=5.0, name="refinery-test-child")
    try:
        assert sb("x") == "ok:x"
        with open(f"/proc/{sb._proc.pid}/cmdline", "rb") as fh:
            assert fh.read().split(b"\0")[-2] == b"refinery-test-child"
    finally:
        sb.close()


@pytest.mark.slow
def test_a_slow_record_is_stopped_at_the_limit_and_the_next_is_served(box):
    t0 = time.monotonic()
    with pytest.raises(SandboxTimeout, match="more than 5 s"):
        box("sleep")
    assert time.monotonic() - t0 < 30
    assert box("after") == "ok:after"


def test_a_dying_child_is_reported_and_replaced(box):
    with pytest.raises(SandboxCrash, match="died"):
        box("die")
    assert box("after") == "ok:after"


def test_memory_is_capped(box):
    with pytest.raises(SandboxCrash, match="out of memory"):
        box("hog")
    assert box("after") == "ok:after"


def test_an_exception_in_the_function_is_raised_with_its_message(box):
    with pytest.raises(RuntimeError, match="ValueError: bad record"):
        box("raise")
    assert box("after") == "ok:after"


def test_a_pickled_sandbox_starts_its_own_child(box):
    import pickle

    assert box("a") == "ok:a"
    copy = pickle.loads(pickle.dumps(box))
    try:
        assert copy("b") == "ok:b" and box("c") == "ok:c"
    finally:
        copy.close()


def _broken_factory():
    raise ImportError("no such extractor")


def test_a_child_that_cannot_start_is_reported():
    sb = Sandbox(_broken_factory, time_limit=5.0)
    try:
        with pytest.raises(SandboxCrash, match="failed to start"):
            sb("x")
    finally:
        sb.close()


def test_a_child_stuck_on_a_record_dies_with_its_killed_parent(tmp_path):
    """A worker killed (kill -9, ray.kill) while its child is busy must not leave the child behind."""
    import os
    import signal
    import subprocess
    import sys

    pid_file = tmp_path / "child.pid"
    code = f"""
import functools, sys, time
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_sandbox import _work
from pipeline.sources.sandbox import Sandbox
box = Sandbox(functools.partial(_work, "ok"), time_limit=600)
box("warm")
open({str(pid_file)!r}, "w").write(str(box._proc.pid))
box("sleep")
"""
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    time.sleep(0.5)  # the child is inside its 60 s record
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{child}/stat") as fh:  # reaped by init soon; a zombie is already dead
            if fh.read().split(")")[-1].split()[0] == "Z":
                return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the child outlived its killed parent")


def _broken():
    raise FileNotFoundError("no model at /nowhere/model.bin")


def test_a_set_up_error_is_raised_with_its_message_not_as_a_crash():
    from pipeline.sources.sandbox import SandboxSetupError

    sb = Sandbox(_broken, time_limit=5.0)
    try:
        with pytest.raises(SandboxSetupError, match="failed to start: FileNotFoundError: no model at /nowhere/model.bin"):
            sb("x")
    finally:
        sb.close()


# -- several records in one round trip (`Sandbox.map`) ---------------------------------------------
def _answers(results: list) -> list:
    """Results with exceptions as (type, message): comparable."""
    return [(type(r).__name__, str(r)) if isinstance(r, BaseException) else r for r in results]


def _called(box: Sandbox, items: list) -> list:
    out = []
    for item in items:
        try:
            out.append(box(item))
        except (SandboxCrash, SandboxTimeout, RuntimeError) as exc:
            out.append(exc)
    return _answers(out)


def test_map_answers_every_item_as_a_call_does(box):
    items = ["a", "raise", "b", "c"]
    assert _answers(box.map(items)) == _called(box, items) == [
        "ok:a", ("RuntimeError", "ValueError: bad record"), "ok:b", "ok:c"]
    assert box.map([]) == [] and box.map(["one"]) == ["ok:one"]


@pytest.mark.slow
@pytest.mark.parametrize("bad, error", [("die", "SandboxCrash"), ("hog", "SandboxCrash"), ("sleep", "SandboxTimeout")])
def test_map_a_record_that_kills_fails_or_outlasts_the_child_is_answered_in_its_place(box, bad, error):
    """The batch is redone one record at a time: the others get their results, the bad one its error."""
    results = box.map(["a", bad, "b"])
    assert results[0] == "ok:a" and results[2] == "ok:b"
    assert type(results[1]).__name__ == error
    assert box("after") == "ok:after"


def test_map_the_child_stops_a_record_at_the_limit_itself():
    """Inside a batch the parent does not wait per record: the child's own timer (SIGALRM at its
    default action, which ends the process even inside C code) stops the record at the limit."""
    import signal

    from pipeline.sources.sandbox import _Batch

    sb = Sandbox(functools.partial(_work, "ok"), time_limit=60.0)
    try:
        assert sb("warm") == "ok:warm"
        sb._send.send(_Batch(["a", "sleep", "b"], 0.5))
        assert sb._proc.wait(timeout=30) == -signal.SIGALRM
    finally:
        sb.close()


def test_map_on_a_child_that_cannot_start_gives_each_item_the_error_a_call_gives():
    sb = Sandbox(_broken, time_limit=5.0)
    try:
        results = sb.map(["x", "y"])
        assert [type(r).__name__ for r in results] == ["SandboxSetupError"] * 2
        assert "no model at /nowhere/model.bin" in str(results[0])
    finally:
        sb.close()


def test_a_child_whose_parent_is_gone_before_set_up_leaves_quietly():
    """Ctrl-C at a run's start can end a worker before it sends its child the set-up message: the
    child then ends without a traceback (one reached the user through Ray's log, in
    tests/test_cli.py's interrupt test)."""
    import subprocess
    import sys

    prog = ("import os; from pipeline.sources.sandbox import _child_main; r, w = os.pipe(); os.close(w); "
            "_, out = os.pipe(); _child_main(r, out)")
    done = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""


def test_a_child_whose_parent_left_before_it_was_ready_ends_without_a_traceback():
    """A run stopped while its stage processes were starting: the child's "ready" met a closed pipe
    and printed a BrokenPipeError traceback under the driver's one-line message."""
    import os
    import subprocess
    import sys
    from multiprocessing.connection import Connection

    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    code = f"from pipeline.sources.sandbox import _child_main; _child_main({to_child_r}, {to_parent_w})"
    proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=(to_child_r, to_parent_w),
                            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    os.close(to_child_r)
    os.close(to_parent_w)
    os.close(to_parent_r)  # the parent is gone before the child answers
    Connection(to_child_w, readable=False).send((dict, 0, False))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err, err
