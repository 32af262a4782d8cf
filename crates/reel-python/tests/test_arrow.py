"""The Arrow bridge from Python: every golden dataset through the Arrow C stream protocol.

``pyarrow.table(ds)`` and ``pyarrow.RecordBatchReader.from_stream(ds)`` import reel's
batches; the tables are turned back into records here, following the type mapping the
README documents (field metadata ``reel.type``, ``arrow.fixed_shape_tensor``, tagged JSON),
and checked against the golden manifests with the same checks as test_golden.py.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import reel
from conftest import NORMAL_CASES, dataset_path, golden_root, manifest, same
from test_golden import FORMATS, cases, check_records

ABSENT = object()


def untag(j):
    """A value of a tagged-JSON column (``reel.type = json``)."""
    if isinstance(j, dict):
        if len(j) == 1:
            ((k, v),) = j.items()
            if k == "$bytes":
                return base64.b64decode(v)
            if k == "$float":
                return float(v)
            if k == "$array":
                data = base64.b64decode(v["data"])
                return np.frombuffer(data, dtype=np.dtype(v["dtype"])).reshape(v["shape"]).copy()
            if k == "$map":
                return {untag(a): untag(b) for a, b in v}
        return {k: untag(v) for k, v in j.items()}
    if isinstance(j, list):
        return [untag(x) for x in j]
    return j


def reel_type(field: pa.Field) -> str | None:
    meta = field.metadata or {}
    t = meta.get(b"reel.type")
    return t.decode() if t is not None else None


def decode(scalar: pa.Scalar, field: pa.Field):
    """One Arrow cell as the value reel returns for it (None for a null cell)."""
    if not scalar.is_valid or pa.types.is_null(field.type):
        return None
    t = field.type
    kind = reel_type(field)
    if isinstance(t, pa.FixedShapeTensorType):
        # From the storage: pyarrow's own to_numpy has no bool tensors.
        values = scalar.value.values.to_numpy(zero_copy_only=False)
        return values.reshape(t.shape).copy()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        text = scalar.as_py()
        return untag(json.loads(text)) if kind == "json" else text
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        if kind == "array":
            return scalar.values.to_numpy(zero_copy_only=False).copy()
        item = t.value_field
        return [decode(v, item) for v in scalar.values]
    if pa.types.is_struct(t):
        if kind == "ndarray":
            d = scalar.as_py()
            return np.frombuffer(d["data"], dtype=np.dtype(d["dtype"])).reshape(d["shape"]).copy()
        return {child.name: decode(scalar[child.name], child) for child in t}
    return scalar.as_py()


def records_of(table: pa.Table, like: list[dict] | None = None) -> list[dict]:
    """The table's rows as records. Arrow has one null for "no value" and "no such field":
    a null cell is left out of the record unless the record in ``like`` (what reel's own
    API read) has that field as None, so the comparison is with what Arrow can say."""
    table = table.combine_chunks()
    rows = [{} for _ in range(table.num_rows)]
    for field, column in zip(table.schema, table.columns):
        for i, scalar in enumerate(column):
            if not scalar.is_valid or pa.types.is_null(field.type):
                if like is None or like[i].get(field.name, ABSENT) is not None:
                    continue
            rows[i][field.name] = decode(scalar, field)
    if like is not None:
        # Fields in the order the records have them.
        rows = [{k: r[k] for k in sorted(r, key=list(want).index)} if set(r) <= set(want) else r
                for r, want in zip(rows, like)]
    return rows


@pytest.mark.parametrize("key,case", cases(corrupt=False))
def test_golden_dataset_through_the_arrow_stream(key, case):
    m = manifest(key, case)
    fmt = FORMATS[key]
    ds = reel.open(dataset_path(key, case), format=fmt)
    table = pa.table(ds)
    assert table.num_rows == m["record_count"]
    mine = ds[:]
    records = records_of(table, like=mine)
    check_records(records, m, fmt)
    # The same records reel's own API returns, value for value.
    assert same(records, mine)
    # The stream reader gives the same rows; so does to_arrow (compared as records: NaN
    # cells make Table.equals false).
    streamed = pa.RecordBatchReader.from_stream(ds).read_all()
    assert streamed.schema == table.schema
    assert same(records_of(streamed, like=mine), records)
    assert same(records_of(ds.to_arrow(), like=mine), records)


@pytest.mark.parametrize("key,case", cases(corrupt=False))
def test_ranges_and_index_lists_are_the_matching_rows(key, case):
    ds = reel.open(dataset_path(key, case), format=FORMATS[key])
    n = len(ds)
    mine = ds[:]
    whole = records_of(ds.to_arrow(), like=mine)
    start, stop = n // 3, n - n // 3
    part = ds.to_arrow(start=start, stop=stop, with_index=True)
    assert part.column("_index").to_pylist() == list(range(start, stop))
    part_records = records_of(part.drop_columns(["_index"]), like=mine[start:stop])
    assert same(part_records, whole[start:stop])
    order = list(reversed(range(n)))[: max(n // 2, 1)] if n else []
    picked = ds.to_arrow(indices=order, with_index=True)
    assert picked.column("_index").to_pylist() == order
    picked_records = records_of(picked.drop_columns(["_index"]), like=[mine[i] for i in order])
    assert same(picked_records, [whole[i] for i in order])


@pytest.mark.parametrize("key,case", NORMAL_CASES)
def test_location_columns_name_each_records_file_and_bytes(key, case):
    """``with_location``: ``_file``, ``_offset`` and ``_length`` of each row lie in the
    dataset's files, and agree between a range, an index list and a batch reader (the
    Rust tests check the bytes they point at for every golden case of every format)."""
    ds = reel.open(dataset_path(key, case), format=FORMATS[key])
    n = len(ds)
    whole = ds.to_arrow(with_index=True, with_location=True)
    assert whole.column_names[-4:] == ["_index", "_file", "_offset", "_length"]
    assert whole.schema.field("_offset").type == pa.uint64()
    rows = whole.select(["_file", "_offset", "_length"]).to_pylist()
    for i, row in enumerate(rows):
        assert row["_file"] is not None, f"#{i}"
        size = os.path.getsize(row["_file"])
        assert row["_offset"] + row["_length"] <= size, f"#{i}: {row}"
        assert Path(row["_file"]).resolve().is_relative_to(golden_root().resolve())
    order = list(reversed(range(n)))
    picked = ds.to_arrow(indices=order, with_location=True)
    assert picked.select(["_file", "_offset", "_length"]).to_pylist() == [rows[i] for i in order]
    streamed = ds.to_batches(batch_rows=3, with_location=True).read_all()
    assert streamed.select(["_file", "_offset", "_length"]).to_pylist() == rows
    if key == "ffrecord":
        data = Path(rows[0]["_file"]).read_bytes()
        for i, row in enumerate(rows):
            assert data[row["_offset"] : row["_offset"] + row["_length"]] == bytes(ds[i]["data"])


def test_location_columns_are_null_where_a_source_cannot_tell(tmp_path):
    src = reel.open(dataset_path("ffrecord", "normal"), format="ffrecord")
    reel.write_arrow(src, tmp_path / "t.parquet", format="parquet")
    table = reel.open(tmp_path / "t.parquet").to_arrow(with_location=True)
    assert table.column("_file").null_count == table.num_rows == len(src)
    assert table.column("_length").null_count == table.num_rows


def small_dataset(tmp_path, n=50):
    path = tmp_path / "small.gran"
    with reel.granular.Writer(path) as w:
        for i in range(n):
            w.write({"label": i, "caption": f"c{i}", "image": bytes([i % 256]) * (i + 1)})
    return reel.open(path)


def test_batches_are_bounded_and_columns_selected(tmp_path):
    ds = small_dataset(tmp_path)
    reader = ds.to_batches(batch_rows=8, columns=["caption", "label"])
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == ["caption", "label"]
    batches = list(reader)
    assert [b.num_rows for b in batches] == [8] * 6 + [2]
    assert pa.Table.from_batches(batches).column("label").to_pylist() == list(range(50))
    by_bytes = ds.to_batches(batch_bytes=64, columns=["image"])
    assert all(b.num_rows < 50 for b in by_bytes)
    large = ds.to_arrow(large_types=True)
    assert large.schema.field("image").type == pa.large_binary()
    assert large.schema.field("caption").type == pa.large_string()


def test_a_stream_is_consumed_once_and_names_its_columns(tmp_path):
    ds = small_dataset(tmp_path, 5)
    stream = ds.arrow_stream(stop=3)
    assert "label" in repr(stream)
    assert pa.schema(stream).names == pa.table(ds).schema.names
    assert pa.table(stream).num_rows == 3
    with pytest.raises(reel.ClosedError):
        pa.table(stream)


def test_threads_sharing_a_stream_each_take_batches(tmp_path):
    # Two threads iterating one stream deadlocked: one held the stream's lock waiting for
    # the GIL, the other held the GIL waiting for the lock.
    import threading

    reel.generate(tmp_path / "d.ffr", records=20000, max_record=64)
    stream = reel.open(tmp_path / "d.ffr").arrow_stream(batch_rows=100)
    rows = [0, 0]

    def drain(k: int) -> None:
        for batch in stream:
            rows[k] += batch.num_rows

    threads = [threading.Thread(target=drain, args=(k,), daemon=True) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert sum(rows) == 20000


def test_a_damaged_record_raises_reels_error_while_reading_batches(tmp_path):
    """The error of a record read after the schema sample (here: every record, the schema
    being given) is reel's own, with its record number, from to_batches and to_arrow."""
    path = tmp_path / "damaged.ffr"
    with reel.ffrecord.Writer(path) as w:
        for i in range(30):
            w.write({"data": b"%d" % i})
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    ds = reel.open(path)
    schema = pa.schema([("data", pa.binary())])
    batches = ds.to_batches(schema=schema, batch_rows=8)
    assert next(batches).num_rows == 8
    with pytest.raises(reel.ChecksumError) as error:
        list(batches)
    assert error.value.record == 29
    with pytest.raises(reel.ChecksumError):
        ds.to_arrow(schema=schema)
    # Iterating a stream gives pyarrow batches and the same error.
    stream = ds.arrow_stream(schema=schema, stop=29, batch_rows=10)
    assert [b.num_rows for b in stream] == [10, 10, 9]
    with pytest.raises(reel.ChecksumError):
        list(ds.arrow_stream(schema=schema, start=20))


