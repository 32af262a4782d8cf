"""The README's Python examples run as written.

A block is marked in README.md by an HTML comment ``<!-- readme-example: NAME ... -->`` on
the line before its opening fence; the test takes the block from there, so the README and
what is tested cannot drift apart. Only what cannot run here is substituted (the dataset path,
the worker count, the number of epochs), each substitution checked to apply exactly once.
"""

from __future__ import annotations

import re

import torch

import reel
from conftest import REPO


def readme_example(name: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.findall(
        rf"^<!-- readme-example: {re.escape(name)}\b[^\n]*-->\n```python\n(.*?)^```$",
        text,
        flags=re.M | re.S,
    )
    assert len(found) == 1, f"README.md has {len(found)} blocks marked readme-example: {name}"
    return found[0]


def substitute(code: str, old: str, new: str) -> str:
    assert code.count(old) == 1, f"the README example no longer has {old!r} once"
    return code.replace(old, new)


def test_readme_torch_example_runs_on_variable_length_records(tmp_path):
    path = tmp_path / "train.ffr"
    reel.generate(path, format="ffrecord", records=600, max_record=512)
    records = [r["data"] for r in reel.open(path)[:]]
    assert len({len(r) for r in records}) > 1, "the generated records should differ in length"

    code = readme_example("torch")
    code = substitute(code, '"train.ffr"', repr(str(path)))
    code = substitute(code, "num_workers=4", "num_workers=0")
    code = substitute(code, "range(10)", "range(2)")
    # Record every batch the loop body sees (the README's body is `...`).
    code = substitute(code, "        ...", "        seen.append((epoch, batch))")
    namespace: dict = {"seen": []}
    exec(compile(code, "README.md (readme-example: torch)", "exec"), namespace)

    seen = namespace["seen"]
    assert isinstance(namespace["loader"], torch.utils.data.DataLoader)
    byte_sum = sum(sum(r) for r in records)
    for epoch in (0, 1):
        batches = [b for e, b in seen if e == epoch]
        assert len(batches) == 3  # 600 records in batches of 256
        for b in batches:
            assert isinstance(b, torch.Tensor) and b.dtype == torch.uint8 and b.dim() == 2
        assert sum(b.shape[0] for b in batches) == len(records)
        # Zero padding adds nothing to the byte sum: every record is there, once.
        assert sum(int(b.sum(dtype=torch.int64)) for b in batches) == byte_sum

    # The comment's resume step, from a checkpoint taken as the loop takes it (here after the
    # first batch of epoch 1): the batches that follow are those of the uninterrupted run.
    ds, loader = namespace["ds"], namespace["loader"]
    ds.set_epoch(1)
    for step, batch in enumerate(loader, start=1):
        checkpoint = {"data": ds.state_dict(batches_seen=step)}
        break
    ds.load_state_dict(checkpoint["data"])
    resumed = list(loader)
    uninterrupted = [b for e, b in seen if e == 1][1:]
    assert len(resumed) == len(uninterrupted) == 2
    assert all(torch.equal(a, b) for a, b in zip(resumed, uninterrupted))
