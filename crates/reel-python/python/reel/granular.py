"""Granular: a directory with spec.json and one bag per key (types given by `schema` or taken from the first record)."""

from __future__ import annotations

from reel._writer import Writer as _Writer

__all__ = ["Writer"]


class Writer(_Writer):
    """A granular writer; see `reel.Writer` for the arguments and the atomic finish."""

    format = "granular"
