// Admission tokens as the platform issues them: JWTs signed with Ed25519 (alg EdDSA) under a kid published in
// the JWKS at /.well-known/jwks.json, with the claims sub, show, jti, iat, exp and aud "booking". This module
// checks everything the keys alone can tell (signature, expiry, audience, show); revocation is recorded at the
// origin and only the origin can check it.

// AUDIENCE is the aud of every admission token; a place receipt (aud "waitroom-place", HS256 now, once signed
// with the same Ed25519 key) must never pass as one.
export const AUDIENCE = "booking";

// Reasons a token is refused, as the edge's refusal metric names them.
export const Refusal = Object.freeze({
  INVALID: "invalid", // malformed, bad signature, unknown kid, wrong alg or audience, missing claims
  EXPIRED: "expired",
  WRONG_SHOW: "wrong_show",
  // UNVERIFIABLE: the JWKS has never been fetched (the origin unreachable since start-up), so no key is known
  // and nothing can be said; the gate leaves the decision to the origin.
  UNVERIFIABLE: "unverifiable",
});

// TokenError carries the reason a token was refused.
export class TokenError extends Error {
  constructor(reason, detail) {
    super(`admission token ${reason}: ${detail}`);
    this.reason = reason;
  }
}

const utf8 = new TextDecoder();

function b64url(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9_-]*$/.test(s)) {
    throw new TokenError(Refusal.INVALID, "not base64url");
  }
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function json(part) {
  try {
    const v = JSON.parse(utf8.decode(b64url(part)));
    if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("not an object");
    return v;
  } catch (e) {
    if (e instanceof TokenError) throw e;
    throw new TokenError(Refusal.INVALID, "not JSON");
  }
}

// KeySet is the JWKS, cached: fetched on first use, again when older than ttlMs, and on a kid it does not know
// at most once per minIntervalMs, so a rotation is picked up at once and a flood of forged kids cannot become a
// flood of fetches. Concurrent requests share one fetch. While the JWKS cannot be fetched it keeps the last good
// set. It mirrors the platform's own JWKS client (shared/token RemoteKeys).
export class KeySet {
  constructor({ url, fetch: fetchFn = (...a) => fetch(...a), ttlMs = 300_000, minIntervalMs = 5_000, now = Date.now }) {
    this.url = url;
    this.fetch = fetchFn;
    this.ttlMs = ttlMs;
    this.minIntervalMs = minIntervalMs;
    this.now = now;
    this.keys = new Map(); // kid → CryptoKey
    this.fetchedAt = -Infinity;
    this.triedAt = -Infinity;
    this.inflight = null;
    this.fetches = 0; // for tests and logs: how many times the JWKS was requested
  }

  // loaded tells whether a JWKS was ever fetched: without one, an unknown kid proves nothing.
  get loaded() {
    return this.fetchedAt !== -Infinity;
  }

  // key returns the verification key of kid, or undefined.
  async key(kid) {
    const now = this.now();
    const known = this.keys.get(kid);
    const stale = now - this.fetchedAt > this.ttlMs;
    if ((known && !stale) || (now - this.triedAt < this.minIntervalMs && !this.inflight)) {
      return known;
    }
    if (!this.inflight) {
      this.triedAt = now;
      this.inflight = this.refresh(now).finally(() => {
        this.inflight = null;
      });
    }
    await this.inflight;
    return this.keys.get(kid);
  }

  async refresh(now) {
    this.fetches++;
    let doc;
    try {
      const resp = await this.fetch(this.url, { headers: { accept: "application/json" } });
      if (resp.status !== 200) return; // keep the last good set
      doc = await resp.json();
    } catch {
      return;
    }
    const keys = new Map();
    for (const k of Array.isArray(doc?.keys) ? doc.keys : []) {
      if (k?.kty !== "OKP" || k?.crv !== "Ed25519" || typeof k.kid !== "string" || typeof k.x !== "string") continue;
      if (k.use && k.use !== "sig") continue;
      try {
        keys.set(k.kid, await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: k.x },
          { name: "Ed25519" }, false, ["verify"]));
      } catch {
        // a malformed key is skipped, as the platform's own client skips it
      }
    }
    this.keys = keys;
    this.fetchedAt = now;
  }
}

// verify checks raw against keys and returns its claims: EdDSA only, a published kid, the signature, aud
// "booking", exp (required) and nbf with leewaySec of clock skew, sub and jti present, and, when show is given,
// the show claim. It throws a TokenError otherwise.
export async function verify(raw, { keys, show, leewaySec = 5, now = Date.now }) {
  const parts = typeof raw === "string" ? raw.split(".") : [];
  if (parts.length !== 3) throw new TokenError(Refusal.INVALID, "not a JWS compact token");
  const header = json(parts[0]);
  if (header.alg !== "EdDSA") throw new TokenError(Refusal.INVALID, `alg ${header.alg} is not EdDSA`);
  if (typeof header.kid !== "string") throw new TokenError(Refusal.INVALID, "no kid");
  const key = await keys.key(header.kid);
  if (!key && !keys.loaded) throw new TokenError(Refusal.UNVERIFIABLE, "no JWKS fetched yet");
  if (!key) throw new TokenError(Refusal.INVALID, `unknown kid ${header.kid}`);
  const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`);
  if (!(await crypto.subtle.verify({ name: "Ed25519" }, key, b64url(parts[2]), signed))) {
    throw new TokenError(Refusal.INVALID, "bad signature");
  }
  const c = json(parts[1]);
  const aud = Array.isArray(c.aud) ? c.aud : [c.aud];
  if (!aud.includes(AUDIENCE)) throw new TokenError(Refusal.INVALID, "wrong audience");
  const t = now() / 1000;
  if (typeof c.exp !== "number") throw new TokenError(Refusal.INVALID, "no exp");
  if (t >= c.exp + leewaySec) throw new TokenError(Refusal.EXPIRED, "past exp");
  if (typeof c.nbf === "number" && t < c.nbf - leewaySec) throw new TokenError(Refusal.INVALID, "before nbf");
  if (typeof c.sub !== "string" || c.sub === "" || typeof c.jti !== "string" || c.jti === "") {
    throw new TokenError(Refusal.INVALID, "missing sub or jti");
  }
  if (show !== undefined && c.show !== show) throw new TokenError(Refusal.WRONG_SHOW, "another show's token");
  return c;
}
