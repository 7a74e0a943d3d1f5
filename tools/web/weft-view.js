// SPDX-License-Identifier: MIT
// A weft::net client (protocol version 1, docs/protocol.md) that mirrors
// weft-sim's "weft-sim.Net" component (f32 x, f32 y, u32 kind) and draws
// it. window.weftCount is the number of mirrored entities; for tests,
// window.weftAskDigest() asks the server for its count of the view, and
// window.weftDigest then holds {server, mirror} as of the reply's packet.
// The same figures go into the DOM as data attributes of <body>, for a
// browser driven from outside (tests/net/browser.sh reads them from
// headless Chromium): data-weft-state (connecting, open, closed, error),
// data-weft-count, and with ?digest in the URL, which asks the server for
// its count of the view twice a second, data-weft-server and
// data-weft-mirror from the latest reply.
'use strict';

const MAGIC = 0x544e4657;
const COLOURS = ['#7fd3ff', '#4f8cff', '#ff9f1c', '#ffe14d'];
const canvas = document.getElementById('view');
const hud = document.getElementById('hud');
const ctx = canvas.getContext('2d');

const state = {
  sizes: null,      // value bytes per component (from the welcome)
  side: 0,          // weft-sim's arena side: its grid cell is a 32nd
  ents: new Map(),  // handle (string) -> {x, y, kind}
  tick: 0n, epoch: -1, packets: 0, bytes: 0,
  cx: 0, cy: 0, zoom: 1,  // view centre (world) and pixels per unit
};
window.weftCount = 0;
window.weftDigest = null;
// Node's stub DOM (tests/net/page.mjs) has no body: the marks go nowhere.
const marks = (document.body && document.body.dataset) || {};
marks.weftState = 'connecting';
marks.weftCount = '0';
const askDigests = /[?&]digest\b/.test(location.search || '');

function handleKey(dv, o) {
  return dv.getUint32(o + 4, true).toString(16) + ':' +
         dv.getUint32(o, true).toString(16);
}

function send(ws, bytes) {
  if (ws.readyState === WebSocket.OPEN) ws.send(bytes);
}

function hello(ws) {
  const b = new DataView(new ArrayBuffer(7));
  b.setUint8(0, 1);
  b.setUint32(1, MAGIC, true);
  b.setUint16(5, 1, true);
  send(ws, b.buffer);
}

function sendView(ws) {
  if (!state.side) return;
  const halfDiag = Math.hypot(canvas.width, canvas.height) / 2 / state.zoom;
  const r = Math.max(1, Math.min(halfDiag, state.side));  // <= max_radius
  const b = new DataView(new ArrayBuffer(13));
  b.setUint8(0, 2);
  b.setFloat32(1, state.cx, true);
  b.setFloat32(5, state.cy, true);
  b.setFloat32(9, r, true);
  send(ws, b.buffer);
}

function ack(ws, tick) {
  const b = new DataView(new ArrayBuffer(9));
  b.setUint8(0, 3);
  b.setBigUint64(1, tick, true);
  send(ws, b.buffer);
}

function welcome(dv) {
  if (dv.getUint8(0) !== 0x81 || dv.getUint32(1, true) !== MAGIC)
    throw new Error('not a weft::net welcome');
  const n = dv.getUint16(7, true);
  state.sizes = [];
  for (let k = 0; k < n; k++) state.sizes.push(dv.getUint32(17 + 4 * k, true));
  state.side = dv.getFloat32(13, true) * 32;
  state.cx = state.cy = state.side / 2;
  state.zoom = Math.min(canvas.width, canvas.height) / state.side;
}

// The values of the components in mask, from o; returns the new offset.
function readValues(dv, o, mask, ent) {
  for (let k = 0; k < state.sizes.length; k++) {
    if (!((mask >> BigInt(k)) & 1n)) continue;
    if (k === 0 && state.sizes[0] >= 12) {
      ent.x = dv.getFloat32(o, true);
      ent.y = dv.getFloat32(o + 4, true);
      ent.kind = dv.getUint32(o + 8, true);
    }
    o += state.sizes[k];
  }
  return o;
}

