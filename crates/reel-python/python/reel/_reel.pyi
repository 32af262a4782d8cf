"""Type stubs of reel's compiled extension (``reel._reel``); import ``reel``, not this."""

import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

__version__: str

StrPath = str | os.PathLike[str]
# What reel.open, the writers, convert, verify, generate and write_arrow take: as Python's
# own file functions, str or bytes (non-UTF-8 names too), or a path-like returning either.
FsPath = str | bytes | os.PathLike[str] | os.PathLike[bytes]
Record = dict[str, Any]

def open(
    path: FsPath,
    *,
    format: str | None = None,
    backend: str = "auto",
    verify: bool = True,
    decode_images: bool = True,
    decode: bool = True,
    cache: FsPath | None = None,
    cache_size: int | None = None,
    columns: Sequence[str] | None = None,
    skip_columns: Sequence[str] | None = None,
    storage_options: Mapping[str, str | int | float | bool] | None = None,
) -> Dataset:
    """Opens the dataset at ``path`` (a file or directory, or an object URL: ``s3://``,
    ``gs://``, ``az://``, ``http(s)://``, configured from the environment), working out its
    format. ``cache`` keeps record bytes read from object storage in a local directory
    (bounded by ``cache_size`` bytes) so later epochs read them from disk. ``columns``
    reads only those columns of a Parquet or Arrow IPC file, in that order: the others
    are never decoded nor checked, so a file with a column reel has no value for (a
    decimal) opens with that column left out. Of a Granular dataset it reads only those
    keys, in spec order, and never reads the other keys' record data (nor, in the current
    layout, their indexes). Other formats raise
    ``ValueError``. ``skip_columns`` leaves those columns (keys) out, of ``columns`` or of
    all, as ``columns`` leaves out those it does not name. ``backend`` ``"auto"`` and ``"mmap"`` map the
    files: a file truncated or rewritten in place while open crashes the process (SIGBUS);
    ``"pread"`` and ``"io_uring"`` raise ``CorruptError`` instead. A directory of numbered
    parts with numbers missing (``PART_00000.ffr``, ``PART_00002.ffr``) reads from the
    parts that are there, as the reference reads it, with a ``RuntimeWarning``.
    ``storage_options`` configures the store of a URL on top of the environment: reel's
    ``timeout``, ``connect_timeout``, ``retry_timeout`` (durations such as ``"30s"``) and
    ``retries``, and object_store's builder settings (``aws_endpoint``, ``aws_region``,
    ``allow_http`` …); an unknown name raises ``ValueError``. A pickled dataset carries
    them."""

def convert(
    src: FsPath,
    dst: FsPath,
    *,
    to: str,
    verify: bool = True,
    overwrite: bool = False,
    shard: tuple[int, int] | None = None,
    part_size: int | None = None,
    storage_options: Mapping[str, str | int | float | bool] | None = None,
) -> dict[str, Any]:
    """Converts the dataset at ``src`` into a new ``to`` dataset at ``dst`` (with
    ``shard=(k, n)``, only part ``k`` of ``n`` into the directory ``dst``). Either may be an
    object URL (``s3://bucket/key`` …): a URL destination (or part) is staged locally and
    uploaded when complete, the objects that make it openable last. ``part_size``: OFRecord
    targets in part files of at most that many bytes, Granular and bags targets in shards of
    about that size (other targets raise ``ValueError``). ``storage_options`` (as
    ``open`` takes them) configure whichever of the two is in object storage. Ctrl-C stops
    it at its next batch and raises ``KeyboardInterrupt`` once what it staged is removed."""

