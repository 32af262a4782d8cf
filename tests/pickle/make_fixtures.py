#!/usr/bin/env python3
"""Pickled-sample fixtures for reel's `--payload pickle`, made with Python's own pickle.

    python3 tests/pickle/make_fixtures.py            # rewrite tests/pickle/fixtures/ + expected.json
    python3 tests/pickle/make_fixtures.py --ffrecord OUT.ffr [--samples N]
                                                      # an FFRecord dataset of pickled samples

Needs numpy. Each fixture is `pickle.dumps(obj, protocol)` for protocols 2 to 5, written
as fixtures/<name>.p<protocol>.pkl. expected.json records, per file, what
`pickle.loads` gives back, as the fields reel must produce:

    {"file": ..., "fields": [[name, descriptor], ...]}      a readable sample
    {"file": ..., "refused": "text the error must contain"}  a pickle reel must refuse

The descriptors are computed from the object pickle.loads returns (not from the object
that was pickled), so they say exactly what pickle.loads gives:

    null | {"bool": b} | {"int": "decimal"} | {"float": "0x<IEEE-754 bits>"} |
    {"str": s} | {"bytes": hex} | {"list": [...]} | {"map": [[k, v], ...]} |
    {"array": {"dtype": little-endian numpy str, "shape": [...], "data": hex C-order LE}}

Fields: a dict gives its keys, a tuple or list gives "0", "1", ..., anything else "data".
A NumPy scalar is a 0-d array; a tuple is a list. The Rust suite (tests/pickle_payload.rs)
reads the checked-in files, so it needs no Python.
"""
import argparse
import collections
import datetime
import json
import os
import pickle
import struct
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def describe(x):
    if x is None:
        return None
    if isinstance(x, bool):
        return {"bool": x}
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
        le = a.dtype if a.dtype.byteorder == "|" else a.dtype.newbyteorder("<")
        b = np.ascontiguousarray(a, dtype=le)
        return {"array": {"dtype": le.str, "shape": list(a.shape), "data": b.tobytes().hex()}}
    if isinstance(x, int):
        return {"int": str(x)}
    if isinstance(x, float):
        return {"float": "0x" + struct.pack(">d", x).hex()}
    if isinstance(x, str):
        return {"str": x}
    if isinstance(x, (bytes, bytearray)):
        return {"bytes": bytes(x).hex()}
    if isinstance(x, (list, tuple)):
        return {"list": [describe(v) for v in x]}
    if isinstance(x, dict):
        return {"map": [[describe(k), describe(v)] for k, v in x.items()]}
    raise TypeError(f"no descriptor for {type(x)}")


def fields(x):
    if isinstance(x, dict):
        return [[k if isinstance(k, str) else str(k), describe(v)] for k, v in x.items()]
    if isinstance(x, (list, tuple)):
        return [[str(i), describe(v)] for i, v in enumerate(x)]
    return [["data", describe(x)]]


def samples():
    """Readable samples: what training datasets hold."""
    rng = np.random.default_rng(24)
    img = rng.integers(0, 256, size=(4, 5, 3), dtype=np.uint8)
    shared = [1, 2, 3]
    yield "image_label", {"image": img, "label": 7, "name": "cat_001.jpg"}
    yield "dtypes", {
        "u8": np.arange(5, dtype=np.uint8),
        "i16_be": np.arange(-3, 3, dtype=">i2"),
        "f32": np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3),
        "f64_be": np.array([[1.5, -2.25], [np.pi, 1e300]], dtype=">f8"),
        "i64": np.array([-(2**63), 2**63 - 1], dtype=np.int64),
        "u32_be": np.array([1, 2**32 - 1], dtype=">u4"),
        "f16": np.array([0.5, -65504, 1e-7], dtype=np.float16),
        "bool": np.array([True, False, True]),
        "c64": np.array([1 + 2j, -3.5j], dtype=np.complex64),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "fortran": np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4)),
        "fortran_be": np.asfortranarray(np.arange(6, dtype=">f4").reshape(2, 3)),
        "text": np.array(["ab", "çé✓"]),
        "fixed": np.array([b"xy", b"z"]),
        "d4": np.ones((1, 2, 1, 2, 1), dtype=np.int8),
    }
    yield "scalars", {
        "f32": np.float32(1.5),
        "i64": np.int64(-7),
        "u8": np.uint8(255),
        "b": np.bool_(True),
        "f64_be": np.array(2.5, dtype=">f8")[()],
    }
    yield "nested", {
        "meta": {"size": [640, 480], "tags": ("a", "b"), "score": 0.25, "none": None},
        "boxes": [[1, 2, 3, 4], [5, 6, 7, 8]],
        "deep": {"a": {"b": {"c": {"d": [True, False, None]}}}},
        "int_keys": {1: "one", -2: "minus two"},
        "shared": [shared, shared],
    }
    yield "tuple_sample", (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), 3, "label", 0.125)
    yield "list_sample", [np.arange(3, dtype=np.int16), "x", b""]
    yield "big_ints", {
        "i64_max": 2**63 - 1,
        "i64_min": -(2**63),
        "u64": 2**64 - 1,
        "two_63": 2**63,
        "small": [0, 1, -1, 255, 256, 65535, 65536, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1],
    }
    yield "unicode", {
        "ascii": "plain",
        "accents": "naïve café",
        "cjk": "日本語テキスト",
        "emoji": "🎞️ reel",
        "empty": "",
        "long": "ü" * 300,
        "ключ": "value under a non-ASCII key",
    }
    yield "bytes_kinds", {
        "empty": b"",
        "short": b"\x00\xff\x80",
        "long": bytes(range(256)) * 20,
        "bytearray": bytearray(b"mutable"),
        "latin": bytes([0xe9, 0xff, 0x00]),
    }
    yield "floats", [0.0, -0.0, 1e-310, float("inf"), float("-inf"), float("nan"), 1 / 3]
    yield "ordered", collections.OrderedDict([("z", 1), ("a", 2)])
    yield "scalar_top", "just a string"


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


