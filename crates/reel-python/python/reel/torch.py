"""PyTorch datasets over reel (``import reel.torch``; torch is needed only for this module).

* :class:`RecordDataset` is map-style and has ``__getitems__``, so a ``DataLoader`` fetches
  each batch with one batched read (GIL released, io_uring where available).
* :class:`StreamingDataset` is iterable: reel-loader's deterministic per-epoch shuffle, split
  by distributed rank and by DataLoader worker, with exact mid-epoch resume; batches are
  read ahead on Rust threads (GIL released) while Python works on the current one.

With ``tensors=True`` both hand out byte fields as ``torch.uint8`` tensors over reel's batch
buffer and NumPy arrays as tensors sharing their memory: no copy between the read and the
tensor. The tensors keep the buffer alive after the dataset is gone. The records are read
into that buffer even where the backend could lend them from the file's mapping
(``mapped=False``): torch ignores the read-only flag of a buffer, and a write into a
tensor over a read-only mapping would crash the process, while a write into the batch
buffer changes only that batch's copy. Arrays of a dtype torch has no tensor type for
(text, objects, ``uint16`` before torch 2.3 ...) stay NumPy arrays.

Both pickle as the dataset's absolute path and options, so DataLoader workers work under
``fork`` and ``spawn``; a forked worker opens its own files on its first read. A worker
that finds another number of records there than the parent had (the table grew) raises
``CorruptError`` rather than read other records than the sampler's indices.

A ten-line training loop::

    import reel.torch, torch

    ds = reel.torch.StreamingDataset("train.ffr", batch_size=256, seed=0, tensors=True,
                                     transform=lambda r: r["data"].float().mean())
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4)
    for epoch in range(10):
        ds.set_epoch(epoch)
        for step, batch in enumerate(loader, start=1):
            ...                                   # train on batch
            checkpoint = ds.state_dict(batches_seen=step)
"""

from __future__ import annotations

import json
import operator
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset as _MapDataset
from torch.utils.data import IterableDataset, default_collate, get_worker_info

import reel
from reel._worker_schedule import WorkerSchedule

__all__ = ["RecordDataset", "StreamingDataset", "to_tensor"]

Record = dict[str, Any]

# torch warns that a tensor over a read-only buffer may be written to; reel's buffers are
# handed to tensors on purpose (see to_tensor). Only warnings raised from this module.
warnings.filterwarnings(
    "ignore", message="The given buffer is not writable", category=UserWarning, module=r"reel\.torch"
)


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
        return torch.frombuffer(value, dtype=dtype)
    if hasattr(value, "__array_interface__"):
        return torch.from_numpy(value)
    return torch.as_tensor(value)


def _as_tensors(record: Record) -> Record:
    """The record with byte fields and NumPy arrays as tensors sharing their memory; other
    values, and arrays of a dtype torch cannot hold, as they are."""
    out = {}
    for name, value in record.items():
        if isinstance(value, (bytes, memoryview)):
            value = to_tensor(value)
        elif hasattr(value, "__array_interface__"):
            try:
                value = torch.from_numpy(value)
            except TypeError:
                pass  # no torch dtype for it (text, objects, ...): the array as it is
        out[name] = value
    return out


