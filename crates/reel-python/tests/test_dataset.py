"""The Dataset API: indexing, batches, zero-copy bytes, errors, pickling, threads, backends."""

from __future__ import annotations

import os
import pickle
import random
import shutil
import sys
import time
import threading

import numpy as np
import pytest

import reel
from conftest import golden_root, same

FFR = "ffrecord/normal"


@pytest.fixture
def ds():
    return reel.open(golden_root() / FFR)


def test_len_index_negative_slices_and_lists(ds):
    n = len(ds)
    assert n == 300
    assert same(ds[-1], ds[n - 1])
    assert same(ds[10:20:3], [ds[i] for i in range(10, 20, 3)])
    assert same(ds[::-50], [ds[i] for i in range(n - 1, -1, -50)])
    assert same(ds[[5, 1, 5]], [ds[5], ds[1], ds[5]])
    assert same(ds[np.array([7, 2])], [ds[7], ds[2]])
    assert same(ds.read_batch((3, 4)), [ds[3], ds[4]])
    assert ds[:0] == []
    with pytest.raises(IndexError):
        ds[n]
    with pytest.raises(IndexError):
        ds[-n - 1]
    with pytest.raises(reel.OutOfRangeError):
        ds.read_batch([0, n])
    with pytest.raises(TypeError):
        ds["0"]


def test_indices_may_be_lists_arrays_of_any_int_dtype_or_iterables(ds):
    """Lists and integer arrays of every dtype are read directly, anything else through
    iteration: every form names the same records, negative indices count from the end, and
    a bad item or index is refused (an unsigned one too large for int64 as well, not
    wrapped round to a negative one)."""
    want = [ds[i]["data"] for i in (298, 0, 4, 299)]
    forms = [
        [298, 0, 4, -1],
        np.array([298, 0, 4, -1], dtype=np.int64),
        np.array([298, 0, 4, -1], dtype=np.int32),
        np.array([298, 0, 4, -1], dtype=np.int16),
        np.array([298, 0, 4, 299], dtype=np.uint64),
        np.array([298, 0, 4, 299], dtype=np.uint32),
        np.array([298, 999, 0, 999, 4, 999, -1], dtype=np.int64)[::2],  # not contiguous
        (i for i in (298, 0, 4, -1)),
    ]
    for form in forms:
        assert [r["data"] for r in ds.read_batch(form)] == want
    assert [r["data"] for r in ds.read_batch(np.array([0, 4], dtype=np.int8))] == want[1:3]
    assert ds.read_batch_packed(np.array([298, 0, 4, -1]))[1].tolist()[-1] == sum(map(len, want))
    with pytest.raises(TypeError):
        ds.read_batch([1, "x"])
    with pytest.raises(TypeError):
        ds.read_batch(np.array([1.0, 2.0]))
    with pytest.raises(IndexError):
        ds.read_batch(np.array([0, 300]))
    with pytest.raises(IndexError):
        ds.read_batch([0, -301])
    with pytest.raises(IndexError):
        ds.read_batch(np.array([0, 2**63 + 5], dtype=np.uint64))
    # An index too large for 64 bits is out of range in every form, not an OverflowError,
    # and the message does not quote the number (it may have thousands of digits).
    huge = 10**5000
    for form in ([0, 2**70], (0, 2**70), iter([0, 2**70])):
        with pytest.raises(IndexError, match="does not fit in 64 bits"):
            ds.read_batch(form)
    # One that fits in 64 bits unsigned is a record number out of range, said as such.
    for form in ([0, np.uint64(2**64 - 1), 2**70], [2**64 - 1], 2**64 - 1):
        with pytest.raises(IndexError, match=r"out of range \(the dataset has 300 records\)"):
            ds[form]
    # As NumPy indexes: 2-D index arrays and tensors, and float arrays (empty too), are
    # refused (a 2-D tensor's rows were read as indices); a float is named as what it is.
    import torch

    for key, said in (
        (np.array([[1], [3]]), "2-dimensional"),
        (torch.tensor([[1], [3]]), "2-dimensional"),
        (np.array([]), "hold integers, not float64"),
        (np.array([1.0]), "hold integers, not float64"),
        (3.0, "not a float"),
        (None, "not a NoneType"),
    ):
        with pytest.raises(TypeError, match=said):
            ds[key]
        with pytest.raises(TypeError, match=said):
            ds.read_batch(key)
    with pytest.raises(IndexError, match="does not fit in 64 bits"):
        ds.read_batch_packed([-(2**64)])
    with pytest.raises(IndexError, match="does not fit in 64 bits"):
        ds[2**70]
    with pytest.raises(IndexError) as raised:
        ds[[huge]]
    assert len(str(raised.value)) < 300


