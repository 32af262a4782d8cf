"""Ray Data: write reel datasets from a Ray cluster.

::

    import ray, reel.ray

    ds = ray.data.read_parquet("s3://bucket/table").map_batches(preprocess)
    reel.ray.write_reel(ds, "/data/out", format="granular")      # every task writes a shard

Writing: every write task writes its own part (an FFRecord ``PART_`` file, an OFRecord
``part-NNNNN``, a Granular shard, a Gulp chunk) with reel's Rust writer into a staging
directory beside the destination; the driver publishes the dataset in ``on_write_complete``
(renames the parts into the format's layout, then renames the staging directory to the
destination). Until every task has succeeded nothing exists at the destination, and a failed
job removes its staging directory, so a failed job leaves nothing that opens.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import ray.data
import ray.exceptions
from ray.data.block import Block, BlockAccessor
from ray.data.datasource import Datasink
from ray.data.datasource.datasink import WriteResult

import reel
from reel._reel import part_names, publish

__all__ = ["ReelDatasink", "write_reel", "convert", "PART_LAYOUTS"]

# What a write task writes, per target format, and how the driver lays the parts out.
PART_LAYOUTS = {
    "ffrecord": "one .ffr file per task, published as PART_NNNNN.ffr files in a directory",
    "ofrecord": "one part file per task, published as part-NNNNN in a directory",
    "granular": "one complete dataset per task, published as the shards 000000/, 000001/, ...",
    "bags": "one complete dataset per task, published as the shards 000000/, 000001/, ...",
    "gulp": "one chunk (data_N.gulp + meta_N.gmeta) per task, numbered so that the "
    "reference's lexicographic chunk order is the task order",
}


def _arrow_to_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """One Arrow column as reel values, following reel's Arrow mapping backwards (lists of
    numbers are 1-D NumPy arrays, fixed-shape tensors n-d arrays, the dtype/shape/data struct
    an array of that dtype, structs dicts; a null cell is an absent field: None here)."""
    if isinstance(column, pa.ChunkedArray):
        out: list[Any] = []
        for chunk in column.chunks:
            out.extend(_arrow_to_values(chunk))
        return out
    t = column.type
    # One validity list per array: indexing `column[i]` would build a pyarrow scalar per cell.
    valid = column.is_valid().to_pylist()
    if isinstance(t, pa.FixedShapeTensorType):
        arrays = column.to_numpy_ndarray()
        return [arrays[i] if valid[i] else None for i in range(len(column))]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        item = t.value_type
        numeric = pa.types.is_integer(item) or pa.types.is_floating(item) or pa.types.is_boolean(item)
        if numeric:
            dtype = item.to_pandas_dtype()
            return [
                None if not v.is_valid else np.asarray(v.values.to_numpy(zero_copy_only=False), dtype=dtype)
                for v in column
            ]
        values = _arrow_to_values(column.flatten())
        offsets = column.offsets.to_pylist() if not pa.types.is_fixed_size_list(t) else None
        out = []
        for i in range(len(column)):
            if not valid[i]:
                out.append(None)
            elif offsets is not None:
                out.append(values[offsets[i] - offsets[0] : offsets[i + 1] - offsets[0]])
            else:
                n = t.list_size
                out.append(values[i * n : (i + 1) * n])
        return out
    if pa.types.is_struct(t):
        names = [t.field(k).name for k in range(t.num_fields)]
        if names == ["dtype", "shape", "data"]:
            out = []
            for v in column.to_pylist():
                if v is None:
                    out.append(None)
                else:
                    out.append(np.frombuffer(v["data"], dtype=np.dtype(v["dtype"])).reshape(v["shape"]).copy())
            return out
        fields = {name: _arrow_to_values(column.field(k)) for k, name in enumerate(names)}
        return [
            None
            if not valid[i]
            else {name: fields[name][i] for name in names if fields[name][i] is not None}
            for i in range(len(column))
        ]
    return column.to_pylist()


def _block_records(block: Block) -> Iterable[dict[str, Any]]:
    """The records of one Ray block (Arrow or pandas), as reel's Python writers take them."""
    table = BlockAccessor.for_block(block).to_arrow()
    names = table.column_names
    columns = [_arrow_to_values(table.column(k)) for k in range(table.num_columns)]
    for i in range(table.num_rows):
        yield {name: col[i] for name, col in zip(names, columns) if col[i] is not None}


@dataclass(frozen=True)
class _Part:
    """What one write task left in the staging directory (returned to the driver)."""

    task: int
    path: str
    records: int
    bytes: int
    node: str


