#!/usr/bin/env bash
# Runs reel's fuzz targets with cargo-fuzz (nightly).
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 600 s, every target)
#
# Each target starts from fuzz/seeds/<target>/ (copied into fuzz/corpus/<target>/), runs for
# the given time, and writes its final libFuzzer statistics to fuzz/logs/<target>.log. A crash
# is minimized and copied into fuzz/regressions/<target>/, where `cargo test` replays it.
# Targets run one at a time under `nice -n 10` (the machine is shared with builds).
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:-600}
shift || true
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
mkdir -p logs
status=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "regressions/$t"
  rm -rf "artifacts/$t"
  cp -n "seeds/$t/"* "corpus/$t/" 2>/dev/null || true
  echo "== $t ($secs s)"
  if ! nice -n 10 cargo +nightly fuzz run "$t" "corpus/$t" -- \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
      -print_final_stats=1 >"logs/$t.log" 2>&1; then
    status=1
    for a in artifacts/"$t"/*; do
      [ -f "$a" ] || continue
      case "$(basename "$a")" in minimized-from-*) continue ;; esac
      min="regressions/$t/$(basename "$a")"
      nice -n 10 cargo +nightly fuzz tmin "$t" "$a" -- -runs=20000 >"logs/$t.tmin.log" 2>&1 || true
      latest=$(ls -t artifacts/"$t"/minimized-from-* 2>/dev/null | head -n1 || true)
      cp "${latest:-$a}" "$min"
      echo "   crash saved as $min"
    done
  fi
  { grep -E 'stat::number_of_executed_units|cov: ' "logs/$t.log" || true; } | tail -n 2 | sed 's/^/   /'
done
exit $status
