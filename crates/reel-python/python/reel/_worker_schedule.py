"""The schedule (epoch and resume state) a ``StreamingDataset`` shares with the DataLoader
workers it started, so that ``set_epoch`` and ``load_state_dict`` in the main process reach
workers that outlive one epoch (``persistent_workers=True``), and so that a loaded state
is used by one iteration only.

A DataLoader copies the dataset into each worker once, when it starts it. Without
persistent workers every epoch starts new workers from the current dataset, so the copy is
current. Persistent workers keep their first copy; they read the schedule from this block
instead, a few bytes of memory shared with the main process: inherited under ``fork``,
passed as a file descriptor while a worker is being started under ``spawn`` and
``forkserver`` (``multiprocessing``'s own shared ``ctypes`` memory).

A loaded state resumes the next iteration, not every later one: the iteration that first
uses it marks it used (by an identity that all the workers of one iteration share, see
``StreamingDataset._iteration``), and later iterations start their epoch from the
beginning. The marks also tell the main process which iteration ``state_dict`` counts
from. The main process never sees an iteration's start when workers run it.

The identity can repeat: it holds the DataLoader's base seed, which a generator seeded
anew for every epoch (or ``torch.manual_seed`` before each) draws again, and fresh
workers all count their first iteration. So the block also records which worker ids
started under the used identity: each worker starts once per iteration, so a worker id
starting a second time under it belongs to a later iteration, which reads its epoch from
the start (it resumed again, skipping the batches before the state, every epoch).
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.context
import multiprocessing.sharedctypes
import struct
from ctypes import c_char
from typing import Any

# A loader state is a dict of a few numbers and a shuffle name (about 100 bytes as JSON;
# the loader refuses unknown keys, so a valid one stays far below this).
_CAPACITY = 4096
# The payload's length, then two iteration identities (two u64 each, all 0 for none): the
# iteration that used the loaded state, and the one that started last; whether that last
# one began at the loaded state; and a bitmap of the worker ids that began at it (ids
# beyond the bitmap are taken as first starts). The JSON follows.
_WORKER_BITS = 1024
_MARKS = struct.Struct(f"<Q2Q2QQ{_WORKER_BITS // 8}s")
_HEADER = _MARKS.size

Iteration = tuple[int, int]


class WorkerSchedule:
    """A block of shared memory holding ``(epoch, resume)`` as JSON, and which iterations
    used the resume state and started last, behind a lock shared with the workers.

    The lock is needed: the workers of one iteration mark the block at the same time, and
    ``struct.pack_into`` zeroes what it writes before writing it, so a reader without the
    lock saw a length of 0 or no marks (a worker failed to decode the schedule; the main
    process took a later iteration for the resumed one).
    """

    def __init__(self) -> None:
        self._block = multiprocessing.sharedctypes.RawArray(c_char, _CAPACITY)
        # A spawn context's lock may be handed to workers of any start method (one made in
        # a fork context is refused by spawned workers from Python 3.12). A POSIX
        # semaphore: held by a parent's thread at a fork, it is released for the child too.
        self._lock = multiprocessing.get_context("spawn").Lock()

    def _view(self) -> memoryview:
        return memoryview(self._block).cast("B")

    def publish(self, epoch: int, resume: str | None) -> None:
        """Makes ``(epoch, resume)`` what iterations read from now on, used by none yet."""
        payload = json.dumps([epoch, resume]).encode()
        if _HEADER + len(payload) > _CAPACITY:
            raise ValueError(
                f"a loader state of {len(payload)} bytes is too large to share with "
                f"DataLoader workers (at most {_CAPACITY - _HEADER})"
            )
        with self._lock:
            view = self._view()
            view[_HEADER : _HEADER + len(payload)] = payload
            view[:_HEADER] = _MARKS.pack(len(payload), 0, 0, 0, 0, 0, b"")

    def read(self) -> tuple[int, str | None]:
        """The schedule published last.

        The main process publishes before it starts an epoch's iteration (``set_epoch``,
        then ``iter(loader)``), and a worker reads when that iteration reaches it through
        DataLoader's queues, so the read comes after the write. Changing the schedule
        from another thread while an iteration starts is a race here as it is without
        persistent workers, where it races with the copy DataLoader makes.
        """
        with self._lock:
            return self._read_locked()

    def _read_locked(self) -> tuple[int, str | None]:
        view = self._view()
        length = _MARKS.unpack_from(view)[0]
        epoch, resume = json.loads(bytes(view[_HEADER : _HEADER + length]))
        return int(epoch), resume

    def start(self, iteration: Iteration, worker: int = 0) -> tuple[int, str | None]:
        """The schedule worker ``worker`` of iteration ``iteration`` reads: the loaded
        state if no other iteration used it before (it is then marked used by this one),
        else the start of the epoch. The iteration is marked as the latest."""
        with self._lock:
            epoch, resume = self._read_locked()
            view = self._view()
            length, used_a, used_b, _, _, _, bitmap = _MARKS.unpack_from(view)
            used = (used_a, used_b)
            workers = bytearray(bitmap)
            byte, bit = divmod(worker, 8)
            # A worker id beyond the bitmap cannot be told apart: taken as a first start.
            started_before = byte < len(workers) and bool(workers[byte] & (1 << bit))
            if resume is not None:
                if used == (0, 0) or (used == iteration and not started_before):
                    used = iteration
                    if byte < len(workers):
                        workers[byte] |= 1 << bit
                else:
                    resume = None
            resumed = int(resume is not None)
            _MARKS.pack_into(view, 0, length, *used, *iteration, resumed, bytes(workers))
            return epoch, resume

    def latest_uses_resume(self) -> bool:
        """Whether the iteration that started last began at the loaded state (or none has
        started since it was loaded): what ``state_dict`` counts batches from."""
        with self._lock:
            _, used_a, used_b, _, _, latest_resumed, _ = _MARKS.unpack_from(self._view())
        return (used_a, used_b) == (0, 0) or bool(latest_resumed)

    def __getstate__(self) -> dict[str, Any]:
        # Shared memory can only be handed to a process being started (multiprocessing
        # refuses otherwise); a copy pickled any other way (a checkpoint, Ray) gets a block
        # of its own, linked to the workers it starts in turn.
        if multiprocessing.context.get_spawning_popen() is None:
            return {"block": None, "lock": None, "schedule": self.read()}
        return {"block": self._block, "lock": self._lock, "schedule": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state["block"] is not None:
            self._block = state["block"]
            self._lock = state["lock"]
        else:
            self.__init__()
            self.publish(*state["schedule"])