class ReelDatasink(Datasink):
    """A Ray Data sink writing a reel dataset of ``format`` at ``path``, one part per write task.

    Formats and what each task writes: see ``PART_LAYOUTS`` (FFRecord, OFRecord, Granular,
    bags, Gulp). Syrah is one file with one index, which parallel tasks cannot share: write it
    with ``reel.convert`` from a multi-part result, or with ``reel.syrah.Writer``.

    The dataset appears at ``path`` only when every task has succeeded: tasks write under a
    hidden staging directory beside ``path`` and the driver renames the parts into place in
    ``on_write_complete``; ``on_write_failed`` removes the staging directory. Tasks must see
    the same file system as the driver (a shared volume on a cluster).

    Args:
        path: where the dataset appears.
        format: the target format's name.
        schema: {field: the format's type name}, as for ``reel.Writer``.
        overwrite: replace an existing dataset at ``path`` once the new one is complete.
        min_rows_per_task: fewer, larger parts: Ray bundles at least this many rows per task.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str,
        schema: dict[str, str] | None = None,
        overwrite: bool = False,
        min_rows_per_task: int | None = None,
    ) -> None:
        if format not in PART_LAYOUTS:
            known = ", ".join(sorted(PART_LAYOUTS))
            why = "is one file with one index" if format == "syrah" else "is not a format with parts"
            raise ValueError(
                f"{format!r} {why}: Ray writes one part per task (formats it can write: {known})"
            )
        self.path = os.path.abspath(os.fspath(path))
        self.format = format
        self.schema = schema
        self.overwrite = overwrite
        self._min_rows = min_rows_per_task
        parent, name = os.path.split(self.path)
        self.staging = os.path.join(parent, f".{name}.reel-staging-{uuid.uuid4().hex[:12]}")
        self.summary: dict[str, Any] | None = None

    def get_name(self) -> str:
        return "Reel"

    @property
    def min_rows_per_write(self) -> int | None:
        return self._min_rows

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        if os.path.lexists(self.path) and not self.overwrite:
            raise FileExistsError(f"{self.path} exists (pass overwrite=True to replace it)")
        os.makedirs(os.path.join(self.staging, "tasks"))

    def _task_path(self, task: int) -> str:
        """The directory task `task` writes its part into, as part 0 of 1 (the driver renames
        it to its place among all the parts, whose number a task does not know)."""
        return os.path.join(self.staging, "tasks", f"{task:06d}")

    def write(self, blocks: Iterable[Block], ctx: Any) -> _Part | None:
        """One task: its blocks into one part in the staging directory, with reel's writer."""
        path = self._task_path(ctx.task_idx)
        # Opened at the first record: a task given no rows writes no part (some formats
        # cannot write an empty dataset without a schema).
        writer: reel.Writer | None = None
        try:
            for block in blocks:
                for record in _block_records(block):
                    if writer is None:
                        writer = reel.Writer(path, self.format, schema=self.schema, part=(0, 1))
                    writer.write(record)
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        if writer is None:
            return None
        summary = writer.finish()
        node = ray.get_runtime_context().get_node_id()
        return _Part(ctx.task_idx, path, summary["records"], summary["bytes"], node)

    def on_write_complete(self, write_result: WriteResult) -> None:
        """Commits: the parts into the format's layout, then the whole into ``path``."""
        parts = sorted((p for p in write_result.write_returns if p is not None), key=lambda p: p.task)
        dataset = os.path.join(self.staging, "dataset")
        if not parts:
            # No rows at all: an empty dataset of the format, written by its writer.
            reel.Writer(dataset, self.format, schema=self.schema).finish()
        else:
            self._lay_out(parts, dataset)
        if os.path.lexists(self.path) and not self.overwrite:
            raise FileExistsError(f"{self.path} appeared during the write; the result is left in {dataset}")
        publish(dataset, self.path, overwrite=self.overwrite)
        shutil.rmtree(self.staging, ignore_errors=True)
        self.summary = {
            "records": sum(p.records for p in parts),
            "bytes": sum(p.bytes for p in parts),
            "parts": len(parts),
            "nodes": sorted({p.node for p in parts}),
            "path": self.path,
        }

    def _lay_out(self, parts: list[_Part], dataset: str) -> None:
        """Moves each task's part (written as part 0 of 1) to its names as part k of n."""
        os.mkdir(dataset)
        n = len(parts)
        written = part_names(self.format, 0, 1)
        for k, p in enumerate(parts):
            for old, new in zip(written, part_names(self.format, k, n)):
                os.rename(os.path.join(p.path, old), os.path.join(dataset, new))

    def on_write_failed(self, error: Exception) -> None:
        """Removes everything the tasks wrote: nothing appears at ``path``."""
        shutil.rmtree(self.staging, ignore_errors=True)


