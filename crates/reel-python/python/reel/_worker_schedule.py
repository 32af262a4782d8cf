"""The schedule (epoch and resume state) a ``StreamingDataset`` shares with the DataLoader
workers it started, so that ``set_epoch`` and ``load_state_dict`` in the main process reach
workers that outlive one epoch (``persistent_workers=True``).

A DataLoader copies the dataset into each worker once, when it starts it. Without
persistent workers every epoch starts new workers from the current dataset, so the copy is
current. Persistent workers keep their first copy; they read the schedule from this block
instead, a few bytes of memory shared with the main process: inherited under ``fork``,
passed as a file descriptor while a worker is being started under ``spawn`` and
``forkserver`` (``multiprocessing``'s own shared ``ctypes`` memory).
"""

from __future__ import annotations

import json
import multiprocessing.context
import multiprocessing.sharedctypes
from ctypes import c_char
from typing import Any

# A loader state is a dict of a few numbers and a shuffle name (about 100 bytes as JSON;
# the loader refuses unknown keys, so a valid one stays far below this).
_CAPACITY = 4096
_HEADER = 8  # the payload's length, little-endian


class WorkerSchedule:
    """A block of shared memory holding ``(epoch, resume)`` as JSON."""

    def __init__(self) -> None:
        self._block = multiprocessing.sharedctypes.RawArray(c_char, _CAPACITY)

    def publish(self, epoch: int, resume: str | None) -> None:
        """Makes ``(epoch, resume)`` what workers read from now on."""
        payload = json.dumps([epoch, resume]).encode()
        if _HEADER + len(payload) > _CAPACITY:
            raise ValueError(
                f"a loader state of {len(payload)} bytes is too large to share with "
                f"DataLoader workers (at most {_CAPACITY - _HEADER})"
            )
        view = memoryview(self._block).cast("B")
        view[_HEADER : _HEADER + len(payload)] = payload
        view[:_HEADER] = len(payload).to_bytes(_HEADER, "little")

    def read(self) -> tuple[int, str | None]:
        """The schedule published last.

        The main process publishes before it starts an epoch's iteration (``set_epoch``,
        then ``iter(loader)``), and a worker reads when that iteration reaches it through
        DataLoader's queues, so the read comes after the write. Changing the schedule
        from another thread while an iteration starts is a race here as it is without
        persistent workers, where it races with the copy DataLoader makes.
        """
        view = memoryview(self._block).cast("B")
        length = int.from_bytes(view[:_HEADER], "little")
        epoch, resume = json.loads(bytes(view[_HEADER : _HEADER + length]))
        return int(epoch), resume

    def __getstate__(self) -> dict[str, Any]:
        # Shared memory can only be handed to a process being started (multiprocessing
        # refuses otherwise); a copy pickled any other way (a checkpoint, Ray) gets a block
        # of its own, linked to the workers it starts in turn.
        if multiprocessing.context.get_spawning_popen() is None:
            return {"block": None, "schedule": self.read()}
        return {"block": self._block, "schedule": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state["block"] is not None:
            self._block = state["block"]
        else:
            self.__init__()
            self.publish(*state["schedule"])
