#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/fuzz.sh: build weft's fuzz targets (tests/fuzz/fuzz_*.c) with
# clang's libFuzzer under ASan+UBSan and run each for a bounded time,
# starting from its seed corpus and the crash inputs kept so far.
#
#   tools/fuzz.sh                 # every target, WEFT_FUZZ_SECONDS each
#   tools/fuzz.sh json            # only the named targets
#
# A target that crashes, leaks, times out or fails one of its checks ends
# the run with a non-zero status; its input is copied to
# tests/fuzz/regress/<target>/, where the normal suite's
# fuzz_<target>_replay test runs it from then on: commit it with the fix
# (and a line in that folder's README.md saying what it found).
# In these builds the snapshot loader skips its section checksums
# (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so that mutated inputs reach
# the checks behind them.
#
# Environment:
#   WEFT_FUZZ_SECONDS  time per target (default 60)
#   WEFT_JOBS          build parallelism (default: all cores)
#   WEFT_SKIP_DEPS=1   skip tools/install-deps.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

"$root/tools/install-deps.sh" fuzz

seconds=${WEFT_FUZZ_SECONDS:-60}
jobs=${WEFT_JOBS:-$(nproc 2>/dev/null || echo 2)}
build="$root/build/fuzz"

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/fuzz_*.c; do
    name=${f#tests/fuzz/fuzz_}
    name=${name%.c}
    [[ "$name" == replay ]] || targets+=("$name")
  done
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=Debug \
  -DWEFT_WERROR=ON \
  -DWEFT_SANITIZE=address,undefined \
  -DWEFT_FUZZ=ON \
  -DWEFT_BUILD_TESTS=ON \
  -DWEFT_BUILD_BENCH=OFF \
  -DWEFT_BUILD_TOOLS=ON >/dev/null
for t in "${targets[@]}"; do
  cmake --build "$build" --parallel "$jobs" --target "weft_fuzz_$t"
done

# seeds <target> <folder>: fresh seed inputs a target wants beyond its
# checked-in corpus. The snapshot loader gets real snapshots of every
# scenario written by this build's weft-sim (the checked-in ones may
# predate a format change); the per-entity codec gets records and tables
# written by this build's test_entity_codec, weft::net's decoders client
# messages and welcome + packet pairs written by test_net_wire.
seeds() {
  case "$1" in
    snapshot)
      cmake --build "$build" --parallel "$jobs" --target weft-sim
      for scenario in arena boids particles; do
        "$build/tools/weft-sim" --scenario "$scenario" --entities 64 \
          --ticks 3 --threads 0 --checkpoint "$2/$scenario.snap" >/dev/null
      done
      ;;
    entity_codec)
      cmake --build "$build" --parallel "$jobs" --target weft_test_entity_codec
      WEFT_ENTITY_CODEC_SEEDS="$2" "$build/tests/test_entity_codec" >/dev/null
      ;;
    net_client | net_packet)
      # test_net_wire writes both targets' seeds under one folder.
      cmake --build "$build" --parallel "$jobs" --target weft_test_net_wire
      mkdir -p "$(dirname "$2")/net_client" "$(dirname "$2")/net_packet"
      WEFT_NET_SEEDS="$(dirname "$2")" "$build/tests/test_net_wire" >/dev/null
      ;;
  esac
}

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

failed=()
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  rm -rf "$artifacts"
  mkdir -p "$work" "$artifacts"
  seeds "$t" "$work"
  echo "fuzz.sh: $t for ${seconds}s"
  set +e
  "$build/tests/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" \
    "$work" "tests/fuzz/corpus/$t" "tests/fuzz/regress/$t"
  rc=$?
  set -e
  if ((rc != 0)); then
    failed+=("$t")
    mkdir -p "tests/fuzz/regress/$t"
    for a in "$artifacts"/*; do
      [[ -f "$a" ]] || continue
      cp "$a" "tests/fuzz/regress/$t/"
      echo "fuzz.sh: $t: kept $(basename "$a") in tests/fuzz/regress/$t/"
    done
  fi
done

if ((${#failed[@]} != 0)); then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s) ran ${seconds}s each without a failure"
