"""``granular`` (0.24) readers, backed by reel.

Covered: ``DatasetReader(directory, decoders, cache_index=True, cache_keys=(), parallel=False)``
with ``len()``, ``ds[i]``, ``ds[i, keys]``, ``ds[start:stop]`` (a dict of lists), ``spec``,
``copy()``, ``close()``, context-manager use; ``decoders=None`` gives the stored bytes, any
other value the standard decoders (``granular.decoders``; custom decoder tables are not
supported). ``BagReader(path)`` with ``len()``, ``bag[i]`` (bytes) and ``bag[start:stop]``.
``ShardedDatasetReader(directory, decoders)`` reads a sharded root like ``DatasetReader``.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import reel

__all__ = ["DatasetReader", "ShardedDatasetReader", "BagReader"]

#: Stands for granular's standard decoder table (``granular.decoders``).
decoders = "standard"


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
        if isinstance(index, int):
            record = self._ds[index]
            return {k: record[k] for k in keys}
        assert 0 <= index.start <= index.stop and index.step in (None, 1), index
        records = self._ds[index.start : min(index.stop, self.length)]
        return {k: [r[k] for r in records] for k in keys}

    def copy(self) -> DatasetReader:
        return pickle.loads(pickle.dumps(self))


class ShardedDatasetReader(DatasetReader):
    """A sharded Granular root (``000000/``, ``000001/`` ... each a dataset)."""


class BagReader(_Closing):
    """One bag file (``.bag`` with its ``.idx``, or a single-file bag of the older format)."""

    def __init__(
        self,
        bag_source: str | os.PathLike[str],
        idx_source: Any = None,
        cache_index: bool = True,
        cache_data: bool = False,
        single_file: bool = False,
    ) -> None:
        self._ds = reel.open(bag_source, format="granular")
        self.length = len(self._ds)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        assert isinstance(index, (int, slice, range)), (index, type(index))
        if isinstance(index, int):
            return self._ds[index]["data"]
        assert 0 <= index.start <= index.stop and index.step in (None, 1), index
        return [r["data"] for r in self._ds[index.start : min(index.stop, self.length)]]

    def copy(self) -> BagReader:
        return pickle.loads(pickle.dumps(self))
