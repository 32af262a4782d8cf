"""reel.open, reel.convert and reel.Writer with s3:// URLs, against moto's S3 server on
127.0.0.1 (a free port), reel pointed at it through the standard environment variables
(``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, test credentials; see conftest.moto_s3)."""

from __future__ import annotations

import os
import pickle
import socket
import time

import pytest

import reel
from conftest import NORMAL_CASES, dataset_path, moto_s3, same, upload_tree
from test_golden import FORMATS as GOLDEN_FORMATS

BUCKET = "reel-py"


@pytest.fixture(scope="module")
def s3():
    with moto_s3(BUCKET) as client:
        for key, case in NORMAL_CASES:
            upload_tree(client, BUCKET, dataset_path(key, case), f"{key}/{case}")
        yield client


def keys_under(client, prefix: str) -> list[str]:
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def same_records(a, b, where: str) -> None:
    assert len(a) == len(b) > 0, where
    for i in range(len(b)):
        assert same(a[i], b[i]), f"{where}: record {i}"


@pytest.mark.parametrize("key,case", NORMAL_CASES)
def test_open_reads_every_format_from_a_bucket(s3, key, case):
    """Record for record what the same dataset gives from disk (decoded as by default)."""
    remote = reel.open(f"s3://{BUCKET}/{key}/{case}")
    assert remote.format == GOLDEN_FORMATS[key]
    same_records(remote, reel.open(dataset_path(key, case)), f"{key}/{case}")


@pytest.mark.parametrize("to", ["ffrecord", "syrah", "ofrecord", "granular"])
def test_convert_writes_to_a_bucket(s3, tmp_path, to):
    """The dataset in the bucket reads as the same conversion written to disk."""
    src = dataset_path("ffrecord", "normal")
    url = f"s3://{BUCKET}/converted/{to}"
    result = reel.convert(src, url, to=to)
    assert result["records"] == len(reel.open(src))
    assert keys_under(s3, f"converted/{to}")
    reel.convert(src, tmp_path / to, to=to)
    local = reel.open(tmp_path / to)
    same_records(reel.open(url), local, f"converted to {to}")
    # Something is there now: refused unless overwrite is asked for.
    with pytest.raises(reel.ReelError, match="already exist"):
        reel.convert(src, url, to=to)
    reel.convert(src, url, to=to, overwrite=True)
    same_records(reel.open(url), local, f"converted to {to} again")


def test_a_conversion_onto_its_own_objects_is_refused_and_the_source_kept(s3, tmp_path):
    """A destination that is the source, lies inside it or holds it, in one bucket, was
    accepted: with overwrite the source's objects were deleted while they were read. It is
    refused as for local paths, whatever the spelling of the address."""
    src = f"s3://{BUCKET}/self/src"
    reel.convert(dataset_path("ffrecord", "normal"), src, to="ofrecord")
    before = keys_under(s3, "self/")
    for dst, why in [
        (src, "is the input"),
        (f"s3a://{BUCKET}/self/./src/", "is the input"),
        (f"s3://{BUCKET}/self/x/../src", "is the input"),
        (f"{src}/inner", "lies inside the input"),
        (f"s3://{BUCKET}/self", "holds the input"),
    ]:
        with pytest.raises(reel.InvalidInputError, match=why):
            reel.convert(src, dst, to="granular", overwrite=True)
    assert keys_under(s3, "self/") == before
    reel.convert(dataset_path("ffrecord", "normal"), tmp_path / "local", to="ofrecord")
    same_records(reel.open(src), reel.open(tmp_path / "local"), "kept")
    # A sibling prefix is another place.
    reel.convert(src, f"s3://{BUCKET}/self/src-copy", to="ffrecord")


