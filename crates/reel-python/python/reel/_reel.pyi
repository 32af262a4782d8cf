"""Type stubs of reel's compiled extension (``reel._reel``); import ``reel``, not this."""

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

__version__: str

StrPath = str | os.PathLike[str]
Record = dict[str, Any]

def open(
    path: StrPath,
    *,
    format: str | None = None,
    backend: str = "auto",
    verify: bool = True,
    decode_images: bool = True,
    decode: bool = True,
    cache: StrPath | None = None,
    cache_size: int | None = None,
) -> Dataset:
    """Opens the dataset at ``path`` (a file or directory, or an object URL: ``s3://``,
    ``gs://``, ``az://``, ``http(s)://``, configured from the environment), working out its
    format. ``cache`` keeps record bytes read from object storage in a local directory
    (bounded by ``cache_size`` bytes) so later epochs read them from disk."""

def convert(
    src: StrPath,
    dst: StrPath,
    *,
    to: str,
    verify: bool = True,
    overwrite: bool = False,
    shard: tuple[int, int] | None = None,
    part_size: int | None = None,
) -> dict[str, Any]:
    """Converts the dataset at ``src`` into a new ``to`` dataset at ``dst`` (with
    ``shard=(k, n)``, only part ``k`` of ``n`` into the directory ``dst``). Either may be an
    object URL (``s3://bucket/key`` …): a URL destination (or part) is staged locally and
    uploaded when complete, the objects that make it openable last. ``part_size``: OFRecord
    targets in part files of at most that many bytes, Granular and bags targets in shards of
    about that size (other targets raise ``ValueError``)."""

def write_arrow(
    data: object,
    path: StrPath,
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

def part_names(format: str, k: int, n: int) -> list[str]:
    """The names of the files (or shard directory) of part ``k`` of an ``n``-part dataset."""

def parts_staging(dst: StrPath, *, overwrite: bool) -> str:
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
) -> None:
    """Publishes at ``dst`` the dataset whose part ``i`` was written at ``parts[i] =
    (location, k, n)`` as part ``k`` of ``n``; removes the staging location."""

def discard_staging(staging: StrPath) -> None:
    """Removes everything written under a staging location ``parts_staging`` gave."""

def verify(path: StrPath, *, backend: str = "auto") -> dict[str, Any]:
    """Checks every record; the report names the bad ones (``bad_records``)."""

def generate(
    path: StrPath,
    *,
    format: str = "ffrecord",
    records: int = 1000,
    max_record: int = 4096,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Writes a generated dataset whose records are derived from their index."""

def gulp_index(
    path: StrPath,
) -> tuple[list[int], list[tuple[str, int, list[tuple[int, int, int]], str]]]:
    """Chunk numbers and (id, chunk, frame_info, meta_data JSON) of every video."""

class Info:
    """What a dataset is."""

    @property
    def format(self) -> str: ...
    @property
    def version(self) -> str | None: ...
    @property
    def schema(self) -> list[tuple[str, str]] | None: ...
    @property
    def files(self) -> list[os.PathLike[str]]: ...
    @property
    def warnings(self) -> list[tuple[str, os.PathLike[str] | None, str]]: ...
    @property
    def facts(self) -> list[tuple[str, str]]: ...

class BatchBuffer:
    """The bytes of one batch read, shared without a copy (buffer protocol, read-only)."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class DatasetIter:
    """Iterator over every record of a dataset, reading a batch at a time."""

    def __iter__(self) -> DatasetIter: ...
    def __next__(self) -> Record: ...

class IndexPlan:
    """The index batches of one rank, from reel-loader."""

    def __iter__(self) -> Iterator[tuple[list[int], str]]: ...
    def __next__(self) -> tuple[list[int], str]: ...
    def state(self) -> str: ...

class BatchStream:
    """The batches of a plan, read ahead on Rust threads (``Dataset.stream``)."""

    def __iter__(self) -> BatchStream: ...
    def __next__(self) -> list[Record]: ...
    def state(self) -> str: ...
    @property
    def threads(self) -> int: ...

class Dataset:
    """A dataset opened with ``reel.open``: a sequence of records (dicts)."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, key: int) -> Record: ...
    @overload
    def __getitem__(self, key: slice | Sequence[int]) -> list[Record]: ...
    def read(self, index: int, *, copy: bool = True) -> Record: ...
    def read_batch(self, indices: Iterable[int], *, copy: bool = True) -> list[Record]: ...
    def read_batch_packed(
        self, indices: Iterable[int], *, field: str | None = None
    ) -> tuple[memoryview, npt.NDArray[np.int64]]:
        """One bytes field of the records at ``indices`` (one batched read), end to end in
        one read-only buffer, with ``len(indices) + 1`` int64 offsets: value ``k`` is
        ``buffer[offsets[k]:offsets[k + 1]]``. ``field`` defaults to the records' only
        field. No Python object per record. The records are read into reel's batch buffer:
        a records' only field is a view of it (kept alive by the view); one field of records
        that have several is copied once into an immutable ``bytes``."""
    def __iter__(self) -> DatasetIter: ...
    @property
    def info(self) -> Info: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    @property
    def format(self) -> str: ...
    @property
    def stored_bytes(self) -> int:
        """The total size of the dataset's files (one stat, or request, per file)."""
    @property
    def fingerprint(self) -> str:
        """A short text that changes when any of the dataset's files is replaced or
        rewritten (one stat, or request, per file)."""
    @property
    def backend(self) -> str: ...
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
    ) -> IndexPlan: ...
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
    ) -> BatchStream: ...
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]: ...
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
    def __next__(self) -> Any: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...

class Sink:
    """A dataset being written (wrapped by ``reel.Writer``); ``path`` may be an object URL,
    uploaded on ``finish``."""

    def __init__(
        self,
        path: StrPath,
        format: str,
        *,
        schema: list[tuple[str, str]] | None = None,
        records: int | None = None,
        overwrite: bool = False,
        part: tuple[int, int] | None = None,
        part_size: int | None = None,
    ) -> None: ...
    def append(self, record: Mapping[str, Any]) -> int: ...
    def finish(self) -> dict[str, Any]: ...
    def abort(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    @property
    def format(self) -> str: ...