def test_a_given_schema_is_used(tmp_path):
    ds = small_dataset(tmp_path, 5)
    schema = pa.schema([("label", pa.uint64()), ("caption", pa.string()), ("image", pa.binary())])
    table = ds.to_arrow(schema=schema)
    assert table.schema == schema
    assert table.column("label").to_pylist() == list(range(5))
    # The protocol's requested schema is honoured where reel can write it.
    assert pa.table(ds, schema=schema).schema == schema
    large = pa.schema([("caption", pa.large_string()), ("image", pa.large_binary())])
    assert ds.to_arrow(schema=large, columns=["caption", "image"]).schema == large


def test_a_requested_schema_the_records_do_not_fit_is_left_aside(tmp_path):
    # Text asked for a column of integers: reel cannot build it, so the stream keeps its
    # own schema (the protocol lets a producer) and pyarrow casts; it failed mid-read.
    ds = small_dataset(tmp_path, 5)
    asked = pa.schema([("label", pa.string()), ("caption", pa.string()), ("image", pa.binary())])
    table = pa.table(ds, schema=asked)
    assert table.schema == asked
    assert table.column("label").to_pylist() == [str(i) for i in range(5)]


def test_a_given_schema_may_use_arrow_types_reel_does_not_build(tmp_path):
    """int32, float32, timestamp, dictionary<utf8> and large_list targets: the columns are
    built from reel's values and cast, so the table has the types asked for; a value the
    type cannot hold is a reel.SchemaError naming the field and the record."""
    ds = small_dataset(tmp_path, 200)
    schema = pa.schema(
        [
            ("label", pa.int32()),
            ("caption", pa.dictionary(pa.int32(), pa.string())),
            ("image", pa.large_binary()),
        ]
    )
    table = ds.to_arrow(schema=schema)
    assert table.schema == schema
    assert table.column("label").to_pylist() == list(range(200))
    assert table.column("caption").to_pylist()[7] == "c7"
    assert pa.table(ds, schema=schema).schema == schema
    times = pa.schema([("label", pa.timestamp("ms", tz="UTC")), ("image", pa.large_list(pa.uint8()))])
    with pytest.raises(reel.SchemaError, match="image"):
        # Bytes are not arrays of uint8: the column holds bytes.
        ds.to_arrow(schema=times)
    stamped = ds.to_arrow(schema=pa.schema([("label", pa.timestamp("ms", tz="UTC"))]))
    assert stamped.column("label").type == pa.timestamp("ms", tz="UTC")
    assert stamped.column("label").cast(pa.int64()).to_pylist()[:3] == [0, 1, 2]
    with pytest.raises(reel.SchemaError, match='"label"') as error:
        ds.to_arrow(schema=pa.schema([("label", pa.int8())]))
    assert error.value.record == 128
    with pytest.raises(reel.SchemaError, match='"price"'):
        ds.to_arrow(schema=pa.schema([("price", pa.decimal128(10, 2))]))

    # float32 and large_list<float32> from records of floats and arrays.
    arrays = tmp_path / "arrays.gran"
    with reel.granular.Writer(arrays) as w:
        for i in range(4):
            w.write({"score": i / 4, "emb": np.array([i, 0.5], dtype=np.float32)})
    floats = reel.open(arrays)
    wanted = pa.schema([("score", pa.float32()), ("emb", pa.large_list(pa.float32()))])
    table = floats.to_arrow(schema=wanted)
    assert table.schema == wanted
    assert table.column("score").to_pylist() == [0.0, 0.25, 0.5, 0.75]
    assert table.column("emb").to_pylist()[3] == [3.0, 0.5]


