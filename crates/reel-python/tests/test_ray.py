"""reel.ray: Ray Data reading, writing and converting reel datasets, on a real local Ray.

One Ray session serves the whole module (starting Ray takes seconds): 2 CPUs, bound to
127.0.0.1, no dashboard, no usage statistics, shut down at the end. Every test runs under an
alarm so that a hung Ray job fails the test instead of the CI run.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import ray  # noqa: E402  (in tests/requirements.txt: missing, this fails)

import reel  # noqa: E402
import reel.ray  # noqa: E402
from conftest import WRITABLE, damaged_ffrecord, dataset_path, manifest, reel_binary, same, sample_records, start_local_ray  # noqa: E402
from test_golden import FORMATS as GOLDEN_FORMATS  # noqa: E402
from test_golden import cases as golden_test_cases  # noqa: E402

TEST_SECONDS = 120


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    start_local_ray()
    yield
    ray.shutdown()


pytestmark = pytest.mark.usefixtures("time_limit")


def parts_of(path) -> list[str]:
    return sorted(os.listdir(path))


@pytest.mark.parametrize("fmt", WRITABLE)
def test_write_then_read_back(tmp_path, fmt):
    records = sample_records(fmt, 37)
    out = tmp_path / "out"
    summary = reel.ray.write_reel(ray.data.from_items(records, override_num_blocks=3), out, format=fmt)
    assert summary["records"] == 37 and summary["parts"] == 3
    back = reel.open(out)
    assert back.format == ("granular" if fmt == "bags" else fmt)
    assert same(back[:], records)
    # Nothing is left beside the dataset (the staging directory is gone).
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_part_names_per_format(tmp_path):
    rows = ray.data.from_items(sample_records("ffrecord", 12), override_num_blocks=3)
    reel.ray.write_reel(rows, tmp_path / "f", format="ffrecord")
    assert parts_of(tmp_path / "f") == ["PART_00000.ffr", "PART_00001.ffr", "PART_00002.ffr"]
    reel.ray.write_reel(rows, tmp_path / "g", format="granular")
    assert parts_of(tmp_path / "g") == ["000000", "000001", "000002"]
    reel.ray.write_reel(ray.data.from_items(sample_records("ofrecord", 12), override_num_blocks=3), tmp_path / "o", format="ofrecord")
    assert parts_of(tmp_path / "o") == ["part-00000", "part-00001", "part-00002"]


def test_gulp_chunks_read_in_task_order_beyond_ten(tmp_path):
    """gulpio2 orders chunks by file name (data_10 before data_2): the numbers keep task order."""
    records = sample_records("gulp", 24)
    reel.ray.write_reel(ray.data.from_items(records, override_num_blocks=12), tmp_path / "g", format="gulp")
    names = parts_of(tmp_path / "g")
    assert names[0] == "data_10.gulp" and len(names) == 24
    assert [r["id"] for r in reel.open(tmp_path / "g")[:]] == [r["id"] for r in records]


def test_a_gulp_task_with_more_videos_than_a_chunk_holds_keeps_them_all(tmp_path):
    """A task writes one chunk however many videos it has (the gulp writer alone would start
    a new chunk every 100 videos, and the driver moves one chunk per task)."""
    records = sample_records("gulp", 250)
    summary = reel.ray.write_reel(ray.data.from_items(records, override_num_blocks=2), tmp_path / "g", format="gulp")
    assert summary["records"] == 250
    assert parts_of(tmp_path / "g") == ["data_0.gulp", "data_1.gulp", "meta_0.gmeta", "meta_1.gmeta"]
    assert [r["id"] for r in reel.open(tmp_path / "g")[:]] == [r["id"] for r in records]


def test_empty_dataset_is_written_and_opens(tmp_path):
    empty = ray.data.from_items(sample_records("ffrecord", 4)).filter(lambda r: False)
    summary = reel.ray.write_reel(empty, tmp_path / "e", format="ffrecord")
    assert summary["records"] == 0
    assert len(reel.open(tmp_path / "e")) == 0
    # Granular needs its keys: from the schema when there are no records to tell them.
    summary = reel.ray.write_reel(empty, tmp_path / "g", format="granular", schema={"data": "bytes"})
    assert len(reel.open(tmp_path / "g")) == 0


def test_existing_destination_is_refused_unless_overwrite(tmp_path):
    rows = ray.data.from_items(sample_records("ffrecord", 5))
    reel.ray.write_reel(rows, tmp_path / "d", format="ffrecord")
    with pytest.raises(Exception, match="exists"):
        reel.ray.write_reel(rows, tmp_path / "d", format="ffrecord")
    more = ray.data.from_items(sample_records("ffrecord", 9))
    reel.ray.write_reel(more, tmp_path / "d", format="ffrecord", overwrite=True)
    assert len(reel.open(tmp_path / "d")) == 9
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_syrah_is_refused_by_name():
    with pytest.raises(ValueError, match="syrah.*one file"):
        reel.ray.ReelDatasink("/tmp/never-written", format="syrah")


def _fail_on_row(target: int, how: str):
    def fn(batch):
        if target in set(batch["n"].tolist()):
            if how == "raise":
                raise RuntimeError("injected failure")
            os._exit(1)  # the worker process dies mid-write
        return batch

    return fn


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failed_task_leaves_nothing_that_opens(tmp_path, how):
    rows = ray.data.from_items([{"n": i, "data": bytes([i % 256])} for i in range(40)], override_num_blocks=4)
    failing = rows.map_batches(_fail_on_row(33, how), max_retries=0)
    out = tmp_path / "out"
    with pytest.raises(Exception):
        reel.ray.write_reel(failing, out, format="granular", ray_remote_args={"max_retries": 0})
    assert not out.exists()
    with pytest.raises(reel.NotFoundError):
        reel.open(out)
    # The staging directory was removed by on_write_failed (hidden, never a dataset path).
    assert os.listdir(tmp_path) == []


# Every format's `normal` golden case, the sources of the conversion matrix.
GOLDEN_SOURCES = {
    "ffrecord": "ffrecord/normal",
    "syrah": "syrah/normal",
    "ofrecord": "ofrecord/normal",
    "granular": "granular/granular-0.24.2/normal",
    "bags": "granular/bags-0.5.1/normal",
    "gulp": "gulpio2/normal",
}
TARGETS = ["ffrecord", "syrah", "ofrecord", "granular", "bags", "gulp"]


def golden_dataset(case: str):
    """The dataset path of a golden case named `key/case`."""
    key, name = case.rsplit("/", 1)
    return dataset_path(key, name)


def read_all(path):
    return reel.open(path, decode_images=False)[:]


@pytest.mark.parametrize("source", list(GOLDEN_SOURCES))
def test_convert_gives_the_local_converts_records(tmp_path, source):
    """Each pair the local convert supports gives the same records through Ray (3 parts), and
    each pair it refuses is refused the same way, leaving nothing at the destination."""
    src = golden_dataset(GOLDEN_SOURCES[source])
    for to in TARGETS:
        local, distributed = tmp_path / f"local-{to}", tmp_path / f"ray-{to}"
        try:
            want = reel.convert(src, local, to=to)
        except reel.ReelError as refusal:
            with pytest.raises(type(refusal)):
                reel.ray.convert(src, distributed, to=to, parts=3)
            assert not distributed.exists(), f"{source} -> {to}"
            continue
        got = reel.ray.convert(src, distributed, to=to, parts=3)
        assert got["records"] == want["records"], f"{source} -> {to}"
        assert sorted(got["losses"]) == sorted(want["losses"]), f"{source} -> {to}"
        assert same(read_all(distributed), read_all(local)), f"{source} -> {to}"
    # Only the outputs are left (no staging directories).
    assert all(not name.startswith(".") for name in os.listdir(tmp_path))


def test_convert_many_parts_keeps_order_and_a_failed_part_leaves_nothing(tmp_path):
    videos = tmp_path / "videos"
    with reel.gulp.Writer(videos) as w:
        for record in sample_records("gulp", 30):
            w.write(record)
    report = reel.ray.convert(videos, tmp_path / "g", to="gulp", parts=12)
    assert report["parts"] == 12 and report["records"] == 30
    assert sorted(os.listdir(tmp_path / "g"))[:2] == ["data_10.gulp", "data_11.gulp"]
    local = reel.convert(videos, tmp_path / "local-g", to="gulp")
    assert local["records"] == 30
    assert same(read_all(tmp_path / "g"), read_all(tmp_path / "local-g"))
    # A damaged source record fails its part: the job fails and nothing appears.
    src = tmp_path / "src.ffr"
    damaged_ffrecord(src)
    with pytest.raises(reel.ChecksumError):
        reel.ray.convert(src, tmp_path / "bad", to="granular", parts=3)
    assert not (tmp_path / "bad").exists()
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".")) == []


def test_the_reel_command_converts_on_the_running_cluster(tmp_path):
    """`reel convert --ray=ADDRESS` runs `python -m reel.ray_cli` (REEL_PYTHON) against this
    module's Ray, and the result has the local convert's records."""
    import subprocess
    import sys

    src = golden_dataset(GOLDEN_SOURCES["ffrecord"])
    address = ray.get_runtime_context().gcs_address
    env = dict(os.environ, REEL_PYTHON=sys.executable)
    run = subprocess.run(
        [reel_binary(), "convert", str(src), str(tmp_path / "out"), "--to", "granular", f"--ray={address}", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TEST_SECONDS,
    )
    assert run.returncode == 0, run.stderr
    import json

    report = json.loads(run.stdout.strip().splitlines()[-1])
    local = reel.convert(src, tmp_path / "local", to="granular")
    assert report["records"] == local["records"]
    assert same(read_all(tmp_path / "out"), read_all(tmp_path / "local"))
    # A refusal is the command's failure, with reel's message.
    run = subprocess.run(
        [reel_binary(), "convert", str(src), str(tmp_path / "no"), "--to", "gulp", f"--ray={address}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TEST_SECONDS,
    )
    assert run.returncode == 2 and "cannot convert" in run.stderr, run.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("key,case", golden_test_cases(corrupt=False))
def test_read_reel_matches_the_golden_dataset(key, case):
    """Every golden dataset that opens, through Ray (3 read tasks): the records are reel's own
    Arrow table's, in order, and as many as the manifest lists."""
    path = golden_dataset(f"{key}/{case}")
    want = reel.open(path, format=GOLDEN_FORMATS[key]).to_arrow()
    assert want.num_rows == manifest(key, case)["record_count"]
    table = ray_table(reel.ray.read_reel(path, format=GOLDEN_FORMATS[key], override_num_blocks=3))
    if want.num_rows == 0:
        assert table is None
        return
    assert same_table(table, want)


