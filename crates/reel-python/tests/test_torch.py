"""reel.torch with a real DataLoader: workers under fork and spawn, sharding, resume."""

from __future__ import annotations

import os
import pickle
import time

import numpy as np
import pytest

import torch  # noqa: E402  (in tests/requirements.txt: missing, this fails)
import reel  # noqa: E402
import reel.torch  # noqa: E402
from conftest import golden_root, same  # noqa: E402

N = 300


@pytest.fixture(scope="module", autouse=True)
def unique_dataset(tmp_path_factory):
    """An FFRecord file whose records are all different, so a record tells its index."""
    global FFR
    FFR = tmp_path_factory.mktemp("torch") / "unique.ffr"
    with reel.ffrecord.Writer(FFR) as w:
        for i in range(N):
            w.write({"data": b"record %06d " % i + bytes(i % 97)})


def first_byte(record):
    """A picklable transform (spawned workers import it by name)."""
    return record["data"][:1]


def idx_of(expected):
    return {r["data"]: i for i, r in enumerate(expected)}


def test_index_tensors_name_records_like_lists():
    """A CPU tensor of indices (what `torch.randperm` gives) is read as an array, not item
    by item, and names the same records as the list of its values, negative ones included."""
    ds = reel.open(FFR)
    order = torch.randperm(N)[:64]
    want = [r["data"] for r in ds.read_batch(order.tolist())]
    assert [r["data"] for r in ds.read_batch(order)] == want
    assert [r["data"] for r in ds.read_batch(order.to(torch.int32))] == want
    assert [r["data"] for r in ds.read_batch(torch.tensor([-1, 0]))] == [
        ds[N - 1]["data"],
        ds[0]["data"],
    ]
    with pytest.raises(IndexError):
        ds.read_batch(torch.tensor([0, N]))


def test_import_reel_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, reel; reel.open; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_record_dataset_with_workers(context):
    ds = reel.torch.RecordDataset(FFR, backend="auto")
    expected = reel.open(FFR)[:]
    loader = torch.utils.data.DataLoader(
        ds, batch_size=32, num_workers=2, multiprocessing_context=context, collate_fn=list
    )
    got = [r for batch in loader for r in batch]
    assert same(got, expected)


def test_record_dataset_getitems_is_one_read():
    ds = reel.torch.RecordDataset(FFR, transform=lambda r: len(r["data"]))
    assert ds.__getitems__([3, 1, 3]) == [len(ds.dataset[3]["data"]), len(ds.dataset[1]["data"]), len(ds.dataset[3]["data"])]
    assert len(ds) == N


def test_writers_store_tensors_as_arrays(tmp_path):
    # A tensor was stored through `.item()`: a one-element tensor became a scalar and any
    # other failed with torch's RuntimeError.
    values = {
        "one": torch.tensor([5]),
        "grid": torch.arange(6, dtype=torch.int16).reshape(2, 3),
        "scalar": torch.tensor(2.5),
        "label": torch.tensor(3),
        "grad": torch.ones(2, requires_grad=True),
        "np": np.float32(1.5),
    }
    with reel.granular.Writer(tmp_path / "g") as w:
        w.write(values)
    back = reel.open(tmp_path / "g")[0]
    assert isinstance(back["one"], np.ndarray) and back["one"].tolist() == [5]
    assert back["grid"].dtype == np.int16 and back["grid"].tolist() == [[0, 1, 2], [3, 4, 5]]
    # 0-d tensors (a label) are numbers, as `item()` made them; a tensor that requires grad
    # is stored as its values.
    assert back["scalar"] == 2.5 and isinstance(back["scalar"], float)
    assert back["label"] == 3 and isinstance(back["label"], int)
    assert back["grad"].tolist() == [1.0, 1.0]
    assert back["np"] == 1.5 and isinstance(back["np"], float)