def test_writer_to_a_bucket_appears_on_exit_and_leaves_nothing_when_it_raises(s3):
    url = f"s3://{BUCKET}/written/ds.ffr"
    records = [{"data": bytes([i]) * (i + 1)} for i in range(20)]
    with pytest.raises(RuntimeError):
        with reel.Writer(url, "ffrecord") as w:
            w.write_many(records)
            raise RuntimeError("the producer failed")
    assert keys_under(s3, "written/") == []
    with reel.Writer(url, "ffrecord") as w:
        w.write_many(records)
        assert keys_under(s3, "written/") == []  # nothing until the block ends
    assert keys_under(s3, "written/") == ["written/ds.ffr"]
    got = reel.open(url)
    assert [r["data"] for r in got] == [r["data"] for r in records]


def test_a_writers_errors_name_the_url_it_writes_to_not_its_staging(s3):
    """A writer bound for a bucket writes to a local staging directory first; its errors
    name the dataset by its URL (and a file in it by the URL it would have)."""
    for fmt, records, kw in [
        ("ffrecord", [{"data": b"x"}], {"records": 3}),
        ("ofrecord", [{"a": [1]}], {}),
    ]:
        url = f"s3://{BUCKET}/refused/{fmt}"
        with pytest.raises(reel.ReelError) as raised:
            with reel.Writer(url, fmt, **kw) as w:
                w.write_many(records)
        text = str(raised.value)
        assert url in text and ".reel-upload" not in text, text
    assert keys_under(s3, "refused/") == []


def test_ofrecord_parts_go_up_while_the_writer_writes(s3):
    """With part_size, each closed part is uploaded while writing goes on (the first part
    waits for the end, so nothing opens early); an exception leaves nothing."""
    url = f"s3://{BUCKET}/streamed/ofr"
    records = [{"payload": bytes([i]) * 1000} for i in range(12)]
    with pytest.raises(RuntimeError):
        with reel.ofrecord.Writer(url, part_size=2048) as w:
            w.write_many(records)
            raise RuntimeError("the producer failed")
    assert keys_under(s3, "streamed/") == []
    with reel.ofrecord.Writer(url, part_size=2048) as w:
        w.write_many(records)  # about one record a part: most parts are closed by now
        deadline = time.monotonic() + 20
        while len(keys_under(s3, "streamed/")) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        early = keys_under(s3, "streamed/")
        assert len(early) >= 3 and "streamed/ofr/part-00000" not in early, early
        with pytest.raises(reel.NotFoundError):
            reel.open(url)
    parts = keys_under(s3, "streamed/")
    assert parts == [f"streamed/ofr/part-{k:05}" for k in range(len(parts))]
    assert len(parts) > len(early)
    assert [r["payload"] for r in reel.open(url)] == [[r["payload"]] for r in records]


def test_missing_objects_and_buckets_raise_reel_errors(s3):
    with pytest.raises(reel.NotFoundError):
        reel.open(f"s3://{BUCKET}/no/such/dataset")
    with pytest.raises(FileNotFoundError):  # NotFoundError is one
        reel.open(f"s3://{BUCKET}/no/such/file.ffr", format="ffrecord")
    # A missing bucket is a missing dataset too, said in those words.
    for url in ["s3://no-such-bucket/x.ffr", "s3://no-such-bucket/some/prefix"]:
        with pytest.raises(reel.NotFoundError, match="no such bucket: s3://no-such-bucket"):
            reel.open(url)
    with pytest.raises(reel.NotFoundError, match="no-such-bucket.*no such bucket"):
        reel.convert(dataset_path("ffrecord", "normal"), "s3://no-such-bucket/x.ffr", to="ffrecord")
    with pytest.raises(reel.NotFoundError, match="no such bucket"):
        reel.Writer("s3://no-such-bucket/w.ffr", "ffrecord")
    with pytest.raises(reel.NotFoundError, match="no such bucket"):
        reel.open("s3://no-such-bucket")