def test_list_items_other_than_ints_go_through_index(ds):
    """A list is read in place while its items are plain ints; any other item (a NumPy
    integer, an object with `__index__`) is converted the ordinary way, and an
    `__index__` that shortens the list while it is read ends the read at the new length
    instead of reading past it."""
    want = [ds[i]["data"] for i in (298, 0, 4, 1)]
    mixed = [298, np.int64(0), np.uint16(4), 1]
    assert [r["data"] for r in ds.read_batch(mixed)] == want

    class Shrinks:
        def __init__(self, owner, value):
            self.owner, self.value = owner, value

        def __index__(self):
            del self.owner[2:]
            return self.value

    shrinking = [298, 0, 4, 1, 7, 8]
    shrinking[1] = Shrinks(shrinking, 0)
    assert [r["data"] for r in ds.read_batch(shrinking)] == want[:2]
    packed, offsets = ds.read_batch_packed([298, np.int32(0), 4, np.int8(1)])
    assert bytes(packed) == b"".join(want)
    assert offsets.tolist()[-1] == sum(map(len, want))


def test_info(ds):
    info = ds.info
    assert info.format == "ffrecord"
    assert info.version is not None
    assert [str(p) for p in info.files] == [str(golden_root() / FFR / "data.ffr")]
    assert info.warnings == []
    assert dict(info.facts)["metadata checksum"] == "verified"
    syrah = reel.open(golden_root() / "syrah/normal").info
    assert ("u8", "uint8") in syrah.schema


def test_stored_bytes_is_the_files_total_size(ds):
    assert ds.stored_bytes == os.path.getsize(golden_root() / FFR / "data.ffr")
    gulp = reel.open(golden_root() / "gulpio2/normal")
    assert len(gulp.info.files) > 1
    assert gulp.stored_bytes == sum(os.path.getsize(f) for f in gulp.info.files)


def test_zero_copy_bytes(ds):
    viewed = ds.read_batch([0, 1, 299], copy=False)
    copied = ds.read_batch([0, 1, 299])
    for v, c in zip(viewed, copied):
        assert isinstance(v["data"], memoryview) and v["data"].readonly
        assert bytes(v["data"]) == c["data"]
        assert np.frombuffer(v["data"], np.uint8).tobytes() == c["data"]
    want = ds[5]["data"]
    one = ds.read(5, copy=False)["data"]
    owner = one.obj
    assert isinstance(owner, reel.BatchBuffer) and len(owner) >= len(one)
    del ds, viewed, owner
    assert bytes(one) == want  # the view keeps its batch alive after the dataset is gone
    with pytest.raises(TypeError):
        one[0] = 1


def test_zero_copy_reads_leave_no_python_objects_behind(ds):
    # Each byte field read with copy=False is a slice of the batch's buffer; making the slice
    # with pyo3's PySlice::new leaked its two bounds (Python ints) per value.
    import tracemalloc

    indices = list(range(0, 300, 3))
    for _ in range(50):
        ds.read_batch(indices, copy=False)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2000):
            ds.read_batch(indices, copy=False)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # The leak held 2 ints (28 bytes or more each) per value: 200,000 values, over 11 MB.
    assert grown < 1_000_000, f"{grown} bytes of Python objects kept by 2,000 batch reads"


