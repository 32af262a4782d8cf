"""reel.ray over object storage: datasets in an S3 bucket served by moto on 127.0.0.1.

The module starts moto's S3 server (``ThreadedMotoServer``, a free loopback port), points
reel at it the standard way (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, test credentials in
the environment) and only then starts its own local Ray, so that the Ray workers, which
inherit the driver's environment, reach the same bucket: as on a cluster, where every node
needs the store's settings. The environment is restored at the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import boto3

import pytest
import ray

import reel
import reel.ray
from conftest import (
    NORMAL_CASES,
    WRITABLE,
    damaged_ffrecord,
    dataset_path,
    moto_s3,
    reel_binary,
    same,
    sample_records,
    start_local_ray,
    upload_tree,
)
from test_golden import FORMATS as GOLDEN_FORMATS

TEST_SECONDS = 120
BUCKET = "reel-ray"


@pytest.fixture(scope="module", autouse=True)
def s3_and_ray(tmp_path_factory):
    """moto on loopback, a bucket holding the golden cases, a staging directory of the
    module's own (REEL_STAGING_DIR, where tasks stage what they upload), and a Ray started
    after the environment names both."""
    staging = tmp_path_factory.mktemp("staging")
    saved = os.environ.get("REEL_STAGING_DIR")
    os.environ["REEL_STAGING_DIR"] = str(staging)
    with moto_s3(BUCKET) as client:
        for key, case in NORMAL_CASES:
            upload_tree(client, BUCKET, dataset_path(key, case), f"{key}/{case}")
        start_local_ray()
        try:
            yield
        finally:
            ray.shutdown()
            if saved is None:
                os.environ.pop("REEL_STAGING_DIR", None)
            else:
                os.environ["REEL_STAGING_DIR"] = saved


pytestmark = pytest.mark.usefixtures("time_limit")


def ray_table(ds):
    import pyarrow as pa

    tables = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    return pa.concat_tables(tables) if tables else None


@pytest.mark.parametrize("key,case", NORMAL_CASES)
def test_read_reel_from_a_bucket_matches_the_local_read(key, case):
    """The read tasks open the dataset from the bucket themselves (workers see only the URL)
    and give the records of the same dataset read from disk."""
    fmt = GOLDEN_FORMATS[key]
    url = f"s3://{BUCKET}/{key}/{case}"
    want = reel.open(dataset_path(key, case), format=fmt).to_arrow()
    assert want.num_rows > 1
    table = ray_table(reel.ray.read_reel(url, format=fmt, override_num_blocks=2))
    assert table.schema == want.schema
    assert table.equals(want) or same(table.to_pylist(), want.to_pylist())  # NaN cells


def test_storage_options_reach_the_driver_and_the_read_tasks():
    """Given to read_reel, they configure the driver's open (an endpoint that refuses, with
    no retries, fails there at once) and travel with each task, whose cache of opened
    datasets is keyed by them."""
    key, case = NORMAL_CASES[0]
    fmt = GOLDEN_FORMATS[key]
    url = f"s3://{BUCKET}/{key}/{case}"
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(reel.IoError, match="Connection refused"):
        reel.ray.read_reel(url, format=fmt, storage_options={"aws_endpoint": f"http://127.0.0.1:{port}", "retries": 0})
    want = reel.open(dataset_path(key, case), format=fmt).to_arrow()
    options = {"timeout": "20s", "retries": 2}
    table = ray_table(reel.ray.read_reel(url, format=fmt, override_num_blocks=2, storage_options=options))
    assert table.equals(want) or same(table.to_pylist(), want.to_pylist())


def test_storage_options_reach_ray_writes_and_conversions():
    """write_reel and convert take storage_options too: an endpoint that refuses fails the
    job on the driver before any task runs, and options that work reach every task."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    refused = {"aws_endpoint": f"http://127.0.0.1:{port}", "retries": 0}
    records = sample_records("ffrecord", 12)
    items = ray.data.from_items(records, override_num_blocks=2)
    url = f"s3://{BUCKET}/with-options/ds"
    with pytest.raises(reel.IoError, match="Connection refused"):
        reel.ray.write_reel(items, url, format="ffrecord", storage_options=refused)
    options = {"timeout": "20s", "retries": 2}
    summary = reel.ray.write_reel(items, url, format="ffrecord", storage_options=options)
    assert summary["records"] == 12 and summary["parts"] == 2
    copy = f"s3://{BUCKET}/with-options/copy"
    report = reel.ray.convert(url, copy, to="ofrecord", parts=2, storage_options=options)
    assert report["records"] == 12
    assert same(reel.open(url)[:], records) and len(reel.open(copy)) == 12
    with pytest.raises(reel.IoError, match="Connection refused"):
        reel.ray.convert(url, f"s3://{BUCKET}/with-options/no", to="ofrecord", storage_options=refused)
    assert_no_staging_left()