def test_a_key_is_what_its_url_decodes_to_for_writing_and_reading_alike(s3):
    """A URL's percent escapes are decoded once, as in any URL, whether a dataset is
    written there or read from there: ``my data.ffr`` (a space the URL holds as ``%20``)
    and ``v%41.ffr`` (the key ``vA.ffr``) read back what was written, and an object whose
    key holds a ``%`` is reached by writing it ``%25``."""
    records = [{"data": bytes([i]) * (i + 1)} for i in range(5)]
    for url, key in [
        (f"s3://{BUCKET}/keys/my data.ffr", "keys/my data.ffr"),
        (f"s3://{BUCKET}/keys/my%20file.ffr", "keys/my file.ffr"),
        (f"s3://{BUCKET}/keys/v%41.ffr", "keys/vA.ffr"),
    ]:
        with reel.Writer(url, "ffrecord") as w:
            w.write_many(records)
        assert key in keys_under(s3, "keys/"), url
        assert [r["data"] for r in reel.open(url)] == [r["data"] for r in records], url
    body = s3.get_object(Bucket=BUCKET, Key="keys/vA.ffr")["Body"].read()
    s3.put_object(Bucket=BUCKET, Key="keys/lit%41.ffr", Body=body)
    lit = reel.open(f"s3://{BUCKET}/keys/lit%2541.ffr")
    assert len(lit) == len(records)
    # Paths given back are str URLs that open the same objects again (a pathlib.Path
    # would fold `//`), the keys percent-encoded.
    assert lit.path == f"s3://{BUCKET}/keys/lit%2541.ffr"
    assert lit.info.files == [f"s3://{BUCKET}/keys/lit%2541.ffr"]
    spaced = reel.open(f"s3://{BUCKET}/keys/my data.ffr")
    assert spaced.info.files == [f"s3://{BUCKET}/keys/my%20data.ffr"]
    assert len(reel.open(spaced.info.files[0])) == len(records)
    with reel.Writer(f"s3://{BUCKET}/keys/w.ffr", "ffrecord") as w:
        w.write_many(records)
    assert w.path == f"s3://{BUCKET}/keys/w.ffr"
    assert all(isinstance(p, str) and p.startswith("s3://") for p in w.summary["paths"]), w.summary
    with pytest.raises(reel.NotFoundError):
        reel.open(f"s3://{BUCKET}/keys/lit%41.ffr", format="ffrecord")  # the key litA.ffr


def test_an_object_replaced_after_opening_is_refused_not_read_into_the_old_one(s3, tmp_path):
    """Reads name the version of each object that was opened (its entity tag): after a
    new upload to the key, the records not read yet raise instead of coming from the new
    bytes, under the old index."""
    local = tmp_path / "replaced.ffr"
    reel.generate(local, format="ffrecord", records=2000, max_record=2048)
    s3.upload_file(str(local), BUCKET, "replaced/ds.ffr")
    ds = reel.open(f"s3://{BUCKET}/replaced/ds.ffr")
    expected = reel.open(local)
    assert same(ds[0], expected[0])
    changed = bytearray(local.read_bytes())
    middle = len(changed) // 2
    changed[middle : middle + 4096] = bytes(4096)
    s3.put_object(Bucket=BUCKET, Key="replaced/ds.ffr", Body=bytes(changed))
    with pytest.raises(reel.ReelError, match="changed after the dataset was opened"):
        for i in range(len(ds)):
            assert same(ds[i], expected[i]), f"record {i} read from the new object"


def _read_in_a_forked_child(ds, index: int, answer) -> None:
    try:
        ds[index]
        answer.put("read")
    except reel.ReelError as e:
        answer.put(f"{type(e).__name__}: {e}")


