"""What telling parts by their first bytes costs when opening a table: a Hive table of
1,000 Parquet parts in 100 partitions, named ``part-K.parquet`` (told by name) against
named ``00000K_0`` as Hive names them (each part's first bytes read to tell its format),
the median of 7 opens each, twice, warm on /dev/shm.

    python crates/reel-python/bench/bench_open_parts.py
"""

import os
import shutil
import statistics
import time

import pyarrow as pa
import pyarrow.parquet as pq

import reel

ROOT = "/dev/shm/reel-parts-bench"
PARTS = 1000
ROWS_PER_PART = 100


def write_tables() -> None:
    """The same table twice, its parts named as pyarrow and as Hive name them."""
    part = pa.table({"x": list(range(ROWS_PER_PART))})
    for layout in ("named", "hive"):
        for k in range(PARTS):
            directory = f"{ROOT}/{layout}/day={k % 100}"
            os.makedirs(directory, exist_ok=True)
            name = f"part-{k}.parquet" if layout == "named" else f"{k:06d}_0"
            pq.write_table(part, f"{directory}/{name}")


def median_open_seconds(path: str) -> float:
    """The median time `reel.open` takes over 7 opens of the table at `path`."""
    times = []
    for _ in range(7):
        start = time.perf_counter()
        ds = reel.open(path)
        times.append(time.perf_counter() - start)
        assert len(ds) == PARTS * ROWS_PER_PART
    return statistics.median(times)


def main() -> None:
    shutil.rmtree(ROOT, ignore_errors=True)
    write_tables()
    try:
        for _ in range(2):
            named = median_open_seconds(f"{ROOT}/named")
            hive = median_open_seconds(f"{ROOT}/hive")
            print(
                f"part-K.parquet: {named * 1000:.1f} ms   00000K_0: {hive * 1000:.1f} ms   "
                f"ratio {hive / named:.2f}"
            )
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
