"""Random batch reads from Python: reel against a reference's own Python reader.

Writes a Granular dataset with granular itself (the reference; `pip install granular`), one
`bytes` column of 1 KiB or 100 KiB records, then reads random batches of 256 records warm
(the files in the page cache) with

* granular.DatasetReader (the reference: one record per __getitem__),
* reel.compat.granular.DatasetReader (the same calls, backed by reel),
* reel.open(...).read_batch (one batched read, GIL released),

and prints records per second and the ratio to the reference. Run on a quiet machine:

    python crates/reel-python/bench/bench_reads.py [--records 20000] [--batches 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import reel
from reel.compat import granular as reel_granular


def write_reference(path: str, n: int, size: int) -> None:
    import granular

    rng = np.random.default_rng(0)
    with granular.DatasetWriter(path, {"data": "bytes"}, granular.encoders) as w:
        for _ in range(n):
            w.append({"data": rng.bytes(size)})


def timed(read, batches) -> float:
    start = time.perf_counter()
    for b in batches:
        read(b)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=256)
    args = ap.parse_args()
    import granular

    print(f"{'size':>8} {'reader':<34} {'records/s':>12} {'vs reference':>12}")
    for size in (1024, 100 * 1024):
        n = args.records if size == 1024 else max(args.records // 20, args.batch_size * 4)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "ds")
            write_reference(path, n, size)
            rng = np.random.default_rng(1)
            batches = [rng.integers(0, n, args.batch_size).tolist() for _ in range(args.batches)]
            ref = granular.DatasetReader(path, granular.decoders)
            shim = reel_granular.DatasetReader(path, reel_granular.decoders)
            ds = reel.open(path)
            readers = {
                "granular.DatasetReader (reference)": lambda b: [ref[i] for i in b],
                "reel.compat.granular (per record)": lambda b: [shim[i] for i in b],
                "reel Dataset.read_batch": ds.read_batch,
                "reel Dataset.read_batch(copy=False)": lambda b: ds.read_batch(b, copy=False),
            }
            for read in readers.values():  # warm: page cache and allocator
                timed(read, batches[:5])
            base = None
            for name, read in readers.items():
                seconds = min(timed(read, batches) for _ in range(3))
                rate = args.batches * args.batch_size / seconds
                base = base or rate
                print(f"{size:>8} {name:<34} {rate:>12,.0f} {rate / base:>11.1f}x")


if __name__ == "__main__":
    main()
