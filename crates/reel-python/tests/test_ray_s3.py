"""reel.ray over object storage: datasets in an S3 bucket served by moto on 127.0.0.1.

The module starts moto's S3 server (``ThreadedMotoServer``, a free loopback port), points
reel at it the standard way (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, test credentials in
the environment) and only then starts its own local Ray, so that the Ray workers, which
inherit the driver's environment, reach the same bucket: as on a cluster, where every node
needs the store's settings. The environment is restored at the end.
"""

from __future__ import annotations

import os

import pytest
import ray

import reel
import reel.ray
from conftest import NORMAL_CASES, dataset_path, moto_s3, same, start_local_ray, upload_tree
from test_golden import FORMATS as GOLDEN_FORMATS

TEST_SECONDS = 120
BUCKET = "reel-ray"


@pytest.fixture(scope="module", autouse=True)
def s3_and_ray():
    """moto on loopback, a bucket holding the golden cases, and a Ray started after the
    environment names the store."""
    with moto_s3(BUCKET) as client:
        for key, case in NORMAL_CASES:
            upload_tree(client, BUCKET, dataset_path(key, case), f"{key}/{case}")
        start_local_ray()
        try:
            yield
        finally:
            ray.shutdown()


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


def test_read_reel_of_a_missing_key_raises_on_the_driver():
    with pytest.raises(reel.NotFoundError):
        reel.ray.read_reel(f"s3://{BUCKET}/no/such/dataset")


@pytest.mark.parametrize("key,case", NORMAL_CASES)
def test_reel_open_tells_the_format_of_a_dataset_in_a_bucket(key, case):
    """Without format=, the format is worked out from the objects (as from files)."""
    ds = reel.open(f"s3://{BUCKET}/{key}/{case}")
    assert ds.format == GOLDEN_FORMATS[key]
    assert len(ds) == len(reel.open(dataset_path(key, case)))


def test_writing_to_a_url_is_refused_by_name(tmp_path):
    """Until reel.ray writes to object storage, a URL destination is an error (not a local
    directory named "s3:")."""
    rows = ray.data.from_items([{"data": b"x"}])
    with pytest.raises(ValueError, match="not yet written"):
        reel.ray.write_reel(rows, f"s3://{BUCKET}/out", format="ffrecord")
    with pytest.raises(ValueError, match="not yet written"):
        reel.ray.convert(dataset_path("ffrecord", "normal"), f"s3://{BUCKET}/out", to="granular")
    assert not os.path.exists("s3:")


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