def test_bad_arguments_are_refused(tmp_path):
    ds = small_dataset(tmp_path, 5)
    with pytest.raises(reel.OutOfRangeError):
        ds.to_arrow(indices=[0, 5])
    with pytest.raises(ValueError):
        ds.to_arrow(indices=[0], start=1)
    with pytest.raises(reel.InvalidInputError, match="nope"):
        ds.to_arrow(columns=["nope"])
    with pytest.raises(TypeError):
        ds.to_arrow(schema=42)
    # A range beyond the end is cut to the dataset, like a slice.
    assert ds.to_arrow(start=3, stop=100).num_rows == 2
    assert ds.to_arrow(start=9).num_rows == 0


@pytest.mark.parametrize("key,case", cases(corrupt=False))
def test_golden_dataset_to_a_parquet_file_read_by_pyarrow(key, case, tmp_path):
    """Every golden dataset written to a Parquet file by reel (``reel.write_arrow(ds, ...,
    format="parquet")``: the stream's batches through reel's Parquet writer) and read back by
    ``pyarrow.parquet``: the manifest's record count and values. pyarrow restores extension
    types at the top level only, so a fixed-shape tensor inside a struct comes back as its
    storage (a fixed-size list; the values are there): the table is cast to the schema reel
    wrote, which the file also holds."""
    import pyarrow.parquet as pq

    m = manifest(key, case)
    fmt = FORMATS[key]
    ds = reel.open(dataset_path(key, case), format=fmt)
    out = tmp_path / "out.parquet"
    reel.write_arrow(ds, out, format="parquet")
    table = pq.read_table(out)
    assert table.num_rows == m["record_count"]
    table = table.cast(pa.table(ds).schema)
    mine = ds[:]
    records = records_of(table, like=mine)
    check_records(records, m, fmt)
    assert same(records, mine)


