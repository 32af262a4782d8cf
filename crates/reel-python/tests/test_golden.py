"""Every format against the golden corpus's expected.json manifests, through the Python API.

The files were written by the reference implementations; each manifest says what a reader
must give back. Values are compared as Python objects (bytes, str, int, NumPy arrays ...).
"""

from __future__ import annotations

import numpy as np
import pytest

import reel
from conftest import check_bytes, check_value, dataset_path, golden_cases, manifest, same, sha256

# Format keys of index.json and the reel format name for each.
FORMATS = {
    "ffrecord": "ffrecord",
    "syrah": "syrah",
    "ofrecord": "ofrecord",
    "granular/granular-0.24.2": "granular",
    "granular/bags-0.5.1": "granular",
    "gulpio2": "gulp",
}

# Cases that are not a dataset a reader can open, with the reason; each is still asserted to
# fail with a reel error (never a crash) in test_unopenable_cases.
UNOPENABLE = {
    ("granular/bags-0.5.1", "empty"): "bags writes no spec.json for zero records",
    ("syrah", "quirk_item_without_arrays"): "the reference writes a file it cannot read back",
    ("syrah", "quirk_zero_items"): "the reference leaves an empty file",
}


# Directories holding one bare bag (no spec.json): they open as that bag, records of one
# bytes field `data` (test_a_directory_holding_one_bare_bag).
BARE_BAGS = [
    ("granular/bags-0.5.1", "raw_bag"),
    ("granular/bags-0.5.1", "raw_bag_empty"),
    ("granular/granular-0.24.2", "raw_bag"),
]


def cases(corrupt: bool):
    return [
        pytest.param(key, case, id=f"{key}/{case}")
        for key in FORMATS
        for case in golden_cases(key, corrupt=corrupt)
        if (key, case) not in UNOPENABLE and (key, case) not in BARE_BAGS
    ]


def check_ffrecord(records, m):
    for e in m["records"]:
        r = records[e["index"]]
        assert list(r) == ["data"]
        check_bytes(r["data"], e["content"], f"record {e['index']}")


def check_syrah(records, m):
    for e in m["records"]:
        r = records[e["index"]]
        assert list(r) == list(e["arrays"]), f"item {e['index']}: array names"
        for name, a in e["arrays"].items():
            where = f"item {e['index']} array {name}"
            d, value = a["decoded"], r[name]
            if "value" in d:
                assert value == d["value"], where
                continue
            assert isinstance(value, np.ndarray), where
            assert list(value.shape) == d["shape"], where
            assert sha256(value.tobytes()) == d["sha256"], where
            if "hex" in d:
                assert value.tobytes().hex() == d["hex"], where
            if "values" in d:
                assert value.tolist() == d["values"], where


OFRECORD_DTYPES = {
    "int32_list": np.int32,
    "int64_list": np.int64,
    "float_list": np.float32,
    "double_list": np.float64,
}


def check_ofrecord(records, m):
    for e in m["records"]:
        r = records[e["index"]]
        assert list(r) == list(e["features"]), f"record {e['index']}: feature names"
        for name, f in e["features"].items():
            where = f"record {e['index']} feature {name}"
            value = r[name]
            if f["kind"] is None:
                assert value is None or len(value) == 0, where
                continue
            assert len(value) == f["count"], where
            if f["kind"] == "bytes_list":
                assert isinstance(value, list), where
                for k, (v, d) in enumerate(zip(value, f["values"])):
                    check_value(v, d, f"{where}[{k}]")
                continue
            assert isinstance(value, np.ndarray) and value.dtype == OFRECORD_DTYPES[f["kind"]], where
            assert sha256(value.tobytes()) == f["le_bytes_sha256"], where
            if "values_bits_hex" in f:
                width = value.dtype.itemsize * 2
                bits = [format(int(x), f"0{width}x") for x in value.view(f"<u{value.dtype.itemsize}")]
                assert bits == f["values_bits_hex"], where
            elif "values" in f:
                assert value.tolist() == f["values"], where


def check_shape_only(value, want, where):
    """JPEG pixels depend on the decoder: dtype and shape must match, not the hash."""
    if want["type"] == "list":
        assert isinstance(value, list) and len(value) == len(want["items"]), where
        for k, (v, w) in enumerate(zip(value, want["items"])):
            check_shape_only(v, w, f"{where}[{k}]")
        return
    assert isinstance(value, np.ndarray), where
    assert value.dtype.name == want["dtype"] and list(value.shape) == want["shape"], where


