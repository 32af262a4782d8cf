#!/usr/bin/env python3
"""Parquet written by pyarrow — nested (struct, lists), nullable and dictionary-encoded
columns — converted by `reel convert` to every format, each output read back by that
format's reference implementation through refread, and every value compared with the
pyarrow table.

Usage (a Python with pyarrow, numpy and simplejpeg, e.g. the test venv):

    python tests/refread_parquet.py --reel target/release/reel --refread /path/to/refread

refread is a developer tool that is not part of this repository (it installs the reference
Python packages into virtual environments on first use), so CI does not run this check, as
for tests/refread_matrix.sh. Prints one line per format and exits non-zero on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import simplejpeg

N = 12
META_TYPE = pa.struct([("w", pa.int64()), ("tags", pa.list_(pa.string()))])


def tables(dir: Path) -> tuple[pa.Table, pa.Table]:
    """A table of every column kind, and one of videos (for gulp), both written by pyarrow."""
    ids = list(range(N))
    meta = [{"w": i * 10, "tags": [f"t{i}", "x"]} if i % 4 else None for i in ids]
    table = pa.table({
        "id": pa.array(ids, pa.int64()),
        "caption": pa.array([None if i % 3 == 0 else f"caption {i}" for i in ids]),
        "label": pa.array([["cat", "dog", "cow"][i % 3] for i in ids]).dictionary_encode(),
        "image": pa.array([bytes([i]) * (i + 3) for i in ids], pa.binary()),
        "emb": pa.array([[float(i), i / 2, -1.5] for i in ids], pa.list_(pa.float32())),
        "meta": pa.array(meta, META_TYPE),
    })
    jpeg = [simplejpeg.encode_jpeg(np.full((8, 8, 3), i * 20, np.uint8)) for i in ids]
    videos = pa.table({
        "vid": [f"video{i}" for i in ids],
        "meta": pa.array(meta, META_TYPE),
        "frames": pa.array([[jpeg[i]] * (1 + i % 2) for i in ids], pa.list_(pa.binary())),
    })
    pq.write_table(table, dir / "table.parquet")
    pq.write_table(videos, dir / "videos.parquet")
    assert pa.types.is_dictionary(pq.read_schema(dir / "table.parquet").field("label").type)
    return table, videos


def check(actual, d: dict, where: str) -> None:
    """A value from the pyarrow table against a refread descriptor."""
    t = d["type"]
    if t == "null":
        assert actual is None, f"{where}: {actual!r} is not null"
    elif t == "bytes":
        assert bytes(actual).hex() == d["hex"], f"{where}: bytes"
    elif t in ("str", "int", "bool"):
        assert actual == d["value"], f"{where}: {actual!r} != {d['value']!r}"
    elif t == "list":
        assert len(actual) == len(d["items"]), f"{where}: length"
        for k, (a, e) in enumerate(zip(actual, d["items"])):
            check(a, e, f"{where}[{k}]")
    elif t == "map":
        assert [k["value"] for k, _ in d["entries"]] == list(actual), f"{where}: keys"
        for k, v in d["entries"]:
            check(actual[k["value"]], v, f"{where}.{k['value']}")
    elif t == "ndarray":
        assert np.asarray(actual, np.float32).tobytes().hex() == d["hex"], f"{where}: array"
    else:
        raise AssertionError(f"{where}: descriptor {t}")


def refread(tool: str, fmt: str, path: Path) -> list[dict]:
    run = subprocess.run([tool, fmt, str(path)], capture_output=True, text=True)
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert run.returncode == 0, f"refread {fmt}: {lines[-1] if lines else run.stderr[-500:]}"
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reel", required=True)
    ap.add_argument("--refread", required=True)
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        dir = Path(tmp)
        table, videos = tables(dir)
        rows, video_rows = table.to_pylist(), videos.to_pylist()

        def convert(to: str, src: str, out: str, *options: str) -> Path:
            cmd = [args.reel, "convert", "--quiet", "--to", to, *options, str(dir / src),
                   str(dir / out)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            return dir / out

        def ffrecord() -> None:
            out = refread(args.refread, "ffrecord",
                          convert("ffrecord", "table.parquet", "t.ffr", "--fields", "image"))
            for r, line in zip(rows, out, strict=True):
                check(r["image"], line["content"], f"record {r['id']}")

        def granular(fmt: str) -> None:
            out = refread(args.refread, fmt, convert(fmt, "table.parquet", f"t-{fmt}"))
            for r, line in zip(rows, out, strict=True):
                assert sorted(line["columns"]) == sorted(r), f"record {r['id']}: keys"
                for key, value in r.items():
                    check(value, line["columns"][key]["decoded"], f"record {r['id']} {key}")

        def ofrecord() -> None:
            # A struct has no OFRecord feature: stored as tagged JSON bytes (a stated loss).
            path = convert("ofrecord", "table.parquet", "t-of", "--encode-nested", "json")
            for r, line in zip(rows, refread(args.refread, "ofrecord", path), strict=True):
                f = line["features"]
                present = {k for k, v in r.items() if v is not None}
                assert set(f) == present, f"record {r['id']}: features {sorted(f)}"
                assert f["id"]["values"] == [r["id"]]
                assert f["emb"]["values"] == r["emb"], f"record {r['id']} emb"
                def one_bytes(key: str) -> bytes:
                    (value,) = f[key]["values"]
                    return bytes.fromhex(value["hex"])

                for key in ("label", "caption"):
                    if r[key] is not None:
                        assert one_bytes(key).decode() == r[key], f"record {r['id']} {key}"
                assert one_bytes("image") == r["image"]
                if r["meta"] is not None:
                    assert json.loads(one_bytes("meta")) == r["meta"], f"record {r['id']} meta"

        def syrah() -> None:
            # Syrah items all have the same arrays: the nullable columns cannot go (refused,
            # named); the others can.
            run = subprocess.run([args.reel, "convert", "--quiet", "--to", "syrah",
                                  str(dir / "table.parquet"), str(dir / "refused.syr")],
                                 capture_output=True, text=True)
            assert run.returncode == 2 and '"meta"' in run.stderr, run.stderr
            path = convert("syrah", "table.parquet", "t.syr", "--fields", "id,label,image,emb")
            for r, line in zip(rows, refread(args.refread, "syrah", path), strict=True):
                a = line["arrays"]
                assert list(a) == ["id", "label", "image", "emb"], list(a)
                assert a["label"]["decoded"]["value"] == r["label"], f"item {r['id']} label"
                assert a["image"]["decoded"]["hex"] == r["image"].hex()
                assert a["emb"]["decoded"]["hex"] == np.float32(r["emb"]).tobytes().hex()
                assert a["id"]["decoded"]["hex"] == np.int64([r["id"]]).tobytes().hex()

        def gulp() -> None:
            path = convert("gulp", "videos.parquet", "t-gulp", "--rename", "vid=id")
            for r, line in zip(video_rows, refread(args.refread, "gulpio2", path), strict=True):
                assert line["id"] == r["vid"]
                check(r["meta"] or {}, line["meta_returned"], f"{r['vid']} meta")
                assert line["frame_count"] == len(r["frames"])
                for frame, want in zip(line["frames"], r["frames"]):
                    assert frame["jpeg"]["len"] == len(want), f"{r['vid']} frame"

        checks = {"ffrecord": ffrecord, "granular": lambda: granular("granular"),
                  "bags": lambda: granular("bags"), "ofrecord": ofrecord, "syrah": syrah,
                  "gulp": gulp}
        for name, run_check in checks.items():
            try:
                run_check()
                print(f"ok        {name}")
            except (AssertionError, subprocess.CalledProcessError, KeyError) as e:
                failed += 1
                print(f"MISMATCH  {name}: {e!r}")
    print(f"{len(checks) - failed} of {len(checks)} formats read back by their reference")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
