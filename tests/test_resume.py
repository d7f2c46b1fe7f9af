"""Runs survive a killed driver and a lost worker with nothing lost and nothing doubled."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from tests.helpers import kept_ids, write_jsonl, write_recipe

ROOT = Path(__file__).resolve().parents[1]


def many_shards(tmp_path: Path, n: int = 16) -> Path:
    inp = tmp_path / "in"
    for s in range(n):
        docs = [{"text": f"shard {s} document {i} " + "word " * (i % 7)} for i in range(20)]
        docs += [{"text": "shared duplicate text across shards"}]
        write_jsonl(inp / f"s{s:02d}.jsonl", docs)
    return inp


def recipe_for(tmp_path: Path, out: str, extra: str = "") -> str:
    inp = tmp_path / "in"
    return str(write_recipe(tmp_path / f"{out}.yaml", f"""
output: {tmp_path / out}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"], batch_size: 5}}
stages:
  - stage: test_min_words
    min_words: 5
{extra}  - stage: test_exact
  - stage: test_min_words
    label: after
    min_words: 6
"""))


def kept_table(out: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(f) for f in sorted((out / "kept").glob("*.parquet"))])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["--no-ray", "--processes"])
def test_kill_9_driver_then_resume_gives_the_uninterrupted_result(tmp_path, mode):
    """With `--processes`, only the driver is killed (as the OOM killer would): its worker
    processes and their stage processes end with it, and the resumed run is the same."""
    from tests.helpers import group_processes, worker_processes

    many_shards(tmp_path)
    clean = run(load_recipe(recipe_for(tmp_path, "clean")), executor="local", progress=False)

    path = recipe_for(tmp_path, "killed", extra="  - stage: test_sleep\n    ms: 150\n")
    out = tmp_path / "killed"
    code = ("import sys, tests.helpers; from pipeline.cli import main; "
            f"sys.exit(main(['run', {path!r}, '--quiet', {mode!r}, '--workers', '2']))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = out / "_state" / "p0"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(records.glob("*.json"))) < 3:
        time.sleep(0.1)
    if mode == "--processes":
        assert len(worker_processes(proc.pid)) == 2
        proc.kill()
        deadline = time.time() + 60  # returns as soon as they are gone
        while group_processes(proc.pid) and time.time() < deadline:
            time.sleep(0.1)
        assert group_processes(proc.pid) == [], "the workers must end with their driver"
    else:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(records.glob("*.json")))
    parts = 4 if mode == "--no-ray" else 8  # 16 files on 1 worker (--no-ray) or 2 (runner.part_limits)
    assert 3 <= done_before < parts, "the run must be killed in the middle of phase 0"
    assert not (out / "ledger.json").exists()

    resumed = run(load_recipe(path), executor="local", progress=False, workers=2) if mode == "--no-ray" else \
        run(load_recipe(path), executor="processes", progress=False, workers=2)
    assert resumed.resumed
    assert kept_ids(out) == kept_ids(tmp_path / "clean")
    assert kept_table(out).drop_columns([]).equals(kept_table(tmp_path / "clean"))
    led = Ledger.read(str(out / "ledger.json")).to_dict(times=False)
    expected = clean.ledger.to_dict(times=False)
    # same ledger, with the extra sleep stage (which rejects nothing) in between
    led["stages"] = [s for s in led["stages"] if s["stage"] != "test_sleep"]
    assert led == expected
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


@pytest.mark.slow
def test_lost_worker_is_replaced_and_output_is_identical(tmp_path, ray_local):
    many_shards(tmp_path, n=6)
    run(load_recipe(recipe_for(tmp_path, "clean")), executor="local", progress=False)
    marker = tmp_path / "crashed.pid"
    path = recipe_for(tmp_path, "crashy", extra=f"  - stage: test_crash_once\n    marker: {marker}\n")
    res = run(load_recipe(path), workers=2, progress=False)
    assert marker.exists(), "a worker process must have died"
    assert kept_ids(tmp_path / "crashy") == kept_ids(tmp_path / "clean")
    assert kept_table(tmp_path / "crashy").equals(kept_table(tmp_path / "clean"))
    assert res.ledger.check() == []
    assert res.ledger.total("read").docs_in == 6 * 21


@pytest.mark.slow
def test_a_killed_worker_process_is_replaced_and_output_is_identical(tmp_path):
    """`--processes`: a worker process killed mid-part (SIGKILL, as the OOM killer does) is started
    again and its parts redone; the output is the uninterrupted run's."""
    from tests.helpers import group_processes, worker_processes

    many_shards(tmp_path)
    clean = run(load_recipe(recipe_for(tmp_path, "clean")), executor="local", progress=False)
    path = recipe_for(tmp_path, "killed", extra="  - stage: test_sleep\n    ms: 150\n")
    out = tmp_path / "killed"
    code = ("import sys, tests.helpers; from pipeline.cli import main; "
            f"sys.exit(main(['run', {path!r}, '--quiet', '--processes', '--workers', '2']))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        records = out / "_state" / "p0"
        deadline = time.time() + 120
        while time.time() < deadline and not list(records.glob("*.json")) and proc.poll() is None:
            time.sleep(0.05)
        victims = worker_processes(proc.pid)
        assert len(victims) == 2 and len(list(records.glob("*.json"))) < 8, "kill it in the middle of phase 0"
        os.kill(victims[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err
    assert group_processes(proc.pid) == []
    log = (out / "run.log").read_text()
    assert f"worker process {victims[0]} died (killed by signal 9)" in log
    assert kept_ids(out) == kept_ids(tmp_path / "clean")
    assert kept_table(out).equals(kept_table(tmp_path / "clean"))
    led = Ledger.read(str(out / "ledger.json")).to_dict(times=False)
    led["stages"] = [s for s in led["stages"] if s["stage"] != "test_sleep"]
    assert led == clean.ledger.to_dict(times=False)


@pytest.mark.slow
def test_output_error_marks_nothing_complete_and_rerun_finishes(tmp_path, monkeypatch, capsys):
    import errno

    from pipeline.engine import worker
    from pipeline.cli import main

    many_shards(tmp_path, n=4)
    path = recipe_for(tmp_path, "full")
    real = worker.ShardOutputs.commit
    calls = {"n": 0}

    def disk_full(self):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device", "kept/part-00002.parquet")
        return real(self)

    monkeypatch.setattr(worker.ShardOutputs, "commit", disk_full)
    assert main(["run", path, "--no-ray", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "output error: No space left on device: kept/part-00002.parquet" in err
    records = sorted(p.name for p in (tmp_path / "full" / "_state" / "p0").glob("*.json"))
    assert records == ["part-00000.json", "part-00001.json"]
    monkeypatch.setattr(worker.ShardOutputs, "commit", real)
    assert main(["run", path, "--no-ray", "--quiet"]) == 0
    assert Ledger.read(str(tmp_path / "full" / "ledger.json")).total("read").docs_in == 4 * 21
