"""reel.compat against the reference packages on the same files.

granular and gulpio2 are installed by name (tests/requirements.txt) and read the same golden
files side by side with the shims; ffrecord and syrah have no installable reference, so their
shims are checked against the reference behaviour recorded in the golden manifests here, and
on every golden case in test_compat_golden.py.
"""

from __future__ import annotations

import os
import pickle
import shutil

import numpy as np
import pytest

import reel
from conftest import check_bytes, golden_cases, golden_root, manifest, same, sha256
from reel.compat import ffrecord as cffrecord
from reel.compat import granular as cgranular
from reel.compat import gulpio2 as cgulpio2
from reel.compat import syrah as csyrah


# ---- ffrecord ---------------------------------------------------------------------------


def test_ffrecord_reader_matches_manifests():
    for case in ["normal", "one_record", "empty_records", "writer_quirk_nonbyte_buffer"]:
        m = manifest("ffrecord", case)
        r = cffrecord.FileReader(golden_root() / "ffrecord" / case / "data.ffr", check_data=True)
        assert r.n == m["record_count"]
        got = r.read(list(range(r.n)))
        assert all(isinstance(a, np.ndarray) and a.dtype == np.uint8 for a in got)
        for e, a in zip(m["records"], got):
            check_bytes(a.tobytes(), e["content"], f"{case} {e['index']}")
        if r.n:
            assert r.read_one(r.n - 1).tobytes() == got[-1].tobytes()


def test_ffrecord_tables_are_the_stored_ones():
    """get_offsets / get_checksums: as the reference, n + 1 int64 offsets ending at the
    file's size and n uint32 checksums, per file, equal to the manifests' tables."""
    for case in ["normal", "one_record", "empty_records", "empty"]:
        m = manifest("ffrecord", case)
        path = golden_root() / "ffrecord" / case / "data.ffr"
        r = cffrecord.FileReader(path)
        offsets, checksums = r.get_offsets(0), r.get_checksums(0)
        assert offsets.dtype == np.int64 and checksums.dtype == np.uint32
        want = [e["offset"] for e in m["records"]] + [path.stat().st_size]
        assert offsets.tolist() == want, case
        assert checksums.tolist() == [e["crc32"] for e in m["records"]], case
        assert np.diff(offsets).tolist() == [e["len"] for e in m["records"]], case
        assert not offsets.flags.writeable and not checksums.flags.writeable
        for bad in (1, -1):
            with pytest.raises(IndexError):
                r.get_offsets(bad)
        with pytest.raises(TypeError):
            r.get_checksums(0.0)
        r.close()
        with pytest.raises(RuntimeError, match="FileReader has been closed."):
            r.get_offsets(0)
    # The reference's worked example of zero records: get_offsets(0) == [12].
    empty = cffrecord.FileReader(golden_root() / "ffrecord/empty/data.ffr")
    assert empty.get_offsets(0).tolist() == [12]
    # Several files: each file's own tables, in the order of fnames.
    parts = cffrecord.FileReader(golden_root() / "ffrecord/multi_file/parts")
    for k, f in enumerate(parts.fnames):
        alone = reel.open(f)
        offsets = parts.get_offsets(k)
        assert len(offsets) == len(alone) + 1 and offsets[-1] == os.path.getsize(f)
        assert len(parts.get_checksums(k)) == len(alone)
    # The metadata checksum is checked as the reader checks it (check_data).
    flipped = golden_root() / "ffrecord/corrupt/header_meta_checksum_flip/data.ffr"
    lax = cffrecord.FileReader(flipped, check_data=False)
    assert len(lax.get_offsets(0)) == lax.n + 1