def write_arrow(
    data: object,
    path: FsPath,
    *,
    format: str,
    overwrite: bool = False,
    lossless_only: bool = False,
    nullable: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Writes the rows of ``data`` (anything with ``__arrow_c_stream__``: a pyarrow Table or
    RecordBatchReader, a Polars DataFrame) as a new ``format`` dataset at ``path``, under the
    rules of converting a Parquet file; returns a dict as ``convert`` does. ``nullable``:
    Granular/bags columns written as msgpack, which holds the null of a null cell."""

def _reopen(
    path: FsPath,
    format: str | None,
    backend: str,
    verify: bool,
    decode_images: bool,
    decode: bool = True,
    cache: FsPath | None = None,
    cache_size: int | None = None,
    columns: list[str] | None = None,
    skip_columns: list[str] | None = None,
    records: int | None = None,
    storage_options: Mapping[str, str | int | float | bool] | None = None,
) -> Dataset:
    """Opens a dataset again after unpickling (what ``Dataset.__reduce__`` names):
    ``open``'s arguments in order, without its warnings."""

def _atexit() -> None:
    """Marks the interpreter's exit as near: threads that finish a wait in reel once
    finalization has begun park for good instead of taking the GIL back (registered with
    ``atexit`` by ``import reel``)."""

def part_names(format: str, k: int, n: int) -> list[str]:
    """The names of the files (or shard directory) of part ``k`` of an ``n``-part dataset."""

def parts_staging(
    dst: StrPath, *, overwrite: bool, storage_options: Mapping[str, str | int | float | bool] | None = None
) -> str:
    """Starts a job writing ``dst`` (a path or object URL) in parts: refuses something there
    unless ``overwrite``; returns a fresh hidden staging location beside it."""

def staged_part(staging: StrPath, task: int) -> str:
    """Where worker ``task`` writes its part under ``staging``."""

def publish_parts(
    staging: StrPath,
    format: str,
    parts: Sequence[tuple[StrPath, int, int]],
    dst: StrPath,
    *,
    overwrite: bool,
    storage_options: Mapping[str, str | int | float | bool] | None = None,
) -> None:
    """Publishes at ``dst`` the dataset whose part ``i`` was written at ``parts[i] =
    (location, k, n)`` as part ``k`` of ``n``; removes the staging location."""

def discard_staging(
    staging: StrPath, *, storage_options: Mapping[str, str | int | float | bool] | None = None
) -> None:
    """Removes everything written under a staging location ``parts_staging`` gave."""

def verify(
    path: FsPath,
    *,
    backend: str = "auto",
    storage_options: Mapping[str, str | int | float | bool] | None = None,
) -> dict[str, Any]:
    """Checks every record (checksums, structure, stored values; Granular ``jpg``/``png``
    fields are kept as stored, not decoded); the report names the bad ones
    (``bad_records``); ``warnings`` lists what the opened dataset warns of (not damage);
    ``checksums`` says whether the format stores checksums of record bytes (only FFRecord
    does: in the others damaged bytes that still decode cannot be found).
    Ctrl-C stops it at its next batch (``KeyboardInterrupt``)."""

def generate(
    path: FsPath,
    *,
    format: str = "ffrecord",
    records: int = 1000,
    max_record: int = 4096,
    overwrite: bool = False,
    storage_options: Mapping[str, str | int | float | bool] | None = None,
) -> dict[str, Any]:
    """Writes a generated dataset whose records are derived from their index (payloads of
    at most ``max_record`` bytes, at most 1 GiB). Ctrl-C stops it (``KeyboardInterrupt``),
    leaving nothing at ``path``."""

def gulp_index(
    path: FsPath,
) -> tuple[list[int], list[tuple[str, int, list[tuple[int, int, int]], str]]]:
    """Chunk numbers and (id, chunk, frame_info, meta_data JSON) of every video."""

def ffrecord_tables(
    path: FsPath, check_data: bool = True
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
    """One FFRecord file's tables as stored: ``n + 1`` int64 offsets (the last is the
    file's size) and ``n`` uint32 CRC-32 checksums; the metadata checksum is checked when
    ``check_data``."""

def ffrecord_validate(path: FsPath) -> None:
    """Checks one FFRecord file's metadata checksum (not its records), as ffrecord's
    ``validate()``; a legacy file (stored checksum 0) passes."""

class Info:
    """What a dataset is: format, version, schema, files, warnings and format-specific facts."""

    @property
    def format(self) -> str:
        """The format's name ("ffrecord", "syrah", ...)."""
    @property
    def version(self) -> str | None:
        """The format version or generation, when it can be told."""
    @property
    def schema(self) -> list[tuple[str, str]] | None:
        """(field name, the format's type name) for every field, when the format declares
        them."""
    @property
    def files(self) -> list[os.PathLike[str] | str]:
        """The files the dataset reads: local paths, or object URLs as ``str`` with their
        keys percent-encoded (``s3://b/my%20data.ffr``), which ``reel.open`` takes back."""
    @property
    def warnings(self) -> list[tuple[str, os.PathLike[str] | str | None, str]]:
        """What the reader noticed while opening: (kind, file or None, message)."""
    @property
    def facts(self) -> list[tuple[str, str]]:
        """Format-specific facts as (name, value) pairs in display order."""

class BatchBuffer:
    """The bytes of one batch read, shared without a copy (buffer protocol, read-only).

    Byte fields read with ``copy=False`` are ``memoryview`` slices of this object (and
    tensors made from them share it too); each keeps the whole batch alive until the last of
    them is released, whatever happens to the dataset."""

    def __len__(self) -> int:
        """Number of bytes."""
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview:
            """The batch's bytes as a read-only, one-dimensional buffer of unsigned bytes
            (PEP 688; before Python 3.12 the buffer protocol is there without this name)."""

class DatasetIter:
    """Iterator over every record of a dataset, reading ahead one batch at a time."""

    def __iter__(self) -> DatasetIter: ...
    def __next__(self) -> Record: ...

class IndexPlan:
    """The index batches of one rank, from reel-loader, computed without reading anything.

    Iterating yields ``(indices, resume_state)`` per batch: the record indices of the batch
    and the loader state (JSON) after it, which resumes exactly after that batch."""

    def __iter__(self) -> Iterator[tuple[list[int], str]]: ...
    def __next__(self) -> tuple[list[int], str]: ...
    def state(self) -> str:
        """The loader state (JSON) before the next batch."""
    def skip(self, n: int) -> int:
        """Passes over the next ``n`` batches without computing their indices; returns how
        many there were (fewer at the end). ``state()`` is then the state after them."""

class BatchStream:
    """The batches of a plan (``Dataset.stream``), read ahead by reel-loader's threads while
    Python works on the current one. Iterating yields each batch as a list of records
    (dicts); waiting for a batch releases the GIL. Dropping the stream stops its threads."""

    def __iter__(self) -> BatchStream: ...
    def __next__(self) -> list[Record]: ...
    def state(self) -> str:
        """The loader state (JSON) after the last batch delivered."""
    @property
    def threads(self) -> int:
        """The number of Rust threads reading ahead."""

class Dataset:
    """A dataset opened with ``reel.open``: a sequence of records, each a dict of field name
    to value.

    Safe to share between threads (every read releases the GIL) and picklable: a pickled
    dataset is opened again by path in the process that unpickles it."""

    def __len__(self) -> int:
        """Number of records."""
    @overload
    def __getitem__(self, key: int | np.integer[Any]) -> Record:
        """``ds[i]`` is record ``i`` (a dict); ``ds[a:b:c]`` and ``ds[[i, j, ...]]`` (or a
        NumPy integer array) are lists of records read in one batched read."""
    @overload
    def __getitem__(
        self, key: slice | Sequence[int] | npt.NDArray[np.integer[Any]]
    ) -> list[Record]: ...
    def read(self, index: int, *, copy: bool = True, mapped: bool = True) -> Record:
        """Record ``index`` (negative counts from the end) as a dict of field name to value.
        With ``copy=False``, byte fields are read-only ``memoryview``s over reel's memory
        instead of ``bytes`` (no copy; ``numpy.frombuffer`` and ``torch.frombuffer`` accept
        them). That memory is the file's own mapping where the backend maps the file and
        the format stores values as they are, unless ``mapped=False``, which reads the
        records into reel's batch buffer instead: writing through a view of a mapping (a
        tensor from ``torch.frombuffer``) would crash the process, while writing into the
        batch buffer changes only that read's copy."""
    def read_batch(
        self, indices: Iterable[int], *, copy: bool = True, mapped: bool = True
    ) -> list[Record]:
        """The records at ``indices`` (any order, repeats allowed) in one batched read, as a
        list of dicts in the order asked. ``copy=False`` and ``mapped`` as for ``read``."""
    def read_batch_packed(
        self, indices: Iterable[int], *, field: str | None = None
    ) -> tuple[memoryview, npt.NDArray[np.int64]]:
        """One bytes field of the records at ``indices`` (one batched read), end to end in
        one read-only buffer, with ``len(indices) + 1`` int64 offsets: value ``k`` is
        ``buffer[offsets[k]:offsets[k + 1]]``. ``field`` defaults to the records' only
        field. No Python object per record. The records are read into reel's batch buffer:
        a records' only field is a view of it (kept alive by the view); one field of records
        that have several is copied once into an immutable ``bytes``."""
    def _time_rust_reads(self, batches: Iterable[Iterable[int]]) -> float:
        """For benchmarks: seconds the Rust API takes to read ``batches`` one after another
        (indices converted before the clock starts, the GIL released), as
        ``read_batch_packed`` reads them; ``bench/bench_reads.py`` alternates it with the
        same reads from Python."""
    def __iter__(self) -> DatasetIter:
        """Every record in order (read in batches)."""
    @property
    def info(self) -> Info:
        """Format, version, schema, files, warnings and facts."""
    @property
    def path(self) -> os.PathLike[str] | str:
        """The path the dataset was opened from (an object URL as the ``str`` given)."""
    @property
    def format(self) -> str:
        """The format's name."""
    @property
    def stored_bytes(self) -> int:
        """The total size of the dataset's files in bytes (one stat, or request, per file).
        For sizing work, e.g. Ray read tasks."""
    @property
    def fingerprint(self) -> str:
        """A short text that changes when any of the dataset's files is replaced or
        rewritten (one stat, or request, per file)."""
    @property
    def backend(self) -> str:
        """The I/O backend reads go through."""
    def plan(
        self,
        *,
        batch_size: int,
        shuffle: str = "feistel",
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        epoch: int = 0,
        epochs: int | None = None,
        state: str | None = None,
    ) -> IndexPlan:
        """The batches rank ``rank`` of ``world_size`` reads, from reel-loader, computed
        without reading: iterate for ``(indices, resume_state)``. ``shuffle`` is "none",
        "feistel" (O(1) memory, any position free) or "granular" (numpy's permutation, like
        Granular's loader); an epoch's order depends only on (shuffle, seed, epoch, len), not
        on the world size. Starts at ``state`` (JSON from a previous plan) or at the start of
        ``epoch``; stops after epoch ``epochs - 1`` (None: never)."""
    def stream(
        self,
        *,
        batch_size: int,
        shuffle: str = "feistel",
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        epoch: int = 0,
        epochs: int | None = None,
        state: str | None = None,
        threads: int = 2,
        prefetch: int | None = None,
        interleave: tuple[int, int] = (1, 0),
        copy: bool = True,
        mapped: bool = True,
    ) -> BatchStream:
        """The batches of the same plan (same keywords as ``plan``), read ahead on
        ``threads`` Rust threads while Python works on the current batch: iterate for lists
        of records. ``prefetch`` bounds the batches read ahead (default twice ``threads``);
        ``threads=0`` reads each batch when it is asked for. ``interleave=(n, k)`` takes
        batch ``k`` of every ``n`` (worker ``k`` of ``n`` DataLoader workers of this rank),
        reading only those. ``copy=False`` and ``mapped`` as for ``read``. Waiting for a
        batch releases the GIL; the batches and their order do not depend on ``threads`` or
        ``prefetch``."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles as "open this path again with the same options"."""
    def arrow_stream(
        self,
        *,
        start: int | None = None,
        stop: int | None = None,
        indices: Iterable[int] | None = None,
        columns: Sequence[str] | None = None,
        batch_rows: int = 65536,
        batch_bytes: int = 16 << 20,
        large_types: bool = False,
        schema: Any | None = None,
        with_index: bool = False,
        with_location: bool = False,
        sample_records: int = 1000,
    ) -> ArrowStream:
        """The records (a range, a list of indices or all) as an Arrow C stream, read when
        consumed; ``schema`` is anything with ``__arrow_c_schema__`` (a ``pyarrow.Schema``).
        ``with_index`` adds the column ``_index`` (each record's index); ``with_location``
        adds ``_file``, ``_offset`` and ``_length``: the file of the record's first byte
        range and the byte range of that file holding the record (null where the dataset
        cannot tell, e.g. a Parquet file)."""
    def to_arrow(self, **options: Any) -> Any:
        """A ``pyarrow.Table`` of the records; keyword arguments as for ``arrow_stream``."""
    def to_batches(self, **options: Any) -> Any:
        """A ``pyarrow.RecordBatchReader`` reading batch by batch; as ``arrow_stream``. A
        failed read raises reel's exception (e.g. ``reel.ChecksumError``) while iterating."""
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream protocol: every record (``pyarrow.table(ds)``)."""

class ArrowStream:
    """An Arrow stream of a dataset's records, consumed once: through the C stream protocol
    or by iterating it (``pyarrow.RecordBatch`` objects; a failed read raises reel's error)."""

    def __iter__(self) -> ArrowStream: ...
    def __next__(self) -> Any:
        """The next batch as a ``pyarrow.RecordBatch`` (pyarrow imported on call); a failed
        read raises reel's own exception (kind, path, record, offset)."""
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream protocol. A ``requested_schema`` is ignored; give a
        schema to ``Dataset.arrow_stream`` instead."""
    def __arrow_c_schema__(self) -> object:
        """The schema of the batches, as a capsule "arrow_schema" (``pyarrow.schema(stream)``)."""

class Sink:
    """A dataset being written (wrapped by ``reel.Writer``); ``path`` may be an object URL,
    uploaded on ``finish``. Nothing appears at the path until ``finish()``; ``abort()`` (or
    dropping the sink unfinished) removes everything written so far."""

    def __init__(
        self,
        path: FsPath,
        format: str,
        *,
        schema: list[tuple[str, str]] | None = None,
        records: int | None = None,
        overwrite: bool = False,
        part: tuple[int, int] | None = None,
        part_size: int | None = None,
        storage_options: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        """A writer of ``format`` at ``path``. ``schema`` maps field names to the format's
        type names (Granular ``spec.json`` types, Syrah dtypes ...) where the format declares
        them; ``records`` is the number of records that will come, when known. With
        ``part=(k, n)``, ``path`` is the directory of a multi-part dataset and the writer
        writes its part ``k`` of ``n`` there. ``part_size``: files of about that many bytes,
        OFRecord parts or Granular shards."""
    def append(self, record: Mapping[str, Any]) -> int:
        """Adds a record (a dict of field name to value) and returns its index."""
    def finish(self) -> dict[str, Any]:
        """Makes the dataset durable and visible at its path; returns what was written
        (``records``, ``bytes``, ``paths``). If it fails, nothing is published; refused for
        what is missing (``ValueError``) the writer stays open (write the rest and finish
        again, or abort), after any other failure it is closed."""
    def abort(self) -> None:
        """Drops everything written so far; the path is left as it was. Idempotent."""
    @property
    def closed(self) -> bool:
        """Whether ``finish`` or ``abort`` was called."""
    @property
    def path(self) -> os.PathLike[str] | str:
        """The path the dataset appears at (an object URL as the ``str`` given)."""
    @property
    def format(self) -> str:
        """The format's name."""
