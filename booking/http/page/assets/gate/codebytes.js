// codebytes.js: the rotating ticket code's bytes, as docs/TICKETS.md fixes them and booking/ticket writes them in
// Go: strict base64url, big-endian integers, ids packed as in static codes, the certificate and the messages the
// two signatures cover. The holder's page (ticketcode.js) makes stamps with it, the door (codecheck.js) reads.

export const CERT_VERSION = 2;
export const CERT_CONTEXT = "flashseat-ticket-cert-v2\x00";
export const STAMP_CONTEXT = "flashseat-ticket-stamp-v2\x00";
export const MAX_CODE_LEN = 512;
const MAX_FIELD = 64; // an id's bytes at most, as booking/ticket's maxField
const PACKED = 0x80;

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const INDEX = new Map([...ALPHABET].map((c, i) => [c, i]));

// b64 is unpadded base64url.
export function b64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8) | (bytes[i + 2] || 0);
    const left = bytes.length - i;
    s += ALPHABET[n >> 18 & 63] + ALPHABET[n >> 12 & 63];
    if (left > 1) s += ALPHABET[n >> 6 & 63];
    if (left > 2) s += ALPHABET[n & 63];
  }
  return s;
}

// unb64 decodes unpadded base64url strictly, as Go's RawURLEncoding.Strict(): no padding, no other characters,
// and no stray bits in the last character, so one byte string has exactly one spelling. null when it is not.
export function unb64(s) {
  if (typeof s !== "string" || s.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor(s.length * 3 / 4));
  let bits = 0, n = 0, o = 0;
  for (const c of s) {
    const v = INDEX.get(c);
    if (v === undefined) return null;
    bits = (bits << 6) | v;
    n += 6;
    if (n >= 8) {
      n -= 8;
      out[o++] = (bits >> n) & 0xff;
    }
    bits &= (1 << n) - 1;
  }
  if (bits !== 0) return null; // non-canonical: the unused low bits must be zero
  return out;
}

// u64 writes a non-negative integer (Unix seconds) as 8 big-endian bytes.
export function u64(n) {
  const b = new Uint8Array(8);
  let v = BigInt(Math.floor(n));
  for (let i = 7; i >= 0; i--, v >>= 8n) b[i] = Number(v & 0xffn);
  return b;
}

// readU64 reads 8 big-endian bytes at p[i] as a Number (seconds fit in 53 bits for millions of years).
export function readU64(p, i) {
  let v = 0n;
  for (let k = 0; k < 8; k++) v = (v << 8n) | BigInt(p[i + k]);
  return Number(v);
}

export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

export const ascii = (s) => new TextEncoder().encode(s);

const HEX = "0123456789abcdef";

// packable tells our own ids ("tk_" and 32 lowercase hex digits, a prefix of 1 to 8 letters a-z), which are
// written packed; any other id is written as its bytes.
function packable(id) {
  return /^[a-z]{1,8}_[0-9a-f]{32}$/.test(id);
}

// readField reads one id at p[i]: {id, next} or null when malformed (too long, empty, or written unpacked when it
// should have been packed: each id has exactly one encoding).
export function readField(p, i) {
  if (i >= p.length) return null;
  const h = p[i++];
  if ((h & PACKED) === 0) {
    if (h === 0 || h > MAX_FIELD || p.length - i < h) return null;
    const bytes = p.subarray(i, i + h);
    let id;
    try { id = new TextDecoder("utf-8", { fatal: true }).decode(bytes); } catch { id = String.fromCharCode(...bytes); }
    if (packable(id)) return null;
    return { id, next: i + h };
  }
  const n = h & ~PACKED;
  if (n < 1 || n > 8 || p.length - i < n + 16) return null;
  let prefix = "";
  for (let k = 0; k < n; k++) prefix += String.fromCharCode(p[i + k]);
  let hex = "";
  for (let k = 0; k < 16; k++) { const x = p[i + n + k]; hex += HEX[x >> 4] + HEX[x & 15]; }
  const id = prefix + "_" + hex;
  if (!packable(id)) return null;
  return { id, next: i + n + 16 };
}

// parseCertificate reads certificate bytes: {keyId, ticketId, showId, seatId, holderKey, notAfter} or null.
export function parseCertificate(p) {
  if (!p || p.length < 1 || p[0] !== CERT_VERSION) return null;
  const ids = [];
  let i = 1;
  for (let k = 0; k < 4; k++) {
    const f = readField(p, i);
    if (!f) return null;
    ids.push(f.id);
    i = f.next;
  }
  if (p.length - i !== 32 + 8) return null; // the holder key, notAfter, and nothing trailing
  if (p[i + 32] & 0x80) return null; // notAfter is a signed 64-bit time in Go: none before 1970
  return { keyId: ids[0], ticketId: ids[1], showId: ids[2], seatId: ids[3],
    holderKey: p.slice(i, i + 32), notAfter: readU64(p, i + 32) };
}

// stampMessage is what the holder key signs: the context, the certificate and the stamp.
export function stampMessage(cert, stamp) {
  return concat(ascii(STAMP_CONTEXT), cert, stamp);
}

export function certMessage(cert) {
  return concat(ascii(CERT_CONTEXT), cert);
}
