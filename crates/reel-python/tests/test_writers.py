"""Writers (atomic finish, round trips for every format), convert and verify."""

from __future__ import annotations

import _thread
import os
import shutil
import threading
import time

import numpy as np
import pytest

import reel
from conftest import golden_root, same


def records_for(fmt: str, n: int = 7) -> list[dict]:
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        if fmt == "ffrecord":
            out.append({"data": rng.bytes(int(rng.integers(0, 3000)))})
        elif fmt == "syrah":
            out.append({
                "f": rng.standard_normal(i).astype(np.float32),
                "u": np.arange(i * 2, dtype=np.uint16),
                "s": "héllo" * i,
            })
        elif fmt == "ofrecord":
            out.append({
                "b": [rng.bytes(5), b""],
                "d": rng.standard_normal(3),
                "i": np.array([i, -i], np.int64),
                "l": np.array([i], np.int32),
            })
        elif fmt == "granular":
            out.append({
                "a": np.arange(6, dtype=np.int16).reshape(2, 3) * i,
                "b": rng.bytes(i),
                "m": {"k": [1, 2.5, None, "x"], "flag": bool(i % 2)},
                "n": i - 3,
                "t": "ünï" * i,
            })
        elif fmt == "gulp":
            out.append({
                "id": f"video-{i}",
                "meta": {"label": f"class {i % 3}", "n": i},
                "frames": [np.full((8, 10, 3), 40 * k, np.uint8) for k in range(1 + i % 3)],
            })
    return out