def test_to_tensor_shares_memory():
    ds = reel.open(FFR)
    view = ds.read(7, copy=False)["data"]
    t = reel.torch.to_tensor(view)
    assert t.dtype == torch.uint8 and bytes(t.numpy()) == bytes(view)
    assert t.data_ptr() == np.frombuffer(view, np.uint8).ctypes.data
    arr = reel.open(golden_root() / "syrah/normal")[0]["f32_3d"]
    ta = reel.torch.to_tensor(arr)
    assert ta.dtype == torch.float32 and ta.data_ptr() == arr.ctypes.data


def streaming(**kw):
    kw.setdefault("batch_size", 16)
    kw.setdefault("seed", 11)
    kw.setdefault("collate", None)
    return reel.torch.StreamingDataset(FFR, **kw)


def batches_as_indices(batches, lookup):
    return [[lookup[r["data"]] for r in b] for b in batches]


def test_streaming_epoch_is_a_deterministic_permutation():
    expected = reel.open(FFR)[:]
    lookup = idx_of(expected)
    ds = streaming()
    epoch0 = batches_as_indices(list(ds), lookup)
    assert sorted(i for b in epoch0 for i in b) == list(range(N))  # every record once
    assert epoch0 == batches_as_indices(list(streaming()), lookup)  # same seed, same order
    assert epoch0 != [list(range(k, min(k + 16, N))) for k in range(0, N, 16)]  # shuffled
    ds.set_epoch(1)
    epoch1 = batches_as_indices(list(ds), lookup)
    assert epoch1 != epoch0 and sorted(i for b in epoch1 for i in b) == list(range(N))
    assert len(ds) == len(epoch1) == 19


def test_streaming_ranks_split_the_epoch():
    lookup = idx_of(reel.open(FFR)[:])
    shares = [batches_as_indices(list(streaming(rank=r, world_size=3)), lookup) for r in range(3)]
    flat = [i for s in shares for b in s for i in b]
    assert sorted(flat) == list(range(N))  # disjoint, and together the whole epoch
    assert len({len(s) for s in shares}) == 1  # every rank the same number of steps


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_streaming_with_dataloader_workers(context):
    lookup = idx_of(reel.open(FFR)[:])
    ds = streaming(rank=1, world_size=2)
    alone = batches_as_indices(list(ds), lookup)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=None, num_workers=2, multiprocessing_context=context
    )
    # The workers take batches in turn: the same batches in the same order as one process.
    assert batches_as_indices(list(loader), lookup) == alone


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_persistent_workers_follow_set_epoch_and_load_state_dict(context):
    # A persistent worker keeps the copy of the dataset it started with. It used to repeat
    # its first epoch whatever set_epoch and load_state_dict said in the main process.
    lookup = idx_of(reel.open(FFR)[:])
    ds = streaming(rank=1, world_size=2)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=None, num_workers=2, persistent_workers=True,
        multiprocessing_context=context,
    )

    def alone(epoch, state=None):
        """The batches one process reads for `epoch` (from `state`), without workers."""
        other = streaming(rank=1, world_size=2)
        other.set_epoch(epoch)
        if state is not None:
            other.load_state_dict(state)
        return batches_as_indices(list(other), lookup)

    first_workers = None
    for epoch in (0, 1, 2):
        ds.set_epoch(epoch)
        assert batches_as_indices(list(loader), lookup) == alone(epoch), f"epoch {epoch}"
        workers = loader._iterator._workers
        pids = [w.pid for w in workers]
        first_workers = first_workers or pids
        assert pids == first_workers  # the same worker processes every epoch
    epoch2 = alone(2)
    assert epoch2 != alone(1)

    # Resume mid-epoch into running workers, then a whole epoch again.
    ds.set_epoch(1)
    state = ds.state_dict(batches_seen=3)
    ds.set_epoch(2)
    ds.load_state_dict(state)
    assert batches_as_indices(list(loader), lookup) == alone(1)[3:]
    ds.set_epoch(3)
    assert batches_as_indices(list(loader), lookup) == alone(3)
    assert [w.pid for w in loader._iterator._workers] == first_workers


