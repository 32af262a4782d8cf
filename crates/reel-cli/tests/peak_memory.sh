#!/bin/sh
# Peak memory (maximum resident set, from GNU time) and time of `reel verify` on each
# hostile case that crates/reel-cli/tests/hostile.rs builds (sparse files claiming
# gigabytes, records sharing their bytes, FIFOs, a symlink loop).
#
#   crates/reel-cli/tests/peak_memory.sh [CASE_DIR]      (from the workspace root)
#
# The cases are written by the ignored test `write_hostile_cases`; sparse files take no disk.
set -eu
dir=${1:-$(mktemp -d /tmp/reel-hostile.XXXXXX)}
rm -rf "$dir"
REEL_HOSTILE_DIR=$dir cargo test -q -p reel-cli --test hostile -- --ignored write_hostile_cases >/dev/null
cargo build -q -p reel-cli
reel=${CARGO_TARGET_DIR:-$(pwd)/target}/debug/reel
printf '%-28s %12s %8s %5s\n' case max-RSS-KiB seconds exit
for case in "$dir"/*; do
    name=$(basename "$case")
    # GNU time writes its line last on stderr; reel's own messages come before it.
    line=$(cd "$dir" && timeout 20 /usr/bin/time -f '%M %e %x' "$reel" verify --quiet "$name" 2>&1 >/dev/null | tail -n 1) || true
    set -- $line
    printf '%-28s %12s %8s %5s\n' "$name" "${1:-?}" "${2:-?}" "${3:-?}"
done
