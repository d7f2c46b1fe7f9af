"""benchmarks/report_cost.py: the report's cost, one checkout against another, and the check that
both write the same report files."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import report_cost  # noqa: E402
from tests.report_helpers import doc, write_run  # noqa: E402


def test_same_tree_names_every_difference(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side / "sub").mkdir(parents=True)
        (tmp_path / side / "same.md").write_text("x")
        (tmp_path / side / "sub" / "f.json").write_text("1" if side == "a" else "2")
    (tmp_path / "a" / "only.svg").write_text("y")
    diff = report_cost.same_tree(str(tmp_path / "a"), str(tmp_path / "b"))
    assert sorted(Path(d).name for d in diff) == ["f.json", "only.svg"]


@pytest.mark.slow
def test_a_checkout_against_itself_writes_the_same_report(tmp_path, capsys):
    run = write_run(tmp_path / "run", [{"source": "web", "raw_bytes": 1000, "kept": [
        doc("web", 0, i, f"The quick brown fox {i} jumps over the lazy dog.", lang="en") for i in range(3)],
        "rejects": {"langid": [(doc("web", 0, 9, "Der schnelle braune Fuchs", lang="de"), "language_not_allowed")]}}])
    assert report_cost.main([str(run), "--before", str(ROOT), "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "report files identical" in out and out.count("report CPU-s median") == 2
    assert not (run / "report").exists()  # the run itself is left as it was
