"""reel.compat.ffrecord and reel.compat.syrah against the strict reference readers.

ffrecord and syrah have no installable reference package, so besides the golden manifests
(test_compat.py) every golden case of the two formats is read by the developers' reference
reader ``refread`` (shared/tools/refread, beside the clone: ``../shared`` from the repository
root, or REEL_REFREAD) and by the shims, and the two must agree record for record: the same
count and bytes where refread reads, a refusal where refread refuses (at the record where it
stops). Without refread these tests fail; they do not skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import reel
from conftest import REPO, check_bytes, golden_cases, golden_root, sha256
from reel.compat import ffrecord as cffrecord
from reel.compat import syrah as csyrah

#: Cases with more records than this are compared on a sample (the first, the last and an
#: even spread between), so the run stays short however the corpus grows.
MAX_COMPARED = 200


def refread_path() -> Path:
    """REEL_REFREAD, else shared/tools/refread beside the clone."""
    path = Path(os.environ.get("REEL_REFREAD") or REPO.parent / "shared" / "tools" / "refread")
    assert path.is_file(), (
        f"the reference reader is not at {path}: CI has shared/ beside the clone; elsewhere set "
        "REEL_REFREAD=/path/to/refread"
    )
    return path


def refread(fmt: str, path: Path) -> tuple[list[dict], dict | None]:
    """refread's records of `path`, and its error line if it stopped on one."""
    run = subprocess.run(
        [str(refread_path()), fmt, str(path)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode in (0, 1), f"refread {fmt} {path}: exit {run.returncode}\n{run.stderr}"
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    error = None
    if run.returncode == 1:
        assert rows and "error" in rows[-1], f"refread {fmt} {path} failed without saying why"
        error = rows.pop()
    assert all(row["index"] == k for k, row in enumerate(rows)), f"refread {fmt} {path}: indices"
    return rows, error


def sample(n: int) -> list[int]:
    if n <= MAX_COMPARED:
        return list(range(n))
    spread = np.linspace(0, n - 1, MAX_COMPARED - 20).astype(int).tolist()
    return sorted(set(range(10)) | set(spread) | set(range(n - 10, n)))


def all_cases(format_key: str) -> list[str]:
    return golden_cases(format_key, corrupt=False) + golden_cases(format_key, corrupt=True)


def test_every_golden_case_is_compared():
    # An empty case list would make the parametrized tests below pass by collecting nothing.
    assert len(all_cases("ffrecord")) >= 10 and len(all_cases("syrah")) >= 10


# ---- ffrecord ---------------------------------------------------------------------------


def ffrecord_path(case: str) -> Path:
    """The file (or directory of parts) of an ffrecord case."""
    path = golden_root() / "ffrecord" / case
    if (path / "parts").is_dir():
        return path / "parts"
    (file,) = sorted(path.glob("*.ffr"))
    return file


@pytest.mark.parametrize("case", all_cases("ffrecord"))
def test_ffrecord_shim_reads_as_refread(case):
    path = ffrecord_path(case)
    want, error = refread("ffrecord", path)
    if error is None:
        reader = cffrecord.FileReader(path, check_data=True)
        assert reader.n == len(want), case
        indices = sample(reader.n)
        for i in indices:
            check_bytes(reader.read_one(i).tobytes(), want[i]["content"], f"{case} read_one({i})")
        batch = reader.read(indices[::-1])
        for i, got in zip(indices[::-1], batch):
            check_bytes(got.tobytes(), want[i]["content"], f"{case} read(...)[{i}]")
        reader.validate()
        reader.close()
        return
    # refread stopped at record len(want) (at the header where that is 0): the shim reads the
    # records before it the same and refuses that one, at the open or at the read.
    with pytest.raises(reel.ReelError):
        reader = cffrecord.FileReader(path, check_data=True)
        for i in sample(len(want)):
            check_bytes(reader.read_one(i).tobytes(), want[i]["content"], f"{case} read_one({i})")
        reader.read_one(len(want))


# ---- syrah ------------------------------------------------------------------------------


def check_syrah_array(actual, d: dict, where: str) -> None:
    """`actual` (from the shim) against refread's descriptor of one decoded array."""
    if "value" in d:
        assert isinstance(actual, str) and actual == d["value"], where
        return
    assert isinstance(actual, np.ndarray), f"{where}: {type(actual).__name__}"
    assert list(actual.shape) == d["shape"], f"{where}: shape"
    raw = actual.tobytes()
    assert sha256(raw) == d["sha256"], f"{where}: bytes"
    if "hex" in d:
        assert raw.hex() == d["hex"], f"{where}: hex"
    if "values" in d:
        assert actual.tolist() == d["values"], f"{where}: values"


@pytest.mark.parametrize("case", all_cases("syrah"))
def test_syrah_shim_reads_as_refread(case):
    path = golden_root() / "syrah" / case / "data.syr"
    want, error = refread("syrah", path)
    if error is None:
        with csyrah.File(str(path), "r") as f:
            assert f.num_items() == len(want), case
            for i in sample(len(want)):
                item = f.get_item(i)
                arrays = want[i]["arrays"]
                assert list(item) == list(arrays), f"{case} item {i}: names"
                for name, a in arrays.items():
                    check_syrah_array(item[name], a["decoded"], f"{case} item {i} {name}")
                    check_syrah_array(f.get_array(i, name), a["decoded"], f"{case} get_array({i})")
        return
    with pytest.raises(reel.ReelError):
        with csyrah.File(str(path), "r") as f:
            for i in sample(len(want)):
                item = f.get_item(i)
                for name, a in want[i]["arrays"].items():
                    check_syrah_array(item[name], a["decoded"], f"{case} item {i} {name}")
            f.get_item(len(want))
