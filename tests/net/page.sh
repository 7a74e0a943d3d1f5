#!/bin/bash
# SPDX-License-Identifier: MIT
# The live view's script against weft-sim --serve: its page and script
# come over HTTP from the same port, and page.mjs runs the script in Node
# (a stub DOM, Node's WebSocket) until its mirror matches the server's
# count. Skipped (exit 77) where Node has no WebSocket (Node < 20).
# browser.sh loads the same page in headless Chromium.
# usage: page.sh WEFT_SIM WEFT_CLIENT
set -u
SIM=$1
CLIENT=$2
. "$(dirname "$0")/common.sh"

if ! node --experimental-websocket \
  -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' >/dev/null 2>&1
then
  echo "SKIP: no Node with WebSocket (node --experimental-websocket)"
  exit 77
fi
start_server -e 2000 -t 1 --serve-seconds 90
curl_ok=1
if command -v curl >/dev/null; then
  curl -sf "http://127.0.0.1:$PORT/" | grep -q 'weft-view.js' || curl_ok=0
  curl -sf "http://127.0.0.1:$PORT/weft-view.js" | grep -q weftCount ||
    curl_ok=0
fi
[ "$curl_ok" = 1 ] || fail "the page is not served over HTTP"
node --experimental-websocket "$(dirname "$0")/page.mjs" "$PORT" ||
  fail "the page's mirror"
stop_server
echo "PASS: $(tail -1 "$TMP/srv.log")"
