"""reel.torch with a real DataLoader: workers under fork and spawn, sharding, resume."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is installed by .ci/run's environment")
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
