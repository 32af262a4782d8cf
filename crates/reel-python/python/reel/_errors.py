"""reel's exception classes.

Every failure inside reel has a kind; the compiled module maps each kind to one class here
(in one place, ``errors.rs``). The message is the same text the Rust API gives, with its
context first (format, file, record, byte offset), and the context is also available as
attributes: ``kind``, ``format``, ``path``, ``record`` and ``offset`` (``None`` when
unknown).

Classes also derive from the built-in exception a Python user would catch for the same
problem, so ``except FileNotFoundError`` or ``except ValueError`` keep working.
"""

from __future__ import annotations


class ReelError(Exception):
    """Base class of every error reel raises about data or I/O."""

    kind: str = "unknown"
    format: str | None = None
    path: str | None = None
    record: int | None = None
    offset: int | None = None


class IoError(ReelError, OSError):
    """The operating system refused or failed an I/O operation."""


class CorruptError(ReelError):
    """The bytes do not have the structure the format requires."""


class ChecksumError(CorruptError):
    """A stored checksum does not match the bytes it covers."""


class UnsupportedError(ReelError):
    """The data uses a feature or variant reel does not read or write."""


class OutOfRangeError(ReelError, IndexError):
    """A record index (or another position) lies outside the dataset."""


class NotFoundError(ReelError, FileNotFoundError):
    """A file, key or id does not exist."""


class SchemaError(ReelError, ValueError):
    """A record does not fit the schema of the dataset or the target format."""


class LimitError(ReelError):
    """A size or count exceeds one of reel's limits."""


class ClosedError(ReelError):
    """The dataset or writer was already closed or finished."""


class InvalidInputError(ReelError, ValueError):
    """An argument that cannot be used."""


__all__ = [
    "ReelError",
    "IoError",
    "CorruptError",
    "ChecksumError",
    "UnsupportedError",
    "OutOfRangeError",
    "NotFoundError",
    "SchemaError",
    "LimitError",
    "ClosedError",
    "InvalidInputError",
]
