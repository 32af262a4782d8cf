"""Ray Data: read, write and convert reel datasets on a Ray cluster.

::

    import ray, reel.ray

    ds = reel.ray.read_reel("/data/train.ffr", columns=["data"])  # read tasks over record ranges
    ds = ray.data.read_parquet("s3://bucket/table").map_batches(preprocess)
    reel.ray.write_reel(ds, "/data/out", format="granular")      # every task writes a shard

Reading: the driver opens each dataset's metadata (no records but the few that fix one Arrow
schema), splits the records into contiguous ranges, one per read task, and each task yields
Arrow blocks made by reel's Rust batch reader (``Dataset.to_batches``), in reel's Arrow
mapping. A worker process opens each dataset once and keeps it for its later tasks, keyed by
the dataset's ``fingerprint`` as the driver saw it when planning (a replaced or rewritten
dataset has another), so the metadata is read once per worker, not once per task.

Writing: every write task writes its own part (an FFRecord ``PART_`` file, an OFRecord
``part-NNNNN``, a Granular shard, a Gulp chunk) with reel's Rust writer under a hidden staging
location beside the destination (a directory, or a key prefix in the same bucket: the task
stages its part on its own node's disk and uploads it when complete); the driver publishes
the dataset in ``on_write_complete`` (``reel.parts`` in Rust: renames on a file system,
server-side copies in a bucket with the objects that make the dataset openable last). Until
every task has succeeded nothing exists at the destination, and a failed job removes its
staging location, so a failed job leaves nothing that opens.
"""

from __future__ import annotations

import functools
import math
import os
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import ray.data
import ray.exceptions
from ray.data.block import Block, BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask
from ray.data.datasource.datasink import WriteResult

import reel
from reel._reel import discard_staging, parts_staging, publish_parts, staged_part

