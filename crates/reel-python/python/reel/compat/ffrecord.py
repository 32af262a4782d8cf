"""``ffrecord`` (HFAiLab) reader and writer classes, backed by reel.

Covered: ``FileReader(fnames, check_data=True)`` with ``n``, ``fnames``, ``check_data``,
``read(indices)``, ``read_one(index)``, ``get_offsets(file_idx)``,
``get_checksums(file_idx)`` (read-only arrays), ``validate()`` (metadata checksums),
``close()`` (after which reads raise ``RuntimeError("FileReader has been closed.")``, as
the reference's do), context-manager use, pickling (reopened from ``fnames`` and
``check_data``); ``FileWriter(fname, n)`` with ``write_one(data)``, ``n``, ``count``,
``close()``. As in ffrecord 1.4, samples come back as 1-D ``uint8`` NumPy arrays. Errors
are ``reel.ReelError`` subclasses (a checksum mismatch is ``reel.ChecksumError``) where the
reference raises ``RuntimeError``.
"""

from __future__ import annotations

import operator

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import reel
from reel._reel import ffrecord_tables, ffrecord_validate

__all__ = ["FileReader", "FileWriter"]


def _files(fnames) -> list[str]:
    if isinstance(fnames, (str, os.PathLike)):
        path = Path(fnames)
        if path.is_dir():
            return sorted(str(p) for p in path.glob("*.ffr"))
        return [str(path)]
    if isinstance(fnames, (list, tuple)):
        return [os.fspath(f) for f in fnames]
    raise TypeError("fname must be str, os.PathLike or list")


class FileReader:
    """Reads one or more FFRecord files as one sequence of samples."""

    def __init__(self, fnames, check_data: bool = True) -> None:
        self.fnames = _files(fnames)
        self.check_data = check_data
        self._closed = False
        self._parts = [reel.open(f, format="ffrecord", verify=check_data) for f in self.fnames]
        self._starts = np.cumsum([0] + [len(p) for p in self._parts])
        self.n = int(self._starts[-1])
        # Each file's (offsets, checksums), read when first asked for.
        self._file_tables: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(self.fnames)

    def _check_open(self) -> None:
        if self._closed:
            # The reference's message and type (a C++ runtime_error through pybind11).
            raise RuntimeError("FileReader has been closed.")

    def _locate(self, index: int) -> tuple[int, int]:
        if not 0 <= index < self.n:
            raise IndexError(f"sample {index} is out of range (n = {self.n})")
        part = int(np.searchsorted(self._starts, index, side="right")) - 1
        return part, index - int(self._starts[part])

    def read(self, indices: Sequence[int]) -> list[np.ndarray]:
        """The samples at ``indices`` (one batched read per file)."""
        self._check_open()
        # Integers only (NumPy ones too), as the reference's binding takes them: int()
        # would have read record 0 for 0.9.
        indices = [operator.index(i) for i in indices]
        if len(self._parts) == 1:
            for i in indices:
                if not 0 <= i < self.n:
                    raise IndexError(f"sample {i} is out of range (n = {self.n})")
            records = self._parts[0].read_batch(indices)
            return [np.frombuffer(r["data"], np.uint8).copy() for r in records]
        out: list[np.ndarray | None] = [None] * len(indices)
        by_part: dict[int, list[tuple[int, int]]] = {}
        for k, i in enumerate(indices):
            part, local = self._locate(i)
            by_part.setdefault(part, []).append((k, local))
        for part, wanted in by_part.items():
            records = self._parts[part].read_batch([local for _, local in wanted])
            for (k, _), r in zip(wanted, records):
                out[k] = np.frombuffer(r["data"], np.uint8).copy()
        return out  # type: ignore[return-value]

    def read_one(self, index: int) -> np.ndarray:
        """The sample at ``index``."""
        self._check_open()
        part, local = self._locate(operator.index(index))
        return np.frombuffer(self._parts[part][local]["data"], np.uint8).copy()

    def _tables(self, file_idx: int) -> tuple[np.ndarray, np.ndarray]:
        self._check_open()
        file_idx = operator.index(file_idx)
        if not 0 <= file_idx < len(self.fnames):
            raise IndexError(f"file {file_idx} is out of range ({len(self.fnames)} files)")
        if self._file_tables[file_idx] is None:
            offsets, checksums = ffrecord_tables(self.fnames[file_idx], self.check_data)
            # Read-only, as the reference's are views of the reader's own tables.
            offsets.flags.writeable = False
            checksums.flags.writeable = False
            self._file_tables[file_idx] = (offsets, checksums)
        return self._file_tables[file_idx]  # type: ignore[return-value]

    def get_offsets(self, file_idx: int) -> np.ndarray:
        """File ``file_idx``'s record offsets and its size: ``n + 1`` int64 values."""
        return self._tables(file_idx)[0]

    def get_checksums(self, file_idx: int) -> np.ndarray:
        """File ``file_idx``'s stored record checksums: ``n`` uint32 CRC-32 values."""
        return self._tables(file_idx)[1]

    def validate(self) -> None:
        """Checks every file's metadata checksum, even with ``check_data=False``, as the
        reference does (the records are not read: ``reel.verify`` checks those)."""
        for f in self.fnames:
            ffrecord_validate(f)

    def close(self) -> None:
        """Closes the files; later reads raise ``RuntimeError``, as the reference's do."""
        self._closed = True
        self._parts = []

    def __reduce__(self):
        # As the reference: a copy (a DataLoader worker's) opens the files again.
        return (FileReader, (self.fnames, self.check_data))

    def __enter__(self) -> FileReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FileWriter:
    """Writes ``n`` samples to a new FFRecord file; it appears when ``close()`` is called
    after exactly ``n`` samples (the reference's check), atomically."""

    def __init__(self, fname, n: int) -> None:
        self.n = n
        self.count = 0
        self._writer = reel.ffrecord.Writer(fname, records=n)

    def write_one(self, data) -> None:
        """Appends one sample (bytes, bytearray or any buffer)."""
        if self.count >= self.n:
            raise ValueError(f"already wrote the {self.n} samples this file was created for")
        # Through the buffer protocol, as the reference takes it: bytes(5) would have
        # stored five zero bytes.
        self._writer.write({"data": bytes(memoryview(data))})
        self.count += 1

    def close(self) -> None:
        """Publishes the file."""
        if self._writer.closed:
            return
        if self.count != self.n:
            self._writer.abort()
            raise ValueError("number of sample written does not match the input number")
        self._writer.finish()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:
            self._writer.abort()
        else:
            self.close()
