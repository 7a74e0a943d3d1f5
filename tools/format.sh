#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/format.sh: apply .clang-format to every .c, .h and .cpp file under
# core, include, scheduler, systems, mpi, net, tools, bench and tests.
#
#   tools/format.sh          rewrite files in place
#   tools/format.sh --check  change nothing; list badly formatted files and
#                            exit 1 if there are any
#
# Environment: CLANG_FORMAT names the clang-format binary (default:
# clang-format).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

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
    echo "usage: tools/format.sh [--check]" >&2
    exit 2
    ;;
esac

clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "format.sh: $clang_format not found (apt-get install clang-format)" >&2
  exit 2
fi

dirs=()
for d in core include scheduler systems mpi net tools bench tests; do
  [[ -d "$d" ]] && dirs+=("$d")
done
files=()
if ((${#dirs[@]} != 0)); then
  while IFS= read -r -d '' f; do
    files+=("$f")
  done < <(find "${dirs[@]}" -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) \
             -print0 | sort -z)
fi
if ((${#files[@]} == 0)); then
  echo "format.sh: no C sources found"
  exit 0
fi

if [[ "$mode" == fix ]]; then
  "$clang_format" -i --style=file "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  if ! "$clang_format" --style=file --dry-run --Werror "$f" >/dev/null 2>&1
  then
    bad+=("$f")
  fi
done
if ((${#bad[@]} != 0)); then
  echo "format.sh: ${#bad[@]} of ${#files[@]} files need formatting" \
       "(run tools/format.sh):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} files formatted"
