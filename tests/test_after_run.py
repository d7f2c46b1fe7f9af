"""What `refinery run` does after the stages: the mixture's failures keep the run and its report
(exit 1), a rerun of a finished run does nothing, a failed mixture leaves nothing half-written."""
import json
import os

from pipeline.cli import main
from tests.helpers import write_jsonl, write_recipe


def _recipe(tmp_path, mixture: str) -> str:
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"document number {i} has some words in it"} for i in range(20)])
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"text": "tiny"} for _ in range(5)])
    return str(write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  a: {{kind: jsonl, paths: ["{tmp_path}/in/a.jsonl"]}}
  b: {{kind: jsonl, paths: ["{tmp_path}/in/b.jsonl"]}}
stages:
  - stage: test_min_words
    min_words: 3
mixture:
{mixture}
"""))


def test_a_mixture_bucket_with_no_kept_documents_keeps_the_run_and_report_and_exits_1(tmp_path, capsys):
    path = _recipe(tmp_path, "  sources:\n    a: {weight: 0.5}\n    b: {weight: 0.5}\n  tokenizer: cl100k_base\n")
    assert main(["run", path, "--no-ray", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the mixture failed" in err[0] and "sources.b" in err[0], err
    out = tmp_path / "out"
    assert (out / "_SUCCESS").exists() and (out / "report" / "report.md").exists()
    assert not (out / "mixture" / "tokens").exists()


def test_a_budget_the_run_cannot_meet_leaves_no_tokens_and_a_retry_into_the_same_out_works(tmp_path, capsys):
    path = _recipe(tmp_path, "  sources:\n    a: {weight: 1.0}\n  budget: 100000\n  max_epochs: 1\n"
                             "  rescale: false\n  tokenizer: cl100k_base\n")
    assert main(["run", path, "--no-ray", "--quiet"]) == 1
    assert "budget" in capsys.readouterr().err
    mix = tmp_path / "out" / "mixture"
    assert not (mix / "tokens").exists() and not (mix / "mixture.json").exists()
    fixed = open(path).read().replace("budget: 100000", "budget: all")
    open(path, "w").write(fixed)
    assert main(["mix", path, "--out", str(tmp_path / "out"), "--no-ray"]) == 0
    assert json.loads((mix / "mixture.json").read_text())["totals"]["documents"] == 20


def test_rerunning_a_finished_run_says_so_and_rebuilds_nothing(tmp_path, capsys):
    path = _recipe(tmp_path, "  sources:\n    a: {weight: 1.0}\n  tokenizer: cl100k_base\n")
    assert main(["run", path, "--no-ray", "--quiet"]) == 0
    built = tmp_path / "out" / "mixture" / "mixture.json"
    stamp, first = os.stat(built).st_mtime_ns, json.loads(built.read_text())["totals"]
    capsys.readouterr()
    assert main(["run", path, "--quiet"]) == 0  # without --no-ray: nothing may start Ray either
    out = capsys.readouterr().out
    assert "already complete" in out and "done in" not in out
    assert os.stat(built).st_mtime_ns == stamp
    # a finished run whose mixture is missing (deleted, or it failed before) gets it built
    import shutil
    shutil.rmtree(built.parent)
    assert main(["run", path, "--no-ray", "--quiet"]) == 0
    assert json.loads(built.read_text())["totals"] == first


def test_hugging_face_datasets_loads_the_kept_documents_and_each_stages_rejects(tmp_path, monkeypatch):
    datasets = __import__("pytest").importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"document number {i % 7} has some words in it"} for i in range(20)])
    path = str(write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  a: {{kind: jsonl, paths: ["{tmp_path}/in/a.jsonl"]}}
stages:
  - stage: exact_dedup
  - stage: minhash_dedup
"""))
    assert main(["run", path, "--no-ray", "--quiet"]) == 0
    out = tmp_path / "out"
    assert (out / "keys").exists()  # the private keys a retune reads: no config names them
    kept = datasets.load_dataset(str(out), split="train")
    assert kept.num_rows == 7 and set(kept["drop_reason"]) == {None}
    rej = datasets.load_dataset(str(out), "rejects-exact_dedup", split="train")
    assert rej.num_rows == 13 and set(rej["drop_reason"]) == {"exact_duplicate"}
    assert (out / "README.md").read_text().startswith("---\nconfigs:")