def test_read_reel_of_a_missing_key_raises_on_the_driver():
    with pytest.raises(reel.NotFoundError):
        reel.ray.read_reel(f"s3://{BUCKET}/no/such/dataset")


@pytest.mark.parametrize("key,case", NORMAL_CASES)
def test_reel_open_tells_the_format_of_a_dataset_in_a_bucket(key, case):
    """Without format=, the format is worked out from the objects (as from files)."""
    ds = reel.open(f"s3://{BUCKET}/{key}/{case}")
    assert ds.format == GOLDEN_FORMATS[key]
    assert len(ds) == len(reel.open(dataset_path(key, case)))


def bucket_keys(prefix: str = "") -> list[str]:
    """Every key in the bucket under `prefix` (moto answers at most 1000 per page)."""
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    return keys


def pending_uploads() -> list[str]:
    """The keys of multipart uploads started and neither completed nor aborted."""
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    return [u["Key"] for u in client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])]


def assert_no_staging_left() -> None:
    """No staging object anywhere in the bucket, and nothing left in the local staging
    directory the tasks upload from."""
    assert [k for k in bucket_keys() if ".reel-staging-" in k] == []
    assert os.listdir(os.environ["REEL_STAGING_DIR"]) == []


@pytest.mark.parametrize("fmt", WRITABLE)
def test_every_format_written_by_ray_to_a_bucket_reads_back_equal(fmt):
    """Each task writes its part on its own, stages it locally and uploads it under the job's
    staging prefix; the driver copies the parts into place. The dataset in the bucket has the
    records in order, the parts under their names, and no staging is left anywhere."""
    records = sample_records(fmt, 37)
    url = f"s3://{BUCKET}/written/{fmt}"
    summary = reel.ray.write_reel(ray.data.from_items(records, override_num_blocks=3), url, format=fmt)
    assert summary["records"] == 37 and summary["parts"] == 3 and summary["path"] == url
    back = reel.open(url)
    assert back.format == ("granular" if fmt == "bags" else fmt)
    assert same(back[:], records)
    keys = bucket_keys(f"written/{fmt}/")
    assert keys, fmt
    first_level = sorted({k[len(f"written/{fmt}/") :].split("/")[0] for k in keys})
    expected = sorted({name for k in range(3) for name in reel._reel.part_names(fmt, k, 3)})
    assert first_level == expected
    assert_no_staging_left()


def test_writing_over_a_dataset_in_a_bucket_needs_overwrite():
    url = f"s3://{BUCKET}/written/again"
    rows = ray.data.from_items(sample_records("ffrecord", 5))
    reel.ray.write_reel(rows, url, format="ffrecord")
    with pytest.raises(reel.InvalidInputError, match="already exist"):
        reel.ray.write_reel(rows, url, format="ffrecord")
    more = ray.data.from_items(sample_records("ffrecord", 9), override_num_blocks=2)
    reel.ray.write_reel(more, url, format="ffrecord", overwrite=True)
    assert len(reel.open(url)) == 9
    assert len(bucket_keys("written/again/")) == 2
    assert_no_staging_left()


def test_an_empty_result_is_an_empty_dataset_in_the_bucket():
    empty = ray.data.from_items(sample_records("ffrecord", 4)).filter(lambda r: False)
    url = f"s3://{BUCKET}/written/empty"
    assert reel.ray.write_reel(empty, url, format="granular", schema={"data": "bytes"})["records"] == 0
    assert len(reel.open(url)) == 0
    assert_no_staging_left()


