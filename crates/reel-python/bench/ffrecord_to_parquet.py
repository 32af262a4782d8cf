"""FFRecord → Parquet in plain Python: the script a user writes today, and the baseline that
bench_parquet.py measures ``reel convert`` against.

It reads the file as the reference reader does (shared/spec/ffrecord.md: the header's count,
per-record CRC-32s and absolute offsets; the metadata CRC and every record's CRC checked with
zlib, lengths from the next offset and the file size) through a memory map, and writes one
binary column ``data`` with pyarrow's Parquet writer, a row group per ~``--row-group-bytes``
of records, without compression, dictionary or statistics (as ``reel convert --compression
none`` writes binary columns)::

    python ffrecord_to_parquet.py SRC.ffr DST.parquet [--row-group-bytes 16777216]
"""

from __future__ import annotations

import argparse
import mmap
import struct
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def records(path: str, batch_bytes: int):
    """Lists of record bytes, about ``batch_bytes`` each, every record's CRC checked."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    size = len(mm)
    stored_meta_crc, n = struct.unpack_from("<Iq", mm, 0)
    header = 12 + 12 * n
    if n < 0 or header > size:
        raise ValueError(f"{path}: {n} records do not fit in {size} bytes")
    if stored_meta_crc != 0 and zlib.crc32(mm[4:header]) != stored_meta_crc:
        raise ValueError(f"{path}: metadata checksum mismatch")
    checksums = np.frombuffer(mm, "<u4", n, 12).tolist()
    offsets = np.frombuffer(mm, "<i8", n, 12 + 4 * n).tolist()
    ends = offsets[1:] + [size]
    batch, held = [], 0
    for i in range(n):
        start, end = offsets[i], ends[i]
        if not header <= start <= end <= size:
            raise ValueError(f"{path}: record {i} at {start}..{end} is outside the file")
        data = mm[start:end]
        if zlib.crc32(data) != checksums[i]:
            raise ValueError(f"{path}: record {i}: checksum mismatch")
        batch.append(data)
        held += len(data)
        if held >= batch_bytes:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--row-group-bytes", type=int, default=16 << 20)
    args = ap.parse_args()
    schema = pa.schema([pa.field("data", pa.binary())])
    with pq.ParquetWriter(
        args.dst, schema, compression="none", use_dictionary=False, write_statistics=False
    ) as writer:
        for batch in records(args.src, args.row_group_bytes):
            writer.write_batch(pa.record_batch([pa.array(batch, pa.binary())], schema=schema))


if __name__ == "__main__":
    main()