def test_open_with_columns_leaves_out_a_column_reel_cannot_read(tmp_path):
    """A Parquet or IPC file with a decimal column opens with ``columns=`` naming the
    others (never decoding the decimal), also after pickling; without it the refusal names
    the column, and other formats refuse ``columns=``."""
    import decimal
    import pickle

    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "x": pa.array([1, 2, 3], pa.int64()),
            "price": pa.array([decimal.Decimal("1.25")] * 3, pa.decimal128(10, 2)),
            "y": pa.array(["a", "b", "c"]),
        }
    )
    paths = [tmp_path / "prices.parquet", tmp_path / "prices.arrow"]
    pq.write_table(table, paths[0])
    feather.write_feather(table, paths[1])
    for path in paths:
        with pytest.raises(reel.UnsupportedError, match='"price"'):
            reel.open(path)
        ds = reel.open(path, columns=["y", "x"])
        assert len(ds) == 3
        assert list(ds[2].items()) == [("y", "c"), ("x", 3)]
        again = pickle.loads(pickle.dumps(ds))
        assert list(again[0]) == ["y", "x"]
        assert pa.table(ds).column_names == ["y", "x"]
        with pytest.raises(reel.InvalidInputError, match="prise"):
            reel.open(path, columns=["prise"])
        # Or the other way: every column but the one left out.
        rest = reel.open(path, skip_columns=["price"])
        assert [name for name, _ in rest.info.schema] == ["x", "y"]
        assert pickle.loads(pickle.dumps(rest))[1] == {"x": 2, "y": "b"}
        assert pa.table(rest).column_names == ["x", "y"]
        with pytest.raises(reel.InvalidInputError, match="skip_columns"):
            rest.to_arrow(columns=["y", "price"])
        assert list(reel.open(path, columns=["y", "x"], skip_columns=["x"])[0]) == ["y"]
        with pytest.raises(reel.InvalidInputError, match="prise"):
            reel.open(path, skip_columns=["prise"])
    ffr = tmp_path / "a.ffr"
    with reel.ffrecord.Writer(ffr) as w:
        w.write({"data": b"x"})
    with pytest.raises(ValueError, match="columns="):
        reel.open(ffr, columns=["data"])
    with pytest.raises(ValueError, match="skip_columns="):
        reel.open(ffr, skip_columns=["data"])


