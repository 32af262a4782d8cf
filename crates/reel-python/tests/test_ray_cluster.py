"""reel.ray on a two-node Ray cluster on this machine (ray.cluster_utils.Cluster: a head and
a second node, one CPU each, their own raylets and object stores): parts of a conversion and
of a write run on both nodes, and the result is the same as on one process; a read from an
S3 bucket (moto on loopback) runs its tasks on both nodes with no data on any local disk.

One cluster serves the module; every test runs under an alarm.
"""

from __future__ import annotations

import pytest
import ray  # ray[data] is in tests/requirements.txt: missing, this fails

import reel  # noqa: E402
import reel.ray  # noqa: E402
from conftest import moto_s3, quiet_ray_env, same  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

TEST_SECONDS = 180


BUCKET = "reel-cluster"


@pytest.fixture(scope="module")
def s3():
    """The S3 server on loopback (moto), started before the cluster so that both nodes'
    workers inherit the environment that points reel at it."""
    with moto_s3(BUCKET) as client:
        yield client


@pytest.fixture(scope="module", autouse=True)
def two_nodes(s3):
    quiet_ray_env()
    node = {"num_cpus": 1, "object_store_memory": 96 << 20}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.add_node(**node)
    cluster.wait_for_nodes(timeout=60)
    ray.init(address=cluster.address, log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True  # records compared in order
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


def test_read_from_a_bucket_runs_tasks_on_both_nodes(tmp_path, s3):
    """The dataset exists only in the bucket (the local copy is deleted after the upload):
    every read task opens it from S3 itself."""
    local = tmp_path / "src.ffr"
    reel.generate(local, format="ffrecord", records=600, max_record=512)
    want = [r["data"] for r in reel.open(local)[:]]
    s3.upload_file(str(local), BUCKET, "read/src.ffr")
    local.unlink()

    def with_node(batch):
        """Tags each row with the node that ran its task (the map is fused into the read
        task). Defined here: the workers cannot import this test module, so it goes by value."""
        batch["node"] = [ray.get_runtime_context().get_node_id()] * len(batch["data"])
        return batch

    ds = reel.ray.read_reel(f"s3://{BUCKET}/read/src.ffr", override_num_blocks=6)
    rows = ds.map_batches(with_node, batch_format="numpy").take_all()
    assert [r["data"] for r in rows] == want
    assert len({r["node"] for r in rows}) == 2
