"""Runs where the data lives: outputs on an S3-compatible server (moto's ThreadedMotoServer on
loopback, as in s3fs's own tests), on embedded Ray, on a real 2-node `ray start` cluster whose nodes
have their own temp and working directories, through kill -9 of the driver and of a node, and as a
`ray job submit` job. Each run's committed files are all a reader sees."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import storage
from pipeline.cli import main
from pipeline.engine.ledger import Ledger
from tests.helpers import kept_ids, write_recipe
from tests.raycluster import RayCluster

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")


@pytest.fixture(scope="module")
def s3():
    """An S3 server on loopback and the environment that points s3fs (and Ray workers) at it:
    credentials and endpoint come only from the standard AWS variables."""
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import fsspec

    fsspec.filesystem("s3", skip_instance_cache=True).makedirs("bucket", exist_ok=True)  # moto state is per process
    yield dict(os.environ, PYTHONPATH=str(ROOT), **env)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


def cli(args: list[str], env: dict, cwd: Path = ROOT, timeout: float = 600, helpers: bool = False):
    """`refinery ARGS` in a fresh process (its own embedded Ray unless --address is given)."""
    pre = "import tests.helpers; " if helpers else ""
    code = f"import sys; {pre}from pipeline.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def ledger_counts(run: str) -> dict:
    return Ledger.from_dict(storage.read_json(storage.join(run, "ledger.json"))).to_dict(times=False)


def no_uncommitted_files(run: str) -> None:
    """Every Parquet file under kept/, rejects/ and keys/ is one the manifest lists (nothing of a killed or
    retried attempt is left for a reader that lists the directory)."""
    manifest = storage.read_json(storage.join(run, "_SUCCESS"))
    listed = {storage.relative(f, run) for sub in ("kept", "rejects", "keys") for f in storage.find(storage.join(run, sub))}
    assert listed == set(manifest["files"])
    assert not storage.exists(storage.join(run, "_state", "lock"))


def light_recipe(tmp_path: Path, name: str, sleep_ms: int = 0) -> str:
    """The sample inputs (paths relative to the repository root, as in mixtures/sample.yaml), a
    cheap per-document stage, optionally a slow one, and a global stage whose spills, work files and
    decisions all live under the output URL."""
    sleep = f"  - stage: test_sleep\n    ms: {sleep_ms}\n" if sleep_ms else ""
    return str(write_recipe(tmp_path / f"{name}.yaml", f"""
name: {name}
output: unused
sources:
  web_jsonl: {{kind: jsonl, paths: ["samples/jsonl/*.jsonl.gz"], batch_size: 8}}
  wet: {{kind: commoncrawl, paths: ["samples/wet/*.warc.wet.gz"], batch_size: 8}}
  cc: {{kind: commoncrawl, paths: ["samples/commoncrawl/*.warc.gz"], batch_size: 8}}
  code: {{kind: code, paths: ["samples/code/*"], batch_size: 8}}
stages:
  - stage: test_min_words
    min_words: 5
{sleep}  - stage: test_exact
"""))


# -- (a) the sample recipe to s3:// on local Ray ------------------------------------------------------
def test_sample_recipe_on_s3_is_identical_to_local_disk(tmp_path, s3, monkeypatch):
    monkeypatch.chdir(ROOT)
    local = tmp_path / "local"
    assert main(["run", "mixtures/sample.yaml", "--out", str(local), "--quiet", "--no-ray"]) == 0
    url = "s3://bucket/sample"
    res = cli(["run", "mixtures/sample.yaml", "--out", url, "--quiet"], s3)
    assert res.returncode == 0, res.stderr[-3000:]
    assert not (ROOT / "s3:").exists()
    assert kept_ids(url) == kept_ids(local)
    assert ledger_counts(url) == ledger_counts(str(local))
    for name in ("blend.bin", "blend.idx", "sources/cc.bin", "sources/code.idx"):
        assert storage.read_bytes(f"{url}/mixture/{name}") == (local / "mixture" / name).read_bytes(), name
    a, b = storage.read_json(f"{url}/mixture/mixture.json"), json.loads((local / "mixture" / "mixture.json").read_text())
    assert a["totals"] == b["totals"] and a["sources"] == b["sources"]
    assert storage.exists(f"{url}/report/report.html") and "shard" in storage.read_text(f"{url}/run.log")
    no_uncommitted_files(url)
    # the report and the mixture read the run from the bucket too
    assert cli(["report", url, "--max-shards", "0"], s3).returncode == 0
    res = cli(["mix", "mixtures/sample.yaml", "--out", url, "--no-ray"], s3)
    assert res.returncode == 0, res.stderr[-2000:]
    assert storage.read_bytes(f"{url}/mixture/blend.bin") == (local / "mixture" / "blend.bin").read_bytes()


# -- (b), (c), (d): a real 2-node cluster ----------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(s3):
    c = RayCluster(env=s3, nodes=2, cpus=1)
    try:
        c.start()
    except Exception:
        c.stop()
        raise
    yield c
    c.stop()


@pytest.fixture(scope="module")
def light_reference(tmp_path_factory) -> tuple[str, list[str]]:
    """The light recipe's kept ids from one in-process run on local disk."""
    tmp = tmp_path_factory.mktemp("light")
    path = light_recipe(tmp, "ref")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        import tests.helpers  # noqa: F401  (registers the test stages)

        assert main(["run", path, "--out", str(tmp / "out"), "--quiet", "--no-ray"]) == 0
    finally:
        os.chdir(cwd)
    return str(tmp / "out"), kept_ids(tmp / "out")