FORMATS = ["ffrecord", "syrah", "ofrecord", "granular", "gulp"]
TARGETS = {"ffrecord": "data.ffr", "syrah": "data.syr", "ofrecord": "parts", "granular": "ds", "gulp": "clips"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip(tmp_path, fmt):
    path = tmp_path / TARGETS[fmt]
    written = records_for(fmt)
    module = getattr(reel, fmt)
    with module.Writer(path) as w:
        for k, r in enumerate(written):
            assert w.write(r) == k
    assert w.closed and w.summary["records"] == len(written)
    ds = reel.open(path)
    assert ds.format == fmt and len(ds) == len(written)
    got = ds[:]
    for want, have in zip(written, got):
        if fmt == "gulp":
            assert have["id"] == want["id"] and have["meta"] == want["meta"]
            assert [f.shape for f in have["frames"]] == [f.shape for f in want["frames"]]
            # JPEG is lossy: a flat frame comes back close, not equal.
            for a, b in zip(have["frames"], want["frames"]):
                assert np.abs(a.astype(int) - b.astype(int)).max() <= 2
        elif fmt == "granular" or fmt == "ofrecord":
            # These formats keep fields sorted by name.
            assert same(have, {k: want[k] for k in sorted(want)})
        else:
            assert same(have, want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_exception_inside_with_leaves_nothing(tmp_path, fmt):
    path = tmp_path / TARGETS[fmt]
    with pytest.raises(RuntimeError, match="boom"):
        with getattr(reel, fmt).Writer(path) as w:
            for r in records_for(fmt, 3):
                w.write(r)
            raise RuntimeError("boom")
    assert w.closed
    assert os.listdir(tmp_path) == []
    with pytest.raises(FileNotFoundError):
        reel.open(path)


def test_writer_refusals(tmp_path):
    path = tmp_path / "x.ffr"
    w = reel.ffrecord.Writer(path)
    with pytest.raises(TypeError, match="field \"data\""):
        w.write({"data": object()})
    with pytest.raises(TypeError):
        w.write([b"not a dict"])
    w.write({"data": b"ok"})
    w.finish()
    with pytest.raises(reel.ClosedError):
        w.write({"data": b"late"})
    with pytest.raises(reel.ClosedError):
        w.finish()
    # An existing dataset is refused unless overwrite=True, and replaced only when finished.
    with pytest.raises(ValueError):
        reel.ffrecord.Writer(path)
    with reel.ffrecord.Writer(path, overwrite=True) as w2:
        w2.write({"data": b"new"})
        assert reel.open(path)[0]["data"] == b"ok"
    assert reel.open(path)[0]["data"] == b"new"
    with pytest.raises(ValueError, match="unknown format"):
        reel.Writer(tmp_path / "y", "tfrecord")
    with pytest.raises(ValueError):
        reel.Writer(tmp_path / "y")
    # Syrah refuses a map with a reel error naming the field; nothing is left behind.
    with pytest.raises(reel.SchemaError):
        with reel.syrah.Writer(tmp_path / "z.syr") as w3:
            w3.write({"m": {"a": 1}})
    assert not (tmp_path / "z.syr").exists()


def test_values_nested_deeper_than_readers_follow_are_refused(tmp_path):
    # A list that contains itself recursed until the stack overflowed (a segfault).
    looped: list = []
    looped.append(looped)
    looped_dict: dict = {}
    looped_dict["self"] = looped_dict
    for fmt, value in [("granular", looped), ("ffrecord", looped), ("granular", looped_dict)]:
        with pytest.raises(ValueError, match="nest more than 128 deep"):
            with reel.Writer(tmp_path / f"loop-{fmt}", fmt) as w:
                w.write({"x": value})
        assert not (tmp_path / f"loop-{fmt}").exists()
    # 128 levels are what the readers follow: written, and read back; 129 are refused.
    deep: object = 1
    for _ in range(128):
        deep = [deep]
    with reel.granular.Writer(tmp_path / "deep") as w:
        w.write({"x": deep})
    assert reel.open(tmp_path / "deep")[0]["x"] == deep
    with pytest.raises(ValueError, match="field \"x\""):
        with reel.granular.Writer(tmp_path / "deeper") as w:
            w.write({"x": [deep]})
    assert not (tmp_path / "deeper").exists()


def test_a_failed_finish_leaves_the_writer_open(tmp_path):
    # Fewer records than declared: nothing is published, and the writer takes the rest.
    w = reel.ffrecord.Writer(tmp_path / "a.ffr", records=2)
    w.write({"data": b"a"})
    with pytest.raises(ValueError, match="write the rest, then finish again"):
        w.finish()
    assert not w.closed and not (tmp_path / "a.ffr").exists()
    w.write({"data": b"b"})
    assert w.finish()["records"] == 2
    assert [r["data"] for r in reel.open(tmp_path / "a.ffr")] == [b"a", b"b"]
    # At the end of a `with` block a failed finish aborts: nothing is left behind.
    with pytest.raises(ValueError):
        with reel.ffrecord.Writer(tmp_path / "b.ffr", records=2) as w2:
            w2.write({"data": b"a"})
    assert w2.closed and not (tmp_path / "b.ffr").exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_writer_keeps_to_the_records_it_was_created_for(tmp_path, fmt):
    """``records=`` holds every format's writer as it holds FFRecord's: the others
    published whatever count was written."""
    first, second, third = records_for(fmt)[1:4]
    path = tmp_path / TARGETS[fmt]
    w = getattr(reel, fmt).Writer(path, records=2)
    w.write(first)
    with pytest.raises(ValueError, match="created for 2 records but 1 were written"):
        w.finish()
    assert not w.closed and not path.exists()
    w.write(second)
    with pytest.raises(ValueError, match="one more does not fit"):
        w.write(third)
    assert w.finish()["records"] == 2
    assert len(reel.open(path)) == 2


def test_generate_refuses_records_it_cannot_build(tmp_path):
    # 2**62 bytes aborted the process on the allocation.
    with pytest.raises(ValueError, match="at most 1073741824 bytes"):
        reel.generate(tmp_path / "g.ffr", records=1, max_record=2**62)
    assert not (tmp_path / "g.ffr").exists()


def test_a_schema_is_used_or_refused_never_ignored(tmp_path):
    # Granular keeps a declared type the target knows ...
    with reel.granular.Writer(tmp_path / "g", schema={"a": "msgpack"}) as w:
        w.write({"a": 1})
    assert reel.open(tmp_path / "g").info.schema == [("a", "msgpack")]
    # ... and refuses one it does not (a typo was taken as "int" from the first value).
    with pytest.raises(reel.SchemaError, match='"nope".*its types: bytes, utf8'):
        reel.granular.Writer(tmp_path / "g2", schema={"a": "nope"})
    with pytest.raises(reel.SchemaError, match="bags 0.5.1"):
        reel.Writer(tmp_path / "b", "bags", schema={"a": "tree"})
    # Formats that take their types from the values refuse a schema instead of ignoring it.
    for fmt, name in [("syrah", "s.syr"), ("ffrecord", "f.ffr"), ("ofrecord", "o")]:
        with pytest.raises(ValueError, match="takes its types from the values written"):
            reel.Writer(tmp_path / name, fmt, schema={"x": "float32"})
    assert not any(tmp_path.glob("[sfo]*"))


def test_abort_is_idempotent(tmp_path):
    w = reel.granular.Writer(tmp_path / "g")
    w.write({"n": 1})
    w.abort()
    w.abort()
    assert w.closed and not (tmp_path / "g").exists()


def test_convert_between_formats(tmp_path):
    src = golden_root() / "ffrecord/normal"
    original = reel.open(src)[:]
    report = reel.convert(src, tmp_path / "g", to="granular")
    assert (report["from"], report["to"], report["records"]) == ("ffrecord", "granular", len(original))
    back = reel.convert(tmp_path / "g", tmp_path / "back.ffr", to="ffrecord")
    assert back["records"] == len(original)
    assert same(reel.open(tmp_path / "back.ffr")[:], original)
    with pytest.raises(ValueError):
        reel.convert(src, tmp_path / "g", to="granular")  # exists
    with pytest.raises(reel.SchemaError):
        reel.convert(golden_root() / "granular/granular-0.24.2/normal", tmp_path / "s.syr", to="syrah")
    assert not (tmp_path / "s.syr").exists()


def test_part_size_writes_ofrecord_parts_and_granular_shards(tmp_path):
    records = [{"payload": bytes([i]) * 300} for i in range(30)]
    with reel.ofrecord.Writer(tmp_path / "w", part_size=1024) as w:
        w.write_many(records)
    parts = sorted(p.name for p in (tmp_path / "w").iterdir())
    assert len(parts) >= 8 and all((tmp_path / "w" / p).stat().st_size <= 1024 for p in parts)
    with reel.ofrecord.Writer(tmp_path / "one") as w:
        w.write_many(records)
    assert same(reel.open(tmp_path / "w")[:], reel.open(tmp_path / "one")[:])

    src = golden_root() / "ffrecord/normal"
    reel.convert(src, tmp_path / "c", to="ofrecord", part_size=4096)
    assert len(list((tmp_path / "c").iterdir())) > 1
    reel.convert(src, tmp_path / "c1", to="ofrecord")
    assert same(reel.open(tmp_path / "c")[:], reel.open(tmp_path / "c1")[:])

    # Granular: shards of about that size.
    with reel.granular.Writer(tmp_path / "shards", part_size=1024) as w:
        w.write_many(records)
    shards = sorted(p.name for p in (tmp_path / "shards").iterdir())
    assert len(shards) >= 8 and shards[0] == "000000"
    assert [r["payload"] for r in reel.open(tmp_path / "shards")] == [r["payload"] for r in records]
    reel.convert(src, tmp_path / "gs", to="granular", part_size=4096)
    assert len(list((tmp_path / "gs").iterdir())) > 1
    assert len(reel.open(tmp_path / "gs")) == len(reel.open(src))

    # Other formats have no parts of a size; a size is above zero; nothing is written.
    with pytest.raises(ValueError, match="applies to OFRecord"):
        reel.ffrecord.Writer(tmp_path / "x.ffr", part_size=1024)
    with pytest.raises(ValueError, match="above zero"):
        reel.ofrecord.Writer(tmp_path / "z", part_size=0)
    with pytest.raises(ValueError, match="applies to OFRecord"):
        reel.convert(src, tmp_path / "g", to="syrah", part_size=1024)
    with pytest.raises(ValueError, match="one part of a multi-part"):
        reel.convert(src, tmp_path / "g", to="ofrecord", part_size=1024, shard=(0, 2))
    with pytest.raises(ValueError, match="cannot be negative"):
        reel.ofrecord.Writer(tmp_path / "z", part_size=-1)
    assert not any((tmp_path / n).exists() for n in ["x.ffr", "z", "g"])


def test_verify_names_bad_records():
    bad = reel.verify(golden_root() / "ffrecord/corrupt/record_byte_flip")
    assert bad["format"] == "ffrecord" and bad["opened"] and not bad["clean"]
    assert bad["bad_records"] == [3] and bad["records"] == 6 and bad["good_records"] == 5
    assert bad["problems"][0]["kind"] == "checksum" and bad["problems"][0]["record"] == 3
    good = reel.verify(golden_root() / "syrah/normal")
    assert good["clean"] and good["bad_records"] == [] and good["records"] == 200
    broken = reel.verify(golden_root() / "ffrecord/corrupt/truncated_header")
    assert not broken["opened"] and not broken["clean"]
    assert good["warnings"] == []
    # Syrah has no checksums to check; FFRecord has.
    assert good["checksums"] is False and bad["checksums"] is True
    # Accepted with a warning, which the report gives beside its clean verdict.
    legacy = reel.verify(golden_root() / "ffrecord/corrupt/legacy_zero_meta_checksum/data.ffr")
    assert legacy["clean"] and any("checksum" in w for w in legacy["warnings"]), legacy
    with pytest.raises(FileNotFoundError):
        reel.verify(golden_root() / "no/such/thing")


@pytest.mark.parametrize("fmt", FORMATS)
def test_generate(tmp_path, fmt):
    path = tmp_path / "gen"
    summary = reel.generate(path, format=fmt, records=25, max_record=300)
    assert summary["records"] == 25 and summary["bytes"] > 0
    ds = reel.open(path)
    assert ds.format == fmt and len(ds) == 25
    assert reel.verify(path)["clean"]
    # The content is derived from the index: generating again gives the same records.
    again = reel.generate(tmp_path / "again", format=fmt, records=25, max_record=300)
    assert again["records"] == 25 and same(reel.open(tmp_path / "again")[:], ds[:])
    with pytest.raises(ValueError):
        reel.generate(path, format=fmt, records=1)


def test_the_syrah_writer_warns_once_when_strings_are_joined(tmp_path):
    """Syrah stores an array of strings as their concatenation (as its reference does);
    the writer says so, once per field, and not for one string or for text."""
    import warnings

    path = tmp_path / "t.syr"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with reel.syrah.Writer(path) as w:
            w.write({"one": np.array(["solo"]), "text": "plain", "n": np.arange(2)})
            assert not caught
            w.write_many(
                [{"one": np.array(["ab", "c"]), "text": "x", "n": np.arange(2)}] * 3
            )
            w.write({"one": np.array(["d", "e"]), "text": "y", "n": np.arange(2)})
    assert len(caught) == 1 and caught[0].category is UserWarning
    assert "'one'" in str(caught[0].message) and "joined" in str(caught[0].message)
    assert caught[0].filename == __file__  # points at the caller's line
    back = reel.open(path)
    assert back[1]["one"] == "abc" and back[0]["one"] == "solo"


@pytest.mark.parametrize("fmt,names", [
    ("ffrecord", ["PART_00000.ffr", "PART_00002.ffr"]),
    ("syrah", ["part-00000.syr", "part-00002.syr"]),
])
def test_a_directory_with_a_part_missing_warns_and_verify_names_it(tmp_path, fmt, names):
    """Parts numbered 0 and 2 read as the reference reads them, but reel.open warns and
    reel.verify reports the gap; a pickled copy (a DataLoader worker) does not warn again."""
    import pickle
    import warnings

    d = tmp_path / "parts"
    for k in range(3):
        with reel.Writer(d, fmt, part=(k, 3)) as w:
            w.write({"data": b"part %d" % k} if fmt == "ffrecord" else {"x": np.arange(k + 1)})
    (d / names[0].replace("00000", "00001")).unlink()
    assert sorted(p.name for p in d.iterdir()) == names
    with pytest.warns(RuntimeWarning, match=r"1 of the parts numbered 0 to 2 are missing \(1\)"):
        ds = reel.open(d)
    assert len(ds) == 2
    assert [w[0] for w in ds.info.warnings] == ["MissingParts"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(pickle.loads(pickle.dumps(ds))) == 2
    report = reel.verify(d)
    assert not report["clean"] and report["records"] == 2 and report["bad_records"] == []
    assert any("are missing" in p["message"] for p in report["problems"]), report


def test_overwrite_replaces_what_a_killed_granular_write_left(tmp_path):
    """A process that dies while writing Granular leaves its staging directory (for resume);
    a new writer to the same path refuses it, naming ``overwrite=True``, which replaces it.
    A writer that is still writing is never replaced."""
    import subprocess
    import sys

    path = tmp_path / "ds"
    script = (
        "import os, reel\n"
        f"w = reel.granular.Writer({str(path)!r})\n"
        "for i in range(100): w.write({'k': i})\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    staging = tmp_path / ".ds.reel-partial"
    assert staging.is_dir() and not path.exists()
    with pytest.raises(reel.InvalidInputError, match="overwrite=True"):
        with reel.granular.Writer(path) as w:
            w.write({"k": 1})
    with reel.granular.Writer(path, overwrite=True) as w:
        w.write({"k": 7})
    assert not staging.exists()
    assert [r["k"] for r in reel.open(path)] == [7]

    live = reel.granular.Writer(tmp_path / "live")
    live.write({"k": 1})
    with pytest.raises(reel.InvalidInputError, match="another writer"):
        with reel.granular.Writer(tmp_path / "live", overwrite=True) as w:
            w.write({"k": 2})
    live.finish()
    assert [r["k"] for r in reel.open(tmp_path / "live")] == [1]


def test_generate_refuses_a_dataset_larger_than_the_free_space(tmp_path):
    """``reel.generate`` checks the free space before writing, as ``reel generate`` does
    (it wrote until the disk was full), and leaves nothing."""
    with pytest.raises(reel.InvalidInputError, match="free"):
        reel.generate(tmp_path / "huge", records=10**15, max_record=4096)
    assert list(tmp_path.iterdir()) == []
    # Records of at most one byte still take the format's index: 2**40 FFRecord records
    # need 12 TiB of header (they were written until interrupted).
    for fmt in ["ffrecord", "ofrecord", "granular", "syrah"]:
        with pytest.raises(reel.InvalidInputError, match="free"):
            reel.generate(tmp_path / "tiny", format=fmt, records=2**40, max_record=1)
        assert list(tmp_path.iterdir()) == []


def interrupt_once_staged(directory, before: int) -> threading.Thread:
    """A thread that, once ``directory`` holds more than ``before`` entries (a writer has
    staged its output), raises ``KeyboardInterrupt`` in the main thread as Ctrl-C does
    (``_thread.interrupt_main`` simulates SIGINT). It gives up after 60 s."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(os.listdir(directory)) > before:
                _thread.interrupt_main()
                return
            time.sleep(0.001)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_ctrl_c_stops_generate_and_leaves_nothing(tmp_path):
    """Ctrl-C reaches a long ``reel.generate`` (which runs with the GIL released): it stops
    at its next record, removes its staged file and raises ``KeyboardInterrupt``."""
    watcher = interrupt_once_staged(tmp_path, 0)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        # About a quarter of the free space if it ran to the end: far more than can be
        # written before the interrupt, and within what the free-space check allows.
        free = shutil.disk_usage(tmp_path).free
        reel.generate(tmp_path / "big.ffr", records=max(200, free // 8192 // 4), max_record=16384)
    watcher.join()
    assert time.monotonic() - started < 30
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("to", ["parquet", "granular"])
def test_ctrl_c_stops_a_conversion_and_leaves_only_the_source(tmp_path, to):
    """Ctrl-C during ``reel.convert``: the conversion stops at its next batch, nothing
    appears at the destination (no staged files either) and ``KeyboardInterrupt`` is
    raised."""
    src = tmp_path / "src.ffr"
    reel.generate(src, records=3000, max_record=131072)  # about 200 MB
    watcher = interrupt_once_staged(tmp_path, 1)
    with pytest.raises(KeyboardInterrupt):
        reel.convert(src, tmp_path / "out", to=to)
    watcher.join()
    assert [p.name for p in tmp_path.iterdir()] == ["src.ffr"]
    # The process goes on reading and writing as before.
    assert reel.convert(src, tmp_path / "out", to=to)["records"] == 3000


def test_a_bool_is_no_count(tmp_path):
    """``True`` is an ``int`` to Python: ``records=True`` wrote one record."""
    with pytest.raises(TypeError, match="argument 'records': an integer, not a bool"):
        reel.generate(tmp_path / "one.ffr", records=True)
    assert list(tmp_path.iterdir()) == []
    reel.generate(tmp_path / "two.ffr", records=2)
    with pytest.raises(TypeError, match="argument 'batch_size'"):
        reel.open(tmp_path / "two.ffr").plan(batch_size=True)
