"""reel.ray on a two-node Ray cluster on this machine (ray.cluster_utils.Cluster: a head and
a second node, one CPU each, their own raylets and object stores): parts of a conversion and
of a write run on both nodes, and the result is the same as on one process.

One cluster serves the module; every test runs under an alarm.
"""

from __future__ import annotations

import pytest
import ray  # ray[data] is in tests/requirements.txt: missing, this fails

import reel  # noqa: E402
import reel.ray  # noqa: E402
from conftest import quiet_ray_env, same  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

TEST_SECONDS = 180


@pytest.fixture(scope="module", autouse=True)
def two_nodes():
    quiet_ray_env()
    node = {"num_cpus": 1, "object_store_memory": 96 << 20}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.add_node(**node)
    cluster.wait_for_nodes(timeout=60)
    ray.init(address=cluster.address, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield cluster
    ray.shutdown()
    cluster.shutdown()


pytestmark = pytest.mark.usefixtures("time_limit")


def test_the_cluster_has_two_nodes():
    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) == 2
    assert len({n["NodeID"] for n in alive}) == 2


def test_convert_runs_parts_on_both_nodes(tmp_path):
    src = tmp_path / "src.ffr"
    reel.generate(src, format="ffrecord", records=600, max_record=512)
    report = reel.ray.convert(src, tmp_path / "out", to="granular", parts=6)
    assert len(report["nodes"]) == 2, report["nodes"]
    local = reel.convert(src, tmp_path / "local", to="granular")
    assert report["records"] == local["records"]
    assert same(reel.open(tmp_path / "out")[:], reel.open(tmp_path / "local")[:])


def test_write_runs_tasks_on_both_nodes(tmp_path):
    records = [{"data": bytes([i]) * 5, "label": f"r{i}"} for i in range(60)]
    rows = ray.data.from_items(records, override_num_blocks=6)
    summary = reel.ray.write_reel(rows, tmp_path / "out", format="granular")
    assert len(summary["nodes"]) == 2, summary["nodes"]
    assert same(reel.open(tmp_path / "out")[:], records)
