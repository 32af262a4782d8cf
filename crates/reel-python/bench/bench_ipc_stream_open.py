"""What opening an Arrow IPC stream costs against the IPC file of the same record batches:
a stream has no footer, so reel walks its messages' headers at open. 1,000,000 rows of an
int64, a short string and 256 bytes, in record batches of 100 (10,000 batches: a
Hugging Face `datasets` cache file holds batches of 1,000 rows) and of 10,000 rows, warm
on /dev/shm; then one random read from each. The median of 7 opens each, alternating.

    python crates/reel-python/bench/bench_ipc_stream_open.py
"""

import os
import random
import shutil
import statistics
import time

import pyarrow as pa
import pyarrow.ipc as ipc

import reel

ROOT = "/dev/shm/reel-ipc-stream-bench"
ROWS = 1_000_000


def write(batch_rows: int) -> tuple[str, str]:
    """The same batches as an IPC stream and as an IPC file."""
    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "text": [f"row {i}" for i in range(ROWS)],
            "blob": pa.array([bytes(256)] * ROWS, pa.binary()),
        }
    )
    stream, file = f"{ROOT}/s{batch_rows}.arrow", f"{ROOT}/f{batch_rows}.arrow"
    with ipc.new_stream(stream, table.schema) as w:
        for b in table.to_batches(max_chunksize=batch_rows):
            w.write_batch(b)
    with ipc.new_file(file, table.schema) as w:
        for b in table.to_batches(max_chunksize=batch_rows):
            w.write_batch(b)
    return stream, file


def open_seconds(path: str) -> float:
    started = time.perf_counter()
    ds = reel.open(path)
    ds[random.randrange(len(ds))]
    return time.perf_counter() - started


def main() -> None:
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)
    try:
        for batch_rows in (100, 10_000):
            stream, file = write(batch_rows)
            times = {"stream": [], "file": []}
            for _ in range(7):
                times["stream"].append(open_seconds(stream))
                times["file"].append(open_seconds(file))
            s, f = (statistics.median(times[k]) * 1e3 for k in ("stream", "file"))
            mb = os.path.getsize(stream) / 1e6
            print(
                f"{ROWS // batch_rows:>6} batches of {batch_rows:>6} rows ({mb:.0f} MB): "
                f"open + one read, stream {s:.2f} ms, file {f:.2f} ms, ratio {s / f:.2f}"
            )
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