def test_a_dataset_pickled_outside_a_worker_start_keeps_its_schedule():
    # Shared memory only goes to a process being started; a copy pickled otherwise (a
    # checkpoint, Ray) has its own block with the schedule it was pickled with.
    ds = streaming()
    ds.set_epoch(4)
    copy = pickle.loads(pickle.dumps(ds))
    assert copy._shared.read() == (4, None)
    ds.set_epoch(5)
    assert copy._shared.read() == (4, None) and ds._shared.read() == (5, None)
    lookup = idx_of(reel.open(FFR)[:])
    fresh = streaming()
    fresh.set_epoch(4)
    assert batches_as_indices(list(copy), lookup) == batches_as_indices(list(fresh), lookup)


def test_a_bad_state_is_refused_when_it_is_loaded():
    # Checked by the loader at once: with workers the next iteration runs in them.
    good = streaming().state_dict(batches_seen=2)
    for bad in (
        {**good, "loader": {**good["loader"], "seed": 12}},  # another schedule's state
        {**good, "loader": {**good["loader"], "padding": "x" * 5000}},  # unknown key
    ):
        ds = streaming()
        ds.set_epoch(3)
        with pytest.raises(ValueError):
            ds.load_state_dict(bad)
        assert ds.epoch == 3 and ds._resume is None and ds._shared.read() == (3, None)


def test_a_schedule_too_large_to_share_is_refused():
    from reel._worker_schedule import WorkerSchedule

    block = WorkerSchedule()
    block.publish(7, "{}")
    with pytest.raises(ValueError, match="too large"):
        block.publish(8, "x" * 5000)
    assert block.read() == (7, "{}")


@pytest.mark.parametrize("workers", [0, 2])
def test_streaming_resume_is_exact(workers):
    lookup = idx_of(reel.open(FFR)[:])
    ds = streaming(shuffle="granular")
    ds.set_epoch(2)
    full = batches_as_indices(list(ds), lookup)
    for cut in (0, 1, 5, len(full) - 1, len(full)):
        first = streaming(shuffle="granular")
        first.set_epoch(2)
        loader = torch.utils.data.DataLoader(first, batch_size=None, num_workers=workers)
        it = iter(loader)
        seen = [next(it) for _ in range(cut)]
        # In-process iteration counts what it delivered; with workers the loop says.
        state = first.state_dict(batches_seen=cut) if workers else first.state_dict()
        del it
        state = pickle.loads(pickle.dumps(state))  # checkpoints are plain data
        second = streaming(shuffle="granular")
        second.load_state_dict(state)
        rest_loader = torch.utils.data.DataLoader(second, batch_size=None, num_workers=workers)
        rest = batches_as_indices(list(rest_loader), lookup)
        if cut == len(full):
            assert rest == [] or second.epoch == 3  # the epoch was complete
            continue
        assert batches_as_indices(seen, lookup) + rest == full, f"cut at {cut}"


def test_streaming_collates_and_transforms():
    ds = reel.torch.StreamingDataset(
        FFR, batch_size=8, transform=lambda r: torch.tensor(len(r["data"]))
    )
    batch = next(iter(ds))
    assert isinstance(batch, torch.Tensor) and batch.shape == (8,)


def test_streaming_refuses_bad_configuration():
    with pytest.raises(ValueError):
        streaming(rank=3, world_size=2)
    with pytest.raises(ValueError):
        streaming(shuffle="sideways")
    with pytest.raises(ValueError):
        streaming().state_dict(batches_seen=10_000)
    with pytest.raises(ValueError):
        other = streaming(seed=12)
        other.load_state_dict(streaming().state_dict(batches_seen=2))
        next(iter(other))


