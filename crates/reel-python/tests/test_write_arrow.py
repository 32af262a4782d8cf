"""reel.write_arrow: Arrow data (a pyarrow Table or RecordBatchReader) written with reel's
writers under the rules of a Parquet source, read back equal; refusals name the field;
a failed write leaves nothing; the stream is read batch by batch."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest
import simplejpeg

import reel
from conftest import same


def tensor_column(arrays: list[np.ndarray]) -> pa.ExtensionArray:
    """n-d arrays of one dtype and shape as an ``arrow.fixed_shape_tensor`` column."""
    first = arrays[0]
    storage = pa.array(
        [a.ravel() for a in arrays], pa.list_(pa.from_numpy_dtype(first.dtype), first.size)
    )
    return pa.ExtensionArray.from_storage(
        pa.fixed_shape_tensor(pa.from_numpy_dtype(first.dtype), first.shape), storage
    )


JPEG = simplejpeg.encode_jpeg(np.full((8, 10, 3), 40, np.uint8))


def table_for(fmt: str, n: int = 7) -> tuple[pa.Table, list[dict]]:
    """A table whose columns `fmt` holds, and the records reel must read back from it."""
    rng = np.random.default_rng(3)
    if fmt == "ffrecord":
        records = [{"data": rng.bytes(int(rng.integers(0, 300)))} for _ in range(n)]
        return pa.table({"data": pa.array([r["data"] for r in records], pa.binary())}), records
    if fmt == "syrah":
        records = [
            {
                "f": rng.standard_normal(i).astype(np.float32),
                "u": np.arange(i * 2, dtype=np.uint16),
                "s": "héllo" * i,
            }
            for i in range(n)
        ]
        table = pa.table({
            "f": pa.array([r["f"] for r in records], pa.list_(pa.float32())),
            "u": pa.array([r["u"] for r in records], pa.list_(pa.uint16())),
            "s": pa.array([r["s"] for r in records], pa.string()),
        })
        return table, records
    if fmt == "ofrecord":
        records = [
            {
                "b": [rng.bytes(5), b""],
                "d": rng.standard_normal(3),
                "i": np.array([i, -i], np.int64),
            }
            for i in range(n)
        ]
        table = pa.table({
            "b": pa.array([r["b"] for r in records], pa.list_(pa.binary())),
            "d": pa.array([r["d"] for r in records], pa.list_(pa.float64())),
            "i": pa.array([r["i"] for r in records], pa.list_(pa.int64())),
        })
        return table, records
    if fmt in ("granular", "bags", "parquet", "arrow"):
        records = [
            {
                "a": np.arange(6, dtype=np.int16).reshape(2, 3) * i,
                "b": rng.bytes(i),
                "m": {"k": i, "flag": bool(i % 2)},
                "n": i - 3,
                "t": "ünï" * i,
            }
            for i in range(n)
        ]
        table = pa.table({
            "a": tensor_column([r["a"] for r in records]),
            "b": pa.array([r["b"] for r in records], pa.binary()),
            "m": pa.array([r["m"] for r in records]),
            "n": pa.array([r["n"] for r in records], pa.int64()),
            "t": pa.array([r["t"] for r in records], pa.string()),
        })
        return table, records
    if fmt == "gulp":
        records = [
            {"id": f"video-{i}", "meta": {"label": f"class {i % 3}", "n": i}, "frames": [JPEG] * (1 + i % 3)}
            for i in range(n)
        ]
        table = pa.table({
            "id": pa.array([r["id"] for r in records]),
            "meta": pa.array([r["meta"] for r in records]),
            "frames": pa.array([r["frames"] for r in records], pa.list_(pa.binary())),
        })
        return table, records
    raise AssertionError(fmt)


FORMATS = ["ffrecord", "syrah", "ofrecord", "granular", "bags", "gulp", "parquet", "arrow"]
NAMES = {
    "ffrecord": "data.ffr",
    "syrah": "data.syr",
    "ofrecord": "parts",
    "granular": "ds",
    "bags": "bags",
    "gulp": "clips",
    "parquet": "t.parquet",
    "arrow": "t.arrow",
}
SORTED = {"ofrecord", "granular", "bags"}  # formats that keep fields sorted by name


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("as_reader", [False, True], ids=["table", "reader"])
def test_every_format_from_a_table_reads_back_equal(tmp_path, fmt, as_reader):
    table, records = table_for(fmt)
    # Several batches of uneven sizes, as a table or a one-pass stream of them.
    table = pa.Table.from_batches(table.to_batches(max_chunksize=3))
    data = table.to_reader() if as_reader else table
    path = tmp_path / NAMES[fmt]
    report = reel.write_arrow(data, path, format=fmt)
    assert report["from"] == "arrow" and report["records"] == len(records)
    ds = reel.open(path, decode_images=False)
    assert len(ds) == len(records)
    for want, have in zip(records, ds[:]):
        if fmt in SORTED:
            want = {k: want[k] for k in sorted(want)}
        assert same(have, want), (have, want)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        back = pq.read_table(path)
        assert back.column("t").to_pylist() == table.column("t").to_pylist()
        assert back.column("m").to_pylist() == table.column("m").to_pylist()


def test_refusals_name_the_field_and_leave_nothing(tmp_path):
    table, _ = table_for("granular")
    # FFRecord holds one bytes field: the others are named.
    with pytest.raises(reel.SchemaError) as e:
        reel.write_arrow(table, tmp_path / "x.ffr", format="ffrecord")
    assert any(name in str(e.value) for name in ("a", "m", "n", "t"))
    # A struct column is a map, which Syrah cannot hold.
    with pytest.raises(reel.SchemaError, match='"m"'):
        reel.write_arrow(table.select(["m", "t"]), tmp_path / "x.syr", format="syrah")
    # A column reel has no value for, before anything is read.
    dec = pa.table({"price": pa.array([1], pa.decimal128(10, 2))})
    with pytest.raises(reel.UnsupportedError, match="price"):
        reel.write_arrow(dec, tmp_path / "d", format="granular")
    # Losses refused when asked: Granular stores keys in sorted order, so columns out of
    # that order lose it (columns already in order lose nothing).
    unsorted = table.select(sorted(table.column_names, reverse=True))
    with pytest.raises(reel.SchemaError, match="lose"):
        reel.write_arrow(unsorted, tmp_path / "g", format="granular", lossless_only=True)
    reel.write_arrow(table.select(sorted(table.column_names)), tmp_path / "ok", format="granular", lossless_only=True)
    shutil.rmtree(tmp_path / "ok")
    assert os.listdir(tmp_path) == []


def test_a_failing_stream_leaves_nothing(tmp_path):
    table, _ = table_for("granular", 40)

    def batches():
        yield from table.to_batches(max_chunksize=10)[:2]
        raise RuntimeError("the producer broke")

    reader = pa.RecordBatchReader.from_batches(table.schema, batches())
    with pytest.raises(reel.ReelError, match="the producer broke"):
        reel.write_arrow(reader, tmp_path / "g", format="granular")
    assert os.listdir(tmp_path) == []


def test_existing_destination_and_bad_arguments(tmp_path):
    table, _ = table_for("ffrecord")
    path = tmp_path / "a.ffr"
    reel.write_arrow(table, path, format="ffrecord")
    with pytest.raises(reel.InvalidInputError, match="already exists"):
        reel.write_arrow(table, path, format="ffrecord")
    assert reel.write_arrow(table.slice(0, 2), path, format="ffrecord", overwrite=True)["records"] == 2
    assert len(reel.open(path)) == 2
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        reel.write_arrow([{"data": b"x"}], tmp_path / "b.ffr", format="ffrecord")
    with pytest.raises(reel.InvalidInputError, match="unknown format"):
        reel.write_arrow(table, tmp_path / "b", format="tfrecord")
    # A reel dataset is Arrow data too: copied through the stream protocol.
    copied = reel.write_arrow(reel.open(path), tmp_path / "c.ffr", format="ffrecord")
    assert copied["records"] == 2 and reel.open(tmp_path / "c.ffr")[:] == reel.open(path)[:]


def test_the_stream_is_read_batch_by_batch(tmp_path):
    """512 MiB made batch by batch while written: the writer holds about one batch, so the
    process's peak memory grows far less than the data (measured in a fresh process; about
    64 MiB of the growth is pyarrow's memory pool, which grows as much when Python itself
    only iterates over the batches)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import resource, pyarrow as pa, reel
        schema = pa.schema([("data", pa.binary())])
        def batches():
            for k in range(512):
                yield pa.record_batch([pa.array([bytes([k % 256]) * 10240] * 100, pa.binary())], schema=schema)
        reader = pa.RecordBatchReader.from_batches(schema, batches())
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        report = reel.write_arrow(reader, {str(tmp_path / "big.ffr")!r}, format="ffrecord")
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(report["records"], (after - before) // 1024)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    records, grown_mib = map(int, out.stdout.split())
    assert records == 51200
    assert grown_mib < 128, f"peak memory grew {grown_mib} MiB for 512 MiB of data"
    ds = reel.open(tmp_path / "big.ffr")
    assert ds[51199]["data"] == bytes([255]) * 10240 and ds[100]["data"] == bytes([1]) * 10240


def test_null_cells_to_granular_are_nulls_in_msgpack_columns(tmp_path):
    """A null cell is written as null; a Granular column holds null only as msgpack, which a
    column whose first value is null gets, and ``nullable`` gives the others."""
    table = pa.table({
        "label": pa.array([None, 1, 2], pa.int64()),
        "caption": pa.array(["a", None, "c"], pa.string()),
    })
    with pytest.raises(reel.SchemaError, match="--nullable caption") as e:
        reel.write_arrow(table, tmp_path / "g", format="granular")
    assert e.value.record == 1 and '"caption"' in str(e.value)
    assert os.listdir(tmp_path) == []
    for fmt in ("granular", "bags"):
        reel.write_arrow(table, tmp_path / fmt, format=fmt, nullable=["caption"])
        assert reel.open(tmp_path / fmt)[:] == [
            {"caption": "a", "label": None},
            {"caption": None, "label": 1},
            {"caption": "c", "label": 2},
        ]


def test_rows_without_columns_are_refused_for_parquet_and_kept_in_ipc(tmp_path):
    """A Parquet file counts its rows in its column chunks: three records without fields
    were reported written and read back as none (pyarrow loses them so too)."""
    table = pa.table({"a": [1, 2, 3]}).drop_columns(["a"])
    with pytest.raises(reel.SchemaError, match="cannot hold rows without columns"):
        reel.write_arrow(table, tmp_path / "none.parquet", format="parquet")
    assert list(tmp_path.iterdir()) == []
    assert reel.write_arrow(table, tmp_path / "kept.arrow", format="arrow")["records"] == 3
    assert len(reel.open(tmp_path / "kept.arrow")) == 3
