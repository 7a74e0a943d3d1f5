#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/test.sh: build weft in Debug with -Werror and run the whole ctest
# suite (labels unit, stress, install). This is the command the README and
# CI use.
#
#   tools/test.sh                                # build/debug
#   WEFT_SANITIZE=address,undefined tools/test.sh  # build/asan
#   WEFT_SANITIZE=thread tools/test.sh           # build/tsan
#   tools/test.sh -L unit                        # extra args go to ctest
#
# Environment:
#   WEFT_SANITIZE      '' | address,undefined | thread
#   WEFT_JOBS          build and test parallelism (default: all cores)
#   WEFT_TEST_TIMEOUT  per-test timeout in seconds for tests that set none
#                      (default 900)
#   WEFT_SKIP_DEPS=1   skip tools/install-deps.sh
#   CC                 C compiler (default: cmake's choice)
# Sanitizer options already in the environment are kept and take precedence
# over the defaults set here.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# browser: Chromium, for the live view's test (net_browser), so that the
# whole suite runs rather than skipping it.
"$root/tools/install-deps.sh" browser

sanitize=${WEFT_SANITIZE:-}
case "$sanitize" in
  "") variant=debug ;;
  address,undefined | undefined,address) variant=asan ;;
  thread) variant=tsan ;;
  *)
    echo "test.sh: WEFT_SANITIZE must be empty, 'address,undefined' or" \
         "'thread', not '$sanitize'" >&2
    exit 2
    ;;
esac
build="$root/build/$variant"
jobs=${WEFT_JOBS:-$(nproc 2>/dev/null || echo 2)}

# Options given first are defaults; later ones (the caller's) win.
case "$variant" in
  asan)
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    ;;
  tsan)
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
    ;;
esac

echo "test.sh: variant $variant (WEFT_SANITIZE='$sanitize'), $jobs jobs," \
     "build dir $build"

cmake -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=Debug \
  -DWEFT_WERROR=ON \
  -DWEFT_SANITIZE="$sanitize" \
  -DWEFT_BUILD_TESTS=ON
cmake --build "$build" --parallel "$jobs"

# ThreadSanitizer (GCC 12) dies with "FATAL: ThreadSanitizer: unexpected
# memory mapping" on kernels with high mmap ASLR entropy
# (vm.mmap_rnd_bits > 28), sometimes only on some runs. Probe with a tiny
# threaded program, several times; if it ever fails, run the suite with ASLR
# off for the ctest process tree (setarch -R, inherited by every test), or,
# where personality() is blocked and we are root, lower the entropy.
runner=()
if [[ "$variant" == tsan ]]; then
  probe="$build/tsan-probe"
  cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
  "${cc:-cc}" -fsanitize=thread -g -pthread -x c -o "$probe" - <<'EOF'
#include <pthread.h>
static int value;
static void *run(void *arg) {
  value = *(int *)arg;
  return 0;
}
int main(void) {
  pthread_t t;
  int one = 1;
  if (pthread_create(&t, 0, run, &one) != 0)
    return 1;
  pthread_join(t, 0);
  return value == 1 ? 0 : 1;
}
EOF
  tsan_ok() {
    local i
    for i in 1 2 3 4 5; do
      "$@" "$probe" >/dev/null 2>&1 || return 1
    done
  }
  arch=$(uname -m)
  if tsan_ok; then
    :
  elif tsan_ok setarch "$arch" -R; then
    echo "test.sh: TSan fails with ASLR on here; running ctest under" \
         "'setarch $arch -R'"
    runner=(setarch "$arch" -R)
  elif [[ "$(id -u)" == 0 ]] &&
       { echo 28 >/proc/sys/vm/mmap_rnd_bits; } 2>/dev/null && tsan_ok; then
    echo "test.sh: TSan needed less ASLR entropy; set vm.mmap_rnd_bits=28"
  else
    echo "test.sh: ThreadSanitizer cannot run on this machine:" >&2
    "$probe" >&2 || true
    echo "test.sh: try 'sudo sysctl vm.mmap_rnd_bits=28'" >&2
    exit 1
  fi
fi

# ctest's closing lines (the "% tests passed" summary) must stay the last
# thing this script prints: CI tooling reads them.
cd "$build"
exec ${runner[@]+"${runner[@]}"} ctest --output-on-failure \
  --parallel "$jobs" \
  --timeout "${WEFT_TEST_TIMEOUT:-900}" \
  --no-tests=error \
  --output-junit "$build/junit.xml" \
  "$@"