__all__ = ["ReelDatasource", "read_reel", "ReelDatasink", "write_reel", "convert", "PART_LAYOUTS"]

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
    """What one write task left under the staging location (returned to the driver)."""

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
    hidden staging location beside ``path`` and the driver puts the parts into place in
    ``on_write_complete`` (renames in a directory; server-side copies in a bucket, the
    objects that make the dataset openable last); ``on_write_failed`` removes the staging
    location. A task Ray cancelled but did not wait for cannot leave its part behind: it
    finds the job's ``job-open`` marker gone, removes what it wrote and fails with
    ``reel.ClosedError``. A local ``path`` must be on a file system every node sees (a shared volume);
    an object URL (``s3://bucket/key``, ``gs://…``, ``az://…``) needs only the store's
    settings on every node (the environment: ``AWS_REGION``, ``AWS_ENDPOINT_URL`` …), and
    each task stages its part under its node's ``REEL_STAGING_DIR`` (default the temporary
    directory) until it is uploaded.

    Args:
        path: where the dataset appears: a path or an object URL.
        format: the target format's name.
        schema: {field: the format's type name}, as for ``reel.Writer``.
        overwrite: replace an existing dataset at ``path`` once the new one is complete.
        min_rows_per_task: fewer, larger parts: Ray bundles at least this many rows per task.
        storage_options: settings of the store ``path`` is in, as ``reel.open`` takes them;
            they travel to the write tasks (credentials included).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str,
        schema: dict[str, str] | None = None,
        overwrite: bool = False,
        min_rows_per_task: int | None = None,
        storage_options: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        if format not in PART_LAYOUTS:
            known = ", ".join(sorted(PART_LAYOUTS))
            why = "is one file with one index" if format == "syrah" else "is not a format with parts"
            raise ValueError(
                f"{format!r} {why}: Ray writes one part per task (formats it can write: {known})"
            )
        self.path = _task_path(path)
        self.format = format
        self.schema = schema
        self.overwrite = overwrite
        self.storage_options = dict(storage_options) if storage_options else None
        self._min_rows = min_rows_per_task
        # Set by on_write_start, which Ray runs on the driver before it ships the sink to
        # the write tasks.
        self.staging: str | None = None
        self.summary: dict[str, Any] | None = None

    def get_name(self) -> str:
        return "Reel"

    @property
    def min_rows_per_write(self) -> int | None:
        return self._min_rows

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        """Refuses an existing ``path`` (unless overwriting) and picks the staging location."""
        self.staging = os.fspath(
            parts_staging(self.path, overwrite=self.overwrite, storage_options=self.storage_options)
        )

    def write(self, blocks: Iterable[Block], ctx: Any) -> _Part | None:
        """One task: its blocks into one part under the staging location, with reel's writer,
        as part 0 of 1 (the driver names it by its place among all the parts, whose number a
        task does not know)."""
        assert self.staging is not None, "Ray runs on_write_start before the write tasks"
        path = os.fspath(staged_part(self.staging, ctx.task_idx))
        # Opened at the first record: a task given no rows writes no part (some formats
        # cannot write an empty dataset without a schema).
        writer: reel.Writer | None = None
        try:
            for block in blocks:
                for record in _block_records(block):
                    if writer is None:
                        # overwrite: the location is this task's own; a retried task
                        # replaces what an attempt that died after its upload left there.
                        writer = reel.Writer(
                            path,
                            self.format,
                            schema=self.schema,
                            part=(0, 1),
                            overwrite=True,
                            storage_options=self.storage_options,
                        )
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
        """Commits: the parts, in task order, under their names as parts of the whole, the
        objects that make the dataset openable last (``reel.parts`` in Rust)."""
        parts = sorted((p for p in write_result.write_returns if p is not None), key=lambda p: p.task)
        if not parts:
            # No rows at all: an empty dataset of the format, written by its writer.
            reel.Writer(
                self.path,
                self.format,
                schema=self.schema,
                overwrite=self.overwrite,
                storage_options=self.storage_options,
            ).finish()
            if self.staging is not None:
                discard_staging(self.staging, storage_options=self.storage_options)
        else:
            assert self.staging is not None
            publish_parts(
                self.staging,
                self.format,
                [(p.path, 0, 1) for p in parts],
                self.path,
                overwrite=self.overwrite,
                storage_options=self.storage_options,
            )
        self.summary = {
            "records": sum(p.records for p in parts),
            "bytes": sum(p.bytes for p in parts),
            "parts": len(parts),
            "nodes": sorted({p.node for p in parts}),
            "path": self.path,
        }

    def on_write_failed(self, error: Exception) -> None:
        """Removes everything the tasks wrote: nothing appears at ``path``."""
        if self.staging is not None:
            discard_staging(self.staging, storage_options=self.storage_options)


def write_reel(
    dataset: ray.data.Dataset,
    path: str | os.PathLike[str],
    *,
    format: str,
    schema: dict[str, str] | None = None,
    overwrite: bool = False,
    min_rows_per_task: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    concurrency: int | None = None,
    storage_options: Mapping[str, str | int | float | bool] | None = None,
) -> dict[str, Any]:
    """Writes a Ray dataset as a reel dataset at ``path`` (a path or an object URL; see
    ``ReelDatasink``); returns the summary (``records``, ``bytes``, ``parts``, ``nodes``: the
    Ray node ids that wrote parts, ``path``). ``ray_remote_args`` and ``concurrency`` go to
    ``Dataset.write_datasink`` (the write tasks' ``ray.remote`` options, e.g.
    ``{"num_cpus": 2}``, and how many run at once)."""
    sink = ReelDatasink(
        path,
        format=format,
        schema=schema,
        overwrite=overwrite,
        min_rows_per_task=min_rows_per_task,
        storage_options=storage_options,
    )
    dataset.write_datasink(sink, ray_remote_args=ray_remote_args, concurrency=concurrency)
    assert sink.summary is not None  # set by on_write_complete, which ran on this driver
    return sink.summary


def _task_path(path: str | os.PathLike[str]) -> str:
    """Where a job reads or publishes, as every task names it: an object URL as it is, a
    path (or a ``file://`` URL) made absolute (tasks may run in another working directory)."""
    text = os.fspath(path)
    if text.startswith("file://"):
        return os.path.abspath(text[len("file://") :])
    return text if "://" in text else os.path.abspath(text)


def _stored_bytes(dataset: reel.Dataset) -> int | None:
    """The total size of a dataset's files or objects, or None when one cannot be sized
    (the plan then goes by the cluster's CPUs alone)."""
    try:
        return dataset.stored_bytes
    except reel.ReelError:
        return None


def _fingerprint(dataset: reel.Dataset) -> str | None:
    """The dataset's fingerprint, or None when its files cannot be stat'ed here (its read
    tasks then open it each time)."""
    try:
        return dataset.fingerprint
    except reel.ReelError:
        return None


def _cluster_cpus() -> int:
    try:
        return max(1, int(ray.cluster_resources().get("CPU", 1)))
    except Exception:  # not connected yet: Ray Data connects on first use
        return 1


# A conversion part holds about this many stored source bytes (fewer, larger parts cost less
# per task; a part is one task's work, and a failed part is redone whole).
PART_BYTES = 256 << 20


def _convert_part(
    row: dict[str, Any], src: str, to: str, parts: int, verify: bool, storage_options: dict[str, Any] | None
) -> dict[str, Any]:
    """One Ray Data row = one part: reel's own convert of records [k·N/n, (k+1)·N/n) into
    the row's staging location."""
    k = int(row["part"])
    # overwrite: the location is this task's own (see ReelDatasink.write).
    report = reel.convert(
        src, row["location"], to=to, verify=verify, overwrite=True, shard=(k, parts), storage_options=storage_options
    )
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
    storage_options: Mapping[str, str | int | float | bool] | None = None,
    **remote_args: Any,
) -> dict[str, Any]:
    """Converts the dataset at ``src`` into a new ``to`` dataset at ``dst`` on Ray.

    The records are split into ``parts`` contiguous ranges (by default one per 256 MiB of
    source, at least one per CPU of the cluster, at most one per record); a Ray Data pipeline
    runs one task per part, and each task runs reel's own conversion of its range (the same
    rules, losses, refusals and checksum verification as ``reel.convert``) into part ``k`` of
    a multi-part dataset under a staging location beside ``dst``. The driver then publishes
    the dataset at ``dst`` (as ``ReelDatasink`` does); if any part fails, the staging
    location is removed and nothing appears at ``dst``. ``src`` and ``dst`` are paths every
    node sees or object URLs; ``storage_options`` (as ``reel.open`` takes them) configure
    whichever is in object storage, on the driver and in every task. ``remote_args`` (``num_cpus``, ``memory``, ``runtime_env``,
    ``resources`` …) go by name to the conversion tasks (``Dataset.map``).

    The result is a multi-part dataset (a directory: FFRecord ``PART_`` files, OFRecord
    ``part-NNNNN``, Syrah ``part-NNNNN.syr`` files, Granular shards, Gulp chunks) holding the
    same records, in the same order, as the local convert's.

    Returns ``{"from", "to", "records", "bytes", "losses", "outputs"}`` like
    ``reel.convert``, and ``parts`` and ``nodes`` (the Ray node ids that ran parts).
    """
    src = os.fspath(src)
    dst_path = _task_path(dst)
    storage = dict(storage_options) if storage_options else None
    source = reel.open(src, verify=verify, storage_options=storage)
    records = len(source)
    if parts is None:
        stored = _stored_bytes(source) or 0
        parts = max(_cluster_cpus(), -(-stored // PART_BYTES))
    parts = max(1, min(parts, records)) if records else 1
    staging = os.fspath(parts_staging(dst_path, overwrite=overwrite, storage_options=storage))
    locations = [os.fspath(staged_part(staging, k)) for k in range(parts)]
    try:
        # Tasks raise reel's own error (not Ray Data's UserCodeException around it), so that
        # a refusal or a checksum error reaches the caller as the local convert's would.
        context = ray.data.DataContext.get_current()
        raise_original = context.raise_original_map_exception
        context.raise_original_map_exception = True
        try:
            rows = ray.data.from_items(
                [{"part": k, "location": location} for k, location in enumerate(locations)],
                override_num_blocks=parts,
            )
            reports = rows.map(
                _convert_part,
                fn_kwargs={"src": src, "to": to, "parts": parts, "verify": verify, "storage_options": storage},
                **remote_args,
            ).take_all()
        except Exception as e:
            raise _reel_error_in(e) from e
        finally:
            context.raise_original_map_exception = raise_original
        publish_parts(
            staging,
            to,
            [(loc, k, parts) for k, loc in enumerate(locations)],
            dst_path,
            overwrite=overwrite,
            storage_options=storage,
        )
    except BaseException:
        discard_staging(staging, storage_options=storage)
        raise
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


# A read task reads at most about this many stored bytes (estimated from the files' sizes), so
# no task holds a huge range; more tasks are planned than asked for when one would exceed it.
MAX_TASK_BYTES = 512 << 20
# read_reel's own task count when none is asked for: one task per this many stored bytes, at
# least one per CPU of the cluster (Ray's default would ask for 200 tasks, tiny ones here).
TASK_BYTES = 128 << 20
# Within a task, reel's batch reader makes Arrow batches of about this many bytes: Ray's blocks.
BLOCK_BYTES = 64 << 20
# Records the driver reads to fix the one Arrow schema every task uses (values vary per record
# in OFRecord, Granular and Gulp metadata; one schema keeps the tasks' blocks alike).
SCHEMA_SAMPLE = 1000


@dataclass(frozen=True)
class _Source:
    """What the driver knows about one dataset: enough to plan, nothing per record."""

    path: str
    records: int
    stored_bytes: int | None
    # Dataset.fingerprint when the driver planned (None: the files could not be stat'ed, and
    # tasks open the dataset each time).
    fingerprint: str | None

    def bytes_of(self, count: int) -> int | None:
        """The stored bytes of ``count`` records, estimated from the dataset's average."""
        if self.stored_bytes is None or self.records == 0:
            return None
        return self.stored_bytes * count // self.records


def _plan_ranges(records: int, tasks: int, max_records: int | None) -> list[tuple[int, int]]:
    """Splits ``0..records`` into ``tasks`` contiguous ranges whose lengths differ by at most
    one (more ranges when one would exceed ``max_records``, fewer when there are fewer records)."""
    if records <= 0:
        return []
    tasks = max(1, min(tasks, records))
    if max_records is not None:
        tasks = max(tasks, math.ceil(records / max(1, max_records)))
    base, extra = divmod(records, tasks)
    ranges, start = [], 0
    for t in range(tasks):
        stop = start + base + (1 if t < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


# Datasets this worker process opened for read tasks, most recently used last, keyed by
# (path, open options, fingerprint). Ray runs many tasks in one worker process; a task of
# another job over the same, unchanged dataset finds it here. Bounded so that a worker that
# reads many datasets does not keep them all open.
_OPENED: OrderedDict[tuple[Any, ...], reel.Dataset] = OrderedDict()
OPENED_PER_WORKER = 8


def _opened(path: str, open_options: dict[str, Any], fingerprint: str | None) -> reel.Dataset:
    """The dataset at ``path`` as the driver planned it: from this worker's cache when it was
    opened here before with the same fingerprint, else opened (and kept when its fingerprint
    is still the planned one: a dataset changed since the plan is read as it is now, as
    without the cache, but not kept under the old fingerprint)."""
    if fingerprint is None:
        return reel.open(path, **open_options)
    # Storage options are a dict: the key holds their items, so that it can be hashed.
    options = tuple(
        sorted((k, tuple(sorted(v.items())) if isinstance(v, dict) else v) for k, v in open_options.items())
    )
    key = (path, options, fingerprint)
    ds = _OPENED.get(key)
    if ds is not None:
        _OPENED.move_to_end(key)
        return ds
    ds = reel.open(path, **open_options)
    if ds.fingerprint == fingerprint:
        _OPENED[key] = ds
        while len(_OPENED) > OPENED_PER_WORKER:
            _OPENED.popitem(last=False)
    return ds


def _read_range(
    path: str,
    open_options: dict[str, Any],
    fingerprint: str | None,
    start: int,
    stop: int,
    columns: list[str] | None,
    schema: pa.Schema | None,
    block_bytes: int,
) -> Iterable[Block]:
    """The body of one read task: records ``[start, stop)`` as Arrow tables of about
    ``block_bytes`` each, made by reel's Rust batch reader (no Arrow built in Python)."""
    ds = _opened(path, open_options, fingerprint)
    reader = ds.to_batches(start=start, stop=stop, columns=columns, schema=schema, batch_bytes=block_bytes)
    for batch in reader:
        yield pa.Table.from_batches([batch])


class ReelDatasource(Datasource):
    """A Ray Data source over one or more reel datasets (local paths every node sees, or object
    storage URLs), read one after another. Rows are records; columns are fields, typed by
    reel's Arrow mapping (``Dataset.to_arrow``).

    The constructor opens each dataset on the driver (metadata only) and raises reel's error
    there (``reel.NotFoundError`` for a missing path); it also reads the first records of the
    first non-empty dataset (1000 records or 16 MiB) to fix one Arrow schema that every
    task's blocks follow. A record that fails to read fails its task with reel's exception
    (``reel.ChecksumError`` for a damaged one). Ray's limit and projection (``select_columns``)
    pushdowns reach the tasks: they read only that many records and those fields.

    Args:
        paths: one dataset (file, directory or URL) or a list of them.
        format: the format's name when it should not be worked out from the files.
        columns: the fields to read (all when None).
        decode_images: decode GulpIO2 frames and Granular images to arrays (as ``reel.open``);
            False keeps the JPEG/PNG bytes.
        verify: check records' checksums while reading (as ``reel.open``).
        max_task_bytes: the most stored bytes one read task reads (an estimate from file sizes).
        block_bytes: about how many bytes go into one Arrow block.
        storage_options: settings of the store URLs are in, as ``reel.open`` takes them;
            they travel to the read tasks (credentials included).
    """

    def __init__(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        format: str | None = None,
        columns: Sequence[str] | None = None,
        decode_images: bool = True,
        verify: bool = True,
        max_task_bytes: int = MAX_TASK_BYTES,
        block_bytes: int = BLOCK_BYTES,
        storage_options: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        super().__init__()
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self._columns = list(columns) if columns is not None else None
        self._open_options: dict[str, Any] = {"format": format, "decode_images": decode_images, "verify": verify}
        if storage_options:
            self._open_options["storage_options"] = dict(storage_options)
        self._max_task_bytes = max_task_bytes
        self._block_bytes = block_bytes
        self._sources: list[_Source] = []
        self._schema: pa.Schema | None = None
        # The columns a later `select_columns` pushed down (Ray's projection pushdown; None:
        # every column read). Ray applies it to a copy (`apply_projection`).
        self._projection_map: dict[str, str] | None = None
        for p in paths:
            path = _task_path(p)
            ds = reel.open(path, **self._open_options)
            self._sources.append(_Source(path, len(ds), _stored_bytes(ds), _fingerprint(ds)))
            if self._schema is None and len(ds):
                stream = ds.arrow_stream(columns=self._columns, sample_records=SCHEMA_SAMPLE)
                self._schema = pa.schema(stream)

    @property
    def records(self) -> int:
        """How many records the datasets hold together."""
        return sum(s.records for s in self._sources)

    @property
    def stored_bytes(self) -> int | None:
        """The total size of the datasets' files (None when one cannot be sized here)."""
        sizes = [s.stored_bytes for s in self._sources]
        return None if any(b is None for b in sizes) else sum(b or 0 for b in sizes)

    @property
    def schema(self) -> pa.Schema | None:
        """The Arrow schema of every block (None when there are no records)."""
        columns = self._read_columns()
        if self._schema is None or columns is None or self._columns == columns:
            return self._schema
        # Projected: the pushed-down columns, in their order (a name the datasets do not have
        # is left out here; the read task raises reel's error naming it).
        fields = {f.name: f for f in self._schema}
        return pa.schema([fields[c] for c in columns if c in fields], metadata=self._schema.metadata)

    def _read_columns(self) -> list[str] | None:
        """The columns the tasks read: ``columns``, narrowed by a pushed-down projection."""
        projected = self._get_data_columns()
        if projected is None:
            return self._columns
        if self._columns is None:
            return projected
        return [c for c in projected if c in self._columns]

    def supports_projection_pushdown(self) -> bool:
        """True: ``ds.select_columns(...)`` after ``read_reel`` reads only those fields."""
        return True

    def get_name(self) -> str:
        return "Reel"

    def estimate_inmemory_data_size(self) -> int | None:
        return self.stored_bytes

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        """Contiguous record ranges: ``parallelism`` tasks over all the datasets (each dataset
        gets tasks in proportion to its records, at least one, at most one per record), more
        when a task would read over ``max_task_bytes``. With ``per_task_row_limit`` (a limit
        Ray pushed down), a task reads only the first that many records of its range."""
        total = self.records
        parallelism = max(1, parallelism)
        columns = self._read_columns()
        schema = self.schema
        tasks: list[ReadTask] = []
        for s in self._sources:
            if s.records == 0:
                continue
            share = max(1, round(parallelism * s.records / total))
            per_record = s.bytes_of(1) if s.stored_bytes else None
            max_records = max(1, self._max_task_bytes // per_record) if per_record else None
            for start, stop in _plan_ranges(s.records, share, max_records):
                if per_task_row_limit is not None:
                    stop = min(stop, start + per_task_row_limit)
                meta = BlockMetadata(
                    num_rows=stop - start,
                    size_bytes=s.bytes_of(stop - start),
                    input_files=(s.path,),
                    exec_stats=None,
                )
                # functools.partial: Ray pickles only this task's plan to the worker.
                read = functools.partial(
                    _read_range,
                    s.path,
                    self._open_options,
                    s.fingerprint,
                    start,
                    stop,
                    columns,
                    self._schema,
                    self._block_bytes,
                )
                tasks.append(ReadTask(read, meta, schema=schema, per_task_row_limit=per_task_row_limit))
        return tasks

    def default_tasks(self) -> int:
        """read_reel's task count when none is asked for: one per ``TASK_BYTES`` stored, at
        least one per CPU of the cluster, at most one per record."""
        stored = self.stored_bytes or 0
        return max(1, min(max(_cluster_cpus(), math.ceil(stored / TASK_BYTES)), self.records or 1))


def read_reel(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str | None = None,
    columns: Sequence[str] | None = None,
    decode_images: bool = True,
    verify: bool = True,
    override_num_blocks: int | None = None,
    max_task_bytes: int = MAX_TASK_BYTES,
    storage_options: Mapping[str, str | int | float | bool] | None = None,
    **remote_args: Any,
) -> ray.data.Dataset:
    """Reads reel datasets as one ``ray.data.Dataset`` (several paths: their records one after
    another). ``override_num_blocks`` is the number of read tasks (by default one per 128 MiB
    stored, at least one per CPU of the cluster); ``remote_args`` go by name to
    ``ray.data.read_datasource`` (``num_cpus``, ``memory``, ``concurrency``, ``runtime_env``,
    ``resources`` …); other arguments as for ``ReelDatasource``."""
    source = ReelDatasource(
        paths,
        format=format,
        columns=columns,
        decode_images=decode_images,
        verify=verify,
        max_task_bytes=max_task_bytes,
        storage_options=storage_options,
    )
    if override_num_blocks is None:
        override_num_blocks = source.default_tasks()
    return ray.data.read_datasource(source, override_num_blocks=override_num_blocks, **remote_args)
