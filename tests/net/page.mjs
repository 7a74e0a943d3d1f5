// SPDX-License-Identifier: MIT
// The live view's script (tools/web/weft-view.js) against a running
// weft-sim --serve, in Node without a browser: a stub DOM whose canvas
// counts what is drawn, Node's WebSocket (--experimental-websocket).
// Passes when the page mirrors entities, draws them, and its count equals
// the server's count of its view at a digest.
// usage: node --experimental-websocket page.mjs PORT
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import vm from 'node:vm';

const port = process.argv[2];
const src = readFileSync(fileURLToPath(new URL('../../tools/web/weft-view.js',
                                               import.meta.url)), 'utf8');
let drawn = 0;
const ctx2d = {fillRect: () => { drawn++; }, fillStyle: ''};
const canvas = {clientWidth: 800, clientHeight: 600, width: 0, height: 0,
                getContext: () => ctx2d};
const hud = {textContent: ''};
const win = {
  document: {getElementById: (id) => (id === 'view' ? canvas : hud)},
  location: {host: `127.0.0.1:${port}`},
  requestAnimationFrame: (f) => setTimeout(f, 16),
  WebSocket, DataView, ArrayBuffer, Uint8Array, Map, BigInt, Math, Error,
  console, setTimeout,
};
win.window = win;
vm.createContext(win);
vm.runInContext(src, win);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function fail(why) {
  console.log(`FAIL: ${why} (hud: ${hud.textContent})`);
  process.exit(1);
}
for (let i = 0; i < 100 && !win.weftCount; i++) await sleep(50);
if (!win.weftCount) fail('no entities mirrored');
await sleep(500);
let ok = false;
for (let tries = 0; tries < 5 && !ok; tries++) {
  win.weftDigest = null;
  win.weftAskDigest();
  for (let i = 0; i < 100 && !win.weftDigest; i++) await sleep(20);
  const d = win.weftDigest;
  if (!d) fail('no digest reply');
  ok = d.server === d.mirror && d.server > 0;
  console.log(`digest: server ${d.server} entities, page ${d.mirror}`);
}
if (!ok) fail('the page and the server disagree');
if (!drawn) fail('nothing drawn');
console.log(`PASS: ${win.weftCount} entities mirrored, ${drawn} rectangles drawn; ${hud.textContent}`);
process.exit(0);
