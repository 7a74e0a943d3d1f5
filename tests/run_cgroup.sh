#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a test binary inside a real cgroup whose CPU quota is half a CPU
# (ctest label "unit"):
#
#   tests/run_cgroup.sh <test binary>
#
# WEFT_TEST_EXPECT_CPU_LIMIT=0.5 tells the test what its own cgroup must
# say, so that it fails if the quota was not read. Needs root and a
# writable cgroup tree (v2, or v1's cpu controller); exits 77 (ctest's
# skip) where it cannot make one, as in most containers. The cgroup is
# removed on the way out.
set -u
test=${1:?usage: run_cgroup.sh <test binary>}
name="weft-test-$$"
if [[ $(id -u) != 0 ]]; then
  echo "run_cgroup.sh: not root, skipped"
  exit 77
fi
root=/sys/fs/cgroup
dir=""
if [[ -f $root/cgroup.controllers ]] && grep -qw cpu "$root/cgroup.controllers"; then
  grep -qw cpu "$root/cgroup.subtree_control" ||
    echo +cpu >"$root/cgroup.subtree_control" 2>/dev/null || true
  if mkdir "$root/$name" 2>/dev/null; then
    dir="$root/$name"
    echo "50000 100000" >"$dir/cpu.max" 2>/dev/null || dir=""
    join=cgroup.procs
  fi
elif [[ -d $root/cpu ]] && mkdir "$root/cpu/$name" 2>/dev/null; then
  dir="$root/cpu/$name"
  echo 50000 >"$dir/cpu.cfs_quota_us" 2>/dev/null || dir=""
  join=tasks
fi
if [[ -z $dir ]]; then
  [[ -d $root/$name ]] && rmdir "$root/$name"
  [[ -d $root/cpu/$name ]] && rmdir "$root/cpu/$name"
  echo "run_cgroup.sh: cannot make a cgroup with a CPU quota here, skipped"
  exit 77
fi
trap 'rmdir "$dir" 2>/dev/null' EXIT
WEFT_TEST_EXPECT_CPU_LIMIT=0.5 sh -c 'echo $$ >"$1/$2" && exec "$3"' \
  sh "$dir" "$join" "$test"
rc=$?
echo "run_cgroup.sh: $test in $dir (quota 0.5 CPU): status $rc"
exit $rc
