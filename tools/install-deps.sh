#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/install-deps.sh: install the Debian 12 packages weft builds and tests
# with, if any are missing. Idempotent: when everything is present it only
# says so. Safe without a terminal (CI): it never prompts.
#
#   tools/install-deps.sh          # what the build and the test suite need
#   tools/install-deps.sh fuzz     # also clang and libFuzzer (tools/fuzz.sh)
#   tools/install-deps.sh browser  # also Chromium (test net_browser)
#
# Environment:
#   WEFT_SKIP_DEPS=1   do nothing (for machines managed some other way)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

if [[ "${WEFT_SKIP_DEPS:-0}" == 1 ]]; then
  echo "install-deps: WEFT_SKIP_DEPS=1, not checking packages"
  exit 0
fi

# Libraries and tools; the compiler toolchain is checked separately below.
# libudev-dev: hwloc's private dependency, which `pkg-config --static --libs
# weft` names (-ludev); libhwloc-dev does not pull it in. libpng-dev: the
# tools' pictures (weft-sim --frames). libxxhash-dev: snapshot checksums
# (header-only use; weft's users need nothing of it). libopenmpi-dev and
# openmpi-bin: weft::mpi and its mpirun tests (label mpi).
# libwebsockets-dev: weft::net's socket transport (WebSocket over TCP).
packages=(cmake pkg-config libjemalloc-dev libhwloc-dev libudev-dev hwloc
          libcmocka-dev libpng-dev libxxhash-dev libopenmpi-dev openmpi-bin
          libwebsockets-dev)
# Optional parts, named on the command line. fuzz: clang builds the fuzz
# targets with -fsanitize=fuzzer, whose runtime (libclang_rt.fuzzer) is in
# libclang-rt-14-dev; libfuzzer-14-dev is LLVM's libFuzzer library itself.
# browser: headless Chromium loads the live view in test net_browser
# (tests/net/browser.sh), which is skipped without it.
for part in "$@"; do
  case "$part" in
    fuzz) packages+=(clang libfuzzer-14-dev libclang-rt-14-dev) ;;
    browser) packages+=(chromium) ;;
    *)
      echo "install-deps: unknown part '$part' (known: fuzz, browser)" >&2
      exit 2
      ;;
  esac
done

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: dpkg-query not found; this script knows Debian only." >&2
  echo "install-deps: install the equivalents of: build-essential" \
       "${packages[*]}" >&2
  exit 0
fi

installed() {
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ "$status" == "install ok installed" ]]
}

missing=()
# build-essential, or at least a C and a C++ compiler (the tests include
# weft's headers from C++), make and the libc headers.
if ! installed build-essential &&
   ! { installed gcc && installed g++ && installed make &&
       installed libc6-dev; }; then
  missing+=(build-essential)
fi
for pkg in "${packages[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all dependencies present"
  exit 0
fi

echo "install-deps: missing packages: ${missing[*]}"

apt_install=(apt-get install -y --no-install-recommends "${missing[@]}")
if [[ "$(id -u)" == 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n env DEBIAN_FRONTEND=noninteractive)
else
  {
    echo "install-deps: need root to install: ${missing[*]}"
    echo "install-deps: run:"
    echo "  sudo apt-get update && sudo ${apt_install[*]}"
  } >&2
  exit 1
fi

"${as_root[@]}" apt-get update </dev/null
"${as_root[@]}" "${apt_install[@]}" </dev/null

still=()
for pkg in "${missing[@]}"; do
  installed "$pkg" || still+=("$pkg")
done
if ((${#still[@]} != 0)); then
  echo "install-deps: still missing after apt-get: ${still[*]}" >&2
  exit 1
fi
echo "install-deps: installed ${missing[*]}"
