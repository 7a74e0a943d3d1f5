#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/fuzz.sh [SECONDS]: builds the libFuzzer targets (build/fuzz: clang,
# ASan + UBSan, -DWEFT_FUZZ=ON), writes a seed corpus of real snapshots
# with weft-sim (every scenario), and runs each target for SECONDS
# (default $WEFT_FUZZ_SECONDS or 60) over that corpus and the kept
# regression inputs (tests/data/fuzz/<target>/). A crash fails the script;
# the crashing input is copied into tests/data/fuzz/<target>/, where
# test_snapshot loads it on every run from then on.
#
# Environment: WEFT_JOBS (build jobs, default nproc), WEFT_SKIP_DEPS=1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-${WEFT_FUZZ_SECONDS:-60}}
build="$root/build/fuzz"
jobs=${WEFT_JOBS:-$(nproc)}

"$root/tools/install-deps.sh"
for tool in clang clang++; do
  command -v "$tool" >/dev/null || {
    echo "fuzz.sh: $tool not found (Debian: clang, libfuzzer-14-dev)" >&2
    exit 2
  }
done

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
  -DWEFT_FUZZ=ON -DWEFT_SANITIZE=address,undefined -DWEFT_BUILD_TESTS=OFF \
  -DWEFT_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target fuzz_snapshot weft-sim

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
status=0
for target in snapshot; do
  corpus="$build/corpus/$target"
  kept="$root/tests/data/fuzz/$target"
  crashes="$build/crashes/$target"
  rm -rf "$crashes"
  mkdir -p "$corpus" "$kept" "$crashes"
  for scenario in arena boids particles; do
    "$build/tools/weft-sim" --scenario "$scenario" --entities 64 --ticks 3 \
      --threads 0 --checkpoint "$corpus/$scenario.snap" >/dev/null
  done
  echo "fuzz.sh: fuzz_$target for ${seconds}s"
  if ! "$build/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 \
      -timeout=10 -artifact_prefix="$crashes/" "$corpus" "$kept"; then
    status=1
    for f in "$crashes"/*; do
      [[ -f "$f" ]] && cp "$f" "$kept/" &&
        echo "fuzz.sh: kept $(basename "$f") in tests/data/fuzz/$target/"
    done
  fi
done
exit $status