def test_two_node_cluster_writes_to_s3_the_same_kept_ids(tmp_path, s3, cluster, light_reference):
    url = "s3://bucket/cluster"
    res = cli(["run", light_recipe(tmp_path, "b"), "--out", url, "--address", cluster.address, "--workers", "2",
               "--quiet"], cluster.env, helpers=True)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "with 2 worker(s)" in res.stdout
    assert kept_ids(url) == light_reference[1]
    assert ledger_counts(url) == ledger_counts(light_reference[0])
    no_uncommitted_files(url)


def _wait_for_records(url: str, n: int, proc: subprocess.Popen, timeout: float = 300) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = len(storage.listdir(f"{url}/_state/p0"))
        if got >= n:
            return got
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before it could be interrupted: {proc.stderr.read()[-2000:]}")
        time.sleep(0.2)
    raise AssertionError("no shard finished in time")


def test_kill_9_of_the_driver_and_of_a_node_then_rerun_gives_the_same_output(tmp_path, s3, cluster,
                                                                             light_reference):
    path = light_recipe(tmp_path, "c", sleep_ms=600)
    code = "import sys, tests.helpers; from pipeline.cli import main; sys.exit(main(sys.argv[1:]))"

    def start(url: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", code, "run", path, "--out", url, "--address",
                                 cluster.address, "--workers", "2", "--quiet"], cwd=ROOT, env=cluster.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    # the driver
    url = "s3://bucket/killed-driver"
    proc = start(url)
    done = _wait_for_records(url, 2, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert done < 11 and not storage.exists(f"{url}/_SUCCESS")
    res = cli(["run", path, "--out", url, "--address", cluster.address, "--workers", "2", "--quiet"], cluster.env,
              helpers=True)
    assert res.returncode == 0, res.stderr[-3000:]
    assert kept_ids(url) == light_reference[1]
    no_uncommitted_files(url)

    # every process of node 1 (its raylet and the shard worker on it); a replacement node joins
    url = "s3://bucket/killed-node"
    proc = start(url)
    _wait_for_records(url, 1, proc)
    cluster.kill_node(1)
    cluster.add_node()
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    if proc.returncode != 0 or not storage.exists(f"{url}/_SUCCESS"):  # the run may fail; a rerun finishes it
        res = cli(["run", path, "--out", url, "--address", cluster.address, "--workers", "2", "--quiet"],
                  cluster.env, helpers=True)
        assert res.returncode == 0, res.stderr[-3000:]
    assert kept_ids(url) == light_reference[1]
    got = ledger_counts(url)
    got["stages"] = [s for s in got["stages"] if s["stage"] != "test_sleep"]  # it only slows the run down
    assert got == ledger_counts(light_reference[0])
    no_uncommitted_files(url)


def test_ray_job_submit_runs_the_sample_recipe_end_to_end(s3, cluster):
    """The README's route: `ray job submit --working-dir . -- refinery run mixtures/sample.yaml --out
    s3://...` (run, report and mixture, all on the cluster)."""
    url = "s3://bucket/job"
    ray = str(Path(sys.executable).with_name("ray"))
    refinery = str(Path(sys.executable).with_name("refinery"))
    res = subprocess.run([ray, "job", "submit", "--address", cluster.dashboard, "--working-dir", ".", "--",
                          refinery, "run", "mixtures/sample.yaml", "--out", url, "--quiet"],
                         cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert "succeeded" in res.stdout
    assert storage.exists(f"{url}/_SUCCESS") and storage.exists(f"{url}/report/report.md")
    mixture = storage.read_json(f"{url}/mixture/mixture.json")
    assert mixture["totals"]["tokens"] > 0 and storage.exists(f"{url}/mixture/blend.bin")
    no_uncommitted_files(url)


def test_a_second_driver_on_the_same_s3_output_is_refused_with_one_line(s3):
    """One run per output, on an object store: the lock is an exclusive create (a conditional PUT)."""
    from pipeline import storage
    from pipeline.engine.state import RunLock
    from pipeline.errors import ConfigError

    out = "s3://bucket/locked"
    first = RunLock(out, "r.yaml")
    first.acquire()
    try:
        assert storage.create_exclusive(f"{out}/_state/lock", b"{}") is False  # the PUT is conditional
        second = RunLock(out, "r.yaml")
        with pytest.raises(ConfigError, match="is in use by another refinery run") as exc:
            second.acquire()
        assert "\n" not in str(exc.value) and f"pid {os.getpid()}" in str(exc.value)
    finally:
        first.release()
    again = RunLock(out, "r.yaml")
    again.acquire()  # released: the next driver takes it
    again.release()
