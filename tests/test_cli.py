"""The command line: help, exit codes, and nothing written on bad configuration."""
import subprocess
import sys

from pipeline.cli import main
from tests.helpers import write_jsonl, write_recipe


def test_help_lists_commands(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert "run" in out and "validate" in out


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


def test_stages_into_a_closed_pipe_is_quiet():
    proc = subprocess.run(f"{sys.executable} -m pipeline.cli stages | head -n 1", shell=True,
                          capture_output=True, text=True)
    assert proc.stdout.startswith("exact_dedup (global)") and proc.stderr == ""
