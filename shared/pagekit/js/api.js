// api.js: every page's calls to the flashseat API. The browser's identity is the HttpOnly fs_session cookie
// (never readable here, never in localStorage or a URL); each call sends it (same-origin credentials) together
// with the CSRF header the platform requires of cookie-authenticated writes.

import { solve } from "./pow.js";

export const CSRF_HEADER = "X-Requested-With";
export const CSRF_VALUE = "flashseat";

// Problem names the problem types the pages branch on (ApiError.kind), as shared/problem names them in Go;
// booking/http's TestPagesNameProblemTypes keeps the two alike. Name a slug here before a page tests for it.
export const Problem = Object.freeze({
  SeatsUnavailable: "seats-unavailable",
  InProgress: "in-progress",
  NotSoldOut: "not-sold-out",
  PriceAboveCap: "price-above-cap",
});

// ApiError is a refused or failed call: status (0 when the network failed), the RFC 9457 problem (type, title,
// detail and extension members such as unavailable, alternatives, queueUrl), and Retry-After in seconds.
export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    const p = problem || {};
    super(p.detail || p.title || (status ? "The request failed (" + status + ")." : "Could not reach flashseat."));
    this.status = status;
    this.problem = p;
    this.retryAfter = retryAfter;
  }
  // kind is the problem type's slug, one of Problem's values for the types a page tells apart.
  get kind() {
    const t = this.problem.type || "";
    return t.slice(t.lastIndexOf("/") + 1);
  }
}

// api calls method path with an optional JSON body and resolves to {status, data, headers} for a 2xx answer;
// anything else rejects with an ApiError. opts.headers adds headers (Idempotency-Key), opts.signal aborts, and
// opts.cache is the fetch's cache mode: no-store unless a read may come from the browser's or a CDN's cache.
export async function api(method, path, body, opts = {}) {
  const headers = { Accept: "application/json, application/problem+json", [CSRF_HEADER]: CSRF_VALUE };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  Object.assign(headers, opts.headers || {});
  let r;
  try {
    r = await fetch(path, {
      method, headers, credentials: "same-origin", cache: opts.cache || "no-store", signal: opts.signal,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e && e.name === "AbortError") throw e;
    throw new ApiError(0, { title: "Network error", detail: "Could not reach flashseat. Check your connection and try again." });
  }
  let data = null;
  const ct = r.headers.get("Content-Type") || "";
  if (ct.includes("json")) {
    try { data = await r.json(); } catch { data = null; }
  }
  if (!r.ok) {
    const ra = parseInt(r.headers.get("Retry-After") || "", 10);
    throw new ApiError(r.status, data, Number.isFinite(ra) ? ra : undefined);
  }
  return { status: r.status, data, headers: r.headers };
}

export const get = (path, opts) => api("GET", path, undefined, opts);
export const post = (path, body, opts) => api("POST", path, body === undefined ? {} : body, opts);
export const del = (path, opts) => api("DELETE", path, undefined, opts);

let me = null;

// session resolves to the fan's user id, signing in as a new guest (which sets the fs_session cookie) when the
// browser has no valid session yet. Every page calls it before acting, so queue, seat map, checkout and tickets
// all act as the same user.
export function session() {
  if (!me) {
    me = get("/api/v1/me").then((r) => r.data.userId, async (e) => {
      if (!(e instanceof ApiError) || e.status !== 401) throw e;
      const r = await guest();
      return r.data.userId;
    });
    me.catch(() => { me = null; }); // a failed attempt is retried on the next call
  }
  return me;
}

// guest starts a guest session. A network that has started many lately (an office, a carrier's NAT, or a script)
// is asked for a proof of work first: the refusal carries a challenge, solved in the worker (pow.js), and the
// solution goes in X-Proof; a refused proof (spent already, sent twice; expired) comes back with a fresh challenge.
async function guest() {
  let proof = "";
  for (let tries = 0; ; tries++) {
    try {
      return await post("/api/v1/auth/guest", undefined, proof ? { headers: { "X-Proof": proof } } : {});
    } catch (e) {
      if (!(e instanceof ApiError) || tries >= 3) throw e;
      if (!e.problem.challenge) throw e;
      try {
        proof = await solve(e.problem.challenge);
      } catch (err) {
        if (err.message === "unsupported") throw new ApiError(0, { title: "Unsupported browser", unsupported: true,
          detail: "This browser cannot run the check this site needs to keep bots out. Update it, or try another browser." });
        throw new ApiError(0, { title: "Could not start a session", detail: "Try again in a moment." });
      }
    }
  }
}

// resetSession forgets the signed-in user, so the next session() asks again (after a 401: the cookie expired).
export function resetSession() {
  me = null;
}

// idempotencyKey is a fresh key for one logical write (kept by the caller across its retries).
export function idempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
