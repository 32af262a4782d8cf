"""PyTorch datasets over reel (``import reel.torch``; torch is needed only for this module).

* :class:`RecordDataset` is map-style and has ``__getitems__``, so a ``DataLoader`` fetches
  each batch with one batched read (GIL released, io_uring where available).
* :class:`StreamingDataset` is iterable: reel-loader's deterministic per-epoch shuffle, split
  by distributed rank and by DataLoader worker, with exact mid-epoch resume.

Both pickle as the dataset's path and options, so DataLoader workers work under ``fork``
and ``spawn``; a forked worker opens its own files on its first read.

A ten-line training loop::

    import reel.torch, torch

    ds = reel.torch.StreamingDataset("train.ffr", batch_size=256, seed=0,
                                     transform=lambda r: torch.frombuffer(r["data"], dtype=torch.uint8))
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4)
    for epoch in range(10):
        ds.set_epoch(epoch)
        for step, batch in enumerate(loader, start=1):
            ...                                   # train on batch
            checkpoint = ds.state_dict(batches_seen=step)
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset as _MapDataset
from torch.utils.data import IterableDataset, default_collate, get_worker_info

import reel

__all__ = ["RecordDataset", "StreamingDataset", "to_tensor"]

Record = dict[str, Any]


def _open(source: str | os.PathLike[str] | reel.Dataset, open_kwargs: dict[str, Any]) -> reel.Dataset:
    if isinstance(source, reel.Dataset):
        if open_kwargs:
            raise ValueError("open options apply to a path, not to an opened reel.Dataset")
        return source
    return reel.open(source, **open_kwargs)


def to_tensor(value: Any, dtype: torch.dtype = torch.uint8) -> torch.Tensor:
    """A tensor over a byte field or NumPy array without copying it where possible.

    ``bytes`` and ``memoryview`` values (``copy=False`` reads) become 1-D tensors of
    ``dtype`` sharing their memory (``torch.frombuffer``); NumPy arrays share theirs
    (``torch.from_numpy``). The memory of bytes and views is read-only: do not write to such
    tensors (clone them first).
    """
    if isinstance(value, (bytes, memoryview)):
        if len(value) == 0:
            return torch.empty(0, dtype=dtype)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given buffer is not writable")
            return torch.frombuffer(value, dtype=dtype)
    if hasattr(value, "__array_interface__"):
        return torch.from_numpy(value)
    return torch.as_tensor(value)


class RecordDataset(_MapDataset):
    """A map-style dataset: ``ds[i]`` is record ``i`` (after ``transform``).

    ``__getitems__`` reads a whole DataLoader batch in one batched read.

    Args:
        source: a path (opened with ``reel.open`` and ``open_kwargs``) or a ``reel.Dataset``.
        transform: applied to each record (a dict) before it is returned.
        copy: False returns byte fields as read-only memoryviews over reel's buffer.
        **open_kwargs: ``format``, ``backend``, ``verify``, ``decode_images`` for
            ``reel.open``.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | reel.Dataset,
        *,
        transform: Callable[[Record], Any] | None = None,
        copy: bool = True,
        **open_kwargs: Any,
    ) -> None:
        self.dataset = _open(source, open_kwargs)
        self.transform = transform
        self.copy = copy

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        record = self.dataset.read(index, copy=self.copy) if index >= 0 else self.dataset[index]
        return self.transform(record) if self.transform else record

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        records = self.dataset.read_batch(indices, copy=self.copy)
        return [self.transform(r) for r in records] if self.transform else records


def _distributed() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


