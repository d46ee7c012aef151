// The token checks and the JWKS cache against a running platform: its real JWKS and an admission token and a
// place receipt a fan got through its queue. `go test ./deploy/ -run Worker` starts the platform, admits a fan
// and runs these with FLASHSEAT_ORIGIN, FLASHSEAT_SHOW, FLASHSEAT_ADMISSION_TOKEN and FLASHSEAT_PLACE_RECEIPT set;
// without them they are skipped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { KeySet, Refusal, verify } from "../src/token.js";

const env = process.env;
const platform = Boolean(env.FLASHSEAT_ORIGIN && env.FLASHSEAT_ADMISSION_TOKEN);
const skip = platform ? false : "needs a running platform (go test ./deploy/ -run Worker)";
const jwksUrl = `${env.FLASHSEAT_ORIGIN}/.well-known/jwks.json`;
const show = env.FLASHSEAT_SHOW;
const adm = env.FLASHSEAT_ADMISSION_TOKEN;

// clock is a settable now() for the key cache and the expiry check.
function clock(start = Date.now()) {
  const c = () => c.t;
  c.t = start;
  return c;
}

function keySet(now, fetchFn = fetch) {
  return new KeySet({ url: jwksUrl, fetch: fetchFn, ttlMs: 300_000, minIntervalMs: 5_000, now });
}

const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
const part = (raw, i) => JSON.parse(Buffer.from(raw.split(".")[i], "base64url").toString());
// reheader and reclaim rewrite a token's header or claims and keep its signature, as a forger would.
const reheader = (raw, patch) => [b64({ ...part(raw, 0), ...patch }), ...raw.split(".").slice(1)].join(".");
const reclaim = (raw, patch) => {
  const [h, , s] = raw.split(".");
  return [h, b64({ ...part(raw, 1), ...patch }), s].join(".");
};

async function refusal(p) {
  try {
    await p;
  } catch (e) {
    return e.reason;
  }
  return "accepted";
}

test("a real admission token verifies against the real JWKS", { skip }, async () => {
  const c = await verify(adm, { keys: keySet(Date.now), show });
  assert.equal(c.show, show);
  assert.ok(c.aud === "booking" || c.aud.includes("booking"));
  assert.ok(c.sub && c.jti);
});

test("expiry: accepted within the leeway, refused from exp + leeway", { skip }, async () => {
  const exp = part(adm, 1).exp;
  const now = clock(exp * 1000 + 4_000);
  const keys = keySet(now);
  assert.equal(await refusal(verify(adm, { keys, show, leewaySec: 5, now })), "accepted");
  now.t = exp * 1000 + 5_000;
  assert.equal(await refusal(verify(adm, { keys, show, leewaySec: 5, now })), Refusal.EXPIRED);
});

test("refused: another show, another audience, forgeries", { skip }, async () => {
  const keys = keySet(Date.now);
  const cases = {
    "another show": [adm, "another-show", Refusal.WRONG_SHOW],
    "a place receipt (aud waitroom-place)": [env.FLASHSEAT_PLACE_RECEIPT, show, Refusal.INVALID],
    "claims changed, signature kept": [reclaim(adm, { show: "another-show" }), "another-show", Refusal.INVALID],
    "exp extended, signature kept": [reclaim(adm, { exp: part(adm, 1).exp + 3600 }), show, Refusal.INVALID],
    "alg HS256": [reheader(adm, { alg: "HS256" }), show, Refusal.INVALID],
    "alg none": [reheader(adm, { alg: "none" }).split(".").slice(0, 2).join(".") + ".", show, Refusal.INVALID],
    "no kid": [reheader(adm, { kid: undefined }), show, Refusal.INVALID],
    "not a JWT": ["junk", show, Refusal.INVALID],
    "not base64url": ["a$.b.c", show, Refusal.INVALID],
  };
  assert.equal(env.FLASHSEAT_PLACE_RECEIPT.split(".").length, 3, "the platform handed out a place receipt");
  for (const [name, [raw, forShow, want]] of Object.entries(cases)) {
    assert.equal(await refusal(verify(raw, { keys, show: forShow })), want, name);
  }
});

