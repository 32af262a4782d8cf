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


JOINED_AT_EXIT = textwrap.dedent(
    """
    import atexit, sys, threading, time
    path = sys.argv[1]
    stop = threading.Event()

    # Registered before `import reel`, so it runs after reel's exit hook and before
    # finalization: the thread it joins must come back from reel, not park.
    def cleanup():
        stop.set()
        t.join(timeout=30)
        print("joined" if not t.is_alive() else "parked", flush=True)
    atexit.register(cleanup)

    import reel
    ds = reel.open(path)

    def loop():
        while not stop.is_set():
            ds.read_batch(list(range(20)))

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    time.sleep(0.3)
    print("exiting", flush=True)
    """
)


def test_a_thread_joined_by_an_earlier_exit_hook_comes_back(tmp_path):
    path = tmp_path / "d.ffr"
    reel.generate(path, records=200, max_record=2048)
    for run in range(3):
        done = subprocess.run(
            [sys.executable, "-c", JOINED_AT_EXIT, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"run {run}: {done.returncode}: {done.stderr[-1500:]}"
        assert done.stdout.split() == ["exiting", "joined"], done.stdout


FORKS_WHILE_READING = textwrap.dedent(
    """
    import os, sys, threading, time
    import reel
    ds = reel.open(sys.argv[1])

    def loop():
        while True:
            ds.read_batch(list(range(20)))

    threading.Thread(target=loop, daemon=True).start()
    for trial in range(6):
        x = 0
        for i in range(200000):  # holds the GIL while the reader waits for it
            x += i
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # runs the exit hook in the child
        start = time.monotonic()
        os.waitpid(pid, 0)
        print(round(time.monotonic() - start, 2), flush=True)
    """
)


def test_a_forked_child_forgets_the_parents_waiting_threads(tmp_path):
    """A child forked while a reader thread was taking the GIL back exits at once: the
    exit hook does not wait for a thread that does not exist in the child."""
    path = tmp_path / "d.ffr"
    reel.generate(path, records=200, max_record=2048)
    done = subprocess.run(
        [sys.executable, "-c", FORKS_WHILE_READING, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    waits = [float(x) for x in done.stdout.split()]
    assert len(waits) == 6 and max(waits) < 2.5, waits  # the hook's safety net is 5 s
