"""The command line: help, exit codes, and nothing written on bad configuration."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.helpers import write_jsonl, write_recipe

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_commands(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert "run" in out and "validate" in out


@pytest.mark.slow
def test_bad_config_exits_2_with_one_line_and_writes_nothing(tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x y z"}])
    out = tmp_path / "out"
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages:
  - stage: no_such_stage
""")
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(path), "--no-ray"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "stages[0].stage: unknown stage 'no_such_stage'" in lines[0]
    assert not out.exists()


def test_run_exit_0_and_summary(tmp_path, capsys):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x y z"}, {"text": "a b c d"}])
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
""")
    assert main(["run", str(path), "--no-ray", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "read" in out and "docs in" in out
    assert (tmp_path / "out" / "ledger.json").exists()
    assert main(["validate", str(path)]) == 0


def test_stages_prints_reasons_signals_and_described_config(capsys):
    assert main(["stages"]) == 0
    out = capsys.readouterr().out
    for name in ("langid", "quality", "toxicity", "pii", "exact_dedup", "minhash_dedup", "line_dedup"):
        assert f"\n{name} (" in "\n" + out
    assert main(["stages", "quality"]) == 0
    one = capsys.readouterr().out
    assert one.startswith("quality (per-document)") and "\nlangid" not in one
    assert "gopher_quality_too_few_words" in one and "rps_doc_word_count (int32)" in one
    line = next(x for x in one.splitlines() if "gopher_quality.min_doc_words: 50" in x)
    assert "fewer words" in line


def test_stages_unknown_name_exits_2(capsys):
    assert main(["stages", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown stage 'nope'" in err[0]


def _as_a_terminal() -> None:
    """The child starts with Ctrl-C's default action, as from a terminal. An ignored signal is
    inherited across exec, and Python then installs no KeyboardInterrupt handler: in the full suite
    the test process sometimes ignores SIGINT, and the run never saw the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _held_recipe(tmp_path, ms: int) -> tuple[Path, Path]:
    """12 small shards through a stage that sleeps `ms` per batch and, from the moment the test
    creates the returned hold file, waits for it to go: the run cannot end before the test's
    signal, however loaded the machine (a run that finished first exited 0, not 130)."""
    inp = tmp_path / "in"
    for s in range(12):
        write_jsonl(inp / f"s{s:02d}.jsonl", [{"text": f"shard {s} document {i} words here"} for i in range(10)])
    hold = tmp_path / "hold"
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"], batch_size: 5}}
stages:
  - stage: test_sleep
    ms: {ms}
    hold: {hold}
""")
    return path, hold


def _wait_for_first_part(tmp_path, proc: subprocess.Popen, hold: Path, timeout: float = 300) -> None:
    """Until the run's first part is committed (or the run ended), then hold every later batch."""
    records = tmp_path / "out" / "_state" / "p0"
    deadline = time.time() + timeout
    while time.time() < deadline and not list(records.glob("*.json")) and proc.poll() is None:
        time.sleep(0.05)
    hold.touch()


