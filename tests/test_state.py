"""The output directory is safe: refinery deletes only its own runs, never writes into or over its
inputs, lets one run at a time use an output, notices replaced inputs, and commits shard files so a
killed attempt leaves nothing a reader counts (pipeline/engine/state.py)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import storage
from pipeline.engine import state
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from pipeline.errors import ConfigError
from tests.helpers import kept_ids, write_jsonl, write_recipe

ROOT = Path(__file__).resolve().parents[1]


def inputs(root: Path) -> Path:
    inp = root / "in"
    write_jsonl(inp / "a.jsonl", [{"text": f"document number {i} of a with enough words"} for i in range(12)])
    write_jsonl(inp / "b.jsonl", [{"text": f"another document {i} in b with words"} for i in range(8)]
                + [{"text": "document number 0 of a with enough words"}])
    return inp


def recipe(root: Path, out: str, paths: str | None = None, extra: str = "", top: str = "") -> str:
    paths = paths or f'["{root / "in"}/*.jsonl"]'
    return str(write_recipe(root / "r.yaml", f"""{top}
output: {out}
sources:
  web: {{kind: jsonl, paths: {paths}, batch_size: 4}}
stages:
  - stage: test_min_words
    min_words: 3
{extra}  - stage: test_exact
"""))


# -- --overwrite deletes only what refinery wrote ---------------------------------------------
def test_output_that_contains_the_inputs_is_refused_even_with_overwrite(tmp_path):
    inputs(tmp_path)
    path = recipe(tmp_path, str(tmp_path))  # `--out .` from the directory holding recipe and inputs
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match="contains the input"):
            run(load_recipe(path), executor="local", progress=False, overwrite=overwrite)
    assert sorted(os.listdir(tmp_path)) == ["in", "r.yaml"] and len(os.listdir(tmp_path / "in")) == 2


def test_output_equal_to_or_inside_an_input_directory_is_refused(tmp_path):
    inputs(tmp_path)
    for out in (tmp_path / "in", tmp_path / "in" / "out"):
        path = recipe(tmp_path, str(out), paths=f'["{tmp_path / "in"}"]')
        with pytest.raises(ConfigError, match="input"):
            run(load_recipe(path), executor="local", progress=False, overwrite=True)
    assert sorted(os.listdir(tmp_path / "in")) == ["a.jsonl", "b.jsonl"]


@pytest.mark.slow
def test_overwrite_deletes_refinery_outputs_only(tmp_path):
    inputs(tmp_path)
    out = tmp_path / "out"
    run(load_recipe(recipe(tmp_path, str(out))), executor="local", progress=False)
    (out / "mine.txt").write_text("keep me")
    (out / "kept" / "notes.md").parent.mkdir(exist_ok=True)
    other = recipe(tmp_path, str(out), extra="  - stage: test_min_words\n    label: again\n    min_words: 4\n")
    res = run(load_recipe(other), executor="local", progress=False, overwrite=True)
    assert not res.resumed and (out / "mine.txt").read_text() == "keep me"
    assert res.ledger.stage_order[-1] == "test_exact" and "again" in res.ledger.stage_order


# -- one run per output -------------------------------------------------------------------------
@pytest.mark.slow
def test_second_run_on_the_same_output_gets_one_clear_line(tmp_path):
    inputs(tmp_path)
    out = tmp_path / "out"
    path = recipe(tmp_path, str(out), extra="  - stage: test_sleep\n    ms: 400\n")
    code = ("import sys, tests.helpers; from pipeline.cli import main; "
            f"sys.exit(main(['run', {path!r}, '--quiet', '--no-ray']))")
    first = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "_state" / "run.json").exists():
        time.sleep(0.05)
    second = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    _, err1 = first.communicate(timeout=300)
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "is in use by another refinery run" in lines[0] and f"pid {first.pid}" in lines[0]
    assert first.returncode == 0, err1
    assert not (out / "_state" / "lock").exists()
    assert Ledger.read(str(out / "ledger.json")).check() == []


def test_lock_of_a_dead_driver_is_taken_over(tmp_path):
    inputs(tmp_path)
    out = tmp_path / "out"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    lock = {"host": socket.gethostname(), "pid": int(dead.stdout), "started": time.time(), "heartbeat": time.time()}
    (out / "_state").mkdir(parents=True)
    (out / "_state" / "lock").write_text(json.dumps(lock))  # killed -9 before it wrote anything else
    res = run(load_recipe(recipe(tmp_path, str(out))), executor="local", progress=False)
    assert not res.resumed and kept_ids(out)
    # another host's lock counts until its heartbeat is LEASE_SECONDS old
    lock.update(host="elsewhere", pid=1)
    (out / "_state" / "lock").write_text(json.dumps(lock))
    with pytest.raises(ConfigError, match="in use by another refinery run"):
        run(load_recipe(recipe(tmp_path, str(out))), executor="local", progress=False)
    lock["heartbeat"] = time.time() - state.LEASE_SECONDS - 1
    (out / "_state" / "lock").write_text(json.dumps(lock))
    assert run(load_recipe(recipe(tmp_path, str(out))), executor="local", progress=False).resumed


# -- a replaced input is noticed and named ------------------------------------------------------
@pytest.mark.slow
def test_replaced_input_is_named_on_rerun(tmp_path):
    inp = inputs(tmp_path)
    out = tmp_path / "out"
    path = recipe(tmp_path, str(out))
    run(load_recipe(path), executor="local", progress=False)
    write_jsonl(inp / "b.jsonl", [{"text": f"replaced document {i} with other words"} for i in range(8)])
    with pytest.raises(ConfigError, match=r"input changed: web:b\.jsonl \(size="):
        run(load_recipe(path), executor="local", progress=False)
    write_jsonl(inp / "c.jsonl", [{"text": "a new file with some words"}])
    with pytest.raises(ConfigError, match=r"new input: web:c\.jsonl"):
        run(load_recipe(path), executor="local", progress=False)
    res = run(load_recipe(path), executor="local", progress=False, overwrite=True)
    assert res.ledger.total("read").docs_in == 12 + 8 + 1


# -- an output inside an input glob is never read back -------------------------------------------
def test_output_inside_an_input_glob_is_not_read_back(tmp_path):
    inputs(tmp_path)
    out = tmp_path / "in" / "out"
    path = recipe(tmp_path, str(out), paths=f'["{tmp_path / "in"}/**"]')
    first = run(load_recipe(path), executor="local", progress=False)
    assert first.ledger.total("read").docs_in == 21
    again = run(load_recipe(path), executor="local", progress=False)
    assert again.resumed and again.ledger.to_dict(times=False) == first.ledger.to_dict(times=False)


# -- commit protocol -----------------------------------------------------------------------------------
def test_uncommitted_attempt_files_are_never_counted(tmp_path):
    inputs(tmp_path)
    out = tmp_path / "out"
    path = recipe(tmp_path, str(out), top="keep_work: true")
    clean = run(load_recipe(path), executor="local", progress=False)
    ids = kept_ids(out)
    manifest = json.loads((out / "_SUCCESS").read_text())
    assert manifest["files"] and all(state.ATTEMPT_FILE.match(os.path.basename(f)) for f in manifest["files"])
    assert sorted(str(p.relative_to(out)) for p in out.glob("kept/*.parquet")) == \
        sorted(f for f in manifest["files"] if f.startswith("kept/"))
    # Pretend the run was killed: no manifest, shard 1 of the last phase without a record, and a
    # half-written attempt of shard 1 plus a stray attempt of shard 0 that lost its race.
    (out / "_SUCCESS").unlink()
    (out / "_state" / "p1" / "part-00001.json").unlink()
    stray = [out / "kept" / "part-00001-0badf00d.parquet", out / "kept" / "part-00000-deadbeef.parquet"]
    for p in stray:
        p.write_bytes(b"PAR1 cut short")
    with pytest.raises(OSError, match="not finished"):
        storage.committed_files(str(out), "kept")
    res = run(load_recipe(path), executor="local", progress=False)
    assert res.resumed and res.ledger.to_dict(times=False) == clean.ledger.to_dict(times=False)
    assert not any(p.exists() for p in stray) and kept_ids(out) == ids
    assert sorted(os.path.basename(f) for f in storage.committed_files(str(out), "kept")) == \
        sorted(p.name for p in out.glob("kept/*.parquet"))


# -- outputs at fsspec URLs -----------------------------------------------------------------------
@pytest.mark.slow
def test_memory_and_file_urls_give_the_local_result_and_no_stray_folder(tmp_path, monkeypatch):
    inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    local = run(load_recipe(recipe(tmp_path, str(tmp_path / "local"))), executor="local", progress=False)
    url = "memory://refinery-test/run"
    try:
        res = run(load_recipe(recipe(tmp_path, url)), executor="local", progress=False)
        assert res.ledger.to_dict(times=False) == local.ledger.to_dict(times=False)
        assert kept_ids(url) == kept_ids(tmp_path / "local")
        assert storage.exists(url + "/_SUCCESS") and not storage.exists(url + "/_work")
        assert run(load_recipe(recipe(tmp_path, url)), executor="local", progress=False).resumed
    finally:
        storage.rmtree("memory://refinery-test")
    res = run(load_recipe(recipe(tmp_path, f"file://{tmp_path}/viafile")), executor="local", progress=False)
    assert kept_ids(tmp_path / "viafile") == kept_ids(tmp_path / "local")
    assert sorted(os.listdir(tmp_path)) == ["in", "local", "r.yaml", "viafile"]
