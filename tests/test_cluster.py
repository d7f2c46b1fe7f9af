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
        one = run(recipe, use_ray=False, progress=False)
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
