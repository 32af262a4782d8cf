"""FFRecord: one .ffr file; every record is one bytes field (`data`)."""

from __future__ import annotations

from reel._writer import Writer as _Writer

__all__ = ["Writer"]


class Writer(_Writer):
    """A ffrecord writer; see `reel.Writer` for the arguments and the atomic finish."""

    format = "ffrecord"
