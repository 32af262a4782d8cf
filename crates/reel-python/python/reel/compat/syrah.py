"""``syrah`` (gsicard/syrah, pysyrah 0.2.0) ``File``, backed by reel.

Covered, as the reference behaves:

* ``File(path, "r")`` (and ``File.open(path, mode)`` to open again) with ``num_items()``,
  ``get_item(index)`` (a dict of 1-D arrays; a ``str`` array is a one-element unicode
  array holding the whole text, as the reference returns it), ``get_array(index, name,
  dtype=None)`` (``dtype`` reinterprets the stored bytes, e.g. ``"uint8"`` gives the raw
  bytes), ``close()``, context-manager use. Indices are integers (NumPy ones too); an index
  past the end is an ``IndexError``, a negative one a ``ValueError``, an unknown array
  name a ``KeyError``.
* ``File(path, "w")`` with ``add_item(arrays)``, which appends an item through reel's
  writer; the file is published at ``close()`` (an exception inside a ``with`` block leaves
  nothing). ``write_item(index, arrays)`` (items in order 0, 1, ...) is kept for code
  written against earlier versions of this module.
"""

from __future__ import annotations

import operator
import os
from typing import Any

import numpy as np

import reel

__all__ = ["File"]


def _as_reference(value: Any) -> Any:
    """A value as the reference returns it: text as a one-element unicode array."""
    if isinstance(value, str):
        return np.array([value])
    return value


class File:
    """A Syrah file opened for reading (``"r"``) or writing (``"w"``)."""

    def __init__(self, file_path: str | os.PathLike[str], mode: str) -> None:
        self._closed = True
        self.open(file_path, mode)

    def open(self, file_path: str | os.PathLike[str], mode: str) -> None:
        """(Re)opens the handle on ``file_path`` (the reference's per-worker reopening)."""
        if mode not in ("r", "w"):
            raise ValueError(f'Expected File opening mode to be "r" or "w", got {mode}.')
        if not self._closed:
            self.close()
        self._mode = mode
        if mode == "r":
            self._ds = reel.open(file_path, format="syrah")
        else:
            self._writer = reel.syrah.Writer(file_path)
            self._next = 0
        self._closed = False

    def _reading(self) -> reel.Dataset:
        if self._closed:
            raise OSError("Trying to read item from a closed file.")
        if self._mode != "r":
            raise OSError(f"File is expected to be opened in read mode, got {self._mode}.")
        return self._ds

    def num_items(self) -> int:
        """Number of items."""
        return len(self._reading())

    def _index(self, item: Any) -> int:
        ds = self._reading()
        index = operator.index(item)  # TypeError for anything but an integer, as there
        if index < 0:
            raise ValueError("invalid entry in coordinates array")
        if index >= len(ds):
            raise IndexError(f"Item {index} out of range.")
        return index

    def get_item(self, item: int) -> dict[str, Any]:
        """Item ``item``: its arrays by name, in the file's order."""
        record = self._reading()[self._index(item)]
        return {name: _as_reference(value) for name, value in record.items()}

    def get_array(self, item: int, key: str, dtype: str | None = None) -> Any:
        """Array ``key`` of item ``item``; ``dtype`` decodes its stored bytes as that type
        instead of the stored one."""
        index = self._index(item)
        data = self._reading()[index]
        if key not in data:
            raise KeyError(f"Key {key} could not be found in item {index}.")
        value = data[key]
        if dtype is None:
            return _as_reference(value)
        raw = value.encode() if isinstance(value, str) else np.ascontiguousarray(value).tobytes()
        if np.dtype(dtype).kind == "U":
            return np.array([raw.decode()])
        return np.frombuffer(raw, dtype=np.dtype(dtype))

    def add_item(self, data: dict[str, Any]) -> None:
        """Appends an item (its arrays by name)."""
        if self._closed or self._mode != "w":
            raise OSError("File is expected to be opened in write mode.")
        self._writer.write(dict(data))
        self._next += 1

    def write_item(self, item: int, data: dict[str, Any]) -> None:
        """Adds item ``item``, which must be the next one (0, 1, 2, ...): ``add_item``
        with a check, for code written against earlier versions of this module."""
        if self._closed or self._mode != "w":
            raise OSError("File is expected to be opened in write mode.")
        if item != self._next:
            raise KeyError(f"reel writes Syrah items in order: expected item {self._next}, got {item}")
        self.add_item(data)

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
        if exc_type is not None and self._mode == "w" and not self._closed:
            self._closed = True
            self._writer.abort()
        else:
            self.close()
