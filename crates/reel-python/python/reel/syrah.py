"""Syrah: one .syr file of named 1-D arrays per item (NumPy arrays or str)."""

from __future__ import annotations

from reel._writer import Writer as _Writer

__all__ = ["Writer"]


class Writer(_Writer):
    """A syrah writer; see `reel.Writer` for the arguments and the atomic finish."""

    format = "syrah"