class Plain:
    def __init__(self):
        self.x = 1


def hostile():
    """Pickles Python writes for values reel must refuse, with the text the error names."""
    yield "os_system", {"x": Evil()}, "posix.system"
    yield "datetime", {"t": datetime.datetime(2020, 1, 2)}, "datetime.datetime"
    yield "class_instance", {"p": Plain()}, "Plain"
    yield "counter", collections.Counter("aab"), "collections.Counter"
    yield "set", {"s": {1, 2}}, "set"
    yield "object_array", {"a": np.array([1, "x"], dtype=object)}, "object"
    yield "structured", {"a": np.zeros(2, dtype=[("x", "<i4"), ("y", "<f8")])}, "structured"
    yield "datetime64", {"a": np.array(["2020-01-01"], dtype="datetime64[D]")}, "M8"
    yield "too_big", {"n": 2**64}, "does not fit in 64 bits"
    yield "too_negative", {"n": -(2**63) - 1}, "does not fit in 64 bits"
    cyclic = []
    cyclic.append(cyclic)
    yield "cycle", {"c": cyclic}, "cycle"


def write_fixtures():
    out = os.path.join(HERE, "fixtures")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    cases = []
    for name, obj in samples():
        for proto in (2, 3, 4, 5):
            data = pickle.dumps(obj, protocol=proto)
            fname = f"{name}.p{proto}.pkl"
            with open(os.path.join(out, fname), "wb") as f:
                f.write(data)
            cases.append({"file": fname, "fields": fields(pickle.loads(data))})
    for name, obj, refused in hostile():
        for proto in (2, 5):
            try:
                data = pickle.dumps(obj, protocol=proto)
            except Exception:  # noqa: BLE001 - some objects pickle only in some protocols
                continue
            fname = f"hostile_{name}.p{proto}.pkl"
            with open(os.path.join(out, fname), "wb") as f:
                f.write(data)
            cases.append({"file": fname, "refused": refused})
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({"numpy": np.__version__, "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} fixtures in {out}")


def write_ffrecord(path, n):
    """An FFRecord file (shared/spec/ffrecord.md) of n pickled training samples."""
    rng = np.random.default_rng(7)
    records = []
    for i in range(n):
        sample = {
            "image": rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8),
            "label": int(i % 10),
            "caption": f"sample {i} ✓",
            "bbox": np.array([i, i + 1, 2 * i, 3.5], dtype=">f4" if i % 2 else "<f4"),
            "meta": {"source": "synthetic", "index": i, "flags": (True, i % 3 == 0)},
        }
        records.append(pickle.dumps(sample, protocol=2 + i % 4))
    header = 12 + 12 * n
    offsets, pos = [], header
    for r in records:
        offsets.append(pos)
        pos += len(r)
    meta = struct.pack("<q", n)
    meta += b"".join(struct.pack("<I", zlib.crc32(r)) for r in records)
    meta += b"".join(struct.pack("<q", o) for o in offsets)
    with open(path, "wb") as f:
        f.write(struct.pack("<I", zlib.crc32(meta)) + meta)
        for r in records:
            f.write(r)
    print(f"wrote {n} pickled samples to {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ffrecord", help="write an FFRecord dataset of pickled samples here")
    ap.add_argument("--samples", type=int, default=32)
    args = ap.parse_args()
    if args.ffrecord:
        write_ffrecord(args.ffrecord, args.samples)
    else:
        write_fixtures()


if __name__ == "__main__":
    main()
