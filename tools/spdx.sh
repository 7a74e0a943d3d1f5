#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/spdx.sh: put "SPDX-License-Identifier: MIT" at the top of every
# source file weft owns: C and C++ sources and headers, CMake files
# (CMakeLists.txt, *.cmake, *.cmake.in) and shell scripts (*.sh and any
# file that starts with a sh or bash shebang, such as .ci/run).
#
#   tools/spdx.sh          add the line where it is missing
#   tools/spdx.sh --check  change nothing; list files without it and exit 1
#                          if there are any
#
# The line is the first one, in the file's comment syntax (/* */ for C and
# C++, # otherwise), or the second after a shebang. The files are the
# ones git tracks plus untracked ones it does not ignore (every file under
# the tree, build directories aside, outside a git checkout).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

tag="SPDX-License-Identifier: MIT"

mode=fix
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  -h | --help)
    # The comment block under the shebang, without the SPDX line.
    awk 'NR > 1 && !/^#/ { exit }
         NR > 1 && !/^# SPDX-License-Identifier:/ { sub(/^# ?/, ""); print }' "$0"
    exit 0
    ;;
  *)
    echo "usage: tools/spdx.sh [--check]" >&2
    exit 2
    ;;
esac

# Prints every candidate file, NUL-terminated.
list_files() {
  local top
  top=$(git rev-parse --show-toplevel 2>/dev/null) || top=
  if [[ -n "$top" && "$(cd "$top" && pwd -P)" == "$(pwd -P)" ]]; then
    git ls-files -z --cached --others --exclude-standard
  else
    find . \( -path ./.git -o -path ./build -o -path './build-*' \
      -o -path './cmake-build-*' \) \
      -prune -o -type f -print0 | sed -z 's|^\./||'
  fi
}

# Prints the comment style of a file weft owns (c or hash), or nothing.
style_of() {
  local f=$1 first
  case "$f" in
    *.c | *.h | *.cpp | *.hpp) echo c; return ;;
    CMakeLists.txt | */CMakeLists.txt | *.cmake | *.cmake.in | *.sh)
      echo hash
      return
      ;;
  esac
  IFS= read -r first <"$f" 2>/dev/null || true
  if [[ "$first" =~ ^#!.*(/|[[:space:]])(ba)?sh([[:space:]]|$) ]]; then
    echo hash
  fi
}

# The tag line in a style.
tag_line() {
  if [[ "$1" == c ]]; then
    echo "/* $tag */"
  else
    echo "# $tag"
  fi
}

# True when the file carries the tag line where it belongs.
has_tag() {
  local f=$1 line=$2 first second
  {
    IFS= read -r first || true
    IFS= read -r second || true
  } <"$f"
  if [[ "$first" == "#!"* ]]; then
    [[ "$second" == "$line" ]]
  else
    [[ "$first" == "$line" ]]
  fi
}

# Writes the tag line into the file, after its shebang if it has one,
# keeping its mode.
add_tag() {
  local f=$1 line=$2 tmp first
  tmp=$(mktemp "$f.spdx.XXXXXX")
  IFS= read -r first <"$f" || true
  if [[ "$first" == "#!"* ]]; then
    { printf '%s\n%s\n' "$first" "$line"; tail -n +2 "$f"; } >"$tmp"
  else
    { printf '%s\n' "$line"; cat "$f"; } >"$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv "$tmp" "$f"
}

checked=0
missing=()
while IFS= read -r -d '' f; do
  [[ -f "$f" && ! -L "$f" ]] || continue
  style=$(style_of "$f")
  [[ -n "$style" ]] || continue
  checked=$((checked + 1))
  line=$(tag_line "$style")
  has_tag "$f" "$line" && continue
  if grep -Eq '^(/\*|//|#) *SPDX-License-Identifier' "$f"; then
    echo "spdx.sh: $f has an SPDX line, but not '$line' at the top;" \
         "fix it by hand" >&2
    exit 1
  fi
  missing+=("$f")
  if [[ "$mode" == fix ]]; then
    add_tag "$f" "$line"
  fi
done < <(list_files | sort -z)

if [[ "$mode" == check ]]; then
  if ((${#missing[@]} != 0)); then
    echo "spdx.sh: ${#missing[@]} of $checked files lack '$tag'" \
         "(run tools/spdx.sh):" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
  fi
  echo "spdx.sh: all $checked files carry '$tag'"
  exit 0
fi
echo "spdx.sh: tagged ${#missing[@]} of $checked files"
