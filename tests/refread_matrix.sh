#!/usr/bin/env bash
# The convert matrix checked by the reference readers: every format and generation
# (ffrecord, syrah, ofrecord, granular 0.24, bags 0.5.1, gulp) converted to every other by
# `reel convert`, each output read back by reel and by the target's reference
# implementation through refread, which prints records as JSON lines.
#
# Usage: tests/refread_matrix.sh /path/to/refread     (or REEL_REFREAD=/path/to/refread)
#
# refread is a developer tool that is not part of this repository (it installs the
# reference Python packages into virtual environments on first use), so neither `cargo test`
# nor CI runs this check; the same matrix without the references is the ordinary test
# `cargo test -p reel-cli --test convert_matrix`.
# Prints one line per pair (ok / refused with the reason / MISMATCH with the first
# difference) and a count; exits non-zero on any mismatch.
set -euo pipefail
refread="${1:-${REEL_REFREAD:-}}"
if [[ -z "$refread" ]]; then
    echo "usage: $0 /path/to/refread   (or set REEL_REFREAD)" >&2
    exit 2
fi
if [[ ! -x "$refread" ]]; then
    echo "$0: $refread is not an executable file" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
REEL_REFREAD="$(cd "$(dirname "$refread")" && pwd)/$(basename "$refread")" \
    cargo test --workspace --test convert_matrix -- --ignored --nocapture refread_matrix
