"""reel: read and write the record formats deep-learning datasets live in.

FFRecord, Syrah, OFRecord, Granular/bags and GulpIO2, byte-compatible with their reference
implementations, behind one API::

    import reel

    ds = reel.open("train.ffr")          # any format; told from the files
    print(len(ds), ds.info.format)
    record = ds[0]                       # {"data": b"..."}
    batch = ds[[5, 1, 42]]               # one batched read, GIL released

Writers per format (``reel.ffrecord.Writer`` ...), ``reel.convert``, ``reel.write_arrow``
(any Arrow table or stream to a format), ``reel.verify``,
PyTorch datasets in ``reel.torch`` and drop-in reader classes of the reference packages in
``reel.compat`` complete the package.
"""

from __future__ import annotations

import atexit
import os

from reel._errors import (
    ChecksumError,
    ClosedError,
    CorruptError,
    InvalidInputError,
    IoError,
    LimitError,
    NotFoundError,
    OutOfRangeError,
    ReelError,
    SchemaError,
    UnsupportedError,
)
from reel._reel import (
    ArrowStream,
    BatchBuffer,
    Dataset,
    Info,
    __version__,
    convert,
    generate,
    open,
    verify,
    write_arrow,
)
from reel._writer import Writer
# `_reopen` is what a pickled Dataset names: reel.open again, without its warnings.
from reel._reel import _atexit, _reopen  # noqa: F401

# Threads still inside reel when the interpreter finalizes are parked instead of being
# ended with pthread_exit, which aborts the process through Rust frames (CPython
# 3.11-3.13); see crates/reel-python/src/shutdown.rs. (A forked child forgets that state
# in the module's fork handler, crates/reel-python/src/fork.rs.)
atexit.register(_atexit)

from reel import ffrecord, granular, gulp, ofrecord, syrah  # noqa: E402  (writers per format)

__all__ = [
    "open",
    "convert",
    "write_arrow",
    "verify",
    "generate",
    "Writer",
    "ffrecord",
    "syrah",
    "ofrecord",
    "granular",
    "gulp",
    "Dataset",
    "Info",
    "BatchBuffer",
    "ArrowStream",
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
    "__version__",
]
