"""Python reads through reel against the reference readers, a DataLoader epoch, and Rust.

Three parts, each measured side by side in one run (readers alternate; best of --repeat):

1. Random batch reads (batch 256, distinct random indices) of one `bytes` field, 1 KiB and
   100 KiB records, on datasets the references wrote themselves:
   * Granular, written by granular 0.24.2: granular.DatasetReader (one record per
     __getitem__, its API), reel.compat.granular (the same calls), reel.open().read_batch
     with copy=True and copy=False;
   * bags, written by bags 0.5.1 (run in refread's bags environment, which this script
     uses as the reference's interpreter): bags.DatasetReader against reel;
   * GulpIO2, written by gulpio2 0.0.4's GulpIngestor: random batches of 32 whole videos
     (8 frames of 64x64) through gulpio2.GulpDirectory and reel, decoded and as JPEG bytes
     (warm only).
   Warm: the files on tmpfs (--warm-dir). Cold: the files on disk (--cold-dir), their pages
   dropped from the page cache (posix_fadvise DONTNEED, no privileges needed, touching
   nothing else) before every batch; the time of the drop is not counted.
2. One DataLoader epoch over the 1 KiB Granular dataset (batch 256, shuffle, 2 workers,
   fork): a map-style torch Dataset over granular.DatasetReader against
   reel.torch.RecordDataset, and reel.torch.StreamingDataset (2 Rust read-ahead threads)
   with 2 workers and with none.
3. reel from Python against the same reads from Rust: `reel bench` (the release CLI) reads
   random batches of 256 from the FFRecord and Granular files it writes, and this script
   reads the same files with the same pattern through reel.open(..., verify=False). Then,
   in this process, the Rust API (Dataset._time_rust_reads: read_batch_into in a loop with
   the GIL released) and read_batch_packed read the same batches through one open dataset
   in alternating rounds (--rounds): the median of the rounds' ratios is the binding's
   cost, free of the drift between processes that the first comparison also measures
   (--index-arrays: the indices as int64 NumPy arrays instead of lists).

NumPy's OpenBLAS starts worker threads that spin now and then; on a machine with few cores
they take CPU from the reading thread (6 % of a 1 KiB batch on the 2-vCPU machine this was
written on), though no reader here uses BLAS. The script sets OPENBLAS_NUM_THREADS=1 before
importing NumPy, unless it is set already, for every Python reader alike.

Usage (release builds of both; the machine should be quiet):

    maturin develop --release -m crates/reel-python/Cargo.toml
    cargo build --release -p reel-cli
    python crates/reel-python/bench/bench_reads.py --cold-dir /path/on/disk
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

# Before NumPy is imported (see the module documentation).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import reel  # noqa: E402
from reel.compat import granular as reel_granular  # noqa: E402

SIZES = {"1 KiB": 1024, "100 KiB": 100 * 1024}
REPO = Path(__file__).resolve().parents[3]


def evict(path: Path) -> None:
    """Drops the pages of every file under `path` from the page cache."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def batches_for(n: int, count: int, size: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.choice(n, size=min(size, n), replace=False).tolist() for _ in range(count)]


def timed(read, batches, cold_path: Path | None) -> float:
    """Seconds spent reading `batches` (page drops before each batch not counted)."""
    spent = 0.0
    for b in batches:
        if cold_path is not None:
            evict(cold_path)
        start = time.perf_counter()
        read(b)
        spent += time.perf_counter() - start
    return spent