def test_read_batch_packed_gives_one_buffer_and_offsets():
    """`read_batch_packed` returns the same bytes as `read_batch`, end to end, with offsets;
    records read into reel's batch buffer lie back to back there, and the buffer is a view
    of it (no copy) that outlives the dataset."""
    ds = reel.open(golden_root() / FFR, backend="pread")
    order = [299, 0, 7, 7, 150, 1]
    want = [r["data"] for r in ds.read_batch(order)]
    buf, offsets = ds.read_batch_packed(order)
    assert isinstance(buf, memoryview) and buf.readonly
    assert offsets.dtype == np.int64 and offsets.tolist()[0] == 0 and len(offsets) == len(order) + 1
    assert [bytes(buf[offsets[k] : offsets[k + 1]]) for k in range(len(order))] == want
    assert offsets[-1] == len(buf) == sum(map(len, want))
    assert isinstance(buf.obj, reel.BatchBuffer)
    named, named_offsets = ds.read_batch_packed(np.array(order), field="data")
    assert bytes(named) == bytes(buf) and named_offsets.tolist() == offsets.tolist()
    del ds
    assert bytes(buf) == b"".join(want)
    empty, empty_offsets = reel.open(golden_root() / FFR).read_batch_packed([])
    assert len(empty) == 0 and empty_offsets.tolist() == [0]


def test_read_batch_packed_reads_into_one_buffer_or_copies_once(tmp_path):
    """Large records the memory map could lend are still read into reel's batch buffer,
    back to back, and shared from there; values that are not back to back (one field of
    records that have several) are copied once into an immutable buffer."""
    path = tmp_path / "big.ffr"
    records = [bytes([k]) * (40 << 10) for k in range(12)]
    with reel.ffrecord.Writer(path) as w:
        for r in records:
            w.append({"data": r})
    ds = reel.open(path, backend="mmap")
    order = [11, 3, 3, 0]
    buf, offsets = ds.read_batch_packed(order)
    assert [bytes(buf[offsets[k] : offsets[k + 1]]) for k in range(4)] == [records[i] for i in order]
    assert isinstance(buf.obj, reel.BatchBuffer) and buf.readonly

    granular = reel.open(golden_root() / "granular/granular-0.24.2/normal")
    order = [5, 0, 2]
    buf, offsets = granular.read_batch_packed(order, field="bytes")
    want = [granular[i]["bytes"] for i in order]
    assert [bytes(buf[offsets[k] : offsets[k + 1]]) for k in range(3)] == want
    assert not isinstance(buf.obj, reel.BatchBuffer) and buf.readonly


def test_read_batch_packed_names_what_it_cannot_pack():
    granular = reel.open(golden_root() / "granular/granular-0.24.2/normal")
    with pytest.raises(ValueError, match="name the bytes field"):
        granular.read_batch_packed([0])
    with pytest.raises(reel.SchemaError, match="no field \"nope\""):
        granular.read_batch_packed([0], field="nope")
    with pytest.raises(reel.SchemaError, match="is not bytes") as raised:
        granular.read_batch_packed([0], field="text")
    # With the dataset's context, like the errors of reads, and the record named once.
    message = str(raised.value)
    assert message.startswith("granular: ") and "granular-0.24.2/normal" in message, message
    assert message.count("record 0") == 1, message
    buf, offsets = granular.read_batch_packed([2, 0], field="bytes")
    assert bytes(buf[offsets[0] : offsets[1]]) == granular[2]["bytes"]
    assert bytes(buf[offsets[1] : offsets[2]]) == granular[0]["bytes"]
    with pytest.raises(TypeError):
        granular.read_batch_packed([0], field=3)


def test_reused_buffers_leave_held_views_alone(ds):
    """Reads reuse the dataset's batch buffers, but never one a view still holds."""
    copied = ds.read_batch(range(0, 300, 7))
    held = ds.read_batch(range(0, 300, 7), copy=False)
    addresses = set()
    for k in range(50):
        batch = ds.read_batch([(k * 13 + j) % 300 for j in range(64)], copy=False)
        addresses.add(np.frombuffer(batch[0]["data"].obj, np.uint8).ctypes.data)
        del batch
    assert len(addresses) < 50  # released buffers are read into again
    assert [bytes(v["data"]) for v in held] == [c["data"] for c in copied]


def test_masks_and_unordered_collections_are_not_indices(ds):
    """Booleans are a mask, not indices 0 and 1; text, bytes, sets and dicts iterate as
    something else than an ordered list of indices. All are refused in every reading call,
    while a zero-dimensional integer array names one record like an int."""
    mask = np.zeros(len(ds), dtype=bool)
    mask[[3, 7]] = True
    refused = [mask, [True, False], [0, True], True, np.array(True), np.True_, "01",
               b"\x01\x02", bytearray(b"\x01"), memoryview(b"\x01"), {1, 2}, frozenset([1]),
               {1: 2}]
    for key in refused:
        for call in (lambda: ds[key], lambda: ds.read_batch(key), lambda: ds.read_batch_packed(key)):
            with pytest.raises(TypeError):
                call()
    with pytest.raises(TypeError, match="flatnonzero"):
        ds.read_batch(mask)
    assert same(ds[np.flatnonzero(mask)], [ds[3], ds[7]])
    assert same(ds[np.array(7)], ds[7])
    assert same(ds[np.array(-1, dtype=np.int16)], ds[len(ds) - 1])


