#!/usr/bin/env bash
# Runs every fuzz target (or those named) for FUZZ_SECONDS each, FUZZ_JOBS
# at a time, from the committed seeds plus whatever corpus earlier runs
# grew, and prints one summary line per target. `make fuzz` calls it.
#
# Stable toolchain only: cargo-fuzz needs -Z flags, which RUSTC_BOOTSTRAP=1
# unlocks on stable. A crash leaves its input in fuzz/artifacts/<target>/
# and makes this script exit non-zero.
set -uo pipefail
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-1}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi
mkdir -p logs
cargo fuzz build -O || exit 1

run_one() {
  local t="$1" log="logs/$1.log"
  mkdir -p "corpus/$t"
  # -rss_limit_mb: the layer targets keep a runtime per input; 2 GB is
  # plenty and still catches a leak. -max_len: big enough for a session
  # script, small enough to stay fast.
  cargo fuzz run -O "$t" "corpus/$t" -- \
    -max_total_time="$seconds" -dict=dict/mcp.dict -max_len=65536 \
    -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1
  local rc=$?
  local execs
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  local cov
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' || true)
  if [ $rc -eq 0 ]; then
    echo "fuzz $t: ok, ${seconds}s, ${execs:-?} execs, $cov"
  else
    echo "fuzz $t: CRASH (exit $rc) after ${execs:-?} execs; see fuzz/$log and fuzz/artifacts/$t/"
    grep -m1 -A3 'panicked at' "$log" | sed 's/^/    /'
  fi
  return $rc
}

failed=0
running=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
    running=$((running - 1))
  fi
done
for p in "${pids[@]}"; do
  wait "$p" || failed=1
done
exit $failed