def same_table(a, b) -> bool:
    """Same schema and values; NaN cells compare equal to NaN cells with the same bits (which
    makes Table.equals false)."""
    return a.schema == b.schema and (a.equals(b) or same(a.to_pylist(), b.to_pylist()))


def ray_table(ds):
    """A Ray dataset's blocks as one Arrow table, in record order (None when there are none)."""
    import pyarrow as pa

    tables = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    return pa.concat_tables(tables) if tables else None



def test_read_reel_columns_and_several_paths(tmp_path):
    path = golden_dataset(GOLDEN_SOURCES["granular"])
    columns = reel.open(path).to_arrow().column_names
    assert len(columns) > 1
    one = columns[-1]
    table = ray_table(reel.ray.read_reel(path, columns=[one], override_num_blocks=2))
    assert table.column_names == [one]
    assert same_table(table, reel.open(path).to_arrow(columns=[one]))
    # select_columns is pushed down into the read tasks: they read only those fields.
    two = [columns[-1], columns[0]]
    table = ray_table(reel.ray.read_reel(path, override_num_blocks=2).select_columns(two))
    assert same_table(table, reel.open(path).to_arrow(columns=two))
    source = reel.ray.ReelDatasource(path)
    projected = source.apply_projection({c: c for c in two})
    assert [t.schema.names for t in projected.get_read_tasks(2)] == [two, two]
    assert source.schema.names == columns  # the projection applies to a copy
    # Two datasets: the first's records, then the second's.
    first = tmp_path / "a.ffr"
    second = tmp_path / "b.ffr"
    for target, n in ((first, 5), (second, 8)):
        with reel.ffrecord.Writer(target) as w:
            for i in range(n):
                w.write({"data": b"%s-%d" % (target.name.encode(), i)})
    table = ray_table(reel.ray.read_reel([first, second], override_num_blocks=4))
    assert table.column("data").to_pylist() == [b"a.ffr-%d" % i for i in range(5)] + [b"b.ffr-%d" % i for i in range(8)]