class StreamingDataset(IterableDataset):
    """An iterable dataset yielding whole batches, in reel-loader's order.

    Each epoch has a global order that depends only on ``(shuffle, seed, epoch, len)``;
    rank ``r`` of ``world_size`` ranks takes its share of each global step, and the
    DataLoader workers of a rank take its batches in turn (worker ``k`` reads batches
    ``k, k + W, ...``), so the batches a rank sees, and their order, do not depend on the
    number of workers. Use it with ``DataLoader(ds, batch_size=None, num_workers=W)``.

    Resume: ``state_dict(batches_seen=n)`` after ``n`` batches of the current epoch (the
    count of batches your loop consumed; it can be left out when iterating without
    DataLoader workers) describes the position after them; ``load_state_dict`` makes the
    next iteration deliver exactly the batches an uninterrupted run would have delivered
    next. The state is a small dict (JSON-serialisable).

    Args:
        source: a path (opened with ``reel.open`` and ``open_kwargs``) or a ``reel.Dataset``.
        batch_size: records per batch of this rank.
        shuffle: "feistel" (default), "granular" (numpy's permutation, Granular's order),
            "none"; or True/False for "feistel"/"none".
        seed: the shuffle seed.
        rank, world_size: this process's share; by default from ``torch.distributed`` when
            it is initialised, else 0 of 1.
        drop_last: drop the end of an epoch that does not fill a whole global step.
        transform: applied to each record (a dict).
        collate: turns the list of (transformed) records into the yielded batch
            (default ``torch.utils.data.default_collate``; None yields the list).
        copy: False reads byte fields as read-only memoryviews (zero-copy).
        **open_kwargs: for ``reel.open``.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | reel.Dataset,
        *,
        batch_size: int,
        shuffle: str | bool = "feistel",
        seed: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
        transform: Callable[[Record], Any] | None = None,
        collate: Callable[[list[Any]], Any] | None = default_collate,
        copy: bool = True,
        **open_kwargs: Any,
    ) -> None:
        self.dataset = _open(source, open_kwargs)
        if isinstance(shuffle, bool):
            shuffle = "feistel" if shuffle else "none"
        default_rank, default_world = _distributed()
        self.rank = default_rank if rank is None else rank
        self.world_size = default_world if world_size is None else world_size
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.transform = transform
        self.collate = collate
        self.copy = copy
        self.epoch = 0
        self._resume: str | None = None  # loader state (JSON) the next iteration starts at
        self._seen = 0  # batches delivered by in-process iteration of the current epoch
        # Checks the configuration now (bad shuffle, rank outside the world ...).
        self._plan(None)

    def _plan(self, state: str | None):
        return self.dataset.plan(
            batch_size=self.batch_size,
            shuffle=self.shuffle,
            seed=self.seed,
            rank=self.rank,
            world_size=self.world_size,
            drop_last=self.drop_last,
            epoch=self.epoch,
            epochs=self.epoch + 1,
            state=state,
        )

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch the next iteration reads (like ``DistributedSampler``). A
        loaded state of another epoch is dropped."""
        if epoch != self.epoch:
            self._resume = None
            self._seen = 0
        self.epoch = epoch

    def __len__(self) -> int:
        """Batches of this rank in one whole epoch."""
        return sum(1 for _ in self._plan(None))

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        workers, me = (info.num_workers, info.id) if info is not None else (1, 0)
        in_process = info is None
        if in_process:
            self._seen = 0
        for k, (indices, _state) in enumerate(self._plan(self._resume)):
            if k % workers != me:
                continue
            records = self.dataset.read_batch(indices, copy=self.copy)
            if self.transform is not None:
                records = [self.transform(r) for r in records]
            if in_process:
                self._seen += 1
            yield self.collate(records) if self.collate is not None else records

    def state_dict(self, batches_seen: int | None = None) -> dict[str, Any]:
        """The position after ``batches_seen`` batches of the current iteration (by default
        the batches an in-process iteration delivered). Save it with your checkpoint."""
        n = self._seen if batches_seen is None else batches_seen
        if n < 0:
            raise ValueError("batches_seen cannot be negative")
        plan = self._plan(self._resume)
        state = plan.state()
        for _ in range(n):
            step = next(plan, None)
            if step is None:
                raise ValueError(f"batches_seen={n} is more than this epoch has")
            state = step[1]
        return {"loader": json.loads(state), "rank": self.rank, "world_size": self.world_size}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Makes the next iteration continue where ``state`` was taken."""
        loader = state["loader"]
        self.epoch = int(loader["epoch"])
        self._resume = json.dumps(loader)
        self._seen = 0
