#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctest spdx_fix: tools/spdx.sh on a scratch tree. It must tag each kind of
# file in its comment syntax (after a shebang where there is one), keep
# file modes, leave other files alone, pass --check afterwards, fail it
# before, and change nothing on a second run.
#
#   tests/run_spdx_fix.sh <tools/spdx.sh> <scratch dir>
set -euo pipefail

script=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir/tools" "$dir/src" "$dir/.ci" "$dir/build/x"
cp "$script" "$dir/tools/spdx.sh"
cd "$dir"

fail() {
  echo "spdx_fix: $*" >&2
  exit 1
}

printf '/* A C file. */\nint x;\n' >src/a.c
printf '#pragma once\n' >src/b.h
printf 'int y;\n' >src/c.cpp
printf 'project(p C)\n' >CMakeLists.txt
printf 'set(a 1)\n' >src/d.cmake
printf '@PACKAGE_INIT@\n' >src/e.cmake.in
printf '#!/bin/sh\necho hi\n' >src/f.sh
printf '#!/usr/bin/env bash\nset -e\n' >.ci/run
printf 'plain text\n' >notes.txt
printf '#!/usr/bin/env python3\nprint(1)\n' >tool.py
printf 'int in_build;\n' >build/x/g.c
chmod 755 src/f.sh .ci/run

if tools/spdx.sh --check >check.out 2>&1; then
  fail "--check passed on an untagged tree"
fi
grep -q 'src/a.c' check.out || fail "--check did not list src/a.c"

tools/spdx.sh >/dev/null
expect() {
  local file=$1 want
  want=$(printf '%b' "$2")
  [[ "$(cat "$file")" == "$want" ]] ||
    fail "$file is now:"$'\n'"$(cat "$file")"$'\n'"want:"$'\n'"$want"
}
expect src/a.c '/* SPDX-License-Identifier: MIT */\n/* A C file. */\nint x;'
expect src/b.h '/* SPDX-License-Identifier: MIT */\n#pragma once'
expect src/c.cpp '/* SPDX-License-Identifier: MIT */\nint y;'
expect CMakeLists.txt '# SPDX-License-Identifier: MIT\nproject(p C)'
expect src/d.cmake '# SPDX-License-Identifier: MIT\nset(a 1)'
expect src/e.cmake.in '# SPDX-License-Identifier: MIT\n@PACKAGE_INIT@'
expect src/f.sh '#!/bin/sh\n# SPDX-License-Identifier: MIT\necho hi'
expect .ci/run '#!/usr/bin/env bash\n# SPDX-License-Identifier: MIT\nset -e'
expect notes.txt 'plain text'
expect tool.py '#!/usr/bin/env python3\nprint(1)'
expect build/x/g.c 'int in_build;'
[[ -x src/f.sh && -x .ci/run ]] || fail "lost the executable bit"
[[ "$(stat -c %a src/a.c)" == "$(stat -c %a notes.txt)" ]] ||
  fail "changed src/a.c's mode"

tools/spdx.sh --check >/dev/null || fail "--check failed after tagging"
sum=$(find . -type f ! -name '*.out' -print0 | sort -z | xargs -0 md5sum)
tools/spdx.sh >/dev/null
[[ "$(find . -type f ! -name '*.out' -print0 | sort -z | xargs -0 md5sum)" \
   == "$sum" ]] || fail "a second run changed files"

# A misplaced SPDX line is an error, not a second tag.
printf 'int z;\n// SPDX-License-Identifier: MIT\n' >src/h.c
if tools/spdx.sh >fix.out 2>&1; then
  fail "a misplaced SPDX line was accepted"
fi
grep -q 'src/h.c has an SPDX line' fix.out || fail "unclear error: $(cat fix.out)"
echo "spdx_fix: OK"
