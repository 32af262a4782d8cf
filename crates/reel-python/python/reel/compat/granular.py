"""``granular`` (0.24) readers, backed by reel.

Covered: ``DatasetReader(directory, decoders, cache_index=True, cache_keys=(), parallel=False)``
with ``len()``, ``ds[i]``, ``ds[i, keys]`` (reading only those keys' bags), ``ds[start:stop]``
(a dict of lists), ``spec``,
``size``, ``copy()``, ``close()``, context-manager use; ``decoders=None`` gives the stored
bytes, any other value the standard decoders (``granular.decoders``; custom decoder tables are
not supported). ``ShardedDatasetReader(directory, decoders, ..., shardstart=0, shardstep=1)``
reads the selected shards one after another, with ``shards`` and ``size`` besides the calls of
``DatasetReader``. ``BagReader(bag_source, idx_source=None, ..., single_file=False)`` with
``len()``, ``bag[i]`` (bytes), ``bag[start:stop]``, ``size`` and ``copy()``; ``idx_source`` is
an index file or the index's bytes.
"""

from __future__ import annotations

import itertools
import os
import pickle
import struct
import tempfile
from pathlib import Path
from typing import Any

import reel

__all__ = ["DatasetReader", "ShardedDatasetReader", "BagReader"]

#: Stands for granular's standard decoder table (``granular.decoders``).
decoders = "standard"

#: How many key sets of ``ds[i, keys]`` a reader keeps open at once (each an open dataset).
_KEY_SETS_KEPT = 4


class _Closing:
    closed = False

    def close(self) -> None:
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DatasetReader(_Closing):
    """A Granular dataset directory (``spec.json`` plus one bag per key)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        decoders: Any = decoders,
        cache_index: bool = True,
        cache_keys: tuple | list = (),
        parallel: bool = False,
        pool_name: str | None = None,
    ) -> None:
        assert isinstance(cache_keys, (tuple, list)), cache_keys
        self.directory = directory
        self._decode = decoders is not None
        self._ds = reel.open(directory, format="granular", decode=self._decode)
        self.thespec = dict(self._ds.info.schema or [])
        assert all(k in self.thespec for k in cache_keys), (self.thespec, cache_keys)
        self.length = len(self._ds)
        # ``ds[i, keys]`` reads only those keys' bags, through a dataset opened with
        # ``columns=keys``: a few recent key sets are kept open.
        self._by_keys: dict[frozenset[str], reel.Dataset] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_by_keys"] = {}
        return state

    def _reading(self, keys: tuple[str, ...]) -> reel.Dataset:
        """The dataset that reads ``keys`` (all of them: the one opened first)."""
        wanted = frozenset(keys)
        if wanted == frozenset(self.thespec):
            return self._ds
        ds = self._by_keys.pop(wanted, None)
        if ds is None:
            ds = reel.open(self.directory, format="granular", decode=self._decode, columns=sorted(wanted))
            if len(self._by_keys) >= _KEY_SETS_KEPT:
                self._by_keys.pop(next(iter(self._by_keys)))
        self._by_keys[wanted] = ds  # most recently used last
        return ds

    @property
    def spec(self) -> dict[str, str]:
        """Key → type, as in ``spec.json``."""
        return self.thespec

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        if isinstance(index, tuple):
            index, keys = index
            keys = tuple(keys)
        else:
            keys = tuple(self.spec)
        assert all(k in self.spec for k in keys), (self.spec, keys)
        if not keys:
            return {}  # as the reference: nothing is read, so nothing is checked
        if isinstance(index, int) and not 0 <= index < self.length:
            # The reference's bags raise ValueError (no negative indices from the end).
            raise ValueError(f"datapoint {index} is out of range ({self.length} datapoints)")
        ds = self._reading(keys)
        if isinstance(index, int):
            record = ds[index]
            return {k: record[k] for k in keys}
        assert 0 <= index.start <= index.stop and index.step in (None, 1), index
        records = ds[index.start : min(index.stop, self.length)]
        return {k: [r[k] for r in records] for k in keys}

    @property
    def size(self) -> int:
        """Bytes of the dataset's bags and indexes, as the reference counts them (the end of
        each bag's last record plus 8 bytes per record)."""
        root = Path(self.directory)
        return sum(_bag_size(root / f"{k}.idx", self.length) for k in self.spec)

    def copy(self) -> DatasetReader:
        """An independent reader of the same dataset (a pickle round trip, as the reference)."""
        return pickle.loads(pickle.dumps(self))


