"""Shared helpers: where the golden corpus is and how to compare values with its manifests."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]


def golden_root() -> Path:
    """REEL_GOLDEN_DIR (relative paths from the repository root) or tests/golden."""
    env = os.environ.get("REEL_GOLDEN_DIR")
    root = (REPO / env) if env and not os.path.isabs(env) else Path(env) if env else REPO / "tests/golden"
    assert (root / "index.json").is_file(), f"golden corpus not found at {root}"
    return root


def golden_cases(format_key: str, *, corrupt: bool) -> list[str]:
    """Dataset directories index.json lists for `format_key` (corrupt ones or the others)."""
    index = json.loads((golden_root() / "index.json").read_text())
    names = index["formats"][format_key]["datasets"]
    return [n for n in names if n.startswith("corrupt/") == corrupt]


def dataset_path(key: str, case: str) -> Path:
    """The path a reader opens for golden case `key`/`case` (its `parts` directory where the
    case has one)."""
    path = golden_root() / key / case
    return path / "parts" if (path / "parts").is_dir() else path


def manifest(format_key: str, case: str) -> dict:
    return json.loads((golden_root() / format_key / case / "expected.json").read_text())


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def manifest_dtype(dtype: np.dtype) -> str:
    if dtype.kind == "U":
        return f"unicode_ucs4[{dtype.itemsize // 4}]"
    return dtype.name


def check_bytes(actual, expected: dict, where: str) -> None:
    assert isinstance(actual, (bytes, memoryview)), f"{where}: {type(actual).__name__} is not bytes"
    data = bytes(actual)
    if "len" in expected:
        assert len(data) == expected["len"], f"{where}: length"
    if "sha256" in expected:
        assert sha256(data) == expected["sha256"], f"{where}: sha256"
    if "hex" in expected:
        assert data.hex() == expected["hex"].lower(), f"{where}: hex"


def check_value(actual, expected: dict, where: str) -> None:
    """Compares a value reel returned with a manifest value descriptor."""
    t = expected["type"]
    if t == "bytes":
        check_bytes(actual, expected, where)
    elif t == "str":
        assert actual == expected["value"], where
    elif t == "int":
        assert isinstance(actual, int) and not isinstance(actual, bool), f"{where}: {actual!r}"
        assert actual == expected["value"], where
    elif t == "bool":
        assert actual is expected["value"], where
    elif t == "null":
        assert actual is None, where
    elif t == "float":
        assert isinstance(actual, float), f"{where}: {actual!r}"
        assert struct.pack(">d", actual).hex() == expected["f64_bits"].lower(), where
    elif t == "list":
        assert isinstance(actual, list), f"{where}: {type(actual).__name__}"
        assert len(actual) == len(expected["items"]), f"{where}: list length"
        for k, (a, e) in enumerate(zip(actual, expected["items"])):
            check_value(a, e, f"{where}[{k}]")
    elif t == "map":
        assert isinstance(actual, dict), f"{where}: {type(actual).__name__}"
        items = list(actual.items())
        assert len(items) == len(expected["entries"]), f"{where}: map size"
        for k, ((ak, av), (ek, ev)) in enumerate(zip(items, expected["entries"])):
            check_value(ak, ek, f"{where} key {k}")
            check_value(av, ev, f"{where}[{ak!r}]")
    elif t == "ndarray":
        assert isinstance(actual, np.ndarray), f"{where}: {type(actual).__name__}"
        assert manifest_dtype(actual.dtype) == expected["dtype"], f"{where}: dtype {actual.dtype}"
        assert list(actual.shape) == expected["shape"], f"{where}: shape"
        raw = actual.tobytes()
        if "byte_len" in expected:
            assert len(raw) == expected["byte_len"], where
        check_bytes(raw, {k: v for k, v in expected.items() if k in ("sha256", "hex")}, where)
    else:
        raise AssertionError(f"{where}: unknown descriptor type {t}")


def same(a, b) -> bool:
    """Deep equality that compares NumPy arrays by dtype, shape and bytes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.tobytes() == b.tobytes()
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


@pytest.fixture(scope="session")
def golden() -> Path:
    return golden_root()


