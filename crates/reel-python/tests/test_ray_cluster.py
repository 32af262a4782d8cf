"""reel.ray on a two-node Ray cluster on this machine (ray.cluster_utils.Cluster: a head and
a second node, one CPU each, their own raylets and object stores), reading and writing only
through an S3 bucket (moto on loopback).

Each node has a local staging directory of its own (REEL_STAGING_DIR in its raylet's
environment, which its workers inherit), standing for a node's own disk, and the driver a
third: the sources exist only in the bucket, the destinations are in the bucket, and the
tests check that tasks ran on both nodes, that each node's tasks staged on their own node's
directory only, that the results read back equal, and that no directory keeps anything.

One cluster serves the module; every test runs under an alarm.
"""

from __future__ import annotations

import os

import boto3
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


@pytest.fixture(scope="module")
def staging_dirs(tmp_path_factory):
    """The local staging directories: one per node, and the driver's."""
    return {name: tmp_path_factory.mktemp(f"staging-{name}") for name in ("head", "worker", "driver")}


@pytest.fixture(scope="module", autouse=True)
def two_nodes(s3, staging_dirs):
    quiet_ray_env()
    saved = os.environ.get("REEL_STAGING_DIR")
    os.environ["REEL_STAGING_DIR"] = str(staging_dirs["driver"])
    node = {"num_cpus": 1, "object_store_memory": 96 << 20}
    head = {**node, "include_dashboard": False, "env_vars": {"REEL_STAGING_DIR": str(staging_dirs["head"])}}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    cluster.add_node(**node, env_vars={"REEL_STAGING_DIR": str(staging_dirs["worker"])})
    cluster.wait_for_nodes(timeout=60)
    ray.init(address=cluster.address, log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True  # records compared in order
    yield cluster
    ray.shutdown()
    cluster.shutdown()
    if saved is None:
        os.environ.pop("REEL_STAGING_DIR", None)
    else:
        os.environ["REEL_STAGING_DIR"] = saved


pytestmark = pytest.mark.usefixtures("time_limit")


def bucket_keys(prefix: str) -> list[str]:
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def only_in_the_bucket(s3, tmp_path, key: str, records: int) -> list[bytes]:
    """Generates an FFRecord dataset, uploads it as `key` and deletes the local copy; returns
    its records' bytes."""
    local = tmp_path / "src.ffr"
    reel.generate(local, format="ffrecord", records=records, max_record=512)
    want = [r["data"] for r in reel.open(local)[:]]
    s3.upload_file(str(local), BUCKET, key)
    local.unlink()
    return want


def assert_nothing_staged(staging_dirs) -> None:
    """No node (nor the driver) keeps anything in its staging directory, and no staging
    object is left in the bucket."""
    for name, path in staging_dirs.items():
        assert os.listdir(path) == [], name
    assert [k for k in bucket_keys("") if ".reel-staging-" in k] == []


def node_tagger():
    """A map (fused into the read tasks) tagging each row with the node that ran its task and
    the staging directory that node's workers see. Built here and sent by value: the
    workers cannot import this test module."""

    def with_node(batch):
        n = len(batch["data"])
        batch["node"] = [ray.get_runtime_context().get_node_id()] * n
        batch["staging"] = [os.environ.get("REEL_STAGING_DIR", "")] * n
        return batch

    return with_node


def test_the_cluster_has_two_nodes():
    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) == 2
    assert len({n["NodeID"] for n in alive}) == 2


def test_read_from_and_write_to_the_bucket_on_both_nodes(tmp_path, s3, staging_dirs):
    """A dataset that exists only in the bucket is read by tasks on both nodes, and written
    back into the bucket by write tasks on both nodes, each staging its part on its own
    node's directory; the result equals the source."""
    want = only_in_the_bucket(s3, tmp_path, "read/src.ffr", 600)
    ds = reel.ray.read_reel(f"s3://{BUCKET}/read/src.ffr", override_num_blocks=6)
    rows = ds.map_batches(node_tagger(), batch_format="numpy").take_all()
    assert [r["data"] for r in rows] == want
    assert len({r["node"] for r in rows}) == 2
    # Each node's workers see their own node's directory, and the two differ.
    staging_of = {r["node"]: r["staging"] for r in rows}
    assert sorted(staging_of.values()) == sorted(str(staging_dirs[n]) for n in ("head", "worker"))

    url = f"s3://{BUCKET}/written/out"
    records = [{"data": r["data"]} for r in rows]
    summary = reel.ray.write_reel(ray.data.from_items(records, override_num_blocks=6), url, format="granular")
    assert len(summary["nodes"]) == 2, summary["nodes"]
    assert summary["parts"] == 6
    assert [r["data"] for r in reel.open(url)[:]] == want
    assert_nothing_staged(staging_dirs)


def test_convert_from_the_bucket_into_the_bucket_on_both_nodes(tmp_path, s3, staging_dirs):
    want = only_in_the_bucket(s3, tmp_path, "convert/src.ffr", 600)
    url = f"s3://{BUCKET}/convert/out"
    report = reel.ray.convert(f"s3://{BUCKET}/convert/src.ffr", url, to="granular", parts=6)
    assert len(report["nodes"]) == 2, report["nodes"]
    assert report["records"] == 600
    assert same([r["data"] for r in reel.open(url)[:]], want)
    assert_nothing_staged(staging_dirs)