def failing_sink(target: int, how: str, **kwargs) -> reel.ray.ReelDatasink:
    """A ReelDatasink whose write task fails when the block holding row `target` reaches it,
    after the task's earlier blocks went into its part: it raises, or its worker process
    dies. The class is made here so that it goes to the workers by value (they cannot
    import this test module)."""

    class FailingSink(reel.ray.ReelDatasink):
        def write(self, blocks, ctx):
            def until_the_failure():
                for block in blocks:
                    if target in block["n"].to_pylist():
                        if how == "raise":
                            raise RuntimeError("injected failure")
                        os._exit(1)
                    yield block

            return super().write(until_the_failure(), ctx)

    return FailingSink(**kwargs)


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failed_write_to_a_bucket_leaves_nothing_that_opens(how):
    """One write task raises, or its worker process dies, in the middle of its part (one-row
    blocks, ten a task, failing at the fourth): the job fails, nothing is at the
    destination, and the staging objects of the tasks that finished are deleted."""
    rows = ray.data.from_items([{"n": i, "data": bytes([i])} for i in range(40)], override_num_blocks=40)
    url = f"s3://{BUCKET}/failed/{how}"
    sink = failing_sink(33, how, path=url, format="granular", min_rows_per_task=10)
    # One task at a time: Ray does not wait for the tasks it cancels, and one still uploading
    # when the job fails would hold its local staging directory and its multipart upload for
    # a moment after the job fails (what it uploads cannot outlive the job's discard: see
    # the Rust test parts_written_by_workers_are_published_in_one_step).
    with pytest.raises(Exception):
        rows.write_datasink(sink, ray_remote_args={"max_retries": 0}, concurrency=1)
    assert bucket_keys("failed/") == []
    with pytest.raises(reel.NotFoundError):
        reel.open(url)
    assert [k for k in bucket_keys() if ".reel-staging-" in k] == []
    assert pending_uploads() == []
    staging = os.environ["REEL_STAGING_DIR"]
    if how == "raise":
        assert os.listdir(staging) == []
    else:
        # The worst case: the killed process never ran its clean-up, so its local staging
        # directory (the records it had written) is still on its node's disk ...
        left = os.listdir(staging)
        assert left and all(name.startswith(".reel-upload-") for name in left), left
        # ... until the next writer on the node finds that no live process holds its lock.
        with reel.Writer(f"s3://{BUCKET}/after-the-kill", "ffrecord") as w:
            w.write({"data": b"x"})
        assert os.listdir(staging) == []


# Conversions whose source and destination are both in the bucket: every source format, and
# every target format, among the pairs the local convert supports for the golden cases.
CONVERSIONS = [
    ("ffrecord", "normal", "ffrecord"),
    ("ffrecord", "normal", "syrah"),
    ("syrah", "normal", "bags"),
    ("ofrecord", "normal", "ofrecord"),
    ("granular/granular-0.24.2", "normal", "granular"),
    ("granular/bags-0.5.1", "normal", "granular"),
    ("gulpio2", "normal", "gulp"),
]


@pytest.mark.parametrize("key,case,to", CONVERSIONS)
def test_a_convert_from_and_to_the_bucket_equals_the_local_convert(tmp_path, key, case, to):
    src = f"s3://{BUCKET}/{key}/{case}"
    dst = f"s3://{BUCKET}/converted/{key.replace('/', '-')}-{to}"
    local = tmp_path / "local"
    want = reel.convert(dataset_path(key, case), local, to=to)
    got = reel.ray.convert(src, dst, to=to, parts=3)
    assert got["records"] == want["records"] > 0
    assert sorted(got["losses"]) == sorted(want["losses"])
    assert got["outputs"] == [dst]
    assert same(reel.open(dst, decode_images=False)[:], reel.open(local, decode_images=False)[:])
    assert_no_staging_left()


def test_a_failed_convert_to_the_bucket_leaves_nothing(tmp_path):
    """A damaged record fails its part: reel's error reaches the caller, and neither the
    dataset nor any staging object is in the bucket."""
    src = tmp_path / "src.ffr"
    damaged_ffrecord(src)
    with pytest.raises(reel.ChecksumError):
        reel.ray.convert(src, f"s3://{BUCKET}/converted/bad", to="granular", parts=3)
    assert bucket_keys("converted/bad") == []
    assert_no_staging_left()


def test_the_reel_command_converts_into_the_bucket_on_the_cluster(tmp_path):
    """`reel convert SRC s3://… --ray=ADDRESS` (through `python -m reel.ray_cli`) writes the
    local convert's records into the bucket."""
    src = dataset_path("ffrecord", "normal")
    dst = f"s3://{BUCKET}/converted/by-the-command"
    run = subprocess.run(
        [reel_binary(), "convert", str(src), dst, "--to", "ofrecord", f"--ray={ray.get_runtime_context().gcs_address}"],
        env=dict(os.environ, REEL_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=TEST_SECONDS,
    )
    assert run.returncode == 0, run.stderr
    reel.convert(src, tmp_path / "local", to="ofrecord")
    assert same(reel.open(dst)[:], reel.open(tmp_path / "local")[:])
    assert_no_staging_left()


def test_read_tasks_are_sized_from_the_objects():
    """The driver sizes the objects (as files on disk): task sizes in the block metadata, and
    max_task_bytes splitting the work, come out as for the same dataset on disk."""
    key, case = "ffrecord", "normal"
    local = reel.open(dataset_path(key, case))
    remote = reel.open(f"s3://{BUCKET}/{key}/{case}")
    assert remote.stored_bytes == local.stored_bytes > 0
    source = reel.ray.ReelDatasource(f"s3://{BUCKET}/{key}/{case}", max_task_bytes=local.stored_bytes // 4)
    tasks = source.get_read_tasks(1)
    assert len(tasks) >= 4
    assert sum(t.metadata.size_bytes for t in tasks) <= local.stored_bytes
    assert all(t.metadata.size_bytes > 0 for t in tasks)