def test_counts_and_indices_are_checked_as_python_checks_them(ds, tmp_path):
    """A negative or too large count (batch size, seed, threads, records ...) is a
    ValueError, not an OverflowError; `read(i)` takes negative and huge indices as `ds[i]`
    does; sizes far beyond the dataset read it without reserving memory for them."""
    n = len(ds)
    assert same(ds.read(-1), ds[n - 1])
    with pytest.raises(IndexError, match="does not fit in 64 bits"):
        ds.read(2**64)
    # Each error names its argument, as pyo3 names one in a TypeError.
    for name, call in (
        ("batch_size", lambda: ds.plan(batch_size=-1)),
        ("seed", lambda: ds.plan(batch_size=4, seed=-1)),
        ("epochs", lambda: ds.plan(batch_size=4, epochs=-1)),
        ("threads", lambda: ds.stream(batch_size=4, threads=-1)),
        ("prefetch", lambda: ds.stream(batch_size=4, prefetch=-1)),
        ("interleave", lambda: ds.stream(batch_size=4, interleave=(2, -1))),
        ("seed", lambda: ds.plan(batch_size=4, seed=2**64)),
        ("batch_rows", lambda: ds.arrow_stream(batch_rows=-5)),
        ("stop", lambda: ds.arrow_stream(stop=-5)),
        ("records", lambda: reel.generate(tmp_path / "x.ffr", records=-1)),
        ("max_record", lambda: reel.generate(tmp_path / "x.ffr", max_record=2**70)),
        ("records", lambda: reel.ffrecord.Writer(tmp_path / "y.ffr", records=-1)),
        ("part", lambda: reel.ffrecord.Writer(tmp_path / "y.ffr", part=(-1, 2))),
        ("shard", lambda: reel.convert(golden_root() / FFR, tmp_path / "c", to="syrah", shard=(0, -2))),
        ("cache_size", lambda: reel.open(golden_root() / FFR, cache_size=-1)),
        ("n", lambda: ds.plan(batch_size=4).skip(-1)),
    ):
        with pytest.raises(ValueError, match=f"^argument '{name}': (cannot be negative|must be at most)"):
            call()
    for part in ((5, 2), (2, 2), (0, 0)):
        with pytest.raises(ValueError, match="does not exist"):
            reel.ffrecord.Writer(tmp_path / "parts", part=part)
    assert not (tmp_path / "parts").exists()
    with pytest.raises(ValueError, match="at most 1024"):
        ds.stream(batch_size=4, threads=1025)
    for batch_size in (2**34, sys.maxsize, 2**64 - 1):
        batches = list(ds.stream(batch_size=batch_size, shuffle="none", epochs=1, threads=0))
        assert [len(b) for b in batches] == [n]
    sizes = [len(b) for b in ds.stream(batch_size=128, epochs=1, threads=1, prefetch=2**40)]
    assert sizes == [128, 128, n - 256]


def test_out_of_range_errors_name_the_dataset_and_record(ds):
    """Every way of reading an index out of range says which dataset and record."""
    path = str(golden_root() / FFR)
    n = len(ds)
    for call in (
        lambda: ds[n],
        lambda: ds.read(n),
        lambda: ds.read_batch([0, n]),
        lambda: ds.read_batch_packed(np.array([n])),
        lambda: ds[[n]],
    ):
        with pytest.raises(reel.OutOfRangeError) as e:
            call()
        assert (e.value.format, e.value.path, e.value.record) == ("ffrecord", path, n)
        assert str(e.value).count(str(n)) == 2  # the record and the dataset's length, once each
    with pytest.raises(reel.OutOfRangeError) as e:
        ds[-n - 1]
    assert (e.value.format, e.value.path, e.value.record) == ("ffrecord", path, None)