function packet(ws, dv) {
  if (dv.getUint8(0) !== 0x82) throw new Error('not a tick packet');
  const epoch = dv.getUint16(2, true);
  const count = dv.getUint32(4, true);
  const tick = dv.getBigUint64(8, true);
  if (epoch === state.epoch && tick <= state.tick) return;  // cumulative
  if (epoch !== state.epoch) state.ents.clear();
  state.epoch = epoch;
  state.tick = tick;
  let o = 16, digest = -1;
  for (let i = 0; i < count; i++) {
    const kind = dv.getUint8(o++);
    if (kind === 1 || kind === 2) {
      const key = handleKey(dv, o);
      const mask = dv.getBigUint64(o + 8, true);
      o += 16;
      let present = mask;
      if (kind === 2) { present = dv.getBigUint64(o, true); o += 8; }
      const ent = state.ents.get(key) || {x: 0, y: 0, kind: 0};
      o = readValues(dv, o, present, ent);
      state.ents.set(key, ent);
    } else if (kind === 3) {
      state.ents.delete(handleKey(dv, o));
      o += 8;
    } else if (kind === 4) {
      o += 20;
      o += 2 + dv.getUint16(o, true);
    } else if (kind === 5) {
      digest = dv.getUint32(o + 17, true);
      o += 1 + 8 + 8 + 4;
    } else {
      throw new Error('unknown item kind ' + kind);
    }
  }
  state.packets++;
  state.bytes += dv.byteLength;
  window.weftCount = state.ents.size;
  marks.weftCount = String(state.ents.size);
  if (digest >= 0) {
    window.weftDigest = {server: digest, mirror: state.ents.size};
    marks.weftServer = String(digest);
    marks.weftMirror = String(state.ents.size);
  }
  ack(ws, tick);
}

function draw() {
  const w = canvas.width, h = canvas.height, z = state.zoom;
  ctx.fillStyle = '#111';
  ctx.fillRect(0, 0, w, h);
  const size = Math.max(1.5, z * 0.8);
  for (const e of state.ents.values()) {
    ctx.fillStyle = COLOURS[e.kind & 3];
    ctx.fillRect((e.x - state.cx) * z + w / 2 - size / 2,
                 (e.y - state.cy) * z + h / 2 - size / 2, size, size);
  }
  hud.textContent = `tick ${state.tick}  entities ${state.ents.size}  ` +
      `packets ${state.packets}  ${(state.bytes / 1024).toFixed(0)} KiB  ` +
      `view (${state.cx.toFixed(0)}, ${state.cy.toFixed(0)}) x${z.toFixed(2)}`;
  requestAnimationFrame(draw);
}

function resize() {
  canvas.width = canvas.clientWidth;
  canvas.height = canvas.clientHeight;
}

function connect() {
  const ws = new WebSocket(`ws://${location.host}/`, 'weft-net');
  ws.binaryType = 'arraybuffer';
  ws.onopen = () => { marks.weftState = 'open'; hello(ws); };
  window.weftAskDigest = () => {
    const b = new Uint8Array(9);
    b[0] = 4;  // DIGEST_REQ, entity 0: the whole view
    send(ws, b.buffer);
  };
  ws.onmessage = (ev) => {
    const dv = new DataView(ev.data);
    try {
      if (!state.sizes) { welcome(dv); sendView(ws); } else packet(ws, dv);
    } catch (err) {
      hud.textContent = 'error: ' + err.message;
      marks.weftState = 'error';
      ws.close();
    }
  };
  ws.onclose = (ev) => {
    hud.textContent = 'closed: ' + (ev.reason || ev.code);
    if (marks.weftState !== 'error') marks.weftState = 'closed';
  };
  if (askDigests) {
    setInterval(() => { if (state.ents.size) window.weftAskDigest(); }, 500);
  }
  let drag = null;
  canvas.onmousedown = (e) => { drag = {x: e.clientX, y: e.clientY}; };
  window.onmouseup = () => { drag = null; };
  window.onmousemove = (e) => {
    if (!drag) return;
    state.cx -= (e.clientX - drag.x) / state.zoom;
    state.cy -= (e.clientY - drag.y) / state.zoom;
    drag = {x: e.clientX, y: e.clientY};
    sendView(ws);
  };
  canvas.onwheel = (e) => {
    e.preventDefault();
    state.zoom *= e.deltaY < 0 ? 1.2 : 1 / 1.2;
    sendView(ws);
  };
  window.onresize = () => { resize(); sendView(ws); };
}

resize();
connect();
requestAnimationFrame(draw);
