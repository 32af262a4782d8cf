"""Conversion throughput on Ray against the local convert, and the driver's cost per task.

Generates an FFRecord dataset (``reel.generate``: records up to ``--max-record`` bytes),
then converts it to ``--to`` (default granular) three ways, each ``--runs`` times (best
kept):

* ``reel.convert`` (the local convert, one process, Rust),
* ``reel.ray.convert`` on a local Ray with 1 CPU (one worker runs the parts in turn),
* ``reel.ray.convert`` on a local Ray with 2 CPUs (two workers),

and prints MB/s of source and the ratio to the local convert. Then it measures what one
task costs the driver: a conversion of a 1-record-per-part dataset with ``--tiny-parts``
parts, minus the same with 1 part, divided by the extra parts. The Ray cluster's start is
not timed (``ray.init`` happens before). Data lives in ``--dir`` (default /dev/shm, warm)
and is removed at the end::

    python crates/reel-python/bench/bench_ray.py [--records 200000] [--max-record 2048]

``--mode read`` measures reading instead: an FFRecord dataset of about ``--read-bytes``
(default 1 GB, records up to ``--read-record`` bytes) read whole, checksums verified, by

* ``reel.open(src).to_batches()`` in this process (the local baseline),
* ``reel.ray.read_reel(src).iter_batches()`` on a local Ray with 1 and 2 CPUs (the read
  tasks' blocks pass through Ray's object store to this driver),

printing MB/s, the ratio to the local read and the number of read tasks; and what the
driver spends planning: the time to build the ``ReelDatasource`` (open the metadata, read
the schema sample), its resident memory growth, and the pickled size of one read task::

    python crates/reel-python/bench/bench_ray.py --mode read [--read-bytes 1000000000]

``--mode tasks`` measures what a read task pays to open the dataset: an FFRecord of
``--task-records`` tiny records (metadata-heavy: 12 bytes of index per record, records up to
16 bytes) read whole on a local Ray with 2 CPUs in each of ``--tasks`` task counts, twice
side by side: with the read tasks sharing one opened dataset per worker process (what
``read_reel`` does) and with every task opening the dataset itself (the read tasks given no
fingerprint, as before the cache). The tasks' rows are counted in a map fused into the read
tasks, so no block passes through the driver::

    python crates/reel-python/bench/bench_ray.py --mode tasks [--task-records 4000000] [--tasks 2,8,32,128]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import shutil
import tempfile
import time

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import ray  # noqa: E402

import reel  # noqa: E402
import reel.ray  # noqa: E402


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def start_ray(cpus: int) -> None:
    ray.init(num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False


def rss_bytes() -> int:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def read_rows_locally(src: str) -> int:
    return sum(b.num_rows for b in reel.open(src).to_batches(batch_bytes=reel.ray.BLOCK_BYTES))


def read_rows_on_ray(src: str) -> int:
    return sum(b.num_rows for b in reel.ray.read_reel(src).iter_batches(batch_size=None, batch_format="pyarrow"))


def bench_read(args: argparse.Namespace, work: str) -> None:
    src = os.path.join(work, "read.ffr")
    records = max(1, int(args.read_bytes // (args.read_record / 2)))  # sizes up to the max
    reel.generate(src, format="ffrecord", records=records, max_record=args.read_record)
    size = os.path.getsize(src)
    print(f"source: {records} records, {size / 1e6:.1f} MB FFRecord (in {work})")
    assert read_rows_locally(src) == records
    local = best_of(args.runs, lambda: read_rows_locally(src))
    print(f"{'local reel.open().to_batches()':45s} {local:7.2f} s  {size / 1e6 / local:8.1f} MB/s")
    for cpus in (1, 2):
        start_ray(cpus)
        try:
            rss = rss_bytes()
            start = time.perf_counter()
            source = reel.ray.ReelDatasource(src)
            planned = time.perf_counter() - start
            grown = rss_bytes() - rss
            tasks = source.get_read_tasks(source.default_tasks())
            task_bytes = len(pickle.dumps(tasks[0]))
            assert read_rows_on_ray(src) == records
            t = best_of(args.runs, lambda: read_rows_on_ray(src))
        finally:
            ray.shutdown()
        print(f"{f'read_reel().iter_batches(), {cpus} CPU(s)':45s} {t:7.2f} s  {size / 1e6 / t:8.1f} MB/s  "
              f"{local / t:5.2f}x local, {len(tasks)} read tasks")
        print(f"  driver: ReelDatasource built in {planned * 1e3:.0f} ms, resident memory +{grown / 1e6:.1f} MB, "
              f"one read task pickles to {task_bytes} bytes")


def count_rows(batch):
    """The rows of one block, as one row (keeps the blocks in the read tasks)."""
    import pyarrow as pa

    return pa.table({"rows": [batch.num_rows]})


def read_in_tasks(source: reel.ray.ReelDatasource, tasks: int) -> int:
    ds = ray.data.read_datasource(source, override_num_blocks=tasks)
    return sum(r["rows"] for r in ds.map_batches(count_rows, batch_format="pyarrow").take_all())


def bench_tasks(args: argparse.Namespace, work: str) -> None:
    src = os.path.join(work, "tiny-records.ffr")
    reel.generate(src, format="ffrecord", records=args.task_records, max_record=16)
    size = os.path.getsize(src)
    start = time.perf_counter()
    assert len(reel.open(src)) == args.task_records
    opened = time.perf_counter() - start
    print(f"source: {args.task_records} records, {size / 1e6:.1f} MB FFRecord (in {work}); "
          f"one open in this process: {opened * 1e3:.0f} ms")
    start_ray(2)
    try:
        shared = reel.ray.ReelDatasource(src)
        # The same plan with no fingerprint: every task opens the dataset (the old way).
        each = reel.ray.ReelDatasource(src)
        each._sources = [dataclasses.replace(s, fingerprint=None) for s in each._sources]
        print(f"{'read tasks':>10s} {'one open per worker':>20s} {'one open per task':>18s} {'ratio':>6s}")
        for tasks in args.tasks:
            # Alternated runs, best of --runs each, so both see the same machine.
            best = {"shared": float("inf"), "each": float("inf")}
            for _ in range(args.runs):
                for name, source in (("shared", shared), ("each", each)):
                    t0 = time.perf_counter()
                    assert read_in_tasks(source, tasks) == args.task_records
                    best[name] = min(best[name], time.perf_counter() - t0)
            print(f"{tasks:>10d} {best['shared']:>18.2f} s {best['each']:>16.2f} s "
                  f"{best['each'] / best['shared']:>5.2f}x")
    finally:
        ray.shutdown()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["convert", "read", "tasks"], default="convert")
    p.add_argument("--task-records", type=int, default=4_000_000)
    p.add_argument("--tasks", type=lambda text: [int(t) for t in text.split(",")], default=[2, 8, 32, 128])
    p.add_argument("--read-bytes", type=float, default=1e9)
    p.add_argument("--read-record", type=int, default=65536)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--max-record", type=int, default=2048)
    p.add_argument("--to", default="granular")
    p.add_argument("--parts", type=int, default=4)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--tiny-parts", type=int, default=64)
    p.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = p.parse_args()

    work = tempfile.mkdtemp(prefix="reel-bench-ray-", dir=args.dir)
    if args.mode in ("read", "tasks"):
        try:
            (bench_read if args.mode == "read" else bench_tasks)(args, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        src = os.path.join(work, "src.ffr")
        reel.generate(src, format="ffrecord", records=args.records, max_record=args.max_record)
        size = os.path.getsize(src)
        n = 0

        def out() -> str:
            nonlocal n
            n += 1
            path = os.path.join(work, f"out-{n}")
            return path

        def cleanup_after(fn):
            def run():
                path = out()
                fn(path)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)

            return run

        local = best_of(args.runs, cleanup_after(lambda d: reel.convert(src, d, to=args.to)))
        results = [("local reel.convert", local)]
        for cpus in (1, 2):
            start_ray(cpus)
            try:
                t = best_of(args.runs, cleanup_after(lambda d: reel.ray.convert(src, d, to=args.to, parts=args.parts)))
                results.append((f"reel.ray.convert, {cpus} worker(s), {args.parts} parts", t))
            finally:
                ray.shutdown()
        print(f"source: {args.records} records, {size / 1e6:.1f} MB FFRecord -> {args.to}")
        for name, t in results:
            print(f"{name:45s} {t:7.2f} s  {size / 1e6 / t:8.1f} MB/s  {local / t:5.2f}x local")

        # The driver's cost per task: tiny parts, where the conversion itself is nothing.
        tiny = os.path.join(work, "tiny.ffr")
        reel.generate(tiny, format="ffrecord", records=args.tiny_parts, max_record=64)
        start_ray(2)
        try:
            one = best_of(args.runs, cleanup_after(lambda d: reel.ray.convert(tiny, d, to=args.to, parts=1)))
            many = best_of(args.runs, cleanup_after(lambda d: reel.ray.convert(tiny, d, to=args.to, parts=args.tiny_parts)))
        finally:
            ray.shutdown()
        per_task = (many - one) / (args.tiny_parts - 1)
        print(f"job of 1 part: {one * 1e3:.0f} ms; of {args.tiny_parts} parts: {many * 1e3:.0f} ms "
              f"-> {per_task * 1e3:.1f} ms per extra task (2 workers)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
