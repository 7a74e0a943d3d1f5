#!/bin/bash
# SPDX-License-Identifier: MIT
# weft::net over real sockets: weft-sim --serve and four weft-client
# processes (some with lost, late and reordered acks, some moving their
# views) on loopback; every client's mirror must match the server's view
# of it (weft-client exits 0 only then), and the server must stop cleanly.
# usage: loopback.sh WEFT_SIM WEFT_CLIENT
set -u
SIM=$1
CLIENT=$2
. "$(dirname "$0")/common.sh"

# The 2,000-entity arena's side is 224; two workers, so that serving runs
# beside a pool.
start_server -e 2000 -t 2 --serve-seconds 90 --serve-max-sessions 16
C="$CLIENT --port $PORT --timeout 60"
$C --view 112,112,60 --packets 60 >"$TMP/c1" 2>&1 &
P1=$!
$C --view 60,60,40 --move 1 --packets 90 --ack-loss 0.3 --seed 2 >"$TMP/c2" 2>&1 &
P2=$!
$C --view 150,100,50 --packets 90 --ack-delay 5 --ack-reorder 0.5 --seed 3 \
  >"$TMP/c3" 2>&1 &
P3=$!
$C --view 100,150,80 --move -0.5 --packets 90 --ack-loss 0.2 --ack-delay 2 \
  --ack-reorder 0.3 --seed 4 >"$TMP/c4" 2>&1 &
P4=$!
bad=0
for i in 1 2 3 4; do
  eval "pid=\$P$i"
  wait "$pid"
  rc=$?
  echo "client $i (exit $rc): $(cat "$TMP/c$i")"
  [ "$rc" = 0 ] || bad=1
  # A view of the arena holds entities: an empty mirror proves nothing.
  grep -q 'over [1-9][0-9]* entities' "$TMP/c$i" || bad=1
done
[ "$bad" = 0 ] || fail "a client's mirror did not match"
stop_server
[ "$(counter sessions)" = 4 ] || fail "expected 4 sessions"
[ "$(counter malformed)" = 0 ] || fail "a good client was called malformed"
echo "PASS: $(tail -1 "$TMP/srv.log")"