def check_granular(records, m):
    for e in m["records"]:
        r = records[e["index"]]
        for key, col in e["columns"].items():
            where = f"record {e['index']} key {key}"
            if "decoded" not in col:
                continue
            if m["spec"][key].removesuffix("[]") in ("jpg", "jpeg"):
                check_shape_only(r[key], col["decoded"], where)
            else:
                check_value(r[key], col["decoded"], where)


def check_gulp(records, m, decoded: bool):
    for k, e in enumerate(m["records"]):
        r = records[k]
        assert r["id"] == e["id"], f"video {k}: id"
        check_value(r["meta"], e["meta_returned"], f"video {k} meta")
        assert len(r["frames"]) == len(e["frames"]), f"video {k}: frames"
        for f, want in zip(r["frames"], e["frames"]):
            where = f"video {k} frame {want['frame']}"
            if decoded:
                # JPEG pixels depend on the decoder (the manifest's notes): dtype and shape.
                assert isinstance(f, np.ndarray) and f.dtype == np.uint8, where
                assert list(f.shape) == want["decoded"]["shape"], where
            else:
                check_bytes(f, want["jpeg"], where)


def check_records(records, m, fmt: str) -> None:
    """The records of a golden case against its manifest, with the format's checks (gulp
    frames decoded)."""
    if fmt == "ffrecord":
        check_ffrecord(records, m)
    elif fmt == "syrah":
        check_syrah(records, m)
    elif fmt == "ofrecord":
        check_ofrecord(records, m)
    elif fmt == "granular":
        check_granular(records, m)
    elif fmt == "gulp":
        check_gulp(records, m, decoded=True)


@pytest.mark.parametrize("key,case", cases(corrupt=False))
def test_golden_dataset(key, case):
    m = manifest(key, case)
    fmt = FORMATS[key]
    ds = reel.open(dataset_path(key, case), format=fmt)
    assert ds.format == fmt and ds.info.format == fmt
    assert len(ds) == m["record_count"]
    records = ds[:]
    assert len(records) == len(ds)
    # One batched read in reverse order gives the same records.
    assert same(ds.read_batch(list(reversed(range(len(ds))))), list(reversed(records)))
    assert same([r for r in ds], records), "iteration"
    check_records(records, m, fmt)
    if fmt == "gulp":
        check_gulp(reel.open(dataset_path(key, case), format=fmt, decode_images=False)[:], m, decoded=False)


@pytest.mark.parametrize("key,case", [pytest.param(k, c, id=f"{k}/{c}") for k, c in BARE_BAGS])
def test_a_directory_holding_one_bare_bag(key, case):
    m = manifest(key, case)
    ds = reel.open(dataset_path(key, case))
    assert ds.format == "granular"
    assert len(ds) == m["record_count"]
    records = ds[:]
    for e in m["records"]:
        r = records[e["index"]]
        assert list(r) == ["data"]
        check_bytes(r["data"], e["content"], f"record {e['index']}")


@pytest.mark.parametrize("key,case", cases(corrupt=True))
def test_golden_corrupt_gives_reel_errors(key, case):
    """A damaged file either reads or raises a reel error; never another exception or a crash."""
    fmt = FORMATS[key]
    for verify in (True, False):
        try:
            ds = reel.open(dataset_path(key, case), format=fmt, verify=verify)
        except reel.ReelError as e:
            assert e.kind in ("corrupt", "checksum", "unsupported", "limit", "io"), e.kind
            assert e.format is not None or e.path is not None
            continue
        for i in range(len(ds)):
            try:
                ds[i]
            except reel.ReelError as e:
                assert str(e), "errors say what went wrong"
        try:
            ds[:]
        except reel.ReelError:
            pass


@pytest.mark.parametrize("key,case", [pytest.param(k, c, id=f"{k}/{c}") for k, c in UNOPENABLE])
def test_unopenable_cases(key, case):
    with pytest.raises(reel.ReelError):
        ds = reel.open(dataset_path(key, case), format=FORMATS[key])
        ds[:]