@pytest.mark.parametrize("fmt", ["parquet", "feather"])
def test_a_directory_of_parts_written_by_pyarrow_reads_as_pyarrow_reads_it(tmp_path, fmt):
    """``pyarrow.dataset.write_dataset`` names its files ``part-0`` … ``part-11`` (not
    zero-padded): reel reads them in the order pyarrow does (by name), as one dataset."""
    import pyarrow.dataset as pads

    table = pa.table(
        {
            "id": pa.array(range(120), pa.int64()),
            "text": pa.array([f"row {i}" for i in range(120)]),
            "blob": pa.array([bytes([i % 256]) * (i % 7) for i in range(120)], pa.binary()),
        }
    )
    out = tmp_path / fmt
    pads.write_dataset(
        table, out, format=fmt, max_rows_per_file=10, max_rows_per_group=10
    )
    ds = reel.open(out)
    assert len(ds) == 120 and len(ds.info.files) == 12
    want = pads.dataset(out, format=fmt).to_table()
    assert want["id"].to_pylist() != list(range(120))  # part-10 comes before part-2
    got = pa.table(ds)
    assert got.column_names == ["id", "text", "blob"]
    for name in got.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    # Random batches across parts, as a DataLoader reads them.
    order = np.random.default_rng(5).permutation(120)[:50].tolist()
    ids = want["id"].to_pylist()
    assert [r["id"] for r in ds.read_batch(order)] == [ids[k] for k in order]
    # And converted as one dataset.
    back = tmp_path / "gran"
    reel.convert(out, back, to="granular")
    assert [r["id"] for r in reel.open(back)] == ids