class RecordDataset(_MapDataset):
    """A map-style dataset: ``ds[i]`` is record ``i`` (after ``transform``).

    ``__getitems__`` reads a whole DataLoader batch in one batched read.

    Args:
        source: a path (opened with ``reel.open`` and ``open_kwargs``) or a ``reel.Dataset``.
        transform: applied to each record (a dict) before it is returned.
        copy: False returns byte fields as read-only memoryviews over reel's buffer.
        tensors: byte fields as ``torch.uint8`` tensors over reel's batch buffer and NumPy
            arrays as tensors sharing their memory (no copy after the read; implies
            ``copy=False``). The records are read into that buffer, never lent from the
            file's mapping, so writing to a tensor changes only that batch's copy.
        **open_kwargs: ``format``, ``backend``, ``verify``, ``decode_images`` for
            ``reel.open``.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | reel.Dataset,
        *,
        transform: Callable[[Record], Any] | None = None,
        copy: bool = True,
        tensors: bool = False,
        **open_kwargs: Any,
    ) -> None:
        self.dataset = _open(source, open_kwargs)
        self.transform = transform
        self.copy = copy and not tensors
        self.tensors = tensors

    def _finish(self, records: list[Record]) -> list[Any]:
        if self.tensors:
            records = [_as_tensors(r) for r in records]
        return [self.transform(r) for r in records] if self.transform else records

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        # Tensors over the batch buffer, never over the file's mapping (see the module
        # documentation): writing to one must not crash the process.
        records = self.dataset.read_batch(indices, copy=self.copy, mapped=not self.tensors)
        return self._finish(records)


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

    Without ``drop_last``, the last global step of an epoch holds the records left, split
    between the ranks; when fewer are left than there are ranks, a rank whose share is
    empty gets an empty batch, yielded as ``[]`` without ``transform`` or ``collate``, so
    that every rank takes the same number of steps (DDP needs that). Skip it in the
    training loop (``if not batch``) or use ``drop_last=True``.

    Resume: ``state_dict(batches_seen=n)`` after ``n`` batches of the current epoch (the
    count of batches your loop consumed; it can be left out when iterating without
    DataLoader workers) describes the position after them; ``load_state_dict`` makes the
    next iteration deliver exactly the batches an uninterrupted run would have delivered
    next (none, for a state taken after the epoch's last batch: the dataset stays in that
    epoch, and ``set_epoch`` moves on). The iterations after that one start their epoch
    from the beginning (or, after ``set_epoch``, another epoch), also when the
    DataLoader's seed repeats. The state is a small dict (JSON-serialisable).

    ``set_epoch`` and ``load_state_dict`` in the main process reach the DataLoader's
    workers also when they persist across epochs (``persistent_workers=True``): the dataset
    shares its schedule with the workers it starts, through a few bytes of shared memory.

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
        tensors: byte fields as ``torch.uint8`` tensors over reel's batch buffer, NumPy
            arrays as tensors sharing their memory (no copy after the read; implies
            ``copy=False``); writing to one changes only that batch's copy.
        threads: Rust threads reading batches ahead of the consumer, GIL released (per
            process: in each DataLoader worker when there are workers). 0 reads each batch
            when it is asked for. The batches and their order do not depend on it.
        prefetch: batches read ahead at most (default: twice ``threads``).
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
        tensors: bool = False,
        threads: int = 2,
        prefetch: int | None = None,
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
        self.copy = copy and not tensors
        self.tensors = tensors
        if threads < 0 or (prefetch is not None and prefetch < 1):
            raise ValueError("threads must be at least 0 and prefetch at least 1")
        self.threads = threads
        self.prefetch = prefetch
        self.epoch = 0
        self._resume: str | None = None  # loader state (JSON) the next iteration starts at
        self._seen = 0  # batches delivered by in-process iteration of the current epoch
        self._iterations = 0  # iterations this copy (this process's) has begun
        # (epoch, resume) as the main process last set them, for workers that started
        # before (persistent workers keep the copy of the dataset they started with), and
        # which iteration used the resume state (see _worker_schedule).
        self._shared = WorkerSchedule()
        self._shared.publish(self.epoch, self._resume)
        # Checks the configuration now (bad shuffle, rank outside the world ...).
        self._plan(None)

    def _schedule(self, state: str | None) -> dict[str, Any]:
        """The loader keywords of the current epoch, from ``state`` or its start."""
        return {
            "batch_size": self.batch_size,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "rank": self.rank,
            "world_size": self.world_size,
            "drop_last": self.drop_last,
            "epoch": self.epoch,
            "epochs": self.epoch + 1,
            "state": state,
        }

    def _plan(self, state: str | None):
        return self.dataset.plan(**self._schedule(state))

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch the next iteration reads (like ``DistributedSampler``). A
        loaded state of another epoch is dropped. ``epoch`` is any integer (a NumPy or
        torch one too) from 0 to 2**64 - 1."""
        try:
            epoch = operator.index(epoch)
        except TypeError:
            raise TypeError(f"argument 'epoch': an integer, not {type(epoch).__name__}") from None
        if not 0 <= epoch < 2**64:
            raise ValueError("argument 'epoch': from 0 to 2**64 - 1")
        if epoch != self.epoch:
            self._shared.publish(epoch, None)
            self.epoch = epoch
            self._resume = None
            self._seen = 0

    def __len__(self) -> int:
        """Batches of this rank in one whole epoch (counted without computing them)."""
        return self._plan(None).skip(2**64 - 1)

    def _iteration(self, info: Any) -> tuple[int, int]:
        """Which iteration this is, the same in every worker of one DataLoader iteration:
        the DataLoader's base seed (new for every iterator) and how many iterations this
        copy has begun (a persistent worker keeps its seed from epoch to epoch)."""
        base = 0 if info is None else (info.seed - info.id) % 2**64
        return base, self._iterations

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        workers, me = (info.num_workers, info.id) if info is not None else (1, 0)
        in_process = info is None
        if in_process:
            self._seen = 0
        self._iterations += 1
        # The main process's schedule now (a worker's copy was made when the worker
        # started, and a persistent worker iterates it again for every epoch); the loaded
        # state only if no earlier iteration used it.
        epoch, start = self._shared.start(self._iteration(info), me)
        if not in_process:
            self.epoch = epoch
        # This worker's batches (k, k + workers, ...) are read ahead by reel-loader's
        # threads; the others are not read here.
        stream = self.dataset.stream(
            **self._schedule(start),
            threads=self.threads,
            prefetch=self.prefetch,
            interleave=(workers, me),
            copy=self.copy,
            mapped=not self.tensors,
        )
        for records in stream:
            if not records:
                # This rank's share of the epoch's short last global step is empty (fewer
                # records were left than ranks): an empty batch keeps every rank at the
                # same number of steps, as DDP needs, and is yielded as an empty list,
                # since no transform or collate makes a batch of nothing.
                if in_process:
                    self._seen += 1
                yield []
                continue
            if self.tensors:
                records = [_as_tensors(r) for r in records]
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
        # The current iteration began at the loaded state, or (a later one) at the start.
        start = self._resume if self._shared.latest_uses_resume() else None
        plan = self._plan(start)
        # Skipped in Rust without computing the batches' indices: replaying them cost
        # time in proportion to the step, so a state taken every step grew quadratically.
        if plan.skip(n) < n:
            raise ValueError(f"batches_seen={n} is more than this epoch has")
        loader = json.loads(plan.state())
        if loader["epoch"] != self.epoch:
            # The batches seen end the epoch, and the loader states that as the start of
            # the next one. Kept as the end of this epoch instead (which the loader
            # resumes to no batches): loaded, it leaves the dataset in this epoch, as a
            # state taken mid-epoch does, so that a loop calling set_epoch(e) with the
            # epoch it checkpointed does not read epoch e again.
            steps = self._plan(None).skip(2**64 - 1)
            loader = {**loader, "epoch": self.epoch, "step": steps, "position": loader["len"]}
        return {"loader": loader, "rank": self.rank, "world_size": self.world_size}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Makes the next iteration continue where ``state`` was taken; the iterations
        after it start their epoch from the beginning (``set_epoch`` picks another)."""
        loader = state["loader"]
        epoch = int(loader["epoch"])
        resume = json.dumps(loader)
        # Checked now (by the loader, against this dataset and schedule), not at the next
        # iteration, which may run in DataLoader workers.
        self.dataset.plan(**{**self._schedule(resume), "epoch": epoch, "epochs": epoch + 1})
        self._shared.publish(epoch, resume)
        self.epoch = epoch
        self._resume = resume
        self._seen = 0
