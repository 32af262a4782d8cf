"""GulpIO2: a directory of chunks; records are {"id": str, "meta": dict, "frames": [JPEG bytes or uint8 arrays]}."""

from __future__ import annotations

from reel._writer import Writer as _Writer

__all__ = ["Writer"]


class Writer(_Writer):
    """A gulp writer; see `reel.Writer` for the arguments and the atomic finish."""

    format = "gulp"
