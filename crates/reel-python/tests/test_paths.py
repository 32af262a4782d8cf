"""Path arguments: str, bytes (non-UTF-8 names included) and path-likes of either, as
Python's own file functions take them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import reel


class BytesPathLike:
    """An os.PathLike whose __fspath__ returns bytes (as os.DirEntry of a bytes scan does)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __fspath__(self) -> bytes:
        return self.raw


def test_bytes_paths_generate_open_convert_and_verify(tmp_path: Path) -> None:
    # A name that is not UTF-8: only a bytes path (or os.fsdecode's escapes) can say it.
    src = os.fsencode(tmp_path) + b"/gen-\xff.ffr"
    summary = reel.generate(src, format="ffrecord", records=25, max_record=64)
    assert summary["records"] == 25
    assert os.path.exists(src)
    ds = reel.open(src)
    assert len(ds) == 25
    first = ds[0]
    # The same file through the str that os.fsdecode makes of the name.
    assert reel.open(os.fsdecode(src))[0] == first
    assert reel.open(BytesPathLike(src))[0] == first

    dst = os.fsencode(tmp_path) + b"/conv-\xfe.granular"
    report = reel.convert(src, dst, to="granular")
    assert report["records"] == 25
    assert len(reel.open(dst)) == 25
    assert reel.verify(BytesPathLike(dst))["clean"]
    assert reel.verify(src)["clean"]


def test_a_writer_takes_a_bytes_path(tmp_path: Path) -> None:
    out = os.fsencode(tmp_path) + b"/w-\xff.ffr"
    with reel.ffrecord.Writer(out) as w:
        w.write({"data": b"abc"})
        w.write({"data": b""})
    assert os.fsencode(w.path) == out
    assert [r["data"] for r in reel.open(out)] == [b"abc", b""]


def test_a_missing_bytes_path_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as err:
        reel.open(os.fsencode(tmp_path) + b"/none-\xff.ffr")
    assert "none-" in str(err.value)


@pytest.mark.parametrize("bad", [3, None, 2.5, ["a"]])
def test_a_path_of_another_type_is_a_type_error_naming_the_argument(bad: object) -> None:
    with pytest.raises(TypeError) as err:
        reel.open(bad)  # type: ignore[arg-type]
    assert "path" in str(err.value)
    with pytest.raises(TypeError):
        reel.verify(bad)  # type: ignore[arg-type]