def test_ffrecord_reader_multi_file_and_directory():
    parts = golden_root() / "ffrecord/multi_file/parts"
    files = sorted(str(p) for p in parts.glob("*.ffr"))
    by_list = cffrecord.FileReader(files)
    by_dir = cffrecord.FileReader(parts)
    whole = reel.open(parts)[:]
    assert by_list.n == by_dir.n == len(whole)
    idx = [by_list.n - 1, 0, by_list.n // 2, 0]
    assert [a.tobytes() for a in by_list.read(idx)] == [whole[i]["data"] for i in idx]
    assert by_dir.read_one(idx[2]).tobytes() == whole[idx[2]]["data"]
    with pytest.raises(IndexError):
        by_list.read_one(by_list.n)


def test_ffrecord_reader_follows_reference_on_corruption():
    case = "corrupt/record_byte_flip"
    m = manifest("ffrecord", case)
    path = golden_root() / "ffrecord" / case / "data.ffr"
    behaviour = m["reference_reader_behaviour"]
    checked = cffrecord.FileReader(path, check_data=True)
    for probe in behaviour["read_one_check_data_true"]:
        if probe["outcome"] == "ok":
            check_bytes(checked.read_one(probe["index"]).tobytes(), probe["result"], "read_one")
        else:
            with pytest.raises(reel.ChecksumError):
                checked.read_one(probe["index"])
    with pytest.raises(reel.ChecksumError):
        checked.read(list(range(checked.n)))
    lax = cffrecord.FileReader(path, check_data=False)
    want = behaviour["read_batch_all_check_data_false"]["result"]["items"]
    for a, w in zip(lax.read(list(range(lax.n))), want):
        check_bytes(a.tobytes(), w, "check_data=False")
    # validate() checks the metadata checksum alone, as the reference's: this file's
    # header is intact, its damage is in a record.
    checked.validate()
    lax.validate()
    # A damaged header: opened without checks, as the reference opens it, then validate()
    # finds the metadata checksum wrong, whatever check_data said.
    flipped = golden_root() / "ffrecord/corrupt/header_meta_checksum_flip/data.ffr"
    unchecked = cffrecord.FileReader(flipped, check_data=False)
    assert unchecked.n == manifest("ffrecord", "corrupt/header_meta_checksum_flip")[
        "reference_reader_behaviour"
    ]["open_check_data_false"]["result"]["value"]
    with pytest.raises(reel.ChecksumError, match="metadata checksum"):
        unchecked.validate()
    # A legacy file (stored metadata checksum 0) passes, as in the reference.
    legacy = golden_root() / "ffrecord/corrupt/legacy_zero_meta_checksum/data.ffr"
    cffrecord.FileReader(legacy).validate()


def test_ffrecord_writer(tmp_path):
    path = tmp_path / "w.ffr"
    w = cffrecord.FileWriter(path, 3)
    for k in range(3):
        w.write_one(bytearray([k]) * (k + 1))
    w.close()
    r = cffrecord.FileReader(path)
    assert [a.tobytes() for a in r.read([0, 1, 2])] == [b"\x00", b"\x01\x01", b"\x02\x02\x02"]
    # Integers and buffers only, as the reference's binding: 0.9 read record 0, and
    # write_one(5) stored five zero bytes.
    assert r.read_one(np.int64(2)).tobytes() == b"\x02\x02\x02"
    with pytest.raises(TypeError):
        r.read_one(0.9)
    with pytest.raises(TypeError):
        r.read([0, 1.0])
    arr = cffrecord.FileWriter(tmp_path / "arr.ffr", 1)
    with pytest.raises(TypeError):
        arr.write_one(5)
    arr.write_one(np.arange(3, dtype=np.uint8))
    arr.close()
    assert cffrecord.FileReader(tmp_path / "arr.ffr").read_one(0).tolist() == [0, 1, 2]
    # As the reference: a copy reopens the files; a closed reader refuses to read.
    copy = pickle.loads(pickle.dumps(r))
    assert (copy.fnames, copy.check_data, copy.n) == (r.fnames, r.check_data, 3)
    assert copy.read_one(1).tobytes() == b"\x01\x01"
    r.close()
    for read in (lambda: r.read([0]), lambda: r.read_one(0)):
        with pytest.raises(RuntimeError, match="FileReader has been closed."):
            read()
    assert copy.read([2])[0].tobytes() == b"\x02\x02\x02"
    short = cffrecord.FileWriter(tmp_path / "short.ffr", 2)
    short.write_one(b"x")
    with pytest.raises(ValueError):
        short.close()
    assert not (tmp_path / "short.ffr").exists()


# ---- syrah ------------------------------------------------------------------------------


def test_syrah_file_matches_manifest():
    m = manifest("syrah", "normal")
    with csyrah.File(str(golden_root() / "syrah/normal/data.syr"), "r") as f:
        assert f.num_items() == m["record_count"]
        for e in m["records"][:50]:
            item = f.get_item(e["index"])
            assert list(item) == list(e["arrays"])
            for name, a in e["arrays"].items():
                d = a["decoded"]
                if "value" in d:
                    # Text is a one-element unicode array, as the reference returns it.
                    assert item[name].dtype.kind == "U" and item[name].tolist() == [d["value"]]
                else:
                    assert sha256(item[name].tobytes()) == d["sha256"]
                    assert same(f.get_array(e["index"], name), item[name])
        # The reference's index checks: IndexError past the end, ValueError below zero,
        # TypeError for a non-integer, KeyError for an unknown name; NumPy integers index.
        with pytest.raises(IndexError):
            f.get_item(m["record_count"])
        with pytest.raises(ValueError):
            f.get_item(-1)
        with pytest.raises(TypeError):
            f.get_item("0")
        with pytest.raises(KeyError):
            f.get_array(0, "no such array")
        assert same(f.get_item(np.int64(3)), f.get_item(3))
        # A dtype override reinterprets the stored bytes.
        f64 = f.get_array(0, "f64")
        assert f.get_array(0, "f64", dtype="uint8").tobytes() == f64.tobytes()
        assert f.get_array(0, "text", dtype="uint8").tobytes() == f.get_item(0)["text"][0].encode()
    with pytest.raises(OSError):
        f.num_items()


def test_syrah_file_write_mode(tmp_path):
    """The reference's add_item, and the file is there only once closed."""
    path = str(tmp_path / "x.syr")
    with csyrah.File(path, "w") as f:
        f.add_item({"a": np.arange(3, dtype=np.int32), "t": np.array(["ab"])})
        f.add_item({"a": np.arange(5, dtype=np.int32), "t": np.array(["c"])})
        f.write_item(2, {"a": np.arange(1, dtype=np.int32), "t": np.array([""])})
        assert not (tmp_path / "x.syr").exists()
    with csyrah.File(path, "r") as f:
        assert f.num_items() == 3 and f.get_array(1, "a").tolist() == [0, 1, 2, 3, 4]
        assert f.get_array(0, "t").tolist() == ["ab"]
        f.open(path, "r")  # opened again, as a worker does
        assert f.get_item(2)["t"].tolist() == [""]
    with pytest.raises(RuntimeError):
        with csyrah.File(str(tmp_path / "y.syr"), "w") as f:
            f.add_item({"a": np.arange(3)})
            raise RuntimeError("stop")
    assert not (tmp_path / "y.syr").exists()


# ---- granular (the reference installed by name) ------------------------------------------


def same_values(a, b) -> bool:
    """Like `same`, but arrays may differ in byte order: reel hands out big-endian arrays
    in native (little-endian) order, with the same values (the README lists this)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return (
            a.shape == b.shape
            and a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=")
            and a.astype(a.dtype.newbyteorder("=")).tobytes() == b.astype(b.dtype.newbyteorder("=")).tobytes()
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    return same(a, b)


import granular  # noqa: E402  (in tests/requirements.txt: missing, this fails)

GRANULAR_CASES = [
    c for c in golden_cases("granular/granular-0.24.2", corrupt=False) if c not in ("raw_bag", "images")
]


@pytest.mark.parametrize("case", GRANULAR_CASES)
def test_granular_dataset_reader_matches_reference(case, tmp_path):
    path = golden_root() / "granular/granular-0.24.2" / case
    if case == "sharded":
        # The reference takes every entry of the root for a shard, expected.json included.
        for shard in path.iterdir():
            if shard.is_dir():
                shutil.copytree(shard, tmp_path / shard.name)
        path = tmp_path
        ref = granular.ShardedDatasetReader(path, granular.decoders)
        ours = cgranular.ShardedDatasetReader(path, cgranular.decoders)
    else:
        ref = granular.DatasetReader(path, granular.decoders)
        ours = cgranular.DatasetReader(path, cgranular.decoders)
    assert len(ours) == len(ref)
    if case != "sharded":
        assert ours.spec == ref.spec
    refused = 0
    for i in range(len(ref)):
        try:
            want = ref[i]
        except Exception:  # noqa: BLE001 - the reference refuses some records (quirk cases)
            refused += 1
            continue
        assert same_values(ours[i], want), f"{case} record {i}"
    assert refused == 0 or case.startswith("quirk"), f"the reference refused {refused} records"
    if len(ref) >= 2 and case != "sharded" and not refused:
        keys = list(ref.spec)[:1]
        assert same_values(ours[1, keys], ref[1, keys])
        assert same_values(ours[0:2], ref[0:2])
        raw_ref = granular.DatasetReader(path, None)
        raw_ours = cgranular.DatasetReader(path, None)
        assert same(raw_ours[1], raw_ref[1])


def test_granular_images_of_every_pillow_mode_decode_as_the_reference(tmp_path):
    """Palette PNGs (segmentation masks) are their palette indices, with repeated colours
    and transparency; 1-bit PNGs are booleans; Adobe CMYK JPEGs are their inks, not
    inverted: as granular gives them through Pillow (reel expanded the first two to
    colours and gave the last inverted)."""
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    indices = rng.integers(0, 6, (9, 13), dtype=np.uint8)
    images = {}
    masks = Image.new("P", (13, 9))
    masks.putpalette([0, 0, 0, 128, 0, 0, 0, 128, 0, 0, 0, 0, 9, 9, 9, 0, 0, 0])  # repeats
    masks.putdata(indices.flatten().tolist())
    images["P"] = masks
    clear = masks.copy()
    clear.info["transparency"] = 0
    images["P+tRNS"] = clear
    images["P 2-bit"] = Image.fromarray(indices % 4, "L").convert("P", colors=4)
    images["1"] = Image.fromarray((indices % 2) * 255, "L").convert("1")
    images["RGB"] = Image.fromarray(rng.integers(0, 255, (9, 13, 3), dtype=np.uint8), "RGB")
    cmyk = Image.fromarray(rng.integers(0, 255, (16, 16, 4), dtype=np.uint8), "CMYK")

    def encoded(image, fmt, **kw):
        out = io.BytesIO()
        image.save(out, format=fmt, **kw)
        return out.getvalue()

    path = tmp_path / "images"
    spec = {"png": "png", "jpg": "jpg"}
    w = granular.DatasetWriter(path, spec, {"png": lambda x: x, "jpg": lambda x: x})
    for name, image in images.items():
        bits = 2 if name == "P 2-bit" else None
        png = encoded(image, "PNG", **({"bits": bits} if bits else {}))
        w.append({"png": png, "jpg": encoded(cmyk, "JPEG", quality=95)})
    w.close()
    ref = granular.DatasetReader(path, granular.decoders)
    ours = cgranular.DatasetReader(path, cgranular.decoders)
    for i, name in enumerate(images):
        want, got = ref[i]["png"], ours[i]["png"]
        assert (got.dtype, got.shape) == (want.dtype, want.shape), name
        assert np.array_equal(got, want), name
    want, got = ref[0]["jpg"], ours[0]["jpg"]
    assert (got.dtype, got.shape) == (want.dtype, want.shape) == (np.uint8, (16, 16, 4))
    assert np.abs(got.astype(int) - want.astype(int)).mean() < 8  # decoders differ a little


def test_granular_reads_of_some_keys_leave_the_others_unread(tmp_path):
    """``ds[i, keys]`` reads only those keys' bags, as the reference does: a damaged image
    bag fails a read of the image and of everything, not a read of the label. The same
    holds for ``reel.open(..., columns=)``, and for slices and pickled readers."""
    import io

    from PIL import Image

    def png(value):
        out = io.BytesIO()
        Image.fromarray(np.full((4, 5), value, np.uint8), "L").save(out, format="PNG")
        return out.getvalue()

    path = tmp_path / "ds"
    spec = {"image": "png", "label": "int", "name": "utf8"}
    w = granular.DatasetWriter(path, spec, {**granular.encoders, "png": lambda x: x})
    for i in range(6):
        w.append({"image": png(i), "label": 10 + i, "name": f"item {i}"})
    w.close()
    bag = path / "image.bag"
    data = bytearray(bag.read_bytes())
    data[:8] = b"garbage!"  # the first image's PNG signature
    bag.write_bytes(bytes(data))

    ref = granular.DatasetReader(path, granular.decoders)
    ours = cgranular.DatasetReader(path, cgranular.decoders)
    for keys in (["label"], ["name", "label"], ("label", "name")):
        assert same_values(ours[0, keys], ref[0, keys])
        assert list(ours[0, keys]) == list(ref[0, keys])  # the order asked
        assert same_values(ours[0:4, keys], ref[0:4, keys])
    with pytest.raises(Exception):
        ref[0]
    with pytest.raises(reel.CorruptError):
        ours[0]
    with pytest.raises(reel.CorruptError):
        ours[0, ["image", "label"]]
    assert np.array_equal(ours[1, ["image"]]["image"], ref[1, ["image"]]["image"])
    again = ours.copy()
    assert again[5, ["label"]] == {"label": 15}
    for n in range(8):  # more key sets than a reader keeps open
        keys = [["label"], ["name"], ["label", "name"]][n % 3]
        assert same_values(ours[n % 6, keys], ref[n % 6, keys])

    # Out of range, as the reference: ValueError (no indices from the end); no keys, {}.
    for bad in (-1, len(ref)):
        with pytest.raises(ValueError):
            ref[bad, ["label"]]
        with pytest.raises(ValueError):
            ours[bad, ["label"]]
    assert ours[len(ref), ()] == ref[len(ref), ()] == {}

    ds = reel.open(path, columns=["name", "label"])
    assert [f for f, _ in ds.info.schema] == ["label", "name"]  # spec order
    assert [r["label"] for r in ds[0:6]] == list(range(10, 16))
    assert list(ds.read_batch([0, 3])[1]) == ["label", "name"]
    assert pa_table_names(ds) == ["label", "name"]
    with pytest.raises(reel.InvalidInputError, match="lable"):
        reel.open(path, columns=["lable"])
    raw = reel.open(path, columns=["image"], decode=False)
    assert raw[0]["image"][:8] == b"garbage!"
    # Leaving the undecodable key out, the others read decoded.
    rest = reel.open(path, skip_columns=["image"])
    assert [f for f, _ in rest.info.schema] == ["label", "name"]
    assert same_values(rest[2], ds[2])


def pa_table_names(ds):
    import pyarrow as pa

    return pa.table(ds).column_names


def test_granular_bag_reader_matches_reference():
    bag = golden_root() / "granular/granular-0.24.2/raw_bag/data.bag"
    ref = granular.BagReader(bag)
    ours = cgranular.BagReader(bag)
    assert len(ours) == len(ref)
    assert [ours[i] for i in range(len(ref))] == [ref[i] for i in range(len(ref))]
    assert ours[0 : len(ref)] == ref[0 : len(ref)]


def sharded_copy(tmp_path):
    """The golden sharded root's shard folders alone (the reference takes every entry of the
    root for a shard, expected.json included)."""
    root = golden_root() / "granular/granular-0.24.2/sharded"
    for shard in root.iterdir():
        if shard.is_dir():
            shutil.copytree(shard, tmp_path / shard.name)
    return tmp_path


@pytest.mark.parametrize("shardstart, shardstep", [(0, 1), (1, 2), (0, 2), (2, 1), (1, 1)])
def test_granular_sharded_reader_selects_shards_as_reference(shardstart, shardstep, tmp_path):
    root = sharded_copy(tmp_path)
    select = dict(shardstart=shardstart, shardstep=shardstep)
    ref = granular.ShardedDatasetReader(root, granular.decoders, **select)
    ours = cgranular.ShardedDatasetReader(root, cgranular.decoders, **select)
    assert (len(ours), ours.shards, ours.size) == (len(ref), ref.shards, ref.size)
    assert ours.spec == ref.spec
    for i in range(len(ref)):
        assert same_values(ours[i], ref[i]), i
    keys = list(ref.spec)[:1]
    n = len(ref)
    assert same_values(ours[n - 1, keys], ref[n - 1, keys])
    for a, b in [(0, n), (1, n - 1), (n // 2, n // 2), (0, 0)]:
        assert same_values(ours[a:b], ref[a:b]), (a, b)
    copied = ours.copy()
    assert same_values(copied[0:n], ref[0:n])
    raw_ref = granular.ShardedDatasetReader(str(root), None, **select)
    raw_ours = cgranular.ShardedDatasetReader(str(root), None, **select)
    assert same(raw_ours[n - 1], raw_ref[n - 1])
    with cgranular.ShardedDatasetReader(root, None, False, (), False, shardstart, shardstep) as positional:
        assert len(positional) == n
    with pytest.raises(AssertionError):
        cgranular.ShardedDatasetReader(root, None, shardstart=3)


def test_granular_sizes_match_reference(tmp_path):
    for case in ["normal", "one_record", "empty", "empty_values"]:
        path = golden_root() / "granular/granular-0.24.2" / case
        assert cgranular.DatasetReader(path, None).size == granular.DatasetReader(path, None).size, case
    bag = golden_root() / "granular/granular-0.24.2/raw_bag/data.bag"
    assert cgranular.BagReader(bag).size == granular.BagReader(bag).size


def test_granular_bag_reader_takes_idx_source_as_reference(tmp_path):
    golden_bag = golden_root() / "granular/granular-0.24.2/raw_bag/data.bag"
    bag = tmp_path / "records.bag"
    shutil.copyfile(golden_bag, bag)
    index = tmp_path / "elsewhere" / "the.index"
    index.parent.mkdir()
    shutil.copyfile(golden_bag.with_suffix(".idx"), index)
    idx_bytes = index.read_bytes()
    # The index of the first 5 records only: a reader that looked beside the bag instead of
    # at idx_source would see all of them.
    short = idx_bytes[: 5 * 8]
    for idx_source in [index, str(index), idx_bytes, short]:
        ref = granular.BagReader(str(bag), idx_source=idx_source)
        ours = cgranular.BagReader(str(bag), idx_source=idx_source)
        assert (len(ours), ours.size) == (len(ref), ref.size)
        assert [ours[i] for i in range(len(ref))] == [ref[i] for i in range(len(ref))]
        assert ours[0 : len(ref) + 3] == ref[0 : len(ref) + 3]
        assert ours.copy()[len(ref) - 1] == ref[len(ref) - 1]
        ours.close()
        ref.close()
    with pytest.raises(Exception):  # noqa: B017 - no index beside the bag, none given
        cgranular.BagReader(str(bag))


# ---- gulpio2 (the reference installed by name) -------------------------------------------

import gulpio2  # noqa: E402  (in tests/requirements.txt: missing, this fails)

GULP_CASES = [
    "normal",
    "many_chunks",
    "one_video_one_frame",
    "zero_frame_video",
    "empty_chunk",
    "empty_directory",
    "same_id_appended_twice",
]


@pytest.mark.parametrize("case", GULP_CASES)
def test_gulp_directory_matches_reference(case):
    path = str(golden_root() / "gulpio2" / case)
    raw = lambda b: b  # noqa: E731 - the stored JPEG bytes, identical whatever the decoder
    ref = gulpio2.GulpDirectory(path, jpeg_decoder=raw)
    ours = cgulpio2.GulpDirectory(path, jpeg_decoder=raw)
    assert ours.num_chunks == ref.num_chunks
    assert ours.chunk_lookup == ref.chunk_lookup
    assert ours.merged_meta_dict == ref.merged_meta_dict
    assert [c.meta_dict for c in ours.chunks()] == [c.meta_dict for c in ref.chunks()]
    decoded_ref = gulpio2.GulpDirectory(path)
    decoded_ours = cgulpio2.GulpDirectory(path)
    for id_ in ref.merged_meta_dict:
        frames, meta = ours[id_]
        want_frames, want_meta = ref[id_]
        assert meta == want_meta and [bytes(f) for f in frames] == [bytes(f) for f in want_frames]
        n = len(want_frames)
        for selector in (slice(1, None, 2), [n - 1, 0] if n else [], slice(None, None, -1)):
            got, _ = ours[id_, selector]
            want, _ = ref[id_, selector]
            assert [bytes(f) for f in got] == [bytes(f) for f in want], (id_, selector)
        # Default decoding: reel's JPEG decoder, same shapes and dtype as simplejpeg's.
        d_ours, _ = decoded_ours[id_]
        d_ref, _ = decoded_ref[id_]
        assert [(f.shape, f.dtype) for f in d_ours] == [(f.shape, f.dtype) for f in d_ref]
        for a, b in zip(d_ours, d_ref):
            assert np.abs(a.astype(int) - b.astype(int)).mean() < 2.0
    with pytest.raises(KeyError):
        ours["no such video"]
    # One frame number is no selector in gulpio2 (it raises); it gave zero-filled "frames".
    for some_id, bad in [(i, b) for i in list(ref.merged_meta_dict)[:1] for b in (0, np.int64(0))]:
        with pytest.raises((AttributeError, IndexError)):  # which depends on the video
            ref[some_id, bad]
        with pytest.raises(TypeError, match="slice"):
            ours[some_id, bad]
    for chunk_ours, chunk_ref in zip(ours.chunks(), ref.chunks()):
        got = [(m, [bytes(f) for f in fr]) for fr, m in chunk_ours.iter_all()]
        want = [(m, [bytes(f) for f in fr]) for fr, m in chunk_ref.iter_all()]
        assert got == want


def test_gulp_ids_are_converted_with_str_as_reference():
    path = str(golden_root() / "gulpio2" / "normal")
    raw = lambda b: b  # noqa: E731
    ref = gulpio2.GulpDirectory(path, jpeg_decoder=raw)
    ours = cgulpio2.GulpDirectory(path, jpeg_decoder=raw)
    ref_chunk = next(c for c in ref.chunks() if "0" in c.meta_dict)
    our_chunk = ours.chunk_objs_lookup[ours.chunk_lookup["0"]]
    for id_ in [0, "0", "video_001", 1, "nope"]:
        assert (id_ in our_chunk) == (id_ in ref_chunk), id_
    assert 0 in our_chunk
    with ref_chunk.open():
        for element in [0, (0, slice(0, 1)), (0, [0])]:
            got, want = our_chunk[element], ref_chunk[element]
            assert got[1] == want[1] and [bytes(f) for f in got[0]] == [bytes(f) for f in want[0]]
        got, want = our_chunk.read_frames(0, [0]), ref_chunk.read_frames(0, [0])
        assert got[1] == want[1] and [bytes(f) for f in got[0]] == [bytes(f) for f in want[0]]
    for element in [0, (0, slice(None, None, -1))]:
        got, want = ours[element], ref[element]
        assert got[1] == want[1] and [bytes(f) for f in got[0]] == [bytes(f) for f in want[0]]
    with pytest.raises(TypeError):
        ours[1.5]