def loader_threads() -> list[str]:
    """Names of this process's threads that are reel-loader workers."""
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # the thread ended meanwhile
            pass
    return [n for n in names if n.startswith("reel-loader")]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_streaming_reads_ahead_on_rust_threads():
    lookup = idx_of(reel.open(FFR)[:])
    by_threads = {}
    for threads, prefetch in [(0, None), (1, 1), (3, None), (2, 7)]:
        # 75 batches: more than the threads can read ahead, so none has finished yet.
        ds = streaming(threads=threads, prefetch=prefetch, rank=1, world_size=2, batch_size=2)
        it = iter(ds)
        first = next(it)
        # reel-loader's own threads read ahead while this thread holds the first batch. (A
        # thread names itself once it runs, which on a busy machine may take a moment.)
        deadline = time.monotonic() + 10
        while len(loader_threads()) < threads and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(loader_threads()) == threads
        by_threads[(threads, prefetch)] = batches_as_indices([first, *it], lookup)
        del it
        # An exhausted or dropped stream stops its threads. A joined thread can stay listed
        # in /proc for a moment after the join returns (the kernel reaps it just after it
        # wakes the joiner), so look again for a little while before failing.
        deadline = time.monotonic() + 5
        while loader_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert loader_threads() == []
    plan = [b for b, _ in reel.open(FFR).plan(batch_size=2, seed=11, rank=1, world_size=2, epochs=1)]
    for got in by_threads.values():
        assert got == plan  # the batches do not depend on the read-ahead
    with pytest.raises(ValueError):
        streaming(threads=-1)
    with pytest.raises(ValueError):
        streaming(prefetch=0)


