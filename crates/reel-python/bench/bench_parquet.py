"""``reel convert`` FFRecord → Parquet against a plain Python script and against ``cp``.

Generates an FFRecord dataset of about ``--bytes`` (default 1 GB; records of 1 to
``--max-record`` bytes, ``reel.generate``) in ``--dir`` (default /dev/shm, so every run is
warm and reads memory, not a disk), then, alternating, ``--runs`` times each (best kept):

* ``cp SRC DST`` (the copy of the same bytes: the memory bound of any conversion),
* ``reel convert SRC DST.parquet --to parquet --compression none`` (``--reel``, default the
  release build in ``$CARGO_TARGET_DIR`` or ``target/``),
* ``python ffrecord_to_parquet.py SRC DST.parquet`` (a reference-style reader with every CRC
  checked, and pyarrow's Parquet writer; the script beside this one),

each under ``/usr/bin/time -f %M`` for its peak resident memory. It checks that both Parquet
files have every record, prints a Markdown table (MB/s of source, time, peak memory, ratios)
and removes its files::

    python crates/reel-python/bench/bench_parquet.py [--bytes 1000000000] [--max-record 16384]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def default_reel() -> str:
    target = os.environ.get("CARGO_TARGET_DIR") or str(HERE.parents[2] / "target")
    return str(Path(target) / "release" / "reel")


def timed(cmd: list[str]) -> tuple[float, int]:
    """Seconds and peak resident KiB of one run of ``cmd``."""
    with tempfile.NamedTemporaryFile("r") as mem:
        t0 = time.perf_counter()
        subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", mem.name, *cmd],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - t0
        return seconds, int(mem.read().split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bytes", type=int, default=1_000_000_000)
    ap.add_argument("--max-record", type=int, default=16 << 10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--reel", default=default_reel())
    args = ap.parse_args()
    import pyarrow.parquet as pq
    import reel

    if not os.access(args.reel, os.X_OK):
        sys.exit(f"no reel binary at {args.reel}: cargo build --release -p reel-cli, or --reel")
    tmp = tempfile.mkdtemp(prefix="reel-bench-parquet-", dir=args.dir)
    try:
        src = os.path.join(tmp, "src.ffr")
        # Generated records are 1..max_record bytes, about max_record/2 on average.
        records = max(1, 2 * args.bytes // (args.max_record + 1))
        reel.generate(src, format="ffrecord", records=records, max_record=args.max_record)
        size = os.path.getsize(src)
        outs = {name: os.path.join(tmp, f"{name}.out") for name in ("cp", "reel", "python")}
        commands = {
            "cp": ["cp", src, outs["cp"]],
            "reel": [args.reel, "convert", "--quiet", "--force", "--to", "parquet",
                     "--compression", "none", src, outs["reel"]],
            "python": [sys.executable, str(HERE / "ffrecord_to_parquet.py"), src, outs["python"]],
        }
        best: dict[str, tuple[float, int]] = {}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                for p in (outs[name],):
                    if os.path.exists(p):
                        os.remove(p)
                seconds, peak = timed(cmd)
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, peak)
                else:
                    best[name] = (best[name][0], max(best[name][1], peak))
        for name in ("reel", "python"):
            rows = pq.ParquetFile(outs[name]).metadata.num_rows
            assert rows == records, f"{name}: {rows} rows, want {records}"
        load = os.getloadavg()[0]
        print(f"{records} records of 1..{args.max_record} bytes, {size / 1e9:.2f} GB, "
              f"in {args.dir}; best of {args.runs}; load average {load:.2f}")
        print("| command | s | MB/s | peak memory | vs cp | reel vs this |")
        print("| --- | --- | --- | --- | --- | --- |")
        cp_s, reel_s = best["cp"][0], best["reel"][0]
        labels = {
            "cp": "`cp SRC DST`",
            "reel": "`reel convert SRC DST.parquet --to parquet --compression none`",
            "python": "`python ffrecord_to_parquet.py SRC DST.parquet` (pyarrow)",
        }
        for name in ("cp", "reel", "python"):
            s, peak = best[name]
            print(f"| {labels[name]} | {s:.2f} | {size / s / 1e6:.0f} | {peak / 1024:.0f} MiB | "
                  f"{cp_s / s:.2f}× | {s / reel_s:.2f}× |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