def _start_a_slow_run(tmp_path, ms: int, *flags: str) -> subprocess.Popen:
    """`refinery run` of the held recipe in a session of its own, returned once its first part is
    committed and the rest held (so a signal lands mid-run)."""
    path, hold = _held_recipe(tmp_path, ms)
    prog = ("import sys, tests.helpers; from pipeline.cli import main; "
            f"sys.exit(main(['run', {str(path)!r}, '--quiet', *{list(flags)!r}]))")
    proc = subprocess.Popen([sys.executable, "-c", prog], cwd=ROOT, start_new_session=True, preexec_fn=_as_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_first_part(tmp_path, proc, hold)
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_is_one_line_and_the_conventional_exit_code(tmp_path, sig, code):
    proc = _start_a_slow_run(tmp_path, 200, "--no-ray")
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, (out, err)
    import re

    ray_start = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+\s+WARNING ")  # Ray's own start-up notes
    lines = [x for x in err.strip().splitlines() if not ray_start.match(x)]
    assert lines == ["refinery: interrupted; rerun to resume"], err
    assert "Traceback" not in out + err and "SIGTERM received" not in err and "logging.cc" not in err


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("held", [False, True], ids=["released", "held"])
def test_interrupt_on_ray_is_one_line_and_the_conventional_exit_code(tmp_path, sig, code, held):
    """The same with an embedded Ray (its own temporary folder): Ctrl-C reaches the driver, Ray's
    own processes and the actors' stage processes alike (one process group), SIGTERM the driver.
    `held`: the stage stays blocked until the driver has exited (the driver ends its actors
    mid-batch)."""
    import shutil
    import tempfile

    path, hold = _held_recipe(tmp_path, 300)
    prog = ("import sys, tests.helpers; from pipeline.cli import main; "
            f"sys.exit(main(['run', {str(path)!r}, '--quiet', '--ray', '--workers', '2']))")
    ray_tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = dict(os.environ, RAY_TMPDIR=ray_tmp)
    proc = subprocess.Popen([sys.executable, "-c", prog], cwd=ROOT, start_new_session=True, env=env,
                            preexec_fn=_as_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_first_part(tmp_path, proc, hold)
        assert proc.poll() is None, proc.communicate()
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C
        else:
            proc.send_signal(sig)  # as `kill` or a scheduler
        if not held:  # the held batches may end
            hold.unlink()
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == code, (out, err)
    import re

    ray_start = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+\s+WARNING ")  # Ray's own start-up notes
    lines = [x for x in err.strip().splitlines() if not ray_start.match(x)]
    assert lines == ["refinery: interrupted; rerun to resume"], err
    assert "Traceback" not in out + err and "SIGTERM received" not in err and "logging.cc" not in err


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_on_worker_processes_is_one_line_and_leaves_no_process(tmp_path, sig, code):
    """The same with `--processes`: the workers (and their stage processes) ignore Ctrl-C and the
    driver ends them; SIGTERM to the driver alone ends them too. Nothing of the run is left."""
    from tests.helpers import group_processes, worker_processes

    proc = _start_a_slow_run(tmp_path, 300, "--processes", "--workers", "2")
    try:
        assert proc.poll() is None, proc.communicate()
        deadline = time.time() + 120  # the second worker may still be starting on a loaded machine
        while len(worker_processes(proc.pid)) < 2 and time.time() < deadline:
            time.sleep(0.1)
        assert len(worker_processes(proc.pid)) == 2
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C
        else:
            proc.send_signal(sig)  # as `kill` or a scheduler
        out, err = proc.communicate(timeout=120)
        deadline = time.time() + 120  # returns as soon as they are gone
        while group_processes(proc.pid) and time.time() < deadline:
            time.sleep(0.1)
        assert group_processes(proc.pid) == []
    finally:
        if proc.poll() is None or group_processes(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, (out, err)
    assert err.strip().splitlines() == ["refinery: interrupted; rerun to resume"], err
    assert "Traceback" not in out + err


@pytest.mark.slow
def test_worker_processes_with_an_address_exit_2_with_one_line_and_write_nothing(tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x y z"}])
    out = tmp_path / "out"
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
""")
    for extra in (["--address", "auto"], ["--ray"], ["--no-ray"]):
        proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(path), "--processes", *extra],
                              capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("refinery: error: ") and extra[0] in lines[0], lines
        assert not out.exists()


@pytest.mark.slow
def test_an_error_in_a_worker_process_is_the_one_line_it_is_in_process(tmp_path):
    """A worker process's own exception (here a full disk) reaches the driver as itself, so the
    command says it in one line with its exit code, as in-process and on Ray."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"document {i} words here"} for i in range(10)])
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"text": "the poison document"}])
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
stage_time_limit: 0
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages:
  - stage: test_fail_on
    word: poison
    path: /full/disk.parquet
""")
    prog = ("import sys, tests.helpers; from pipeline.cli import main; "
            f"sys.exit(main(['run', {str(path)!r}, '--quiet', '--processes', '--workers', '2']))")
    proc = subprocess.run([sys.executable, "-c", prog], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "refinery: output error: No space left on device: /full/disk.parquet (rerun to resume)"]


def test_a_failed_report_is_said_on_the_terminal_and_in_the_exit_code(tmp_path, monkeypatch, capsys):
    import pipeline.report.build as build

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "one two three four"}])
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages: []
""")

    def broken(*a, **k):
        raise ValueError("a bug in the report")

    monkeypatch.setattr(build, "write_report", broken)
    assert main(["run", str(path), "--no-ray", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "report failed" in err and "a bug in the report" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_failed_report_after_retune_is_said_on_the_terminal_and_in_the_exit_code(tmp_path, monkeypatch, capsys):
    import pipeline.report.build as build

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "one two three four five six"}, {"text": "x"}])
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages:
  - stage: quality
    gopher_quality: {{min_doc_words: 3}}
