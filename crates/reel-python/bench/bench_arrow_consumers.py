"""What each Arrow consumer costs in memory when it reads a reel dataset through the Arrow C
stream (``__arrow_c_stream__``): whether it keeps reel's buffers or copies them.

Generates an FFRecord dataset of about ``--bytes`` (default 256 MiB; records up to
``--max-record`` bytes) in ``--dir`` (default /dev/shm), then, each in a fresh Python
process (so one consumer's peak does not hide another's), imports it with

* ``pyarrow.table(ds)`` (also reports pyarrow's own memory pool: reel's buffers are
  allocated by Rust, so a pool that stays empty means pyarrow copied nothing),
* ``polars.DataFrame(ds)``,
* ``duckdb.sql("select sum(octet_length(data)) from ds")`` (a streaming aggregate),
* ``duckdb.sql("select * from ds").arrow()`` read into a ``pyarrow.Table`` (a materialised
  result),

and prints each one's peak resident memory above the process's baseline (after imports,
before the read), as a multiple of the data's size. The dataset is read with pread, so the
file's pages are not counted (a memory map would add them). About 1× is the data held once
(the consumer kept reel's buffers); about 2× means a copy existed beside them at the peak::

    python crates/reel-python/bench/bench_arrow_consumers.py [--bytes 268435456]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CONSUMERS = {
    "pyarrow.table(ds)": "import pyarrow as pa\nresult = pa.table(ds)\npool = pa.total_allocated_bytes()",
    "polars.DataFrame(ds)": "import polars as pl\nresult = pl.DataFrame(ds)",
    "duckdb sum(octet_length)": (
        "import duckdb\nresult = duckdb.sql('select sum(octet_length(data)) from ds').fetchall()"
    ),
    "duckdb select * → pyarrow.Table": (
        "import duckdb\nresult = duckdb.sql('select * from ds').arrow()\n"
        "result = result if hasattr(result, 'num_rows') else result.read_all()"
    ),
}

CHILD = """
import json, sys
import reel
{imports}
ds = reel.open(sys.argv[1], backend="pread")
def peak():
    # VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across exec.
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * {page}
base = rss()
pool = None
{body}
print(json.dumps({{"peak_above_base": peak() - base, "pool": pool}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bytes", type=int, default=256 << 20)
    ap.add_argument("--max-record", type=int, default=128 << 10)
    ap.add_argument("--dir", default="/dev/shm")
    args = ap.parse_args()
    import reel

    tmp = tempfile.mkdtemp(prefix="reel-consumers-", dir=args.dir)
    try:
        src = os.path.join(tmp, "data.ffr")
        # Generated records are 1..max_record bytes, max_record/2 on average.
        records = max(1, 2 * args.bytes // args.max_record)
        reel.generate(src, format="ffrecord", records=records, max_record=args.max_record)
        data = sum(len(r["data"]) for r in reel.open(src)[:])
        print(f"{records} records, {data / 2**20:.1f} MiB of data in {src}")
        page = os.sysconf("SC_PAGE_SIZE")
        print(f"| consumer | peak memory above baseline | × data | pyarrow pool |")
        print(f"| --- | --- | --- | --- |")
        for name, body in CONSUMERS.items():
            imports = body.split("\n")[0]
            code = CHILD.format(imports=imports, body="\n".join(body.split("\n")[1:]), page=page)
            out = subprocess.run(
                [sys.executable, "-c", code, src], check=True, capture_output=True, text=True
            ).stdout
            m = json.loads(out.strip().splitlines()[-1])
            pool = "" if m["pool"] is None else f"{m['pool'] / 2**20:.1f} MiB"
            peak = m["peak_above_base"]
            print(f"| `{name}` | {peak / 2**20:.0f} MiB | {peak / data:.2f} | {pool} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
