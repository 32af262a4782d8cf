#!/usr/bin/env bash
# Every format written to an S3 server (moto, on loopback) by reel, downloaded, and read by
# the format's reference implementation through refread (the developers' tool that installs
# the reference Python packages; not part of this repository, so CI cannot run this).
#
# Usage: tests/refread_s3.sh /path/to/refread     (or REEL_REFREAD=/path/to/refread)
# Needs REEL_TEST_MOTO_PYTHON: a Python with moto[server] (.ci/run's environment under
# ~/.cache/reel-ci/venv-* has it; so does any venv with `pip install 'moto[server]'`).
set -euo pipefail
refread="${1:-${REEL_REFREAD:-}}"
if [[ -z "$refread" || ! -x "$refread" ]]; then
    echo "usage: $0 /path/to/refread   (or set REEL_REFREAD)" >&2
    exit 2
fi
if [[ -z "${REEL_TEST_MOTO_PYTHON:-}" ]]; then
    echo "$0: set REEL_TEST_MOTO_PYTHON to a Python that has moto[server]" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
REEL_REFREAD="$(cd "$(dirname "$refread")" && pwd)/$(basename "$refread")" \
    cargo test --workspace --test object_store_write -- --ignored --nocapture written_datasets_read_by_the_reference