# The reference's side of a measurement in another interpreter (its own environment):
# reads the batches with `read` after `setup`, prints the best seconds as JSON.
REF_WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    args = json.loads(sys.stdin.read())
    def evict(path):
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for f in files:
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)  # dirty pages cannot be dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    path = Path(args["path"])
    exec(args["setup"])
    read = eval(args["read"])
    for b in args["batches"][:2]:
        read(b)
    best = None
    for _ in range(args["repeat"]):
        spent = 0.0
        for b in args["batches"]:
            if args["cold"]:
                evict(path)
            start = time.perf_counter()
            read(b)
            spent += time.perf_counter() - start
        best = spent if best is None else min(best, spent)
    print(json.dumps(best))
    """
)


def run_ref(python: str, path: Path, setup: str, read: str, batches, repeat: int, cold: bool) -> float:
    arg = json.dumps(
        {"path": str(path), "setup": setup, "read": read, "batches": batches, "repeat": repeat, "cold": cold}
    )
    out = subprocess.run([python, "-c", REF_WORKER], input=arg, check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def write_granular(path: Path, n: int, size: int) -> None:
    import granular

    rng = np.random.default_rng(0)
    with granular.DatasetWriter(path, {"data": "bytes"}, granular.encoders) as w:
        for _ in range(n):
            w.append({"data": rng.bytes(size)})


def write_bags(python: str, path: Path, n: int, size: int) -> None:
    code = textwrap.dedent(
        f"""
        import bags, os
        w = bags.DatasetWriter({str(path)!r}, {{"data": "bytes"}}, bags.encoders)
        for i in range({n}):
            w.append({{"data": os.urandom({size})}})
        w.close()
        """
    )
    subprocess.run([python, "-c", code], check=True)


def row(table: list, part: str, mode: str, size: str, reader: str, rate: float, base: float | None) -> None:
    ratio = f"{rate / base:.2f}x" if base else ""
    table.append((part, mode, size, reader, rate, ratio))
    print(f"{part:<10} {mode:<5} {size:>8} {reader:<46} {rate:>12,.0f} rec/s {ratio:>8}", flush=True)


def part_references(args, table) -> None:
    """Random batch reads: each installable reference against reel on the files it wrote."""
    import granular

    modes = [("warm", Path(args.warm_dir))] + ([("cold", Path(args.cold_dir))] if args.cold_dir else [])
    for mode, root in modes:
        for size_name, size in SIZES.items():
            n = args.records if size == 1024 else args.records_large
            count = args.batches if mode == "warm" else args.cold_batches
            batches = batches_for(n, count, args.batch_size, seed=1)
            cold = mode == "cold"
            # Granular
            path = root / f"granular-{size}x{n}"
            if not path.exists():
                write_granular(path, n, size)
            ref = granular.DatasetReader(path, granular.decoders)
            shim = reel_granular.DatasetReader(path, reel_granular.decoders)
            ds = reel.open(path)
            readers = {
                "granular.DatasetReader (reference)": lambda b: [ref[i] for i in b],
                "reel.compat.granular (same calls)": lambda b: [shim[i] for i in b],
                "reel read_batch": ds.read_batch,
                "reel read_batch(copy=False)": lambda b: ds.read_batch(b, copy=False),
            }
            best = {name: float("inf") for name in readers}
            for name, read in readers.items():  # warm up: allocator, first pages
                timed(read, batches[:2], path if cold else None)
            for _ in range(args.repeat):
                for name, read in readers.items():
                    best[name] = min(best[name], timed(read, batches, path if cold else None))
            base = None
            for name, seconds in best.items():
                rate = count * args.batch_size / seconds
                base = base or rate
                row(table, "granular", mode, size_name, name, rate, base)
            del ref, shim, ds
            # bags, in its reference environment
            if args.bags_python and Path(args.bags_python).exists():
                path = root / f"bags-{size}x{n}"
                if not path.exists():
                    write_bags(args.bags_python, path, n, size)
                ref_seconds = run_ref(
                    args.bags_python,
                    path,
                    "import bags; ref = bags.DatasetReader(path, bags.decoders)",
                    "lambda b: [ref[i] for i in b]",
                    batches,
                    args.repeat,
                    cold,
                )
                ds = reel.open(path, format="bags")
                timed(ds.read_batch, batches[:2], path if cold else None)
                mine = {
                    "reel read_batch": min(timed(ds.read_batch, batches, path if cold else None) for _ in range(args.repeat)),
                    "reel read_batch(copy=False)": min(
                        timed(lambda b: ds.read_batch(b, copy=False), batches, path if cold else None)
                        for _ in range(args.repeat)
                    ),
                }
                base = count * args.batch_size / ref_seconds
                row(table, "bags", mode, size_name, "bags.DatasetReader (reference)", base, base)
                for name, seconds in mine.items():
                    row(table, "bags", mode, size_name, name, count * args.batch_size / seconds, base)
                del ds


class SyntheticVideos:
    """A gulpio2 adapter: `n` videos of `frames` 64x64 RGB frames (smooth, so the JPEGs
    are of a realistic size), ids v0, v1, ... in index order."""

    def __init__(self, n: int, frames: int):
        self.n, self.frames = n, frames

    def __len__(self):
        return self.n

    def iter_data(self, slice_element=None):
        y, x = np.mgrid[0:64, 0:64]
        for i in range(self.n)[slice_element or slice(None)]:
            frames = [
                np.stack([(x * 4 + i + f) % 256, (y * 4 + 2 * f) % 256, (x + y + i) % 256], axis=-1).astype(np.uint8)
                for f in range(self.frames)
            ]
            yield {"id": f"v{i}", "meta": {"label": i % 10}, "frames": frames}


def part_gulpio2(args, table) -> None:
    """Random batches of whole videos: gulpio2's GulpDirectory against reel, decoded frames
    and stored JPEG bytes."""
    import gulpio2

    from reel.compat import gulpio2 as reel_gulpio2

    n, per_batch = args.videos, 32
    path = Path(args.warm_dir) / f"gulp-{n}"
    if not path.exists():
        gulpio2.GulpIngestor(SyntheticVideos(n, 8), str(path), videos_per_chunk=500, num_workers=1)()
    batches = batches_for(n, args.batches, per_batch, seed=3)
    raw = lambda b: b  # noqa: E731  (gulpio2's jpeg_decoder hook: keep the JPEG bytes)
    ref, ref_raw = gulpio2.GulpDirectory(str(path)), gulpio2.GulpDirectory(str(path), jpeg_decoder=raw)
    shim = reel_gulpio2.GulpDirectory(str(path))
    ds, ds_raw = reel.open(path), reel.open(path, decode_images=False)
    assert [r["id"] for r in ds.read_batch(batches[0])] == [f"v{i}" for i in batches[0]]
    groups = {
        "decoded": {
            "gulpio2.GulpDirectory (reference)": lambda b: [ref[f"v{i}"] for i in b],
            "reel.compat.gulpio2 (same calls)": lambda b: [shim[f"v{i}"] for i in b],
            "reel read_batch": ds.read_batch,
        },
        "JPEG bytes": {
            "gulpio2.GulpDirectory, identity decoder (reference)": lambda b: [ref_raw[f"v{i}"] for i in b],
            "reel read_batch(decode_images=False)": ds_raw.read_batch,
        },
    }
    for group, readers in groups.items():
        best = {name: float("inf") for name in readers}
        for read in readers.values():
            timed(read, batches[:2], None)
        for _ in range(args.repeat):
            for name, read in readers.items():
                best[name] = min(best[name], timed(read, batches, None))
        base = None
        for name, seconds in best.items():
            rate = len(batches) * per_batch / seconds
            base = base or rate
            row(table, "gulpio2", "warm", "video", f"{name}, {group} (videos/s)", rate, base)


class GranularTorch:
    """A map-style torch dataset over granular's reader, opened once per process (a reader
    shared across fork would share its file offset with the parent)."""

    def __init__(self, path):
        self.path, self.pid, self.reader = path, None, None

    def _reader(self):
        import granular

        if self.pid != os.getpid():
            self.reader, self.pid = granular.DatasetReader(self.path, granular.decoders), os.getpid()
        return self.reader

    def __len__(self):
        return len(self._reader())

    def __getitem__(self, i):
        return self._reader()[i]


def keep(batch):
    """collate_fn: the list of records as they are (no collation cost on either side)."""
    return batch


def part_dataloader(args, table) -> None:
    import torch
    from torch.utils.data import DataLoader

    import reel.torch

    n = args.records
    path = Path(args.warm_dir) / f"granular-1024x{n}"
    if not path.exists():
        write_granular(path, n, 1024)
    loaders = {
        "granular reader in a torch Dataset (reference)": lambda: DataLoader(
            GranularTorch(path), batch_size=256, shuffle=True, num_workers=2, collate_fn=keep
        ),
        "reel.torch.RecordDataset": lambda: DataLoader(
            reel.torch.RecordDataset(path), batch_size=256, shuffle=True, num_workers=2, collate_fn=keep
        ),
        "reel.torch.StreamingDataset, 2 workers": lambda: DataLoader(
            reel.torch.StreamingDataset(path, batch_size=256, collate=None, threads=2),
            batch_size=None,
            num_workers=2,
        ),
        "reel.torch.StreamingDataset, no workers": lambda: DataLoader(
            reel.torch.StreamingDataset(path, batch_size=256, collate=None, threads=2),
            batch_size=None,
            num_workers=0,
        ),
    }
    torch.manual_seed(0)
    best = {name: float("inf") for name in loaders}
    for _ in range(args.repeat):
        for name, make in loaders.items():
            loader = make()
            start = time.perf_counter()
            records = sum(len(b) for b in loader)
            best[name] = min(best[name], time.perf_counter() - start)
            assert records == n, (name, records)
    base = None
    for name, seconds in best.items():
        rate = n / seconds
        base = base or rate
        row(table, "dataloader", "warm", "1 KiB", name + " (epoch)", rate, base)


def part_rust(args, table) -> None:
    """reel from Python against `reel bench` (Rust) on the same files, same pattern."""
    if not Path(args.reel_bin).exists():
        print(f"skipping the Rust comparison: {args.reel_bin} not found (cargo build --release -p reel-cli)")
        return
    root = Path(args.warm_dir) / "rust"
    root.mkdir(parents=True, exist_ok=True)
    for fmt in ("ffrecord", "granular"):
        for size_name, size in SIZES.items():
            n = args.records if size == 1024 else args.records_large
            cmd = [
                args.reel_bin, "bench", "--mode", "warm", "--format", fmt, "--sizes", str(size),
                "--data", str(n * size), "--warm-dir", str(root), "--backends", "auto",
                "--no-baselines", "--no-fio", "--crc-size", "0", "--secs", str(args.secs),
                "--repeat", "1", "--json",
            ]
            rust_best = 0.0
            py_best = {
                "reel read_batch(copy=False)": 0.0,
                "reel read_batch": 0.0,
                "reel read_batch_packed": 0.0,
            }
            ext = "ffr" if fmt == "ffrecord" else fmt
            records = max(n, 1024)
            path = root / f"bench-{size}x{records}.{ext}"
            for _ in range(args.repeat):
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                rust_best = max(rust_best, json.loads(out)[0]["records_per_sec"])
                ds = reel.open(path, format=fmt, verify=False)
                batches = batches_for(records, 512, args.batch_size, seed=7)
                for name in py_best:
                    copy = name == "reel read_batch"
                    done, k, start = 0, 0, time.perf_counter()
                    while time.perf_counter() - start < args.secs:
                        batch = batches[k % len(batches)]
                        if name == "reel read_batch_packed":
                            done += len(ds.read_batch_packed(batch)[1]) - 1
                        else:
                            done += len(ds.read_batch(batch, copy=copy))
                        k += 1
                    py_best[name] = max(py_best[name], done / (time.perf_counter() - start))
            row(table, "vs Rust", "warm", size_name, f"{fmt}: reel bench (Rust, auto)", rust_best, rust_best)
            for name, rate in py_best.items():
                row(table, "vs Rust", "warm", size_name, f"{fmt}: Python {name}", rate, rust_best)
            in_process(args, table, fmt, size_name, path, records)


def in_process(args, table, fmt: str, size_name: str, path: Path, records: int) -> None:
    """The same batches read by the Rust API and by read_batch_packed, in one process.

    Both read through one open dataset (one mapping, one buffer pool), in rounds of a few
    tens of milliseconds that alternate which goes first, so that the VM's drift between
    processes and over seconds (±20 %) falls on both alike; the ratio of each round's two
    times is the binding's cost, and the median over the rounds is reported with its range.
    """
    ds = reel.open(path, format=fmt, verify=False)
    batches = batches_for(records, 64, args.batch_size, seed=11)
    if args.index_arrays:  # what a NumPy-based sampler hands over, read in one pass
        batches = [np.asarray(b, dtype=np.int64) for b in batches]
    n = sum(len(b) for b in batches)

    def python() -> float:
        start = time.perf_counter()
        for batch in batches:
            ds.read_batch_packed(batch)
        return time.perf_counter() - start

    python(), ds._time_rust_reads(batches)  # warm both paths: pool, mapping, caches
    ratios, rust_times, py_times = [], [], []
    for k in range(args.rounds):
        if k % 2:
            p, r = python(), ds._time_rust_reads(batches)
        else:
            r, p = ds._time_rust_reads(batches), python()
        rust_times.append(r)
        py_times.append(p)
        ratios.append(r / p)
    ratios.sort()
    median = ratios[len(ratios) // 2]
    rust_rate = n / sorted(rust_times)[len(rust_times) // 2]
    py_rate = n / sorted(py_times)[len(py_times) // 2]
    row(table, "in-process", "warm", size_name, f"{fmt}: Rust read_batch_into (median)", rust_rate, rust_rate)
    row(table, "in-process", "warm", size_name, f"{fmt}: Python read_batch_packed (median)", py_rate, rust_rate)
    print(
        f"{'':<10} {'':<5} {'':>8} {fmt}: Python's rate / Rust's per round, over {args.rounds} rounds: "
        f"median {median:.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}",
        flush=True,
    )
    table.append(("in-process", "warm", size_name, f"{fmt}: round ratio", median, f"{ratios[0]:.3f}-{ratios[-1]:.3f}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20000, help="records of the 1 KiB datasets")
    ap.add_argument("--records-large", type=int, default=2000, help="records of the 100 KiB datasets")
    ap.add_argument("--batches", type=int, default=100, help="batches per warm run")
    ap.add_argument("--cold-batches", type=int, default=10, help="batches per cold run")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3, help="runs per reader, alternating; best kept")
    ap.add_argument("--secs", type=float, default=2.0, help="seconds per Rust/Python run")
    ap.add_argument("--rounds", type=int, default=41,
                    help="alternating rounds of the in-process Rust/Python comparison")
    ap.add_argument("--index-arrays", action="store_true",
                    help="the in-process comparison passes int64 NumPy arrays, not lists")
    ap.add_argument("--warm-dir", default="/dev/shm/reel-pybench")
    ap.add_argument("--cold-dir", default=None, help="a directory on a real disk (no cold runs without)")
    ap.add_argument("--bags-python", default="/tmp/reel-refread/bags/bin/python",
                    help="an interpreter with bags 0.5.1 (refread makes one: refread bags ...)")
    ap.add_argument("--reel-bin", default=str(REPO / "target/release/reel"))
    ap.add_argument("--videos", type=int, default=2000, help="videos of 8 64x64 frames (gulpio2)")
    ap.add_argument("--parts", default="references,gulpio2,dataloader,rust")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    table: list = []
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs")
    made = []
    for d in (args.warm_dir, args.cold_dir):
        if d and not Path(d).exists():
            Path(d).mkdir(parents=True)
            made.append(d)
    try:
        parts = args.parts.split(",")
        if "references" in parts:
            part_references(args, table)
        if "gulpio2" in parts:
            part_gulpio2(args, table)
        if "dataloader" in parts:
            part_dataloader(args, table)
        if "rust" in parts:
            part_rust(args, table)
    finally:
        for d in made:  # benchmark data is not left behind
            shutil.rmtree(d, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
