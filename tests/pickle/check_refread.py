#!/usr/bin/env python3
"""Proof by the reference: a pickled FFRecord dataset, converted by reel, reads back in the
target's reference implementation as the same fields and values `pickle.loads` gives.

    python3 tests/pickle/make_fixtures.py --ffrecord /tmp/samples.ffr
    reel convert --payload pickle --to granular /tmp/samples.ffr /tmp/samples-granular
    reel convert --payload pickle --to ofrecord --encode-nested msgpack /tmp/samples.ffr /tmp/samples-of
    REFREAD=/path/to/refread python3 tests/pickle/check_refread.py /tmp/samples.ffr /tmp/samples-granular /tmp/samples-of

Needs numpy and msgpack, and the developers' reference reader `refread`, named by the
environment variable REFREAD (it is not part of the repository). Not part of `cargo test`:
the Rust suite does not depend on it.
Prints one line per target and exits 1 on the first difference.
"""
import hashlib
import json
import os
import pickle
import struct
import subprocess
import sys

import msgpack
import numpy as np

REFREAD = os.environ.get("REFREAD")
if not REFREAD:
    sys.exit("set REFREAD to the path of the refread tool (the reference readers)")


def ffrecord_records(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<q", data, 4)
    offsets = list(struct.unpack_from(f"<{n}q", data, 12 + 4 * n)) + [len(data)]
    return [data[offsets[i] : offsets[i + 1]] for i in range(n)]


def refread(fmt, path):
    out = subprocess.run([REFREAD, fmt, path], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def le_bytes(a):
    a = np.asarray(a)
    dt = a.dtype if a.dtype.byteorder == "|" else a.dtype.newbyteorder("<")
    return np.ascontiguousarray(a, dtype=dt).tobytes(), dt.str


def same(obj, d, where):
    """Whether the Python value `obj` matches refread's descriptor `d` (granular form)."""
    t = d["type"]
    if t == "ndarray":
        data, dtype = le_bytes(obj)
        ok = (
            d["numpy_dtype_str"] == dtype
            and d["shape"] == list(np.shape(obj))
            and d["sha256"] == hashlib.sha256(data).hexdigest()
        )
    elif t in ("str", "int", "bool"):
        ok = d["value"] == obj and type(obj) is {"str": str, "int": int, "bool": bool}[t]
    elif t == "float":
        ok = d.get("value") == obj or d.get("bits_hex") == struct.pack(">d", obj).hex()
    elif t == "bytes":
        ok = d["sha256"] == hashlib.sha256(obj).hexdigest()
    elif t in ("none", "null"):
        ok = obj is None
    elif t == "list":
        ok = len(d["items"]) == len(obj) and all(
            same(o, x, f"{where}[{i}]") for i, (o, x) in enumerate(zip(obj, d["items"]))
        )
    elif t == "map":
        ok = len(d["entries"]) == len(obj) and all(
            same(k, dk, where) and same(v, dv, f"{where}.{k}")
            for (k, v), (dk, dv) in zip(obj.items(), d["entries"])
        )
    else:
        ok = False
    if not ok:
        raise SystemExit(f"DIFFERENT at {where}: python {obj!r:.200} vs reference {d!r:.300}")
    return True


def plain(x):
    """A pickled value as msgpack gives it back: tuples are lists."""
    if isinstance(x, tuple):
        return [plain(v) for v in x]
    if isinstance(x, list):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def check_granular(samples, path):
    rows = refread("granular", path)
    assert len(rows) == len(samples), (len(rows), len(samples))
    for i, (s, row) in enumerate(zip(samples, rows)):
        cols = row["columns"]
        assert sorted(cols) == sorted(s), (i, sorted(cols), sorted(s))
        for name, value in s.items():
            same(value, cols[name]["decoded"], f"record {i} {name}")
    print(f"granular: {len(rows)} records, every field equal to pickle.loads ({path})")


def check_ofrecord(samples, path):
    rows = refread("ofrecord", path)
    assert len(rows) == len(samples)
    for i, (s, row) in enumerate(zip(samples, rows)):
        f = row["features"]
        assert sorted(f) == sorted(s), (i, sorted(f), sorted(s))
        assert bytes.fromhex(f["caption"]["values"][0]["hex"]).decode() == s["caption"]
        assert f["label"]["values"] == [s["label"]]
        img = np.asarray(s["image"]).astype("<i4")
        assert f["image"]["le_bytes_sha256"] == hashlib.sha256(img.tobytes()).hexdigest()
        assert f["bbox"]["values"] == [float(v) for v in s["bbox"]], (f["bbox"], s["bbox"])
        meta = msgpack.unpackb(bytes.fromhex(f["meta"]["values"][0]["hex"]), raw=False)
        assert meta == plain(s["meta"]), (meta, s["meta"])
    print(
        f"ofrecord: {len(rows)} records: caption, label, bbox equal; image equal as int32; "
        f"meta equal after msgpack.unpackb ({path})"
    )


def main():
    ffr, granular, ofrecord = sys.argv[1:4]
    samples = [pickle.loads(r) for r in ffrecord_records(ffr)]
    check_granular(samples, granular)
    check_ofrecord(samples, ofrecord)


if __name__ == "__main__":
    main()
