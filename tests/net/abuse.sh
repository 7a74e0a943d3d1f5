#!/bin/bash
# SPDX-License-Identifier: MIT
# A server under hostile clients keeps serving: connections beyond
# --serve-max-sessions are refused, silent ones are closed after
# --serve-idle, malformed and oversized messages close their session
# only, raw garbage on the TCP port is dropped; a good client that keeps
# retrying then gets a matching mirror.
# usage: abuse.sh WEFT_SIM WEFT_CLIENT
set -u
SIM=$1
CLIENT=$2
. "$(dirname "$0")/common.sh"

start_server -e 2000 -t 1 --serve-seconds 120 --serve-max-sessions 4 \
  --serve-idle 2
A="$CLIENT --port $PORT --timeout 30"
pids=
# Eight silent clients for four places: four refused, four closed idle.
for i in 1 2 3 4 5 6 7 8; do
  $A --abuse idle >"$TMP/idle$i" 2>&1 &
  pids="$pids $!"
done
# Not WebSocket at all.
for _ in 1 2 3; do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf 'garbage\r\n\r\n\0\1\2' >&3 &&
    sleep 1) 2>/dev/null &
done
for p in $pids; do
  wait "$p" || fail "an idle client was not closed: $(cat "$TMP"/idle*)"
done
# A bad message type, then a message over the limit, once there is room.
$A --abuse garbage --retry 20 >"$TMP/garbage" 2>&1 ||
  fail "garbage: $(cat "$TMP/garbage")"
$A --abuse big --retry 20 >"$TMP/big" 2>&1 || fail "big: $(cat "$TMP/big")"
# The server still serves a good client.
$A --view 112,112,60 --packets 60 --retry 20 >"$TMP/good" 2>&1 ||
  fail "the good client: $(cat "$TMP/good")"
cat "$TMP/good"
stop_server
[ "$(counter refused)" -ge 1 ] || fail "no connection was refused"
[ "$(counter idle)" -ge 1 ] || fail "no idle connection was closed"
[ "$(counter malformed)" -ge 2 ] || fail "expected 2 malformed sessions"
echo "PASS: $(tail -1 "$TMP/srv.log")"
