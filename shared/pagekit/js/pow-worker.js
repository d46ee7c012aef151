// The proof-of-work solver (a place in the waiting room, a guest session on a busy network; pow.js starts it), run
// in a Web Worker so the page stays responsive. It speaks the open ALTCHA protocol: find n in [0, maxnumber] with
// hex(SHA-256(salt + n)) == challenge. SHA-256 is written out here rather than called through crypto.subtle
// because subtle.digest is asynchronous and costs a promise per try: this synchronous version hashes only the
// salt's tail per try (the whole 64-byte blocks are hashed once) and is several times faster on phones. Message
// in: the challenge object; out: {number, took} or {error}.
"use strict";
var K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
var W = new Int32Array(64);

// block hashes the 64 bytes of m at off into the state h.
function block(h, m, off) {
  var i, x, y, t1, t2;
  for (i = 0; i < 16; i++) {
    x = off + 4 * i;
    W[i] = (m[x] << 24) | (m[x + 1] << 16) | (m[x + 2] << 8) | m[x + 3];
  }
  for (i = 16; i < 64; i++) {
    x = W[i - 15]; y = W[i - 2];
    W[i] = (W[i - 16] + (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) + W[i - 7] +
      (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10))) | 0;
  }
  var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (i = 0; i < 64; i++) {
    t1 = (k + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) +
      ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    t2 = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) +
      ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + k) | 0;
}

function solve(c) {
  var salt = c.salt, max = c.maxnumber, i;
  var target = new Int32Array(8);
  for (i = 0; i < 8; i++) target[i] = parseInt(c.challenge.substr(i * 8, 8), 16) | 0;
  var bytes = [];
  for (i = 0; i < salt.length; i++) bytes.push(salt.charCodeAt(i) & 0xff); // the salt is ASCII
  var whole = bytes.length - bytes.length % 64;
  var mid = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  var buf = new Uint8Array(192);
  for (i = 0; i < whole; i += 64) { buf.set(bytes.slice(i, i + 64)); block(mid, buf, 0); }
  var tail = bytes.slice(whole), h = new Int32Array(8), digits = new Uint8Array(20);
  buf.fill(0);
  buf.set(tail);
  for (var n = 0; n <= max; n++) {
    var nd = 0, v = n;
    do { digits[nd++] = 48 + v % 10; v = Math.floor(v / 10); } while (v > 0);
    var len = tail.length;
    for (i = nd - 1; i >= 0; i--) buf[len++] = digits[i];
    var total = whole + len, blocks = len + 9 <= 64 ? 1 : 2, end = blocks * 64;
    buf[len] = 0x80;
    for (i = len + 1; i < end - 4; i++) buf[i] = 0;
    var bits = total * 8;
    buf[end - 4] = (bits >>> 24) & 0xff; buf[end - 3] = (bits >>> 16) & 0xff;
    buf[end - 2] = (bits >>> 8) & 0xff; buf[end - 1] = bits & 0xff;
    h.set(mid);
    block(h, buf, 0);
    if (blocks === 2) block(h, buf, 64);
    if (h[0] === target[0] && h[1] === target[1] && h[2] === target[2] && h[3] === target[3] &&
      h[4] === target[4] && h[5] === target[5] && h[6] === target[6] && h[7] === target[7]) return n;
  }
  return -1;
}

self.onmessage = function (e) {
  var start = Date.now(), n;
  try { n = solve(e.data); } catch (err) { self.postMessage({ error: String(err) }); return; }
  self.postMessage(n < 0 ? { error: "no solution" } : { number: n, took: Date.now() - start });
};