def test_mapped_false_reads_into_the_batch_buffer(tmp_path):
    """`mapped=False` never lends the file's mapping: views are over reel's batch buffer
    (smaller than the file), with the same bytes as the mapped views."""
    path = tmp_path / "big.ffr"
    records = [bytes([k]) * (40 << 10) for k in range(6)]
    with reel.ffrecord.Writer(path) as w:
        for r in records:
            w.write({"data": r})
    size = os.path.getsize(path)
    ds = reel.open(path, backend="mmap")
    lent = ds.read_batch([4, 1], copy=False)
    assert all(len(r["data"].obj) == size for r in lent)
    for got in (
        ds.read_batch([4, 1], copy=False, mapped=False),
        ds.read(4, copy=False, mapped=False),
        next(iter(ds.stream(batch_size=2, shuffle="none", epochs=1, copy=False, mapped=False))),
    ):
        got = got if isinstance(got, list) else [got]
        assert all(len(r["data"].obj) < size for r in got)
    assert [bytes(r["data"]) for r in ds.read_batch([4, 1], copy=False, mapped=False)] == [
        records[4],
        records[1],
    ]


def test_errors_map_kinds_and_keep_context(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        reel.open(tmp_path / "missing.ffr")
    assert isinstance(e.value, reel.NotFoundError) and isinstance(e.value, reel.ReelError)
    assert e.value.kind == "not-found" and e.value.path == str(tmp_path / "missing.ffr")
    assert str(tmp_path / "missing.ffr") in str(e.value)

    with pytest.raises(ValueError, match="unknown backend"):
        reel.open(golden_root() / FFR, backend="carrier-pigeon")
    with pytest.raises(ValueError, match="unknown format"):
        reel.open(golden_root() / FFR, format="csv")

    flipped = golden_root() / "ffrecord/corrupt/record_byte_flip"
    ds = reel.open(flipped)
    with pytest.raises(reel.ChecksumError) as e:
        ds[3]
    err = e.value
    assert isinstance(err, reel.CorruptError)
    assert (err.kind, err.format, err.record) == ("checksum", "ffrecord", 3)
    assert err.path == str(flipped / "data.ffr") and err.offset is not None
    assert str(err).startswith(f"ffrecord: {flipped / 'data.ffr'}: record 3 at byte {err.offset}: ")
    # Without verification the damaged record reads, like the reference's check_data=False.
    assert len(reel.open(flipped, verify=False)[3]["data"]) == 24


def test_pickle_reopens_by_path(ds):
    again = pickle.loads(pickle.dumps(ds))
    assert isinstance(again, reel.Dataset) and again is not ds
    assert same(again[[0, 150, 299]], ds[[0, 150, 299]])
    gulp = reel.open(golden_root() / "gulpio2/normal", decode_images=False, backend="pread")
    g2 = pickle.loads(pickle.dumps(gulp))
    assert g2.backend == "pread" and same(g2[0], gulp[0]) and isinstance(g2[0]["frames"][0], bytes)


@pytest.mark.parametrize("backend", ["auto", "pread", "mmap", "memory"])
def test_backends_agree(backend, ds):
    other = reel.open(golden_root() / FFR, backend=backend)
    assert same(other[:], ds[:])


def test_threads_share_one_dataset(ds):
    expected = ds[:]
    failures = []

    def worker(seed):
        rng = random.Random(seed)
        try:
            for _ in range(40):
                idx = [rng.randrange(len(ds)) for _ in range(32)]
                got = ds.read_batch(idx, copy=bool(seed % 2))
                for i, r in zip(idx, got):
                    if bytes(r["data"]) != expected[i]["data"]:
                        failures.append((seed, i))
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(repr(e))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_reads_release_the_gil():
    """A read lets another Python thread run: with a long switch interval, the spinning
    thread can only get the GIL if the read releases it."""
    ds = reel.open(golden_root() / FFR, backend="pread")
    everything = list(range(len(ds)))
    ds.read_batch(everything)  # warm
    go = threading.Event()
    state = {"stop": False, "ticks": 0}

    def spin():
        go.wait()
        while not state["stop"]:
            state["ticks"] += 1

    old = sys.getswitchinterval()
    t = threading.Thread(target=spin)
    t.start()
    sys.setswitchinterval(2.0)
    try:
        go.set()
        time.sleep(0.05)  # the spinner takes the GIL; we get it back after the interval
        # On a busy machine the spinner may not be scheduled during one short read, so read
        # until it has ticked, for less than the switch interval: reads that kept the GIL
        # would not let it tick before the interval forces a switch.
        before = state["ticks"]
        deadline = time.monotonic() + 1.5
        for _ in range(500):
            ds.read_batch(everything * 20)
            if state["ticks"] != before or time.monotonic() > deadline:
                break
        seen = state["ticks"] - before
    finally:
        state["stop"] = True
        sys.setswitchinterval(old)
        t.join()
    assert seen > 0


HOSTILE_SOURCES = [
    ("ffrecord/normal", "data.ffr", "ffrecord"),
    ("syrah/normal", "data.syr", "syrah"),
    ("ofrecord/normal", "part-00000", "ofrecord"),
    ("granular/granular-0.24.2/normal", "arr.idx", "granular"),
    ("granular/granular-0.24.2/normal", "meta.bag", "granular"),
    ("gulpio2/normal", "meta_0.gmeta", "gulp"),
    ("gulpio2/normal", "data_0.gulp", "gulp"),
]


@pytest.mark.parametrize("case,victim,fmt", HOSTILE_SOURCES)
def test_hostile_files_raise_reel_errors(tmp_path, case, victim, fmt):
    """Truncations and byte flips anywhere give reel errors (or data), never a crash."""
    rng = random.Random(victim)
    original = (golden_root() / case / victim).read_bytes()
    for trial in range(12):
        work = tmp_path / f"t{trial}"
        shutil.copytree(golden_root() / case, work)
        data = bytearray(original)
        if trial % 3 == 0:
            data = data[: rng.randrange(len(data))]
        else:
            for _ in range(1 + trial):
                data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        (work / victim).write_bytes(bytes(data))
        try:
            ds = reel.open(work, format=fmt)
            for i in range(min(len(ds), 50)):
                try:
                    ds[i]
                except reel.ReelError:
                    pass
            ds[: min(len(ds), 50)]
        except reel.ReelError as e:
            assert e.kind in ("corrupt", "checksum", "unsupported", "limit", "io", "out-of-range", "not-found"), e


def test_random_bytes_are_not_a_dataset(tmp_path):
    rng = random.Random(7)
    for ext in ("ffr", "syr", "bag"):
        p = tmp_path / f"junk.{ext}"
        p.write_bytes(bytes(rng.randrange(256) for _ in range(300)))
        with pytest.raises(reel.ReelError):
            fmt = {"ffr": "ffrecord", "syr": "syrah", "bag": "granular"}[ext]
            reel.open(p, format=fmt)[:]


@pytest.mark.parametrize("backend", ["auto", "io_uring", "mmap"])
def test_forked_child_reads_while_parent_reads(backend):
    """A forked child opens its own files (io_uring rings are not shared with the parent);
    parent and child read the same dataset at the same time and both get the right bytes."""
    try:
        ds = reel.open(golden_root() / FFR, backend=backend)
    except reel.UnsupportedError:
        pytest.skip(f"{backend} is not available on this machine")
    expected = [r["data"] for r in ds[:]]
    ds.read_batch(list(range(len(ds))))  # the parent's backend is in use before the fork
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        ok = all(bytes(x["data"]) == expected[i] for _ in range(20) for i, x in enumerate(ds[:]))
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    for _ in range(20):
        assert [x["data"] for x in ds[:]] == expected
    assert os.read(r, 1) == b"1"
    os.waitpid(pid, 0)


@pytest.mark.parametrize("backend", ["mmap", "pread"])
def test_a_forked_child_opens_the_dataset_again_and_its_parent_does_not(tmp_path, backend):
    """Told apart by the bytes: the file at the dataset's path is replaced after the parent
    opened it. The parent keeps reading the file it opened; a forked child opens the path
    again on its first read and reads the new file, and so does the child of that child
    after the path is replaced once more (each fork is seen, not only the first)."""

    def write(path, payload: bytes) -> None:
        with reel.ffrecord.Writer(path, overwrite=True) as w:
            for _ in range(3):
                w.write({"data": payload})

    path = tmp_path / "ds.ffr"
    write(path, b"old")
    ds = reel.open(path, backend=backend)
    assert ds[0]["data"] == b"old"
    write(path, b"new")  # renamed over the path: the parent's descriptor keeps the old file
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        seen = [ds[0]["data"]]
        write(path, b"third")
        grandchild = os.fork()
        if grandchild == 0:
            os.write(w, ds[1]["data"].ljust(8))
            os._exit(0)
        os.waitpid(grandchild, 0)
        seen.append(ds[2]["data"])  # the child's own source, opened before the second fork
        os.write(w, b"".join(s.ljust(8) for s in seen))
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    got = b""
    while chunk := os.read(r, 64):
        got += chunk
    os.close(r)
    # The grandchild wrote first, then the child its two reads.
    assert [got[k : k + 8].strip() for k in range(0, 24, 8)] == [b"third", b"new", b"new"]
    assert [x["data"] for x in ds[:]] == [b"old"] * 3


FORKS_WHILE_THREADS_READ = r"""
import os, sys, threading, time
import reel
ds = reel.open(sys.argv[1], backend=sys.argv[2])
views = ds.read_batch(list(range(20)), copy=False)  # buffers of this process's pool
stop = threading.Event()
def loop(k):
    while not stop.is_set():
        ds.read_batch([(k * 7 + j) % len(ds) for j in range(32)])
threads = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(3)]
for t in threads:
    t.start()
hung = 0
for trial in range(400):
    pid = os.fork()
    if pid == 0:
        # A child's first read opens the dataset again; an inherited view is dropped
        # here, its buffer belonging to the parent's pool.
        ok = len(ds.read_batch([1, 2, 3])) == 3 and len(ds[5]["data"]) > 0
        del views[:]
        os._exit(0 if ok else 3)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if status != 0:
                print(f"child {trial} exited with {status}", flush=True)
                sys.exit(1)
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            hung += 1
            break
        time.sleep(0.005)
stop.set()
print(f"hung {hung}", flush=True)
"""


@pytest.mark.parametrize("backend", ["mmap", "pread", "auto"])
def test_forked_children_read_while_the_parents_threads_read(tmp_path, backend):
    """A child forked while other threads of the parent were reading the same dataset (a
    DataLoader forking its workers while the main process reads) reads at once: it waited
    for ever on a lock one of those threads held at the fork (1-2 children in 100, and a
    DataLoader epoch timed out within a few epochs)."""
    import subprocess
    import sys

    path = tmp_path / "d.ffr"
    reel.generate(path, records=2000, max_record=1024)
    done = subprocess.run(
        [sys.executable, "-c", FORKS_WHILE_THREADS_READ, str(path), backend],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.strip() == "hung 0", done.stdout


def test_type_stubs_cover_the_extension():
    """Every public name of the compiled module is declared in _reel.pyi, and vice versa."""
    import ast
    import pathlib

    import reel._reel as ext

    stub = pathlib.Path(reel.__file__).with_name("_reel.pyi")
    tree = ast.parse(stub.read_text())
    declared = {
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
    } | {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = {n for n in dir(ext) if not n.startswith("_")} | {"__version__"}
    assert public <= declared | {"__version__"}, public - declared
    assert {n for n in declared if not n.startswith("_")} <= public | {"StrPath", "Record"}
    assert stub.with_name("py.typed").exists()


def test_stream_hands_large_mmap_records_out_of_the_mapping(tmp_path):
    """With mmap, records of 32 KiB and more reach Python as views of the mapping itself
    (the loader checks their CRC in place and copies nothing); the views stay valid after
    the stream and the dataset are gone, because they hold the mapping."""
    path = tmp_path / "big.ffr"
    records = [bytes([k]) * (32 * 1024 + k) for k in range(24)]
    with reel.ffrecord.Writer(path) as w:
        for r in records:
            w.write({"data": r})
    size = os.path.getsize(path)
    ds = reel.open(path, backend="mmap")
    batches = list(ds.stream(batch_size=8, shuffle="none", epochs=1, copy=False))
    views = [r["data"] for b in batches for r in b]
    assert [bytes(v) for v in views] == records
    for v in views:
        assert isinstance(v, memoryview) and v.readonly
        # The buffer behind the view is the whole mapped file, not a batch-sized copy.
        assert isinstance(v.obj, reel.BatchBuffer) and len(v.obj) == size
    del batches, ds
    assert [bytes(v) for v in views] == records
    # Other backends, and small records, are copied into the batch.
    copied = reel.open(path, backend="pread").stream(batch_size=8, shuffle="none", epochs=1, copy=False)
    first = next(iter(copied))[0]["data"]
    assert len(first.obj) < size


def test_mmap_reads_hand_out_records_where_they_lie(tmp_path):
    """Records the source can lend (mmap, FFRecord, at least 32 KiB on average) point into
    the mapping: `copy=False` views share it (one buffer per file, kept alive by the views
    after the dataset is gone) and `bytes` are made straight from it."""
    root = tmp_path / "lent"
    root.mkdir()
    size = 40 << 10
    rng = random.Random(3)
    want = []
    for part in range(2):
        with reel.ffrecord.Writer(root / f"part{part}.ffr") as w:
            for _ in range(3):
                data = rng.randbytes(size)
                w.write({"data": data})
                want.append(data)
    ds = reel.open(root, backend="mmap")
    order = [1, 0, 4, 3, 5, 2]
    copied = ds.read_batch(order)
    assert [r["data"] for r in copied] == [want[i] for i in order]
    assert all(type(r["data"]) is bytes for r in copied)
    viewed = ds.read_batch(order, copy=False)
    assert [bytes(r["data"]) for r in viewed] == [want[i] for i in order]
    addr = {i: np.frombuffer(r["data"], np.uint8).ctypes.data for i, r in zip(order, viewed)}
    # Where the file has them (record 0 before record 1, right after it), not in the order
    # asked as in a batch buffer; the same addresses on another read.
    assert addr[1] - addr[0] == size and addr[4] - addr[3] == size
    again = ds.read_batch([0], copy=False)[0]["data"]
    assert np.frombuffer(again, np.uint8).ctypes.data == addr[0]
    # One buffer object per file the records lie in.
    owners = {id(r["data"].obj) for r in viewed}
    assert len(owners) == 2 and all(isinstance(r["data"].obj, reel.BatchBuffer) for r in viewed)
    # Through pread the records are copied into a batch buffer: in the order asked.
    pread = reel.open(root, backend="pread").read_batch([1, 0], copy=False)
    step = np.frombuffer(pread[1]["data"], np.uint8).ctypes.data - np.frombuffer(pread[0]["data"], np.uint8).ctypes.data
    assert step == size
    import warnings

    from reel.torch import to_tensor

    kept = viewed[2]["data"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: the buffer is read-only
        tensor = to_tensor(viewed[3]["data"])
    assert tensor.data_ptr() == addr[3]  # the tensor shares the mapping too
    del ds, copied, viewed, again, pread
    import gc

    gc.collect()
    # The view and the tensor keep the mapping alive.
    assert bytes(kept) == want[4] and tensor.numpy().tobytes() == want[3]


def test_the_benchmarks_rust_timing_reads_the_batches_it_is_given():
    """Dataset._time_rust_reads (bench_reads.py's in-process Rust side) reads what it is
    given: a batch out of range fails it, as the same read from Python does."""
    ds = reel.open(golden_root() / FFR)
    n = len(ds)
    assert ds._time_rust_reads([list(range(n)), [0], []]) > 0.0
    with pytest.raises(IndexError):
        ds._time_rust_reads([[0], [n]])
    with pytest.raises(IndexError):
        ds.read_batch_packed([n])


def test_threads_sharing_an_iterator_or_a_stream_each_take_their_own(tmp_path):
    """Several threads pulling from one iterator (or one loader stream) get every record
    (batch) once between them; they raised pyo3's "Already mutably borrowed"."""
    import threading

    path = tmp_path / "d.ffr"
    reel.generate(path, records=3000, max_record=200)
    ds = reel.open(path)
    want = sorted(r["data"] for r in ds)
    for make, unit in [
        (lambda: iter(ds), lambda item: [item["data"]]),
        (
            lambda: ds.stream(batch_size=16, shuffle="none", epochs=1, threads=2),
            lambda batch: [r["data"] for r in batch],
        ),
    ]:
        shared = make()
        got, errors, lock = [], [], threading.Lock()

        def pull():
            try:
                for item in shared:
                    with lock:
                        got.extend(unit(item))
            except Exception as e:  # noqa: BLE001 - recorded, asserted below
                errors.append(repr(e))

        threads = [threading.Thread(target=pull) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        assert errors == []
        assert sorted(got) == want