def test_read_tasks_follow_the_requested_parallelism(tmp_path):
    path = tmp_path / "many.ffr"
    with reel.ffrecord.Writer(path) as w:
        for i in range(100):
            w.write({"data": bytes([i]) * 10})
    source = reel.ray.ReelDatasource(path)
    for parallelism in (1, 3, 7, 100, 500):
        tasks = source.get_read_tasks(parallelism)
        assert len(tasks) == min(parallelism, 100)
        rows = [t.metadata.num_rows for t in tasks]
        assert sum(rows) == 100 and max(rows) - min(rows) <= 1
        assert all(t.metadata.size_bytes is not None and t.metadata.size_bytes > 0 for t in tasks)
    # A task never reads over max_task_bytes: more tasks than asked for then.
    small = reel.ray.ReelDatasource(path, max_task_bytes=path.stat().st_size // 10)
    assert len(small.get_read_tasks(2)) >= 10
    # A pushed-down limit shortens every task's range.
    assert [t.metadata.num_rows for t in source.get_read_tasks(4, per_task_row_limit=3)] == [3] * 4
    # Through Ray: one block per task here (small tasks), in record order.
    ds = reel.ray.read_reel(path, override_num_blocks=5).materialize()
    assert ds.num_blocks() == 5
    assert ray_table(ds).column("data").to_pylist() == [bytes([i]) * 10 for i in range(100)]
    assert ds.limit(7).count() == 7


def test_a_relative_path_is_read_by_tasks_working_elsewhere(tmp_path, monkeypatch):
    """Ray runs read tasks in worker processes whose working directory need not be the
    driver's: a relative path is planned as the absolute path it names on the driver."""
    import pyarrow as pa

    with reel.ffrecord.Writer(tmp_path / "rel.ffr") as w:
        for i in range(6):
            w.write({"data": bytes([i])})
    monkeypatch.chdir(tmp_path)
    tasks = reel.ray.ReelDatasource("rel.ffr").get_read_tasks(2)
    monkeypatch.chdir("/")
    blocks = [block for task in tasks for block in task()]
    assert pa.concat_tables(blocks).column("data").to_pylist() == [bytes([i]) for i in range(6)]


def test_read_reel_missing_path_raises_on_the_driver(tmp_path):
    with pytest.raises(reel.NotFoundError):
        reel.ray.read_reel(tmp_path / "nothing-here")


class RecordingSource(reel.ray.ReelDatasource):
    """A ReelDatasource that notes the row limit Ray passes when it plans the read."""

    limits: list[int | None] = []

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        RecordingSource.limits.append(per_task_row_limit)
        return super().get_read_tasks(parallelism, per_task_row_limit, data_context)


def test_a_limit_is_pushed_down_into_the_read_tasks(tmp_path):
    path = tmp_path / "many.ffr"
    with reel.ffrecord.Writer(path) as w:
        for i in range(100):
            w.write({"data": b"%d" % i})
    RecordingSource.limits.clear()
    # Ray 2.60 pushes a limit into the read past row-preserving operators (a map), not when
    # the limit sits right on the read (that one stops the read once it has its rows).
    read = ray.data.read_datasource(RecordingSource(path), override_num_blocks=4)
    rows = read.map(lambda r: {"data": r["data"] + b"!"}).limit(7).take_all()
    assert [r["data"] for r in rows] == [b"%d!" % i for i in range(7)]
    # The plan the job ran is the last one asked for (Ray asks before, for row counts).
    assert RecordingSource.limits[-1] == 7


def test_read_reel_unknown_format_raises_on_the_driver(tmp_path):
    path = tmp_path / "a.ffr"
    with reel.ffrecord.Writer(path) as w:
        w.write({"data": b"x"})
    with pytest.raises(reel.InvalidInputError, match="unknown format"):
        reel.ray.read_reel(path, format="no-such-format")


def test_a_damaged_record_raises_reels_checksum_error_from_its_task(tmp_path):
    """The driver reads no record past its schema sample (the first 1000), so the damaged
    last record is found by the read task that holds it, which raises reel's error."""
    path = tmp_path / "damaged.ffr"
    with reel.ffrecord.Writer(path) as w:
        for i in range(1100):
            w.write({"data": b"%d" % i})
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    ds = reel.ray.read_reel(path, override_num_blocks=2)  # opens: the driver did not read it
    with pytest.raises(reel.ChecksumError, match="record 1099"):
        ds.take_all()


def _note_opened(path: str):
    """A map (fused into the read task, so it runs in the read task's worker process) tagging
    each row with that process's id and the ids of the datasets at `path` it keeps open for
    read tasks. Built here and sent by value: the workers cannot import this test module."""

    def note(batch):
        import reel.ray as in_worker

        kept = sorted(id(ds) for key, ds in in_worker._OPENED.items() if key[0] == path)
        n = len(batch["data"])
        batch["pid"] = [os.getpid()] * n
        batch["kept"] = [",".join(map(str, kept))] * n
        return batch

    return note


def test_a_worker_opens_a_dataset_once_for_all_its_read_tasks_and_never_serves_it_stale(tmp_path):
    """Read tasks in one worker process share one opened dataset (the metadata is read once
    per worker, not once per task); a dataset replaced at the same path has another
    fingerprint, so the next read opens it again and returns the new records."""
    path = tmp_path / "data.ffr"
    reel.generate(path, format="ffrecord", records=400, max_record=64)
    want = [r["data"] for r in reel.open(path)[:]]
    rows = reel.ray.read_reel(path, override_num_blocks=8).map_batches(_note_opened(str(path))).take_all()
    assert [r["data"] for r in rows] == want
    by_worker: dict[int, set[str]] = {}
    for r in rows:
        by_worker.setdefault(r["pid"], set()).add(r["kept"])
    # Every task of a worker found the one dataset the worker's first task opened.
    assert all(len(kept) == 1 and "," not in next(iter(kept)) for kept in by_worker.values()), by_worker
    rows_per_worker = [sum(r["pid"] == pid for r in rows) for pid in by_worker]
    assert max(rows_per_worker) > 400 // 8, "no worker ran two tasks: nothing was shared"
    first = {pid: next(iter(kept)) for pid, kept in by_worker.items()}

    # The same path, new content and as many records: nothing read comes from the old one.
    with reel.ffrecord.Writer(path, overwrite=True) as w:
        for i in range(400):
            w.write({"data": b"new %d" % i})
    rows = reel.ray.read_reel(path, override_num_blocks=8).map_batches(_note_opened(str(path))).take_all()
    assert [r["data"] for r in rows] == [b"new %d" % i for i in range(400)]
    for r in rows:
        if r["pid"] in first:
            kept = r["kept"].split(",")
            assert len(kept) == 2 and first[r["pid"]] in kept, r["kept"]


def test_remote_options_reach_ray_without_its_deprecation_warning(tmp_path):
    """Ray 2.60 deprecates `ray_remote_args=` on reads and maps; reel passes the options by
    name (read_reel and convert take them as keyword arguments; write_reel's dict goes to
    write_datasink, which takes it as it is)."""
    from ray.util.annotations import RayDeprecationWarning

    src = tmp_path / "src.ffr"
    reel.generate(src, format="ffrecord", records=20, max_record=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RayDeprecationWarning)
        ds = reel.ray.read_reel(src, override_num_blocks=2, num_cpus=1, memory=64 << 20)
        assert ds.count() == 20
        report = reel.ray.convert(src, tmp_path / "out", to="granular", parts=2, num_cpus=1)
        assert report["records"] == 20
        summary = reel.ray.write_reel(ds, tmp_path / "w", format="ffrecord", ray_remote_args={"num_cpus": 1})
        assert summary["records"] == 20
    # The filter above catches the warning: passing the dictionary to Ray does raise it.
    with warnings.catch_warnings():
        warnings.simplefilter("error", RayDeprecationWarning)
        with pytest.raises(RayDeprecationWarning):
            ray.data.read_datasource(reel.ray.ReelDatasource(src), ray_remote_args={"num_cpus": 1})
