"""A 2-node Ray cluster on one machine gives exactly the kept ids of the single-node run."""
import pytest

from pipeline.recipe import load_recipe
from pipeline.runner import run
from tests.helpers import kept_ids
from tests.test_runner import make_recipe


def test_two_node_cluster_matches_single_node(tmp_path):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    recipe = load_recipe(make_recipe(tmp_path))
    run(recipe, use_ray=False, progress=False)
    single = kept_ids(tmp_path / "out")

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    try:
        ray.init(address=cluster.address)
        cluster.wait_for_nodes()
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        res = run(recipe, workers=2, progress=False, overwrite=True)
        assert res.workers == 2
        assert kept_ids(tmp_path / "out") == single
    finally:
        ray.shutdown()
        cluster.shutdown()