test("the JWKS is cached for its TTL and refetched on an unknown kid, at most once per interval", { skip }, async () => {
  const now = clock();
  const keys = keySet(now);
  const ok = () => refusal(verify(adm, { keys, show, now }));
  const unknown = () => refusal(verify(reheader(adm, { kid: "rotated-away" }), { keys, show, now }));

  assert.equal(await ok(), "accepted");
  assert.equal(await ok(), "accepted");
  assert.equal(keys.fetches, 1, "a second token within the TTL is checked without a fetch");

  now.t += 5_000;
  assert.equal(await unknown(), Refusal.INVALID);
  assert.equal(keys.fetches, 2, "an unknown kid refetches the JWKS (a rotation)");
  assert.equal(await unknown(), Refusal.INVALID);
  now.t += 4_000;
  assert.equal(await unknown(), Refusal.INVALID);
  assert.equal(keys.fetches, 2, "forged kids within the interval do not refetch");
  now.t += 1_000;
  assert.equal(await unknown(), Refusal.INVALID);
  assert.equal(keys.fetches, 3, "after the interval an unknown kid refetches again");

  now.t += 300_001;
  assert.equal(await ok(), "accepted");
  assert.equal(keys.fetches, 4, "past the TTL the JWKS is fetched again");
});

test("concurrent first requests share one JWKS fetch", { skip }, async () => {
  const keys = keySet(Date.now);
  const results = await Promise.all(Array.from({ length: 25 }, () => refusal(verify(adm, { keys, show }))));
  assert.deepEqual(new Set(results), new Set(["accepted"]));
  assert.equal(keys.fetches, 1);
});

test("while the JWKS cannot be fetched: unverifiable before the first set, the last good set after", { skip }, async () => {
  const now = clock();
  let down = true;
  const flaky = (...a) => (down ? Promise.reject(new TypeError("connection refused")) : fetch(...a));
  const keys = keySet(now, flaky);
  assert.equal(await refusal(verify(adm, { keys, show, now })), Refusal.UNVERIFIABLE);
  now.t += 5_000;
  down = false;
  assert.equal(await refusal(verify(adm, { keys, show, now })), "accepted");
  down = true;
  now.t += 300_001;
  assert.equal(await refusal(verify(adm, { keys, show, now })), "accepted");
  assert.equal(await refusal(verify(reheader(adm, { kid: "other" }), { keys, show, now })), Refusal.INVALID);
});

// sign makes a token with a key of the test's own, served as a one-key JWKS by the returned fetch.
async function signer() {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  const jwk = { ...(await crypto.subtle.exportKey("jwk", pair.publicKey)), kid: "k1", use: "sig", alg: "EdDSA" };
  const sign = async (claims) => {
    const input = `${b64({ alg: "EdDSA", kid: "k1", typ: "JWT" })}.${b64(claims)}`;
    const sig = await crypto.subtle.sign({ name: "Ed25519" }, pair.privateKey, new TextEncoder().encode(input));
    return `${input}.${Buffer.from(sig).toString("base64url")}`;
  };
  return { sign, fetch: async () => Response.json({ keys: [jwk] }) };
}

test("each claim is checked on its own, whoever signed", async () => {
  const { sign, fetch: jwks } = await signer();
  const keys = new KeySet({ url: "http://origin.test/.well-known/jwks.json", fetch: jwks });
  const now = Math.floor(Date.now() / 1000);
  const good = { sub: "u1", show: "s1", jti: "j1", aud: ["booking"], iat: now, exp: now + 600 };
  const cases = {
    "all well": [good, "accepted"],
    "aud as a string": [{ ...good, aud: "booking" }, "accepted"],
    "another audience": [{ ...good, aud: ["waitroom-place"] }, Refusal.INVALID],
    "no audience": [{ ...good, aud: undefined }, Refusal.INVALID],
    "no exp": [{ ...good, exp: undefined }, Refusal.INVALID],
    "expired": [{ ...good, exp: now - 60 }, Refusal.EXPIRED],
    "not yet valid": [{ ...good, nbf: now + 60 }, Refusal.INVALID],
    "no jti": [{ ...good, jti: undefined }, Refusal.INVALID],
    "no sub": [{ ...good, sub: "" }, Refusal.INVALID],
    "another show": [{ ...good, show: "s2" }, Refusal.WRONG_SHOW],
  };
  for (const [name, [claims, want]] of Object.entries(cases)) {
    assert.equal(await refusal(verify(await sign(claims), { keys, show: "s1" })), want, name);
  }
});
