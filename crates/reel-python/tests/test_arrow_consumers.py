"""Polars and DuckDB read a reel dataset through the Arrow C stream (``__arrow_c_stream__``),
and what pyarrow imports is reel's buffers, not a copy.

Every openable golden dataset goes through ``polars.DataFrame(ds)`` and DuckDB's scan of the
Python variable (``duckdb.sql("select * from ds")``); the result, cast back to the types
reel wrote (Polars and DuckDB have their own string, binary and list layouts), is turned
into records with test_arrow's decoding and checked against the manifest. DuckDB has no
half-float type and no table without columns or with a column named "": those cases fail
loudly in DuckDB, listed below with the reason, and the columns it can read are checked.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import reel
from conftest import dataset_path, manifest, same
from test_arrow import records_of
from test_golden import FORMATS, cases, check_records

# DuckDB refuses these golden datasets, each for a reason of its own type system.
DUCKDB_REFUSES = {
    ("syrah", "normal"): "float16",
    ("granular/bags-0.5.1", "normal"): "float16",
    ("ofrecord", "empty_features"): 'a feature named ""',
    ("ofrecord", "empty_file"): "no columns",
}


def as_written(table: pa.Table, like: pa.Table) -> pa.Table:
    """``table`` (a consumer's export of reel's stream) with the columns and types of
    ``like`` (reel's own): view types back to offsets, extension types back on storage."""
    columns = []
    for field in like.schema:
        column = table.column(field.name)
        ext = isinstance(field.type, pa.ExtensionType)
        column = column.cast(field.type.storage_type if ext else field.type)
        if ext:
            chunks = [pa.ExtensionArray.from_storage(field.type, c) for c in column.chunks]
            column = pa.chunked_array(chunks, type=field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=like.schema)


def check_consumer(key: str, case: str, export) -> None:
    ds = reel.open(dataset_path(key, case), format=FORMATS[key])
    reference = pa.table(ds)
    mine = ds[:]
    got = as_written(export(ds), reference)
    assert got.num_rows == len(ds) == manifest(key, case)["record_count"]
    records = records_of(got, like=mine)
    check_records(records, manifest(key, case), FORMATS[key])
    assert same(records, records_of(reference, like=mine))


@pytest.mark.parametrize("key,case", cases(corrupt=False))
def test_polars_reads_every_golden_dataset(key, case):
    def export(ds):
        df = pl.DataFrame(ds)
        assert isinstance(df, pl.DataFrame) and df.columns == ds.to_arrow().column_names
        return df.to_arrow()

    check_consumer(key, case, export)


@pytest.mark.parametrize("key,case", cases(corrupt=False))
def test_duckdb_reads_every_golden_dataset(key, case):
    def export(ds):
        result = duckdb.sql("select * from ds").arrow()
        return result if isinstance(result, pa.Table) else result.read_all()

    if (key, case) in DUCKDB_REFUSES:
        with pytest.raises((duckdb.Error, KeyError)):
            check_consumer(key, case, export)
        return
    check_consumer(key, case, export)


def test_duckdb_reads_the_columns_it_has_types_for():
    """A dataset with a float16 array column: DuckDB refuses the column, not the dataset;
    ``arrow_stream(columns=...)`` hands it the others."""
    ds = reel.open(dataset_path("syrah", "normal"), format="syrah")
    half = [f.name for f in pa.table(ds).schema
            if pa.types.is_list(f.type) and pa.types.is_float16(f.type.value_type)]
    assert half, "the case has a float16 column"
    with pytest.raises(duckdb.Error, match="(?i)arrow type"):
        duckdb.sql("select * from ds").fetchall()
    others = [n for n in pa.table(ds).column_names if n not in half]
    stream = ds.arrow_stream(columns=others)
    result = duckdb.sql("select * from stream").arrow()
    result = result if isinstance(result, pa.Table) else result.read_all()
    reference = ds.to_arrow(columns=others)
    mine = [{k: v for k, v in r.items() if k in others} for r in ds[:]]
    got = records_of(as_written(result, reference), like=mine)
    assert len(got) == len(ds)
    assert same(got, records_of(reference, like=mine))
    assert same(got, mine)


def test_duckdb_queries_the_stream_with_sql(tmp_path):
    path = tmp_path / "small.gran"
    with reel.granular.Writer(path) as w:
        for i in range(100):
            w.write({"label": i % 7, "caption": f"c{i}", "image": bytes([i]) * (i + 1)})
    ds = reel.open(path)
    got = duckdb.sql(
        "select label, count(*) as n, sum(octet_length(image)) as b from ds "
        "group by label order by label"
    ).fetchall()
    want = [(k, len(range(k, 100, 7)), sum(i + 1 for i in range(k, 100, 7))) for k in range(7)]
    assert got == want


def test_pyarrow_imports_reels_buffers_without_copying():
    """Every byte of the table lives in buffers reel allocated in Rust: pyarrow's memory
    pool, which any copy by pyarrow would come from, stays empty; and the same buffers reach
    Polars through pyarrow (an int64 column's values keep their address through Polars and
    back)."""
    ds = reel.open(dataset_path("granular/granular-0.24.2", "normal"), format="granular")
    before = pa.total_allocated_bytes()
    table = pa.table(ds)
    assert table.nbytes > 0
    assert pa.total_allocated_bytes() == before
    ints = [n for n, f in zip(table.column_names, table.schema)
            if pa.types.is_integer(f.type)]
    assert ints, "the case has an integer column"
    column = table.column(ints[0]).combine_chunks() if table.column(ints[0]).num_chunks > 1 \
        else table.column(ints[0]).chunk(0)
    address = column.buffers()[1].address
    series = pl.from_arrow(pa.table({ints[0]: column}))[ints[0]]
    assert series.to_arrow().buffers()[1].address == address
    assert np.array_equal(series.to_numpy(), column.to_numpy())
