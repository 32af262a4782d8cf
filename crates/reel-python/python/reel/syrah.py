"""Syrah: one .syr file of named 1-D arrays per item (NumPy arrays or str)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from reel._writer import Writer as _Writer

__all__ = ["Writer"]


class Writer(_Writer):
    """A syrah writer; see `reel.Writer` for the arguments and the atomic finish.

    A NumPy array of strings (dtype ``<U…``) is stored as Syrah's reference stores it: its
    elements joined with no separator into one string, which reads back as a one-element
    array (``["ab", "c"]`` becomes ``["abc"]``). The writer warns once per field when an
    array of more than one string loses its elements that way.
    """

    format = "syrah"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._warned_joined: set[str] = set()

    def write(self, record: Mapping[str, Any]) -> int:
        """Adds a record and returns its index."""
        self._warn_if_joined(record)
        return self._sink.append(record)

    append = write

    def write_many(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Adds every record of ``records``; returns how many were added."""
        n = 0
        for record in records:
            self._warn_if_joined(record)
            self._sink.append(record)
            n += 1
        return n

    def _warn_if_joined(self, record: Mapping[str, Any]) -> None:
        """Warns (at the caller of ``write``/``write_many``) for each field, the first time
        it holds an array of several strings. Anything but a mapping is left to the
        writer, which refuses it with a TypeError."""
        items = getattr(record, "items", None)
        if not callable(items):
            return
        for name, value in items():
            dtype = getattr(value, "dtype", None)
            if (
                getattr(dtype, "kind", None) == "U"
                and getattr(value, "size", 0) > 1
                and name not in self._warned_joined
            ):
                self._warned_joined.add(name)
                warnings.warn(
                    f"reel.syrah.Writer: the {value.size} strings of array {name!r} are "
                    "stored as one string, joined with no separator (as Syrah's reference "
                    "stores them), and read back as one; join them with a separator of "
                    "your own, or store them as bytes, to keep them apart",
                    UserWarning,
                    stacklevel=3,
                )
