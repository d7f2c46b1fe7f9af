"""`refinery plan --run RUN --target SIZE`: does a run reach the training target, and what to relax."""
from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline.errors import ConfigError
from pipeline.planner import _bootstrap, plan_run
from pipeline.report.build import write_report
from tests.test_retune import ROOT, _full


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = _full(tmp_path_factory.mktemp("plan"), "base", {})
    write_report(out)
    return out


def test_bootstrap_ratio():
    point, lo, hi = _bootstrap({"a": 10.0, "b": 30.0}, {"a": 100.0, "b": 100.0}, 1000.0)
    assert point == pytest.approx(200.0) and lo <= point <= hi and lo >= 100.0 and hi <= 300.0


@pytest.mark.slow
def test_reached_and_short(run):
    small = plan_run(run, target_tokens=1e9)
    assert small.reaches and small.shortfall_tokens == 0
    big = plan_run(run, target_tokens=small.unique_tokens * 4 * 1.02)  # 2% more than the run gives at 4 epochs
    assert not big.reaches and big.shortfall_tokens == pytest.approx(small.unique_tokens * 0.02, rel=1e-6)
    assert big.relaxations and all(r.tokens > 0 and r.lo <= r.tokens <= r.hi for r in big.relaxations)
    reaching = [r.reaches for r in big.relaxations]
    assert reaching == sorted(reaching, reverse=True)  # the ones that reach come first
    assert plan_run(run, target_tokens=small.unique_tokens * 2.2, max_epochs=2).reaches is False
    assert plan_run(run, target_tokens=small.unique_tokens * 1.9, max_epochs=2).reaches


@pytest.mark.slow
def test_cli(run, tmp_path):
    def plan(*args):
        return subprocess.run([sys.executable, "-m", "pipeline.cli", "plan", *args], capture_output=True, text=True,
                              cwd=ROOT, env={"PYTHONPATH": ROOT, "PATH": ""})
    r = plan("--run", run, "--target", "100TB")
    assert r.returncode == 0 and "SHORT by" in r.stdout and "refinery retune" in r.stdout, r.stderr
    assert "100 TB of clean text read as training text" in r.stdout and "--max-epochs 1 reads the target as unique text" in r.stdout
    assert plan("--run", run, "--target", "lots").returncode == 2
    r = plan("--run", str(tmp_path), "--target", "1TB")
    assert r.returncode == 2 and "refinery report" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(ConfigError):
        plan_run(run)