""")
    assert main(["run", str(path), "--no-ray", "--quiet"]) == 0
    capsys.readouterr()

    def broken(*a, **k):
        raise ValueError("a bug in the report")

    monkeypatch.setattr(build, "write_report", broken)
    code = main(["retune", str(tmp_path / "out"), "--out", str(tmp_path / "out2"),
                 "--set", "quality.gopher_quality.min_doc_words=1"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "report failed" in err and "a bug in the report" in err and "Traceback" not in err
    assert (tmp_path / "out2" / "ledger.json").exists()  # the retuned run itself is complete


def test_a_report_without_projection_is_said_on_the_terminal(tmp_path, monkeypatch, capsys):
    import pipeline.report.build as build

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "one two three four"}])
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages: []
""")

    def no_projection(*a, **k):
        raise ValueError("no shard with a known raw size: nothing to project from")

    monkeypatch.setattr(build, "project", no_projection)
    assert main(["run", str(path), "--no-ray", "--quiet"]) == 0  # the report itself is complete
    err = capsys.readouterr().err
    assert "the report has no projection" in err and "Traceback" not in err
    assert "No projection: no shard with a known raw size" in (tmp_path / "out" / "report" / "report.md").read_text()


def test_internal_errors_are_counted_on_the_terminal_and_fail_the_run_over_the_threshold(tmp_path, monkeypatch, capsys):
    import pipeline.sources.jsonl as jsonl

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"document number {i}"} for i in range(4)])
    real = jsonl.unicodedata.normalize

    def buggy(form, text):
        if text.endswith("2"):
            raise KeyError("a refinery bug")
        return real(form, text)

    monkeypatch.setattr(jsonl.unicodedata, "normalize", buggy)
    for rate, code in ((None, 1), (0.5, 0)):
        extra = "" if rate is None else f", max_internal_error_rate: {rate}"
        path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / f'out{code}'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]{extra}}}