def test_a_hive_partitioned_table_written_by_pyarrow_reads_as_pyarrow_reads_it(tmp_path):
    """``write_dataset(partitioning_flavor="hive")`` stores key columns in directory names
    (``year=2020/lang=de%2Ffr/``, ``year=__HIVE_DEFAULT_PARTITION__`` for a null): reel
    reads the files in pyarrow's order and gives every row its keys back, declared as
    pyarrow types them (``int32`` for integers, text otherwise)."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    n = 60
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "blob": pa.array([bytes([i]) * (i % 5) for i in range(n)], pa.binary()),
            "year": pa.array([[2020, 2021, None][i % 3] for i in range(n)], pa.int32()),
            "lang": pa.array([["en", "x y", "de/fr", "en"][i % 4] for i in range(n)]),
        }
    )
    out = tmp_path / "table"
    pads.write_dataset(
        table, out, format="parquet", partitioning=["year", "lang"], partitioning_flavor="hive"
    )
    # What an unfinished Spark job leaves: not part of the table.
    (out / "_temporary").mkdir()
    pq.write_table(table, out / "_temporary" / "part-9.parquet")
    want = pads.dataset(out, format="parquet", partitioning="hive").to_table()
    ds = reel.open(out)
    assert len(ds) == n and len(ds.info.files) == 9
    got = pa.table(ds)
    assert got.column_names == want.column_names == ["id", "blob", "year", "lang"]
    assert want.schema.field("year").type == pa.int32()
    assert ds.info.schema[2:] == [("year", "Int32"), ("lang", "Utf8")]
    for name in want.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    # A row's keys are fields of its record; a null key is a field the record lacks.
    rows = want.to_pylist()
    k = next(i for i, r in enumerate(rows) if r["year"] is None)
    assert "year" not in ds[k] and ds[k]["lang"] == rows[k]["lang"]
    assert ds[0] == {key: v for key, v in rows[0].items() if v is not None}
    # A key is selected like a column.
    assert list(reel.open(out, columns=["lang"])[0]) == ["lang"]
    # Converted, the keys travel with every row (to a record format too: the Rust tests).
    back = tmp_path / "one.arrow"
    reel.convert(out, back, to="arrow")
    assert pa.ipc.open_file(back).read_all().to_pylist() == rows


def test_a_pickled_table_opens_from_another_directory_and_refuses_to_have_grown(
    tmp_path, monkeypatch
):
    """A DataLoader or Ray worker unpickles a dataset and reads the indices the parent
    gave it: opened by a relative path, it opens where the parent opened it; a table that
    grew meanwhile (a daily partition landed) is refused, since every index after the new
    part would be another record."""
    import pickle

    import pyarrow.parquet as pq

    out = tmp_path / "table"
    for day in ("02", "03"):
        (out / f"date=2024-01-{day}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [int(day)]}), out / f"date=2024-01-{day}" / "p.parquet")
    monkeypatch.chdir(tmp_path)
    ds = reel.open("table")
    assert ds.path == str(out) or Path(ds.path) == out
    blob = pickle.dumps(ds)
    monkeypatch.chdir("/")
    again = pickle.loads(blob)
    assert [again[i] for i in range(len(again))] == [ds[i] for i in range(len(ds))]

    (out / "date=2024-01-01").mkdir()
    pq.write_table(pa.table({"x": [1]}), out / "date=2024-01-01" / "p.parquet")
    with pytest.raises(reel.CorruptError, match="had 2 records then and has 3 now"):
        pickle.loads(blob)
    assert len(reel.open(out)) == 3
    # A forked child (a DataLoader worker under fork) opens the files again too: refused
    # alike, where the parent goes on reading what it opened.
    child = os.fork()
    if child == 0:
        try:
            ds[0]
            os._exit(1)
        except reel.CorruptError:
            os._exit(0)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert ds[0] == {"x": 2, "date": "2024-01-02"}


def test_parts_named_and_typed_as_other_writers_leave_them_read_as_pyarrow_reads_them(tmp_path):
    """Hive names its parts ``000000_0``; polars writes ``large_string``; a part of one
    writer has its columns in another order; Spark escapes a column name in a directory
    name (``a%3Ab=1``). pyarrow reads all of it as one table, and so does reel; a
    selection naming a key first gives it first. A stray ``README.txt`` is refused, as
    pyarrow refuses it, naming the file."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    out = tmp_path / "table"
    for part, (columns, key) in enumerate(
        [
            ({"id": pa.array([0, 1], pa.int64()), "s": pa.array(["a", "b"])}, "a%3Ab=1"),
            ({"s": pa.array(["c"], pa.large_string()), "id": pa.array([2], pa.int32())},
             "a%3Ab=2"),
            ({"id": pa.array([3, 4]), "s": pa.array(["d", "e"]).dictionary_encode()}, "a%3Ab=3"),
        ]
    ):
        (out / key).mkdir(parents=True)
        pq.write_table(pa.table(columns), out / key / f"00000{part}_0")
    want = pads.dataset(out, format="parquet", partitioning="hive").to_table()
    ds = reel.open(out)
    got = pa.table(ds)
    assert got.column_names == want.column_names == ["id", "s", "a:b"]
    for name in want.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    assert [list(r) for r in (ds[0], ds[2], ds[3])] == [["id", "s", "a:b"]] * 3
    picked = reel.open(out, columns=["a:b", "id"])
    assert [f for f, _ in picked.info.schema] == ["a:b", "id"]
    assert list(picked[2].items()) == [("a:b", 2), ("id", 2)]
    assert pa.table(picked).column_names == ["a:b", "id"]

    (out / "README.txt").write_text("written by a job")
    with pytest.raises(ValueError):  # pyarrow: the file is no Parquet file
        pads.dataset(out, format="parquet", partitioning="hive").to_table()
    with pytest.raises(reel.CorruptError, match="README.txt"):
        reel.open(out)


def test_arrow_columns_of_a_granular_dataset_read_only_those_keys(tmp_path):
    """``to_arrow(columns=)`` on a Granular dataset opened whole reads only the keys named
    (it read and decoded every key, then dropped the others): a damaged image bag does not
    fail a stream of the labels. A column outside the selection the dataset was opened
    with is refused, naming that selection."""
    path = tmp_path / "ds"
    with reel.granular.Writer(path, schema={"image": "png", "label": "int"}) as w:
        for i in range(10):
            w.write({"image": b"\x89PNG not really", "label": i})
    with pytest.raises(reel.CorruptError):
        reel.open(path).to_arrow()
    table = reel.open(path).to_arrow(columns=["label"])
    assert table.column("label").to_pylist() == list(range(10))
    assert pa.table(reel.open(path).arrow_stream(columns=["label"])).num_rows == 10
    with pytest.raises(reel.InvalidInputError, match=r'opened with columns=\["label"\]'):
        reel.open(path, columns=["label"]).to_arrow(columns=["image"])
    # An interrupted write of the image key (its index one entry short) fails the whole
    # dataset, and nothing that leaves the key out.
    index = path / "image.idx"
    index.write_bytes(index.read_bytes()[:-8])
    with pytest.raises(reel.CorruptError):
        reel.open(path)
    assert [r["label"] for r in reel.open(path, columns=["label"])] == list(range(10))