class ShardedDatasetReader(_Closing):
    """A sharded Granular root (``000000/``, ``000001/`` ... each a dataset): the shards
    ``shardstart``, ``shardstart + shardstep``, ... read one after another, like
    ``granular.ShardedDatasetReader``. Files beside the shard folders are left out (the
    reference would take them for shards)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        decoders: Any = decoders,
        cache_index: bool = True,
        cache_keys: tuple | list = (),
        parallel: bool = False,
        shardstart: int = 0,
        shardstep: int = 1,
    ) -> None:
        self.directory = directory
        folders = sorted(p for p in Path(directory).iterdir() if p.is_dir())
        assert all(int(x.name) == i for i, x in enumerate(folders)), folders
        selected = [folders[i] for i in range(shardstart, len(folders), shardstep)]
        assert selected, (folders, selected, shardstart, shardstep)
        pool_name = str(directory)
        args = (decoders, cache_index, cache_keys, parallel, pool_name)
        self.readers = [DatasetReader(x, *args) for x in selected]
        lengths = [len(x) for x in self.readers]
        self.stops = list(itertools.accumulate(lengths))
        self.starts = [0] + self.stops[:-1]
        self.length = sum(lengths)

    @property
    def spec(self) -> dict[str, str]:
        """Key → type of the first selected shard."""
        return self.readers[0].spec

    @property
    def size(self) -> int:
        """Bytes of the selected shards' bags and indexes, as the reference counts them."""
        return sum(x.size for x in self.readers)

    @property
    def shards(self) -> int:
        """How many shards were selected."""
        return len(self.readers)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        if isinstance(index, tuple):
            index, keys = index
        else:
            keys = tuple(self.spec)
        if isinstance(index, int):
            readers, local = self._resolve(index, index + 1)
            assert len(readers) == len(local) == 1
            return readers[0][local[0][0], keys]
        assert index.step in (None, 1), index
        results = [reader[part, keys] for reader, part in zip(*self._resolve(index.start, index.stop))]
        return {k: sum([v[k] for v in results], []) for k in results[0]}

    def copy(self) -> ShardedDatasetReader:
        """An independent reader of the same shards (a pickle round trip, as the reference)."""
        return pickle.loads(pickle.dumps(self))

    def close(self) -> None:
        for reader in self.readers:
            reader.close()
        super().close()

    def _resolve(self, start: int, stop: int) -> tuple[list[DatasetReader], list[range]]:
        assert 0 <= start <= stop <= len(self), (start, stop, len(self))
        readers, local = [], []
        for reader, left, right in zip(self.readers, self.starts, self.stops):
            if not start < right:
                continue
            if stop <= right:
                readers.append(reader)
                local.append(range(start - left, stop - left))
                break
            readers.append(reader)
            local.append(range(start - left, right - left))
            start = right
        return readers, local


def _bag_size(index: bytes | str | os.PathLike[str], length: int) -> int:
    """A bag's size as granular counts it: the end of its last record (the last entry of its
    index) plus 8 bytes per record. ``index`` is the index itself, or the file ending in it
    (an ``.idx`` file, or a single-file bag of the older format)."""
    if length == 0:
        return 0
    if isinstance(index, (bytes, bytearray, memoryview)):
        last = bytes(index[-8:])
    else:
        with open(index, "rb") as f:
            f.seek(-8, os.SEEK_END)
            last = f.read(8)
    return struct.unpack("<Q", last)[0] + 8 * length


class BagReader(_Closing):
    """One bag file (``.bag`` with its ``.idx``, or a single-file bag of the older format).

    ``idx_source`` is the index file (default: ``bag_source`` with the suffix ``.idx``) or
    the index's bytes, as in granular; ``cache_index`` and ``cache_data`` change nothing
    (reel reads on demand). ``bag_source`` must be a path."""

    def __init__(
        self,
        bag_source: str | os.PathLike[str],
        idx_source: Any = None,
        cache_index: bool = True,
        cache_data: bool = False,
        single_file: bool = False,
    ) -> None:
        self._args = (bag_source, idx_source, cache_index, cache_data, single_file)
        bag = Path(bag_source)
        self._tmp = None
        if single_file:
            assert idx_source is None
            assert cache_index is True
            self._index: Any = bag
        elif idx_source is None:
            self._index = bag.with_suffix(".idx")
        else:
            if isinstance(idx_source, (bytes, bytearray, memoryview)):
                self._index = bytes(idx_source)
            else:
                self._index = Path(idx_source)
        if isinstance(self._index, bytes) or (
            not single_file and os.path.abspath(self._index) != os.path.abspath(bag.with_suffix(".idx"))
        ):
            # reel finds a bag's index beside it: give it a directory where it is.
            self._tmp = tempfile.TemporaryDirectory(prefix="reel-bag-")
            link = Path(self._tmp.name) / "data.bag"
            link.symlink_to(bag.resolve())
            if isinstance(self._index, bytes):
                (link.with_suffix(".idx")).write_bytes(self._index)
            else:
                link.with_suffix(".idx").symlink_to(Path(self._index).resolve())
            bag = link
        self._ds = reel.open(bag, format="granular")
        self.length = len(self._ds)

    @property
    def size(self) -> int:
        """The end of the last record plus 8 bytes per record, as the reference counts it."""
        return _bag_size(self._index, self.length)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        assert isinstance(index, (int, slice, range)), (index, type(index))
        if isinstance(index, int):
            return self._ds[index]["data"]
        assert 0 <= index.start <= index.stop and index.step in (None, 1), index
        return [r["data"] for r in self._ds[index.start : min(index.stop, self.length)]]

    def __reduce__(self):
        return (BagReader, self._args)

    def copy(self) -> BagReader:
        """An independent reader of the same bag (a pickle round trip, as the reference)."""
        return pickle.loads(pickle.dumps(self))

    def close(self) -> None:
        super().close()
        if self._tmp is not None:
            self._tmp.cleanup()