@pytest.fixture
def time_limit(request):
    """Fails the test with TimeoutError after the module's TEST_SECONDS (SIGALRM), so a hung
    Ray job fails its test instead of the CI run."""
    import signal

    seconds = request.module.TEST_SECONDS

    def expire(signum, frame):
        raise TimeoutError(f"{request.node.name} ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def quiet_ray_env() -> None:
    """Ray started by the tests sends no usage statistics and asks for no authentication."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_AUTH_MODE"] = "disabled"


# Every format's `normal` golden case: what the object-storage tests upload, each under
# its own key.
NORMAL_CASES = [
    ("ffrecord", "normal"),
    ("syrah", "normal"),
    ("ofrecord", "normal"),
    ("granular/granular-0.24.2", "normal"),
    ("granular/bags-0.5.1", "normal"),
    ("gulpio2", "normal"),
]


def sample_records(fmt: str, n: int) -> list[dict]:
    """Records each writable format holds as they are (so they read back equal)."""
    if fmt == "ffrecord":
        return [{"data": bytes([i % 256]) * (i % 7)} for i in range(n)]
    if fmt == "gulp":
        return [{"id": f"v{i}", "meta": {"label": i, "name": f"n{i}"}, "frames": []} for i in range(n)]
    if fmt == "ofrecord":
        return [
            {"data": [bytes([i % 256]) * 3], "x": np.arange(i % 5, dtype=np.float32), "y": np.array([i], dtype=np.int64)}
            for i in range(n)
        ]
    return [
        {"data": bytes([i % 256]) * 3, "text": f"record {i}", "x": np.arange(i % 5, dtype=np.float32)}
        for i in range(n)
    ]


def damaged_ffrecord(path, records: int = 30) -> None:
    """Writes an FFRecord of `records` small records at `path` whose last record's stored
    checksum no longer matches its bytes."""
    import reel

    with reel.ffrecord.Writer(path) as w:
        for i in range(records):
            w.write({"data": b"%d" % i})
    data = bytearray(Path(path).read_bytes())
    data[-1] ^= 0xFF
    Path(path).write_bytes(bytes(data))


# The formats Ray writes (one part per task; Syrah is one file with one index).
WRITABLE = ["ffrecord", "ofrecord", "granular", "bags", "gulp"]


def start_local_ray() -> None:
    """A Ray of this test module's own (2 CPUs, loopback, no dashboard), with Ray Data
    handing blocks on in task order: the read tests compare records in order."""
    import ray

    quiet_ray_env()
    # address="local": always a cluster of its own, never one another process left running
    # on the machine (ray.init would join that one and refuse num_cpus).
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        object_store_memory=128 << 20,
    )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    # A dataset takes the context as it is when it is made.
    context.execution_options.preserve_order = True


@contextlib.contextmanager
def moto_s3(bucket: str):
    """moto's S3 server on a free 127.0.0.1 port with `bucket` created, and reel pointed at it
    the standard way (AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, test credentials in the environment,
    restored at the end). Yields a boto3 client of the server. Ray started inside inherits
    the environment, so its workers reach the bucket too."""
    import boto3
    from moto.server import ThreadedMotoServer

    # Port 0: the server binds a free port itself, and get_host_and_port says which. A port
    # chosen here and bound later could be taken in between, and ThreadedMotoServer.start
    # then waits forever for a thread that died on the bind.
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
    }
    # A developer's own AWS settings must not reach the test server's clients.
    cleared = ["AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"]
    saved = {k: os.environ.get(k) for k in [*env, *cleared]}
    for k in cleared:
        os.environ.pop(k, None)
    os.environ.update(env)
    try:
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket=bucket)
        yield client
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def reel_binary() -> str:
    """The `reel` command built by cargo: REEL_BIN, else debug/reel in cargo's target
    directory (CARGO_TARGET_DIR, which .ci/run sets, else the workspace's target/)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    path = os.environ.get("REEL_BIN") or str(target / "debug" / "reel")
    assert os.access(path, os.X_OK), f"{path}: build the reel command first (cargo build -p reel-cli)"
    return path


def upload_tree(client, bucket: str, root, prefix: str) -> None:
    """Every file under `root` to `bucket` under `prefix`, keeping the relative layout."""
    for directory, _, files in os.walk(root):
        for name in files:
            local = os.path.join(directory, name)
            client.upload_file(local, bucket, f"{prefix}/{os.path.relpath(local, root)}")
