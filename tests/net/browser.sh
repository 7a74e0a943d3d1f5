#!/bin/bash
# SPDX-License-Identifier: MIT
# The live view in a real browser: headless Chromium loads the page from a
# running weft-sim --serve, and
#   - the page's DOM must say it is connected and that its mirror holds
#     as many entities as the server counts in its view: with ?digest the
#     page asks the server for that count twice a second and writes the
#     latest reply's figures into <body>'s data attributes
#     (tools/web/weft-view.js), and
#   - a screenshot must show drawn entities (png_lit counts the pixels in
#     the entities' colours; the background and the text are grey).
# Chromium is driven over its DevTools pipe (--remote-debugging-pipe: JSON
# messages ending in a NUL byte on fds 3 and 4) rather than with
# --dump-dom and --screenshot: those act once a virtual-time budget has
# run out, and virtual time races ahead of the real WebSocket, so the
# page may not have heard from the server yet. Over the pipe the test
# asks the page in real time until it has its answer.
# Skipped (exit 77) only where no Chromium is installed
# (tools/install-deps.sh browser installs it).
# usage: browser.sh WEFT_SIM WEFT_CLIENT PNG_LIT
# Environment: WEFT_BROWSER_KEEP=FILE copies the screenshot to FILE
# (docs/live-view.png comes from such a run).
set -u
SIM=$1
CLIENT=$2
PNG_LIT=$3
. "$(dirname "$0")/common.sh"

CHROMIUM=
for c in chromium chromium-browser; do
  if command -v "$c" >/dev/null; then CHROMIUM=$c; break; fi
done
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: no chromium installed (tools/install-deps.sh browser)"
  exit 77
fi

BROWSER=
READER=
stop_browser() {
  if [ -n "$BROWSER" ]; then kill -KILL "$BROWSER" 2>/dev/null; fi
  if [ -n "$READER" ]; then kill -KILL "$READER" 2>/dev/null; fi
  cleanup
}
trap stop_browser EXIT
# A write to a Chromium that died fails (and reply() says so) rather than
# killing this script with SIGPIPE before it can report.
trap '' PIPE

browser_fail() {
  echo "--- chromium's replies (first 600 bytes each):"
  tr '\0' '\n' <"$TMP/cdp.log" | cut -c1-600 | tail -8
  echo "--- chromium's log:"
  grep -v dbus "$TMP/chromium.log" | tail -10
  fail "$@"
}

# send JSON: one DevTools message.
send() { printf '%s\0' "$1" >&5; }
# reply ID: sets R to the reply to message ID once it came (30 s at
# most). Not a $(...): a failure in a subshell would not end the test.
reply() {
  for _ in $(seq 300); do
    R=$(grep -a -z -m1 "^{\"id\":$1," "$TMP/cdp.log" | tr -d '\0')
    [ -n "$R" ] && return 0
    kill -0 "$BROWSER" 2>/dev/null || browser_fail "chromium exited"
    sleep 0.1
  done
  browser_fail "no reply to DevTools message $1"
}

start_server -e 2000 -t 1 --serve-seconds 120

# Chromium reads the messages from fd 3 and writes its replies to fd 4:
# two FIFOs, a cat that copies the replies to a file, and fd 5 to write.
# Headless, as root in CI (no sandbox), without a GPU or /dev/shm (small
# in containers), a fresh profile.
mkfifo "$TMP/to" "$TMP/from"
"$CHROMIUM" --headless=new --no-sandbox --disable-gpu --no-first-run \
  --hide-scrollbars --disable-dev-shm-usage --user-data-dir="$TMP/profile" --window-size=640,480 \
  --remote-debugging-pipe about:blank \
  3<"$TMP/to" 4>"$TMP/from" >"$TMP/chromium.log" 2>&1 &
BROWSER=$!
cat <"$TMP/from" >"$TMP/cdp.log" &
READER=$!
exec 5>"$TMP/to"

send '{"id":1,"method":"Target.createTarget","params":{"url":"http://127.0.0.1:'"$PORT"'/?digest"}}'
reply 1
target=$(printf '%s' "$R" | sed -n 's/.*"targetId":"\([^"]*\)".*/\1/p')
[ -n "$target" ] || browser_fail "no page opened"
send '{"id":2,"method":"Target.attachToTarget","params":{"targetId":"'"$target"'","flatten":true}}'
reply 2
session=$(printf '%s' "$R" | sed -n 's/.*"sessionId":"\([^"]*\)".*/\1/p')
[ -n "$session" ] || browser_fail "cannot attach to the page"

# The count: connected, entities mirrored, and the server's count of the
# view equal to the mirror's at the same packet. The expression reads the
# page's marks as "state count server mirror" ("-" for one not yet set;
# before the page has a body it throws, and the reply has no value).
marks='[\"State\",\"Count\",\"Server\",\"Mirror\"].map(k => document.body.dataset[\"weft\" + k] || \"-\").join(\" \")'
id=10
ok=0
for _ in $(seq 60); do
  id=$((id + 1))
  send '{"id":'$id',"sessionId":"'"$session"'","method":"Runtime.evaluate","params":{"expression":"'"$marks"'","returnByValue":true}}'
  reply $id
  read -r state count server mirror < <(printf '%s' "$R" |
    sed -n 's/.*"value":"\([^"]*\)".*/\1/p')
  [ "${state:-}" = error ] && browser_fail "the page stopped on an error"
  if [ "${state:-}" = open ] && [ "${server:--}" != - ] &&
     [ "$server" = "$mirror" ] && [ "$server" -gt 0 ]; then
    ok=1
    break
  fi
  sleep 0.5
done
echo "page: state ${state:-?}, ${count:-?} entities mirrored;" \
     "digest: server ${server:-?}, page ${mirror:-?}"
[ "$ok" = 1 ] || browser_fail "the page's mirror does not match the server's count"

# The picture: entities drawn, in their colours.
id=$((id + 1))
send '{"id":'$id',"sessionId":"'"$session"'","method":"Page.captureScreenshot","params":{"format":"png"}}'
reply $id
printf '%s' "$R" | sed -n 's/.*"data":"\([^"]*\)".*/\1/p' | base64 -d >"$TMP/shot.png"
"$PNG_LIT" "$TMP/shot.png" 200 || browser_fail "no entities drawn in the screenshot"
if [ -n "${WEFT_BROWSER_KEEP:-}" ]; then
  cp "$TMP/shot.png" "$WEFT_BROWSER_KEEP" || fail "cannot write $WEFT_BROWSER_KEEP"
fi

id=$((id + 1))
send '{"id":'$id',"method":"Browser.close"}'
exec 5>&-
for _ in $(seq 100); do
  kill -0 "$BROWSER" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$BROWSER" 2>/dev/null && browser_fail "chromium did not close"
wait "$BROWSER" || browser_fail "chromium exited with $?"
BROWSER=
wait "$READER"
READER=
stop_server
echo "PASS: $(tail -1 "$TMP/srv.log")"