def test_a_list_column_whose_first_null_item_comes_after_the_sample_reads_whole(tmp_path):
    # pyarrow's list<int64> has nullable items. The 1,000 records sampled are 1-D arrays;
    # record 1500 is a list (an item is null). Every Arrow path refused it as a misfit,
    # even given the file's own schema.
    import pyarrow.parquet as pq

    rows = [[i, -i] for i in range(2000)]
    rows[1500] = [7, None]
    table = pa.table({"v": pa.array(rows, pa.list_(pa.int64()))})
    path = tmp_path / "late.parquet"
    pq.write_table(table, path)
    ds = reel.open(path)
    assert ds[1500] == {"v": [7, None]}
    for got in [pa.table(ds), ds.to_arrow(schema=pq.read_schema(path))]:
        assert got.column("v").type == pa.list_(pa.int64())
        assert got.column("v").to_pylist() == rows
    out = tmp_path / "out.parquet"
    reel.convert(path, out, to="parquet")
    assert pq.read_table(out).column("v").to_pylist() == rows


def test_parts_whose_timestamps_count_in_other_units_are_refused(tmp_path):
    # pandas writes nanoseconds (or microseconds), Spark microseconds, others
    # milliseconds: read as their plain counts, such parts would make one column of
    # numbers meaning different things. pyarrow casts them to the first part's unit; reel
    # refuses, naming the parts.
    import datetime

    import pyarrow.parquet as pq

    when = [datetime.datetime(2024, 1, 1)]
    (tmp_path / "t").mkdir()

    def part(name, unit, tz=None):
        column = pa.array(when, pa.timestamp(unit, tz=tz))
        pq.write_table(pa.table({"t": column}), tmp_path / "t" / name)

    part("part-0.parquet", "ms")
    part("part-1.parquet", "ms", tz="UTC")  # a time zone changes no stored count
    assert [r["t"] for r in reel.open(tmp_path / "t")] == [1704067200000] * 2
    part("part-2.parquet", "us")
    with pytest.raises(reel.SchemaError, match="part-2.parquet has the columns"):
        reel.open(tmp_path / "t")


def test_parts_whose_columns_came_and_went_read_as_pyarrow_unifies_them(tmp_path):
    # A table written over time by pandas: a column added after the first part, a part
    # whose column holds only None (pandas writes it as Arrow's null type), and an empty
    # part whose object column is null too. pyarrow reads them with a unified schema;
    # reel refused the directory as parts of different tables.
    import pandas as pd
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    d = tmp_path / "t"
    d.mkdir()
    pd.DataFrame({"id": [0, 1]}).to_parquet(d / "part-0.parquet")
    pd.DataFrame({"id": [2, 3], "label": ["a", "b"]}).to_parquet(d / "part-1.parquet")
    nothing = pd.Series([None], dtype=object)
    pd.DataFrame({"id": [4], "label": nothing}).to_parquet(d / "part-2.parquet")
    pd.DataFrame({"id": pd.Series([], dtype="int64"), "label": nothing[:0]}).to_parquet(
        d / "part-3.parquet"
    )
    schema = pa.unify_schemas([pq.read_schema(p) for p in sorted(d.iterdir())])
    expected = pds.dataset(d, schema=schema).to_table()
    ds = reel.open(d)
    assert len(ds) == 5
    assert [r.get("label") for r in ds] == [None, None, "a", "b", None]
    got = pa.table(ds)
    assert got.column_names == ["id", "label"]
    assert got.to_pylist() == expected.select(["id", "label"]).to_pylist()
    # Text where the table has integers is still another table.
    pd.DataFrame({"id": ["x"]}).to_parquet(d / "part-4.parquet")
    with pytest.raises(reel.SchemaError, match="part-4.parquet has the columns"):
        reel.open(d)


