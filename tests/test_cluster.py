"""Same answer everywhere: the sample recipe (with its global dedup stages) gives exactly the same
kept ids in-process with one worker and on a 2-node Ray cluster (ray.cluster_utils) with two."""
import os
from pathlib import Path

import pytest

from pipeline.engine.recipe import load_recipe
from pipeline.engine.runner import run
from tests.helpers import kept_ids

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_two_node_cluster_matches_single_worker(tmp_path):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cwd = os.getcwd()
    os.chdir(ROOT)  # the sample recipe's paths are relative to the repository root
    try:
        recipe = load_recipe("mixtures/sample.yaml", output=str(tmp_path / "one"))
        one = run(recipe, executor="local", progress=False)
        assert one.ledger.total("exact_dedup").rejected_docs > 0
        assert one.ledger.total("minhash_dedup").rejected_docs > 0
        single = kept_ids(tmp_path / "one")

        if ray.is_initialized():
            ray.shutdown()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        cluster.add_node(num_cpus=1)
        try:
            ray.init(address=cluster.address)
            cluster.wait_for_nodes()
            assert len([n for n in ray.nodes() if n["Alive"]]) == 2
            recipe = load_recipe("mixtures/sample.yaml", output=str(tmp_path / "two"))
            res = run(recipe, workers=2, progress=False)
            assert res.workers == 2
            assert kept_ids(tmp_path / "two") == single
            assert res.ledger.to_dict(times=False)["stages"] == one.ledger.to_dict(times=False)["stages"]
        finally:
            ray.shutdown()
            cluster.shutdown()
    finally:
        os.chdir(cwd)


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a 2-node `ray start` cluster on a loaded machine
def test_losing_a_node_mid_run_leaves_the_work_to_the_surviving_node(tmp_path):
    """Every process of node 1 (its raylet and the shard worker on it) killed mid-run, no node
    replacing it: the worker on the head node takes its shards and the run finishes with the same
    kept documents (the driver ended with Ray's ActorUnavailableError traceback and exit 1)."""
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("ray")
    from tests.helpers import write_jsonl, write_recipe
    from tests.raycluster import RayCluster

    for s in range(10):
        write_jsonl(tmp_path / "in" / f"s{s:02d}.jsonl",
                    [{"text": f"shard {s} document {i} " + "word " * (i % 7)} for i in range(12)])

    def recipe(name: str, sleep: int) -> str:
        slow = f"  - stage: test_sleep\n    ms: {sleep}\n" if sleep else ""
        return str(write_recipe(tmp_path / f"{name}.yaml", f"""
output: {tmp_path / name}
sources:
  web: {{kind: jsonl, paths: ["{tmp_path}/in/*.jsonl"], batch_size: 4}}
stages:
  - stage: test_min_words
    min_words: 5
{slow}  - stage: test_exact
"""))

    from pipeline.cli import main

    import tests.helpers  # noqa: F401  (the test stages)

    assert main(["run", recipe("ref", 0), "--quiet", "--no-ray"]) == 0
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cluster = RayCluster(env=env, nodes=2, cpus=1)
    try:
        cluster.start()
        code = "import sys, tests.helpers; from pipeline.cli import main; sys.exit(main(sys.argv[1:]))"
        proc = subprocess.Popen([sys.executable, "-c", code, "run", recipe("lost", 400), "--address", cluster.address,
                                 "--workers", "2", "--quiet"], cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.time() + 300
        while time.time() < deadline and not list((tmp_path / "lost" / "_state" / "p0").glob("*.json")):
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            time.sleep(0.2)
        cluster.kill_node(1)
        try:
            out, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        assert proc.returncode == 0, err[-3000:]
        assert "Traceback" not in err
        assert "a Ray worker was lost" in (tmp_path / "lost" / "run.log").read_text()  # the loss happened
        assert kept_ids(tmp_path / "lost") == kept_ids(tmp_path / "ref")
    finally:
        cluster.stop()
