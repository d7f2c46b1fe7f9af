"""The ledger's CPU rows add up to the run's CPU: the crawl reader's extraction process is booked to
read (it was left out, though it is most of a crawl run's CPU), the stages' process to its stages,
and the driver has its own row."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.run_cpu import WORKERS, RunCpu
from pipeline.engine.runner import run
from pipeline.sources import sandbox
from pipeline.sources.extract import EXTRACTION_PROCESS
from tests.helpers import write_recipe

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_extraction_process_is_booked_to_read_and_the_rows_add_up(tmp_path):
    path = _cc_recipe(tmp_path)
    recipe = load_recipe(str(path))
    own0, ext0 = time.process_time() + sandbox.all_children_cpu(), sandbox.children_cpu(EXTRACTION_PROCESS)
    led = run(recipe, executor="local", progress=False).ledger
    extraction = sandbox.children_cpu(EXTRACTION_PROCESS) - ext0
    measured = time.process_time() + sandbox.all_children_cpu() - own0
    assert extraction > 0.1
    assert led.total("read").cpu_s >= extraction  # the extraction child's CPU is read's
    assert led.total("langid").cpu_s > 0
    assert "driver" in led.overhead
    # in one process: every CPU-second of the run (its sandbox children included) is on some row
    assert 0.8 * measured <= led.cpu_seconds() <= 1.02 * measured, (led.cpu_seconds(), measured)


@pytest.mark.slow
def test_a_sandbox_counts_its_childrens_cpu_across_restarts():
    import functools

    box = sandbox.Sandbox(functools.partial(_spinner), time_limit=30, name="refinery-test-cpu")
    try:
        box(0.3)
        first = box.cpu_seconds()
        assert first >= 0.25
        box.close()  # a restart: the ended child's CPU stays counted
        box(0.3)
        assert box.cpu_seconds() >= first + 0.25
        assert sandbox.children_cpu("refinery-test-cpu") >= box.cpu_seconds() - 1e-6
    finally:
        box.close()


def _spinner():
    def spin(seconds: float) -> float:
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
        return seconds
    return spin


def _cc_recipe(tmp_path: Path) -> Path:
    return write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  cc: {{kind: commoncrawl, paths: ["{ROOT}/samples/commoncrawl/*.warc.gz"]}}
stage_time_limit: 30
stages:
  - stage: langid
  - stage: exact_dedup
""")


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["processes", "ray"])
def test_worker_processes_rows_add_up_to_the_cpu_measured_from_outside(tmp_path, executor):
    """Each worker process's start-up (interpreter, imports, building the stages) and idle CPU has
    its own row, so the rows add up to the CPU of the run's whole process tree, measured by
    getrusage in a subreaper (benchmarks/ledger_cpu.py). CPU seconds against CPU seconds: a loaded
    machine slows both alike."""
    from benchmarks.ledger_cpu import measure

    r = measure(str(_cc_recipe(tmp_path)), executor, 2)
    assert r["rows"][WORKERS] > 0.2  # two interpreters' imports at least
    assert 0.9 * r["measured"] <= r["ledger"] <= 1.05 * r["measured"], r


def test_the_worker_row_is_their_cpu_less_what_was_booked_on_them():
    led = Ledger(["read"])
    led.add_shard_work(10.0, 5.0)
    led.add_global_step("dedup", 3.0, 1.0, driver_cpu_s=1.0)  # 2 of it on the workers
    RunCpu().book(led, resumed_shard_cpu=4.0, in_process=False, own_ray=False,
                  workers=[(101, 7.5), (102, 3.0)])  # 10.5 in all; 6 + 2 booked on them this run
    assert led.overhead[WORKERS] == pytest.approx(2.5)
    assert "driver" in led.overhead


def test_in_process_there_is_no_worker_row():
    led = Ledger(["read"])
    RunCpu().book(led, resumed_shard_cpu=0.0, in_process=True, own_ray=False)
    assert WORKERS not in led.overhead


def test_a_resumed_run_books_the_shard_work_of_its_earlier_attempt_apart(tmp_path, monkeypatch):
    """The records a resumed run reuses carry shard work done by an earlier process: it is taken out
    of what the driver's row is measured against (it read 0 once the records' ledgers were spooled)."""
    import json

    recipe = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  web: {{kind: jsonl, paths: ["{ROOT}/samples/jsonl/*.jsonl.gz"]}}
stage_time_limit: 0
stages:
  - stage: langid
  - stage: exact_dedup
""")
    run(load_recipe(str(recipe)), executor="local", progress=False)
    out = tmp_path / "out"
    earlier = sum(json.loads(p.read_text())["ledger"]["shard_work"]["cpu_seconds"] for p in (out / "_state").glob("p*/*.json"))
    (out / "_SUCCESS").unlink()  # killed before its manifest: every part resumes from its records
    seen = []
    book = RunCpu.book
    monkeypatch.setattr(RunCpu, "book", lambda self, led, resumed, **kw: (seen.append(resumed), book(self, led, resumed, **kw)))
    run(load_recipe(str(recipe)), executor="local", progress=False)
    assert earlier > 0 and seen == [pytest.approx(earlier)]
