"""Threads still inside reel when the interpreter exits.

CPython 3.11-3.13 end a daemon thread that takes the GIL after finalization has begun with
pthread_exit; through Rust frames that aborted the process ("FATAL: exception not
rethrown", exit status 134) in most runs of a program whose daemon thread was iterating a
reel stream. reel parks such threads instead (src/shutdown.rs). Each case runs a few
times, in children, because the abort depended on timing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import reel

CHILD = textwrap.dedent(
    """
    import atexit, sys, threading, time
    path, mode = sys.argv[1], sys.argv[2]

    # Registered before reel's own exit hook, so it runs after it, on the exiting thread,
    # which must still be able to read.
    def read_at_exit():
        print("read at exit", len(reel.open(path)[0:3]), flush=True)
    atexit.register(read_at_exit)

    import reel
    ds = reel.open(path)

    def loop():
        if mode == "read":
            while True:
                ds.read_batch(list(range(50)))
        else:
            threads = int(mode.split("-")[1])
            for _ in ds.stream(batch_size=4, threads=threads, epochs=None):
                pass

    threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.3)
    print("exiting", flush=True)
    """
)


@pytest.mark.parametrize("mode", ["stream-2", "stream-0", "read"])
def test_daemon_threads_in_reel_do_not_abort_the_exit(tmp_path, mode):
    path = tmp_path / "d.ffr"
    reel.generate(path, records=200, max_record=2048)
    for run in range(4):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), mode],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"run {run}: {done.returncode}: {done.stderr[-1500:]}"
        assert done.stdout.split("\n")[:2] == ["exiting", "read at exit 3"], done.stdout
