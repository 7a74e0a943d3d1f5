# SPDX-License-Identifier: MIT
# Shared by the weft::net socket tests: starts `weft-sim --serve` on a free
# port and stops it. Sourced by bash; SIM and CLIENT are the binaries.

TMP=$(mktemp -d)
SRV=
cleanup() {
  if [ -n "$SRV" ]; then kill -KILL "$SRV" 2>/dev/null; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  echo "--- server log:"
  cat "$TMP/srv.log"
  exit 1
}

# start_server ARGS...: runs weft-sim --serve 0 ARGS in the background and
# sets PORT from the line it prints.
start_server() {
  "$SIM" --serve 0 "$@" >"$TMP/srv.log" 2>&1 &
  SRV=$!
  PORT=
  for _ in $(seq 300); do
    PORT=$(sed -n 's/^weft-sim: serving .* on 127\.0\.0\.1:\([0-9]*\)$/\1/p' \
      "$TMP/srv.log")
    [ -n "$PORT" ] && return 0
    kill -0 "$SRV" 2>/dev/null || fail "the server exited before serving"
    sleep 0.1
  done
  fail "the server printed no port"
}

# stop_server: SIGTERM, then the server must exit 0 and print its counters.
stop_server() {
  kill -TERM "$SRV"
  wait "$SRV"
  local rc=$?
  SRV=
  [ "$rc" = 0 ] || fail "the server exited with $rc"
  grep -q '^weft-sim: served' "$TMP/srv.log" || fail "no counters printed"
}

# counter NAME: a number from the server's last line ("3 sessions", ...).
counter() {
  sed -n "s/.*[ (]\([0-9]*\) $1.*/\1/p" "$TMP/srv.log" | tail -1
}
