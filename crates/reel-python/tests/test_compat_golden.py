"""reel.compat.ffrecord and reel.compat.syrah on every golden case, against the manifests.

ffrecord and syrah have no installable reference package, so the shims are held to what the
golden manifests (tests/golden/<format>/<case>/expected.json) record of the references:
every record of every readable case (its bytes, or its arrays' shapes and bytes), and, for
the damaged and quirky cases, the reference reader's own recorded behaviour per call: where
the reference opened or read, the shim does the same with the same bytes, and where the
reference refused (an exception), the shim refuses with a reel.ReelError. Nothing here needs the
reference packages or tools outside the repository.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import reel
from conftest import check_bytes, check_value, golden_cases, golden_root, manifest, sha256
from reel.compat import ffrecord as cffrecord
from reel.compat import syrah as csyrah

#: Cases with more records than this are compared on a sample (the first, the last and an
#: even spread between), so the run stays short however the corpus grows.
MAX_COMPARED = 200


def behaviour(fmt: str, case: str) -> dict | None:
    """The reference reader's recorded behaviour on a damaged (or quirky) case, if any."""
    return manifest(fmt, case).get("reference_reader_behaviour")


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
def test_ffrecord_shim_reads_as_the_reference(case):
    path = ffrecord_path(case)
    recorded = behaviour("ffrecord", case)
    if recorded is None:
        want = manifest("ffrecord", case)["records"]
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
    # FileReader(path, check_data=True), then read_one(i) for each record, as recorded.
    if recorded["open_check_data_true"]["outcome"] != "ok":
        with pytest.raises(reel.ReelError):
            cffrecord.FileReader(path, check_data=True)
        return
    reader = cffrecord.FileReader(path, check_data=True)
    for probe in recorded.get("read_one_check_data_true", []):
        i = probe["index"]
        if probe["outcome"] == "ok":
            check_bytes(reader.read_one(i).tobytes(), probe["result"], f"{case} read_one({i})")
        else:
            with pytest.raises(reel.ReelError):
                reader.read_one(i)


# ---- syrah ------------------------------------------------------------------------------


def check_syrah_array(actual, d: dict, where: str) -> None:
    """`actual` (from the shim) against a manifest record's descriptor of one decoded array."""
    if "value" in d:
        # Text: a one-element unicode array holding the whole string, as the reference.
        assert isinstance(actual, np.ndarray) and actual.dtype.kind == "U", where
        assert actual.tolist() == [d["value"]], where
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
def test_syrah_shim_reads_as_the_reference(case):
    path = str(golden_root() / "syrah" / case / "data.syr")
    recorded = behaviour("syrah", case)
    if recorded is None:
        want = manifest("syrah", case)["records"]
        with csyrah.File(path, "r") as f:
            assert f.num_items() == len(want), case
            for i in sample(len(want)):
                item = f.get_item(i)
                arrays = want[i]["arrays"]
                assert list(item) == list(arrays), f"{case} item {i}: names"
                for name, a in arrays.items():
                    check_syrah_array(item[name], a["decoded"], f"{case} item {i} {name}")
                    check_syrah_array(f.get_array(i, name), a["decoded"], f"{case} get_array({i})")
        return
    # File(path, "r"), then get_item(i) for each item, as recorded.
    if recorded["open"]["outcome"] != "ok":
        with pytest.raises(reel.ReelError):
            with csyrah.File(path, "r") as f:
                f.num_items()
        return
    with csyrah.File(path, "r") as f:
        for probe in recorded.get("get_item", []):
            i = probe["index"]
            if probe["outcome"] == "ok":
                item = f.get_item(i)
                assert list(item) == list(probe["result"]), f"{case} item {i}: names"
                for name, d in probe["result"].items():
                    check_value(item[name], d, f"{case} item {i} {name}")
            else:
                with pytest.raises(reel.ReelError):
                    f.get_item(i)