def test_an_arrow_ipc_stream_reads_as_pyarrow_reads_it(tmp_path):
    # The IPC stream format has no footer: pyarrow.ipc.new_stream, polars' write_ipc_stream
    # and Hugging Face datasets' .arrow files write it. The schema's metadata here is as
    # large as a datasets "huggingface" entry for a wide table (several KiB).
    import pyarrow.ipc as ipc
    import polars as pl

    table = pa.table(
        {
            "id": pa.array(range(1000), pa.int64()),
            "text": [f"row {i}" for i in range(1000)],
            "label": pa.array([["cat", "dog"][i % 2] for i in range(1000)]).dictionary_encode(),
            "emb": pa.array([[float(i), None] if i == 700 else [float(i)] for i in range(1000)]),
        }
    ).replace_schema_metadata({"huggingface": json.dumps({"features": ["x" * 64] * 200})})
    path = tmp_path / "data-00000-of-00001.arrow"
    with ipc.new_stream(path, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=300):
            writer.write_batch(batch)
    ds = reel.open(path)
    assert ds.format == "arrow"
    assert len(ds) == 1000
    assert ds[700] == {"id": 700, "text": "row 700", "label": "cat", "emb": [700.0, None]}
    got = pa.table(ds)
    assert got.column("text").to_pylist() == table.column("text").to_pylist()
    assert got.column("label").to_pylist() == table.column("label").to_pylist()
    assert got.column("emb").to_pylist() == table.column("emb").to_pylist()

    polars_path = tmp_path / "polars.arrows"
    pl.DataFrame({"a": [1, 2, 3], "s": ["x", "y", "z"]}).write_ipc_stream(polars_path)
    assert list(reel.open(polars_path)) == [
        {"a": 1, "s": "x"},
        {"a": 2, "s": "y"},
        {"a": 3, "s": "z"},
    ]

    # Cut inside a message: a CorruptError naming where, not a crash.
    cut = tmp_path / "cut.arrow"
    cut.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(reel.CorruptError, match="the message at byte"):
        reel.open(cut)


def test_a_feather_version_1_file_is_named_as_such(tmp_path):
    import warnings

    import pyarrow.feather as feather

    path = tmp_path / "old.feather"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feather.write_feather(pa.table({"a": [1, 2]}), path, version=1)
    with pytest.raises(reel.UnsupportedError, match="Feather version 1"):
        reel.open(path)


def test_a_given_schema_may_ask_for_a_map(tmp_path):
    """A map column (read as maps) is built as an Arrow map when a schema asks for one (a
    Parquet file's own, as `--schema-from` gives it), with its value type cast and checked;
    without a schema it is tagged JSON text, since its rows have keys of their own. It was
    refused: tagged JSON text cannot be cast to a map."""
    import pyarrow.parquet as pq

    rows = [[("a", 1), ("b", 2)], [], None, [("c", -3)]]
    table = pa.table({"m": pa.array(rows, pa.map_(pa.string(), pa.int32()))})
    path = tmp_path / "maps.parquet"
    pq.write_table(table, path)
    ds = reel.open(path)
    got = ds.to_arrow(schema=pq.read_schema(path))
    assert got.column("m").type == pa.map_(pa.string(), pa.int32())
    assert got.column("m").to_pylist() == table.column("m").to_pylist()
    # A value the asked type cannot hold is refused naming the field and the record.
    with pytest.raises(reel.SchemaError, match='"m"'):
        ds.to_arrow(schema=pa.schema([("m", pa.map_(pa.string(), pa.uint8()))]))


def test_a_key_twice_is_refused_as_a_dict_and_kept_in_arrow(tmp_path):
    """An Arrow map may hold a key twice and a struct may have two children of one name;
    a record is a dict, which keeps one value per key. ``ds[i]`` dropped the other value
    without a word; it raises, naming the field, the record and the key, as pyarrow's
    ``to_pylist`` refuses the struct. Arrow reads keep every entry."""
    import pyarrow.parquet as pq

    maps = pa.array([[("k", 1)], [("k", 1), ("k", 2)]], pa.map_(pa.string(), pa.int32()))
    path = tmp_path / "maps.parquet"
    pq.write_table(pa.table({"m": maps}), path)
    ds = reel.open(path)
    assert ds[0] == {"m": {"k": 1}}
    with pytest.raises(reel.UnsupportedError, match="'k' more than once") as caught:
        ds[1]
    assert caught.value.record == 1
    assert '"m"' in str(caught.value)
    got = ds.to_arrow(schema=pq.read_schema(path))
    assert got.column("m").to_pylist() == maps.to_pylist()

    pairs = pa.StructArray.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    path = tmp_path / "struct.parquet"
    pq.write_table(pa.table({"s": pairs}), path)
    with pytest.raises(reel.UnsupportedError, match="'a' more than once"):
        reel.open(path)[0]