stages: []
""")
        assert main(["run", str(path), "--no-ray", "--quiet"]) == code
        err = capsys.readouterr().err
        assert "1 internal error" in err and "web" in err
        assert ("max_internal_error_rate" in err) == (code == 1)


@pytest.mark.slow
def test_stages_into_a_closed_pipe_is_quiet():
    proc = subprocess.run(f"{sys.executable} -m pipeline.cli stages | head -n 1", shell=True,
                          capture_output=True, text=True)
    assert re.fullmatch(r"\w+ \((global|per-document)\)\n", proc.stdout) and proc.stderr == "", proc.stdout


@pytest.mark.slow
def test_the_command_exits_as_python_does(tmp_path):
    """`refinery` (`entry`) ends with Python's ordinary exit: exit handlers run, output flushed into
    a pipe, the command's exit code; only what is alive is frozen out of the final collections."""
    prog = ("import atexit, os, sys\n"
            "from pipeline import cli\n"
            "atexit.register(lambda: os.write(2, b'exit handler ran'))\n"
            "sys.argv = ['refinery'] + sys.argv[1:]\n"
            "cli.entry()\n")
    proc = subprocess.run([sys.executable, "-c", prog, "stages"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "exit handler ran"
    assert "exact_dedup (global)" in proc.stdout and "quality (" in proc.stdout
    proc = subprocess.run([sys.executable, "-c", prog, "validate", str(tmp_path / "missing.yaml")], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("refinery: error:")


@pytest.mark.slow
def test_output_that_cannot_be_written_is_one_line_and_exit_1():
    """A final flush that fails (standard output on a full disk) ends `entry` with one line on
    standard error and exit code 1, never a traceback."""
    prog = ("import errno, io, sys\n"
            "from pipeline import cli\n"
            "class Full(io.RawIOBase):\n"
            "    def writable(self): return True\n"
            "    def write(self, b): raise OSError(errno.ENOSPC, 'No space left on device')\n"
            "sys.stdout = io.TextIOWrapper(io.BufferedWriter(Full(), buffer_size=1 << 20))\n"
            "sys.argv = ['refinery', 'stages']\n"
            "cli.entry()\n")
    proc = subprocess.run([sys.executable, "-c", prog], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "refinery: error: could not write the output: No space left on device\n", proc.stderr


@pytest.mark.slow
def test_an_object_store_that_cannot_be_reached_is_one_line_not_a_traceback(tmp_path):
    """botocore's errors (no endpoint, bad credentials) are not OSErrors: an s3:// output or run that
    could not be reached gave a traceback from `run`, `report`, `retune`, `plan --run` and `mix`."""
    pytest.importorskip("s3fs")
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x y z"}])
    path = write_recipe(tmp_path / "r.yaml", f"""
output: s3://no-bucket/run
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages: []
""")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_MAX_ATTEMPTS": "1",
           "AWS_ENDPOINT_URL": "http://127.0.0.1:1", "PYTHONPATH": str(ROOT)}  # port 1: nothing listens
    for argv, code, says in ((["run", str(path), "--no-ray"], 2, "output: cannot list 's3://no-bucket/run'"),
                             (["report", "s3://no-bucket/run"], 1, "storage error: EndpointConnectionError"),
                             (["plan", "--run", "s3://no-bucket/run", "--target", "1TB"], 1, "storage error")):
        proc = subprocess.run([sys.executable, "-m", "pipeline.cli", *argv], capture_output=True, text=True, env=env,
                              cwd=ROOT)
        assert proc.returncode == code, (argv, proc.stderr)
        assert proc.stderr.count("\n") == 1 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_workers_below_one_is_a_config_error_before_anything_is_written(tmp_path, capsys, workers):
    """--workers 0 or -3 ran as if not given."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x y z"}])
    out = tmp_path / "out"
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages: []
""")
    assert main(["run", str(path), "--no-ray", "--workers", workers]) == 2
    assert capsys.readouterr().err == f"refinery: error: --workers must be at least 1 (got {workers})\n"
    assert not out.exists()


def test_inputs_linked_from_shared_storage_are_read_and_a_run_that_reads_nothing_fails(tmp_path, capsys):
    """Files a glob names that are links into another folder are read; a run whose every input is
    rejected while reading (here: a glob through a link to a folder) says so and exits 1."""
    shared = tmp_path / "shared"
    write_jsonl(shared / "a.jsonl", [{"text": "one two three"}, {"text": "four five six"}])
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").symlink_to(shared / "a.jsonl")
    (tmp_path / "in" / "linked").symlink_to(shared)
    ok = write_recipe(tmp_path / "ok.yaml", f"""
output: {tmp_path / 'ok'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
""")
    assert main(["run", str(ok), "--no-ray", "--quiet"]) == 0
    from tests.helpers import kept_ids

    assert len(kept_ids(tmp_path / "ok")) == 2
    capsys.readouterr()
    bad = write_recipe(tmp_path / "bad.yaml", f"""
output: {tmp_path / 'bad'}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*/*.jsonl"]}}
""")
    assert main(["run", str(bad), "--no-ray", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rejected while reading (outside_root 1)" in err[0]
    assert (tmp_path / "bad" / "_SUCCESS").exists()  # the run and its rejects are written