def write_reel(
    dataset: ray.data.Dataset,
    path: str | os.PathLike[str],
    *,
    format: str,
    schema: dict[str, str] | None = None,
    overwrite: bool = False,
    min_rows_per_task: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Writes a Ray dataset as a reel dataset (see ``ReelDatasink``); returns the summary
    (``records``, ``bytes``, ``parts``, ``nodes``: the Ray node ids that wrote parts,
    ``path``)."""
    sink = ReelDatasink(
        path, format=format, schema=schema, overwrite=overwrite, min_rows_per_task=min_rows_per_task
    )
    dataset.write_datasink(sink, ray_remote_args=ray_remote_args or {})
    assert sink.summary is not None  # set by on_write_complete, which ran on this driver
    return sink.summary


def _stored_bytes(files: Sequence[Any]) -> int | None:
    """The total size of a dataset's files, or None when one cannot be sized here."""
    total = 0
    for f in files:
        try:
            total += os.stat(f).st_size
        except (OSError, TypeError, ValueError):
            return None
    return total


def _cluster_cpus() -> int:
    try:
        return max(1, int(ray.cluster_resources().get("CPU", 1)))
    except Exception:  # not connected yet: Ray Data connects on first use
        return 1


# A conversion part holds about this many stored source bytes (fewer, larger parts cost less
# per task; a part is one task's work, and a failed part is redone whole).
PART_BYTES = 256 << 20


def _convert_part(row: dict[str, Any], src: str, dst: str, to: str, parts: int, verify: bool) -> dict[str, Any]:
    """One Ray Data row = one part: reel's own convert of records [k·N/n, (k+1)·N/n)."""
    k = int(row["part"])
    report = reel.convert(src, dst, to=to, verify=verify, shard=(k, parts))
    return {
        "part": k,
        "node": ray.get_runtime_context().get_node_id(),
        "records": report["records"],
        "bytes": report["bytes"],
        "losses": [f"{field}\t{what}" for field, what in report["losses"]],
    }


def convert(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    to: str,
    parts: int | None = None,
    verify: bool = True,
    overwrite: bool = False,
    ray_remote_args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Converts the dataset at ``src`` into a new ``to`` dataset at ``dst`` on Ray.

    The records are split into ``parts`` contiguous ranges (by default one per 256 MiB of
    source, at least one per CPU of the cluster, at most one per record); a Ray Data pipeline
    runs one task per part, and each task runs reel's own conversion of its range (the same
    rules, losses, refusals and checksum verification as ``reel.convert``) into part ``k`` of
    a multi-part dataset in a staging directory beside ``dst``. The driver then publishes the
    dataset at ``dst``; if any part fails, the staging directory is removed and nothing
    appears at ``dst``. Every node must see ``src`` and ``dst``'s directory.

    The result is a multi-part dataset (a directory: FFRecord ``PART_`` files, OFRecord
    ``part-NNNNN``, Syrah ``part-NNNNN.syr`` files, Granular shards, Gulp chunks) holding the
    same records, in the same order, as the local convert's.

    Returns ``{"from", "to", "records", "bytes", "losses", "outputs"}`` like
    ``reel.convert``, and ``parts`` and ``nodes`` (the Ray node ids that ran parts).
    """
    src = os.fspath(src)
    dst_path = os.path.abspath(os.fspath(dst))
    source = reel.open(src, verify=verify)
    records = len(source)
    if parts is None:
        stored = _stored_bytes(source.info.files) or 0
        parts = max(_cluster_cpus(), -(-stored // PART_BYTES))
    parts = max(1, min(parts, records)) if records else 1
    if os.path.lexists(dst_path) and not overwrite:
        raise FileExistsError(f"{dst_path} exists (pass overwrite=True to replace it)")
    parent, name = os.path.split(dst_path)
    staging = os.path.join(parent, f".{name}.reel-staging-{uuid.uuid4().hex[:12]}")
    dataset = os.path.join(staging, "dataset")
    os.makedirs(staging)
    try:
        # Tasks raise reel's own error (not Ray Data's UserCodeException around it), so that
        # a refusal or a checksum error reaches the caller as the local convert's would.
        context = ray.data.DataContext.get_current()
        raise_original = context.raise_original_map_exception
        context.raise_original_map_exception = True
        try:
            rows = ray.data.from_items([{"part": k} for k in range(parts)], override_num_blocks=parts)
            reports = rows.map(
                _convert_part,
                fn_kwargs={"src": src, "dst": dataset, "to": to, "parts": parts, "verify": verify},
                **(ray_remote_args or {}),
            ).take_all()
        except Exception as e:
            raise _reel_error_in(e) from e
        finally:
            context.raise_original_map_exception = raise_original
        publish(dataset, dst_path, overwrite=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    losses: list[tuple[str, str]] = []
    for r in sorted(reports, key=lambda r: r["part"]):
        for line in r["losses"]:
            field, what = line.split("\t", 1)
            if (field, what) not in losses:
                losses.append((field, what))
    return {
        "from": source.format,
        "to": to,
        "records": sum(r["records"] for r in reports),
        "bytes": sum(r["bytes"] for r in reports),
        "losses": losses,
        "parts": parts,
        "nodes": sorted({r["node"] for r in reports}),
        "outputs": [dst_path],
    }


def _reel_error_in(error: BaseException) -> BaseException:
    """The reel error a Ray task raised, out of Ray's wrappers (RayTaskError, Ray Data's
    UserCodeException), so that callers catch ``reel.SchemaError`` and the like as with the
    local convert; other errors are returned as they are."""
    seen: set[int] = set()
    stack = [error]
    wrapped = None
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, reel.ReelError):
            if not isinstance(e, ray.exceptions.RayError):
                return e  # the error as the task raised it, with kind, path, record
            wrapped = wrapped or e
        stack.extend([getattr(e, "cause", None), e.__cause__, e.__context__])
    return wrapped or error
