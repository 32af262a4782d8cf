"""``syrah`` (gsicard/syrah, pysyrah 0.2.0) ``File`` in read mode, backed by reel.

Covered: ``File(path, "r")`` with ``num_items()``, ``get_item(index)`` (dict of arrays;
``str`` arrays as ``str``), ``get_array(index, key)``, ``close()``, context-manager use.
``File(path, "w")`` with ``write_item(index, arrays)`` (items in order 0, 1, ...) writes
through reel's writer, which publishes the file at ``close()``.
"""

from __future__ import annotations

import os
from typing import Any

import reel

__all__ = ["File"]


class File:
    """A Syrah file opened for reading (``"r"``) or writing (``"w"``)."""

    def __init__(self, file_path: str | os.PathLike[str], mode: str) -> None:
        if mode not in ("r", "w"):
            raise ValueError(f'Expected File opening mode to be "r" or "w", got {mode}.')
        self._mode = mode
        self._closed = False
        if mode == "r":
            self._ds = reel.open(file_path, format="syrah")
        else:
            self._writer = reel.syrah.Writer(file_path)
            self._next = 0

    def _reading(self) -> reel.Dataset:
        if self._closed:
            raise OSError("Trying to read item from a closed file.")
        if self._mode != "r":
            raise OSError(f"File is expected to be opened in read mode, got {self._mode}.")
        return self._ds

    def num_items(self) -> int:
        """Number of items."""
        return len(self._reading())

    def get_item(self, item: int) -> dict[str, Any]:
        """Item ``item``: its arrays by name."""
        ds = self._reading()
        if not isinstance(item, int) or not 0 <= item < len(ds):
            raise KeyError(f"Item {item} could not be found.")
        return ds[item]

    def get_array(self, item: int, key: str) -> Any:
        """Array ``key`` of item ``item``."""
        data = self.get_item(item)
        if key not in data:
            raise KeyError(f"Key {key} could not be found in item {item}.")
        return data[key]

    def write_item(self, item: int, data: dict[str, Any]) -> None:
        """Adds item ``item`` (items are written in order 0, 1, 2, ...)."""
        if self._closed or self._mode != "w":
            raise OSError("File is expected to be opened in write mode.")
        if item != self._next:
            raise KeyError(f"reel writes Syrah items in order: expected item {self._next}, got {item}")
        self._writer.write(dict(data))
        self._next += 1

    def close(self) -> None:
        """Closes the file (publishing it in write mode)."""
        if self._closed:
            return
        self._closed = True
        if self._mode == "w":
            self._writer.finish()

    def __enter__(self) -> File:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and self._mode == "w":
            self._closed = True
            self._writer.abort()
        else:
            self.close()