def test_stream_interleave_takes_every_nth_batch():
    ds = reel.open(FFR)
    plan = [b for b, _ in ds.plan(batch_size=10, seed=3, epochs=1)]
    lookup = idx_of(ds[:])
    parts = [
        batches_as_indices(list(ds.stream(batch_size=10, seed=3, epochs=1, interleave=(3, k))), lookup)
        for k in range(3)
    ]
    assert [parts[k % 3][k // 3] for k in range(len(plan))] == plan
    with pytest.raises(ValueError):
        ds.stream(batch_size=10, interleave=(2, 2))


def test_tensors_share_reels_buffer_without_a_copy(monkeypatch):
    """tensors=True: each byte field goes from the read to a tensor over reel's batch buffer."""
    seen = []
    original = reel.torch._as_tensors

    def spy(record):
        out = original(record)
        seen.append((record["data"], out["data"]))
        return out

    monkeypatch.setattr(reel.torch, "_as_tensors", spy)
    expected = reel.open(FFR)[:]
    for ds in (
        reel.torch.RecordDataset(FFR, tensors=True),
        streaming(tensors=True, batch_size=50, threads=2),
    ):
        seen.clear()
        got = ds.__getitems__([4, 200, 4]) if isinstance(ds, reel.torch.RecordDataset) else next(iter(ds))
        assert len(seen) == len(got)
        owners = {id(view.obj) for view, _ in seen}
        assert len(owners) == 1  # one batch buffer holds the whole batch
        for view, tensor in seen:
            assert isinstance(view, memoryview) and isinstance(view.obj, reel.BatchBuffer)
            assert tensor.dtype == torch.uint8
            assert tensor.data_ptr() == np.frombuffer(view, np.uint8).ctypes.data  # same memory
        for r in got:
            assert isinstance(r["data"], torch.Tensor)
            assert bytes(r["data"].numpy()) in {e["data"] for e in expected}


def test_tensors_stay_valid_after_the_dataset_is_gone():
    import gc

    expected = reel.open(FFR)[:]
    lookup = idx_of(expected)
    ds = streaming(tensors=True, batch_size=20, threads=2, prefetch=2)
    it = iter(ds)
    kept = next(it)
    rest = list(it)  # the loader recycles every other batch's buffer meanwhile
    assert len(rest) == 14
    ds2 = reel.torch.RecordDataset(FFR, tensors=True)
    held = ds2.__getitems__(list(range(40)))
    for _ in range(20):
        ds2.__getitems__(list(range(40, 80)))  # reads reusing the dataset's buffers
    del ds, it, rest, ds2
    gc.collect()
    for r in kept:
        assert bytes(r["data"].numpy()) in lookup
    assert [bytes(r["data"].numpy()) for r in held] == [e["data"] for e in expected[:40]]


WRITE_TO_TENSORS = r"""
import sys
import reel, reel.torch
path, backend = sys.argv[1], sys.argv[2]
want = [bytes(r["data"]) for r in reel.open(path)[:]]
for ds in (
    reel.torch.RecordDataset(path, tensors=True, backend=backend),
    reel.torch.StreamingDataset(
        path, batch_size=4, shuffle="none", tensors=True, collate=None, backend=backend
    ),
):
    got = ds.__getitems__([0, 5, 1]) if isinstance(ds, reel.torch.RecordDataset) else next(iter(ds))
    for r in got:
        r["data"].add_(1)  # in place
# The file, and fresh reads, are untouched.
assert [bytes(r["data"]) for r in reel.open(path, backend=backend)[:]] == want
print("ok")
"""


@pytest.mark.parametrize("backend", ["auto", "mmap", "pread"])
def test_writing_to_tensors_changes_only_the_batch(tmp_path, backend):
    """tensors=True reads into reel's batch buffer, never lending the file's mapping: torch
    ignores a buffer's read-only flag, and an in-place write to a tensor over a read-only
    mapping killed the process (SIGSEGV) with mmap and auto on records of 32 KiB and more.
    Run in a child, so that a regression fails this test instead of the whole session."""
    import subprocess
    import sys

    path = tmp_path / "big.ffr"
    with reel.ffrecord.Writer(path) as w:
        for k in range(12):
            w.write({"data": bytes([k]) * (64 << 10)})
    run = subprocess.run(
        [sys.executable, "-c", WRITE_TO_TENSORS, str(path), backend],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "ok"


def test_tensors_leave_arrays_torch_cannot_hold_as_arrays():
    """A field whose NumPy dtype torch has no tensor type for (Granular's text array) stays
    a NumPy array; numeric arrays become tensors sharing their memory."""
    root = golden_root() / "granular/granular-0.24.2/normal"
    plain = reel.open(root)
    record = reel.torch.RecordDataset(root, tensors=True)[10]
    assert set(record) == set(plain[10])
    kinds = {name: type(value) for name, value in record.items()}
    for name, value in plain[10].items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "USO":
            assert kinds[name] is np.ndarray and (record[name] == value).all()
        elif isinstance(value, np.ndarray):
            assert kinds[name] is torch.Tensor
            assert (record[name].numpy() == value).all()
    assert np.ndarray in kinds.values(), "the case has a text array"


def test_boolean_tensors_are_not_indices():
    """A torch bool mask is refused like a NumPy one, not read as indices 0 and 1."""
    ds = reel.open(FFR)
    mask = torch.zeros(N, dtype=torch.bool)
    mask[[3, 7]] = True
    for call in (lambda: ds[mask], lambda: ds.read_batch(mask), lambda: ds.read_batch_packed(mask)):
        with pytest.raises(TypeError, match="flatnonzero"):
            call()
    assert same(ds[mask.nonzero().flatten()], [ds[3], ds[7]])
    assert same(ds[torch.tensor(7)], ds[7])  # a 0-d tensor names one record
    with pytest.raises(TypeError, match="flatnonzero"):
        ds[torch.tensor(True)]


@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_a_loaded_state_resumes_the_next_iteration_only(workers, persistent):
    """Without set_epoch, the iterations after the resumed one read their epoch whole; it
    used to resume every one of them, each a tail of the epoch (40 % of it here)."""
    lookup = idx_of(reel.open(FFR)[:])
    whole = batches_as_indices(list(streaming()), lookup)
    ds = streaming()
    ds.load_state_dict(streaming().state_dict(batches_seen=6))
    loader = torch.utils.data.DataLoader(
        ds, batch_size=None, num_workers=workers, persistent_workers=persistent,
        **({"multiprocessing_context": "fork"} if workers else {}),
    )
    first = batches_as_indices(list(loader), lookup)
    assert first == whole[6:]
    for again in range(2):
        it = iter(loader)
        seen = [next(it) for _ in range(3)]
        # state_dict counts from the start of this iteration, which began at batch 0.
        assert ds.state_dict(batches_seen=3) == streaming().state_dict(batches_seen=3)
        rest = list(it)
        assert batches_as_indices(seen + rest, lookup) == whole, f"iteration {again + 2}"


def test_set_epoch_takes_any_integer_and_refuses_the_rest():
    lookup = idx_of(reel.open(FFR)[:])
    by_int = streaming()
    by_int.set_epoch(1)
    want = batches_as_indices(list(by_int), lookup)
    for epoch in (np.int64(1), np.uint8(1), torch.tensor(1)):
        ds = streaming()
        ds.set_epoch(epoch)
        assert type(ds.epoch) is int and batches_as_indices(list(ds), lookup) == want
    ds = streaming()
    ds.set_epoch(2)
    for bad, error in ((-1, ValueError), (2**64, ValueError), (1.5, TypeError), ("3", TypeError)):
        with pytest.raises(error, match="epoch"):
            ds.set_epoch(bad)
        assert ds.epoch == 2 and ds._shared.read() == (2, None)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_loaded_state_resumes_once_when_the_dataloaders_seed_repeats(context):
    """A DataLoader made each epoch with a generator seeded alike draws the same base seed,
    and fresh workers all count their first iteration: the iterations looked alike, so
    the state resumed every one of them, silently skipping the epoch's first batches."""
    lookup = idx_of(reel.open(FFR)[:])
    whole = batches_as_indices(list(streaming()), lookup)
    ds = streaming()
    ds.load_state_dict(streaming().state_dict(batches_seen=6))

    def loader():
        return torch.utils.data.DataLoader(
            ds, batch_size=None, num_workers=2, multiprocessing_context=context,
            generator=torch.Generator().manual_seed(0),
        )

    assert batches_as_indices(list(loader()), lookup) == whole[6:]
    it = iter(loader())
    seen = [next(it) for _ in range(3)]
    assert ds.state_dict(batches_seen=3) == streaming().state_dict(batches_seen=3)
    assert batches_as_indices(seen + list(it), lookup) == whole


def test_an_empty_share_of_the_last_step_is_an_empty_list():
    """300 records over 7 ranks, a record a batch: the last global step holds 6 records, so
    one rank's share is empty. Every rank takes the same number of steps; the empty batch
    is [] (the default collate failed on it, at the end of the first epoch)."""
    lookup = idx_of(reel.open(FFR)[:])
    world = 7
    shares = []
    for rank in range(world):
        ds = reel.torch.StreamingDataset(
            FFR, batch_size=1, rank=rank, world_size=world, shuffle="none",
            transform=lambda r: r["data"],
        )
        shares.append(list(torch.utils.data.DataLoader(ds, batch_size=None)))
    assert {len(s) for s in shares} == {N // world + 1}
    empty = [rank for rank, s in enumerate(shares) if s[-1] == []]
    assert len(empty) == world - N % world
    records = [lookup[b[0]] for s in shares for b in s if b != []]
    assert sorted(records) == list(range(N))


def test_a_state_taken_after_an_epochs_last_batch_stays_in_that_epoch():
    """The loader states the end of an epoch as the start of the next one; loaded, that
    moved the dataset to the next epoch, and a loop calling set_epoch(e) with the epoch it
    checkpointed read epoch e again."""
    lookup = idx_of(reel.open(FFR)[:])
    ds = streaming()
    assert len(list(ds)) == 19
    state = ds.state_dict()
    assert state["loader"]["epoch"] == 0
    resumed = streaming()
    resumed.load_state_dict(state)
    assert resumed.epoch == 0
    resumed.set_epoch(0)  # what the loop does with the epoch it saved: keeps the state
    assert list(resumed) == []  # the epoch is done
    resumed.set_epoch(1)
    next_epoch = streaming()
    next_epoch.set_epoch(1)
    assert batches_as_indices(list(resumed), lookup) == batches_as_indices(list(next_epoch), lookup)
    # A worker's count works alike: 19 batches seen is the end too.
    assert streaming().state_dict(batches_seen=19) == state