def test_copies_of_a_dataset_refuse_an_object_replaced_since_the_first_opened_it(s3, tmp_path):
    """A pickled copy (a spawned DataLoader worker, a Ray task) and a forked one open the
    dataset again: they must read the objects the first process opened, as its own reads
    do (If-Match), not a new upload of the same size, silently."""
    import multiprocessing

    local = tmp_path / "v.ffr"
    reel.generate(local, format="ffrecord", records=50, max_record=64)
    s3.upload_file(str(local), BUCKET, "versions/ds.ffr")
    url = f"s3://{BUCKET}/versions/ds.ffr"
    ds = reel.open(url)
    pickled = pickle.dumps(ds)
    assert len(pickle.loads(pickled)) == 50  # unchanged: opens
    changed = bytearray(local.read_bytes())
    changed[-100] ^= 0xFF
    s3.put_object(Bucket=BUCKET, Key="versions/ds.ffr", Body=bytes(changed))
    with pytest.raises(reel.CorruptError, match="changed since it was opened"):
        pickle.loads(pickled)
    answer = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=_read_in_a_forked_child, args=(ds, 3, answer))
    child.start()
    child.join(60)
    assert not child.is_alive()
    said = answer.get(timeout=5)
    assert said.startswith("CorruptError") and "changed since it was opened" in said, said


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_storage_options_configure_the_store_per_call(s3, tmp_path, monkeypatch):
    """With the endpoint given as a storage option instead of in the environment, a dataset
    is written, converted, verified, opened and, pickled, opened again elsewhere; options
    that cannot be used are refused with the option named."""
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    options = {"aws_endpoint": endpoint, "allow_http": True, "timeout": "20s", "retries": 2}
    url = f"s3://{BUCKET}/options/ds.ffr"
    records = [{"data": bytes([i]) * 10} for i in range(7)]
    with reel.Writer(url, "ffrecord", storage_options=options) as w:
        w.write_many(records)
    ds = reel.open(url, storage_options=options)
    assert [r["data"] for r in ds] == [r["data"] for r in records]
    again = pickle.loads(pickle.dumps(ds))  # the options travel with it
    assert [r["data"] for r in again] == [r["data"] for r in records]
    assert reel.verify(url, storage_options=options)["clean"]
    copy = f"s3://{BUCKET}/options/copy.ofr"
    assert reel.convert(url, copy, to="ofrecord", storage_options=options)["records"] == 7
    reel.generate(f"s3://{BUCKET}/options/made.ffr", records=3, storage_options=options)
    assert len(reel.open(f"s3://{BUCKET}/options/made.ffr", storage_options=options)) == 3
    # The endpoint of the options is the one asked: one that refuses fails, at once.
    refused = {"aws_endpoint": f"http://127.0.0.1:{closed_port()}", "allow_http": True, "retries": 0}
    with pytest.raises(reel.IoError, match="Connection refused"):
        reel.open(url, storage_options=refused)
    for bad, error, says in [
        ({"timeout": "soon"}, ValueError, "timeout"),
        ({"retries": -1}, ValueError, "retries"),
        ({"no_such_option": "x"}, ValueError, "no_such_option"),
        ({"retries": [1]}, TypeError, "retries"),
        ({1: "x"}, TypeError, "names are str"),
        (["timeout", "1s"], TypeError, "mapping"),
    ]:
        with pytest.raises(error, match=says):
            reel.open(url, storage_options={**options, **bad} if isinstance(bad, dict) else bad)


def test_a_cached_dataset_reads_later_epochs_from_disk(s3, tmp_path):
    """With cache=, records read once come from the local directory afterwards: a second
    pass reads even after the object is gone from the bucket, and so does a dataset
    unpickled (with its cache) before that."""
    local = tmp_path / "big.ffr"
    reel.generate(local, format="ffrecord", records=2000, max_record=2048)
    s3.upload_file(str(local), BUCKET, "cached/big.ffr")
    url = f"s3://{BUCKET}/cached/big.ffr"
    cache = tmp_path / "cache"
    remote = reel.open(url, cache=cache, cache_size=64 << 20)
    expected = reel.open(local)
    same_records(remote, expected, "first pass")
    assert list((cache / "chunks").rglob("*-*")), "nothing was cached"
    unpickled = pickle.loads(pickle.dumps(remote))
    s3.delete_object(Bucket=BUCKET, Key="cached/big.ffr")
    same_records(remote, expected, "second pass, from the cache")
    same_records(unpickled, expected, "unpickled, from the cache")
    with pytest.raises(ValueError, match="cache_size= needs cache="):
        reel.open(str(local), cache_size=1 << 20)


