"""Local disk used while ``reel convert`` writes to a bucket: the whole dataset, or a few parts.

Starts moto's S3 server on 127.0.0.1 (a free port; this Python needs ``moto[server]``),
generates an FFRecord dataset of about ``--bytes`` (records up to ``--max-record`` bytes),
then converts it to ``s3://bench/…`` with each target, with and without ``--part-size``,
``--runs`` times each. A thread measures the staging directory (``REEL_STAGING_DIR``, a
fresh one per run) every 20 ms; the table shows the largest size seen and the time of each
conversion. Without ``--part-size`` the dataset is staged whole and uploaded on finish;
with it, each part or shard goes up as soon as the next one starts and leaves local disk::

    python crates/reel-python/bench/bench_staging.py [--reel target/release/reel]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def default_reel() -> str:
    target = os.environ.get("CARGO_TARGET_DIR") or str(HERE.parents[2] / "target")
    return str(Path(target) / "release" / "reel")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass  # removed while walking: an upload finished
    return total


def peak_while(run, root: Path) -> tuple[float, int]:
    """Seconds ``run()`` took and the most bytes seen under ``root`` meanwhile."""
    peak = 0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_bytes(root))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    start = time.perf_counter()
    try:
        run()
    finally:
        seconds = time.perf_counter() - start
        done.set()
        watcher.join()
    return seconds, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reel", default=default_reel())
    ap.add_argument("--bytes", type=int, default=200_000_000)
    ap.add_argument("--max-record", type=int, default=100_000)
    ap.add_argument("--part-size", default="16M")
    ap.add_argument("--targets", default="ofrecord,granular")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    work = Path(tempfile.mkdtemp(prefix="reel-bench-staging-"))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{endpoint}/bench", method="PUT"), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("moto did not start within 30 s")
                time.sleep(0.2)
        env = dict(
            os.environ,
            AWS_ENDPOINT_URL=endpoint,
            AWS_ALLOW_HTTP="true",
            AWS_REGION="us-east-1",
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
        )
        src = work / "src.ffr"
        records = max(1, args.bytes * 2 // args.max_record)
        subprocess.run(
            [args.reel, "generate", "--format", "ffrecord", "--records", str(records),
             "--max-record", str(args.max_record), str(src)],
            check=True, stdout=subprocess.DEVNULL,
        )
        print(f"source: {src.stat().st_size} bytes, {records} records; part size {args.part_size}")
        print("| `reel convert SRC s3://… --to` | peak staging | time |")
        print("| --- | --- | --- |")
        for to in args.targets.split(","):
            for extra in ([], ["--part-size", args.part_size]):
                peaks, times = [], []
                for _ in range(args.runs):
                    staging = work / "staging"
                    shutil.rmtree(staging, ignore_errors=True)
                    staging.mkdir()
                    cmd = [args.reel, "convert", "--quiet", "--force", str(src),
                           f"s3://bench/{to}", "--to", to, *extra]
                    run_env = dict(env, REEL_STAGING_DIR=str(staging))
                    seconds, peak = peak_while(
                        lambda: subprocess.run(cmd, check=True, env=run_env, stdout=subprocess.DEVNULL),
                        staging,
                    )
                    peaks.append(peak)
                    times.append(seconds)
                label = " ".join([to, *extra])
                print(f"| `{label}` | {max(peaks) / 1e6:.0f} MB | {min(times):.2f}–{max(times):.2f} s |")
    finally:
        moto.terminate()
        moto.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
