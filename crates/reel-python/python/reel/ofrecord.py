"""OFRecord: part files of protobuf records (features: bytes lists, int32/int64/float/double lists)."""

from __future__ import annotations

from reel._writer import Writer as _Writer

__all__ = ["Writer"]


class Writer(_Writer):
    """A ofrecord writer; see `reel.Writer` for the arguments and the atomic finish."""

    format = "ofrecord"