@pytest.mark.parametrize("to", ["parquet", "arrow"])
def test_parquet_and_arrow_files_read_in_place_from_a_bucket(s3, tmp_path, to):
    """Converted into the bucket, then opened there (no download): the same rows as the
    same conversion written to disk."""
    src = dataset_path("ffrecord", "normal")
    url = f"s3://{BUCKET}/tables/normal.{to}"
    reel.convert(src, url, to=to)
    local = tmp_path / f"normal.{to}"
    reel.convert(src, local, to=to)
    remote = reel.open(url)
    assert remote.format == reel.open(local).format
    same_records(remote, reel.open(local), f"{to} in place")


def test_a_hive_partitioned_table_reads_from_a_bucket_as_from_a_disk(s3, tmp_path):
    """A table written by ``write_dataset(partitioning_flavor="hive")`` and uploaded to a
    bucket: its key prefixes (``k=a%20b/``) are listed level by level, and the rows come
    back with their keys as from the same tree on disk."""
    import pyarrow as pa
    import pyarrow.dataset as pads

    table = pa.table({"id": list(range(30)), "k": [["a b", "c", "d"][i % 3] for i in range(30)]})
    local = tmp_path / "table"
    pads.write_dataset(
        table, local, format="parquet", partitioning=["k"], partitioning_flavor="hive"
    )
    upload_tree(s3, BUCKET, local, "tables/hive")
    remote = reel.open(f"s3://{BUCKET}/tables/hive")
    assert remote.format == "parquet" and len(remote.info.files) == 3
    assert remote.info.schema == reel.open(local).info.schema
    same_records(remote, reel.open(local), "a hive-partitioned table in a bucket")
    assert sorted((r["id"], r["k"]) for r in remote) == sorted(
        zip(table["id"].to_pylist(), table["k"].to_pylist())
    )


def test_a_directory_of_parquet_parts_reads_from_a_bucket(s3, tmp_path):
    """Shards converted into a bucket prefix open there as one dataset, in part order."""
    src = dataset_path("ffrecord", "normal")
    url = f"s3://{BUCKET}/tables/sharded"
    for k in range(3):
        reel.convert(src, url, to="parquet", shard=(k, 3))
    assert [key.rsplit("/", 1)[1] for key in keys_under(s3, "tables/sharded/")] == [
        f"part-{k:05}.parquet" for k in range(3)
    ]
    remote = reel.open(url)
    assert remote.format == "parquet" and len(remote.info.files) == 3
    same_records(remote, reel.open(src), "parquet parts in a bucket")


def test_a_granular_dataset_without_a_key_left_out_reads_from_a_bucket(s3, tmp_path):
    """A Granular dataset uploaded without its image bags (the largest files) opens for its
    other keys with ``skip_columns=["image"]``, as the whole dataset reads them from disk;
    opened whole, the missing bag is a NotFoundError."""
    local = tmp_path / "g"
    reel.generate(local, format="granular", records=12)
    for path in local.iterdir():
        if not path.name.startswith("image."):
            s3.upload_file(str(path), BUCKET, f"no-images/{path.name}")
    url = f"s3://{BUCKET}/no-images"
    with pytest.raises(reel.NotFoundError):
        reel.open(url)
    remote = reel.open(url, skip_columns=["image"])
    assert "image" not in [name for name, _ in remote.info.schema]
    same_records(remote, reel.open(local, skip_columns=["image"]), "without image bags")


def test_an_arrow_ipc_stream_reads_from_a_bucket(s3, tmp_path):
    """An IPC stream (Hugging Face datasets' .arrow files) uploaded as it is: its messages
    are walked by ranged reads at open, and it reads as from disk."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    table = pa.table({"id": list(range(500)), "text": [f"row {i}" for i in range(500)]})
    local = tmp_path / "data-00000-of-00001.arrow"
    with ipc.new_stream(local, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=64):
            writer.write_batch(batch)
    s3.upload_file(str(local), BUCKET, "hf/data-00000-of-00001.arrow")
    remote = reel.open(f"s3://{BUCKET}/hf/data-00000-of-00001.arrow")
    assert remote.format == "arrow"
    same_records(remote, reel.open(local), "IPC stream in place")
