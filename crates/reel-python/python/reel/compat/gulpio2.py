"""``gulpio2`` reader classes, backed by reel.

Covered: ``GulpDirectory(output_dir, jpeg_decoder=None)`` with ``gd[id]`` → ``(frames, meta)``,
``gd[id, slice_or_list]`` (frame selection), ``merged_meta_dict``, ``all_meta_dicts``,
``chunk_lookup``, ``num_chunks``, ``chunks()`` / iteration over chunk objects with
``meta_dict``, ``id in chunk``, ``read_frames(id, slice_)`` and ``iter_all(accepted_ids,
shuffle)``. ``jpeg_decoder=None`` decodes with reel (``uint8`` arrays, H×W×3 or H×W for
grayscale, like gulpio2's default); any callable gets the stored JPEG bytes, like gulpio2.
A frame selection reads the whole video and then selects (reel-gulp can read only the
chosen frames; the binding does not expose that yet).
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import reel
from reel._reel import gulp_index

__all__ = ["GulpDirectory", "GulpChunk"]


def _split(element) -> tuple[str, Any]:
    if isinstance(element, tuple) and len(element) == 2:
        id_, slice_ = element
    elif isinstance(element, (int, str)):
        id_, slice_ = element, None
    else:
        raise TypeError("Undefined input type! id or (id, slice) expected")
    return str(id_), slice_


def _select(frames: list, slice_) -> list:
    if slice_ is None:
        return frames
    if isinstance(slice_, (list, np.ndarray)):
        return [frames[i] for i in slice_]
    if isinstance(slice_, slice):
        return frames[slice_]
    # gulpio2 fails on anything else too (an int has no ``.start``); one frame indexed
    # alone would have been one frame's bytes taken for a list of frames.
    raise TypeError(
        f"frames are selected by a slice, a list or an array, not {type(slice_).__name__}"
    )


class GulpChunk:
    """One chunk (``data_<n>.gulp`` + ``meta_<n>.gmeta``) of a :class:`GulpDirectory`."""

    def __init__(self, directory: GulpDirectory, chunk_id: int) -> None:
        self._directory = directory
        self.chunk_id = chunk_id
        self.meta_dict: OrderedDict[str, dict] = OrderedDict()

    def __contains__(self, id_) -> bool:
        return str(id_) in self.meta_dict

    def __getitem__(self, element):
        return self.read_frames(*_split(element))

    def __iter__(self):
        return self.iter_all()

    def open(self, flag: str = "rb"):
        """Nothing to open: reel reads on demand (kept so ``with chunk.open():`` works)."""
        return _Nothing()

    def read_frames(self, id_, slice_=None) -> tuple[list, dict]:
        """The frames (selected by ``slice_``) and the first meta dict of ``id_`` (an id or
        anything whose ``str()`` is one, as in gulpio2)."""
        id_ = str(id_)
        if id_ not in self.meta_dict:
            raise KeyError(id_)
        return self._directory._read(id_, slice_)

    def iter_all(self, accepted_ids=None, shuffle: bool = False) -> Iterator[tuple[list, dict]]:
        """Every video of the chunk as ``(frames, meta)``."""
        ids = list(self.meta_dict)
        if accepted_ids is not None:
            accepted = set(accepted_ids)
            ids = [i for i in ids if i in accepted]
        if shuffle:
            np.random.shuffle(ids)
        for id_ in ids:
            yield self.read_frames(id_)


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


class GulpDirectory:
    """A directory of gulp chunks, read with reel."""

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        jpeg_decoder: Callable[[bytes], Any] | None = None,
    ) -> None:
        self.output_dir = output_dir
        self.jpeg_decoder = jpeg_decoder
        chunks, entries = gulp_index(output_dir)
        self._index: dict[str, int] = {}
        self.chunk_objs_lookup: OrderedDict[int, GulpChunk] = OrderedDict(
            (number, GulpChunk(self, number)) for number in chunks
        )
        self.chunk_lookup: dict[str, int] = {}
        for index, (id_, chunk, frames, meta_json) in enumerate(entries):
            self.chunk_objs_lookup[chunk].meta_dict[id_] = {
                "frame_info": [list(f) for f in frames],
                "meta_data": json.loads(meta_json),
            }
            self._index[id_] = index
            self.chunk_lookup[id_] = chunk
        self.all_meta_dicts = [c.meta_dict for c in self.chunk_objs_lookup.values()]
        self.num_chunks = len(self.chunk_objs_lookup)
        self.merged_meta_dict: dict[str, dict] = {}
        for d in self.all_meta_dicts:
            self.merged_meta_dict.update(d)
        self._ds = reel.open(output_dir, format="gulp", decode_images=jpeg_decoder is None)

    def __iter__(self) -> Iterator[GulpChunk]:
        return iter(self.chunk_objs_lookup.values())

    def chunks(self) -> Iterator[GulpChunk]:
        """The chunks, in the reference's order."""
        return self.__iter__()

    def __getitem__(self, element) -> tuple[list, dict]:
        id_, slice_ = _split(element)
        if id_ not in self._index:
            raise KeyError(id_)
        return self._read(id_, slice_)

    def _read(self, id_: str, slice_) -> tuple[list, dict]:
        record = self._ds[self._index[id_]]
        frames = _select(record["frames"], slice_)
        if self.jpeg_decoder is not None:
            frames = [self.jpeg_decoder(bytes(f)) for f in frames]
        return frames, record["meta"]
