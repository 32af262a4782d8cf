"""Writers: one class for every format, and a subclass per format (``reel.ffrecord.Writer``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from reel._reel import Sink


class Writer:
    """Writes a new dataset, record by record, with the format's Rust writer.

    Use it as a context manager: the dataset appears at ``path`` only when the ``with`` block
    ends normally (the writer makes it durable, then renames it into place); if the block
    raises, everything written is removed and nothing is left at ``path``::

        with reel.ffrecord.Writer("train.ffr") as w:
            for payload in payloads:
                w.write({"data": payload})

    Records are dicts of field name to value (``bytes``, ``str``, ``int``, ``float``,
    ``bool``, ``None``, NumPy arrays, lists and dicts of those); what a format can hold is
    in the README's conversion table.

    Args:
        path: where the dataset appears: a local path, or an object URL (``s3://bucket/key``,
            ``gs://…``, ``az://…``, configured from the environment such as ``AWS_REGION``,
            ``AWS_ENDPOINT_URL``): the dataset is then staged in a local directory
            (``REEL_STAGING_DIR``, default the temporary directory) and uploaded when the
            block ends, the objects that make it openable last; data files complete before
            that (OFRecord parts, GulpIO2 chunks) go up while writing goes on. Nothing is
            left in the bucket if the block raises.
        format: the format's name; fixed by the per-format subclasses.
        schema: {field name: the format's type name} where the format declares types:
            Granular's and bags' spec.json types such as "bytes", "utf8", "array" (a name the
            target does not know is a SchemaError). FFRecord, Syrah, OFRecord and GulpIO2
            take their types from the values written and refuse a schema (ValueError).
        records: how many records will come, if known: the writer then takes exactly that
            many (one more is refused, and ``finish`` with fewer is refused and leaves the
            writer open), and FFRecord writes in place.
        overwrite: replace an existing dataset at ``path`` once the new one is complete.
        part: ``(k, n)`` to write part ``k`` of an ``n``-part dataset into the directory
            ``path``, under the names ``reel._reel.part_names(format, k, n)`` gives (what
            ``reel convert --shard k/n`` writes).
        part_size: files of about this many bytes: OFRecord parts of at most that size (a
            larger record gets a part of its own), Granular and bags as a sharded dataset
            (``000000/``, ``000001/`` …) of shards of about that size. Written to a bucket,
            each part or shard goes up as soon as the next starts. Other formats raise
            ``ValueError``.
        storage_options: settings of the store a URL ``path`` is in, on top of the
            environment, as ``reel.open`` takes them (``{"aws_endpoint": …, "retries": 3}``).
    """

    format: str | None = None

    def __init__(
        self,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        format: str | None = None,
        *,
        schema: Mapping[str, str] | None = None,
        records: int | None = None,
        overwrite: bool = False,
        part: tuple[int, int] | None = None,
        part_size: int | None = None,
        storage_options: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        fmt = format or self.format
        if fmt is None:
            raise ValueError("reel.Writer needs a format (or use reel.<format>.Writer)")
        pairs = list(schema.items()) if schema is not None else None
        self._sink = Sink(
            path,
            fmt,
            schema=pairs,
            records=records,
            overwrite=overwrite,
            part=part,
            part_size=part_size,
            storage_options=storage_options,
        )
        self.summary: dict[str, Any] | None = None

    @property
    def path(self) -> str:
        """Where the dataset appears when finished."""
        return os.fspath(self._sink.path)

    @property
    def closed(self) -> bool:
        """Whether the writer was finished or aborted."""
        return self._sink.closed

    def write(self, record: Mapping[str, Any]) -> int:
        """Adds a record and returns its index."""
        return self._sink.append(record)

    append = write

    def write_many(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Adds every record of ``records``; returns how many were added."""
        n = 0
        for record in records:
            self._sink.append(record)
            n += 1
        return n

    def finish(self) -> dict[str, Any]:
        """Publishes the dataset; returns ``{"records", "bytes", "paths"}``.

        If it raises, nothing is published. Refused for what is missing (a ``ValueError``:
        fewer records than ``records=``, a Syrah file of no items), the writer stays open:
        write the rest and finish again, or call ``abort``. After any other error it is
        closed.
        """
        self.summary = self._sink.finish()
        return self.summary

    def abort(self) -> None:
        """Removes everything written; nothing appears at the path. Safe to call twice."""
        self._sink.abort()

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self.abort()
        elif not self.closed:
            # A failed finish leaves the writer open (so that a caller can mend what the
            # error names and finish again); the end of a `with` block cannot, so it aborts.
            try:
                self.finish()
            except BaseException:
                self.abort()
                raise

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<reel.Writer {self._sink.format} {self.path!r} ({state})>"
