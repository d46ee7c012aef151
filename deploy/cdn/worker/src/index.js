// flashseat's admission gate as a Cloudflare Worker: it turns away, at the CDN, fans who reach a show's protected
// routes without a valid admission token, and forwards everything else to the origin (the edge) untouched.
//
// It checks what the JWKS alone can tell: signature, expiry, audience and show (src/token.js). The origin checks
// the same again plus what only it knows (revocation, the fan's user token), so a request the worker lets through
// can still be refused there; the worker only takes the crowd without admissions off the origin.
//
// Configuration (wrangler.toml [vars], or workerd bindings):
//   ORIGIN                    the edge's URL; unset on Cloudflare, where fetch(request) reaches the zone's origin
//   JWKS_URL                  default ORIGIN (or the request's own origin) + /.well-known/jwks.json
//   JWKS_TTL_SECONDS          how long a fetched JWKS is trusted before it is fetched again (300)
//   JWKS_MIN_REFETCH_SECONDS  the least time between two fetches caused by unknown kids (5)
//   TOKEN_LEEWAY_SECONDS      clock skew tolerated on exp and nbf (5, as the edge's TOKEN_LEEWAY)
//   QUEUE_STATE_TTL_SECONDS   how long a show's queue on/off, asked of the origin's gate endpoint, is reused (5)
import { KeySet, Refusal, TokenError, verify } from "./token.js";
import { Guard, match } from "./route.js";

const ADMISSION_HEADER = "X-Admission-Token";
const cookieName = (show) => `fs_adm_${show}`;
const PROBLEM_BASE = "https://flashseat.dev/problems/";
const MAX_HOLD_BODY = 64 << 10; // a hold's body is a few hundred bytes; a larger one is the origin's to refuse

const seconds = (v, d) => (v === undefined || v === "" || Number.isNaN(Number(v)) ? d : Number(v)) * 1000;

// Gate is the worker's state for one isolate: the cached JWKS and the shows' queue states.
export class Gate {
  constructor(env = {}, { fetch: fetchFn = (...a) => fetch(...a), now = Date.now } = {}) {
    this.origin = env.ORIGIN ? new URL(env.ORIGIN) : null;
    this.jwksUrl = env.JWKS_URL || (this.origin ? new URL("/.well-known/jwks.json", this.origin).href : "");
    this.fetch = fetchFn;
    this.now = now;
    this.jwksTtl = seconds(env.JWKS_TTL_SECONDS, 300);
    this.minRefetch = seconds(env.JWKS_MIN_REFETCH_SECONDS, 5);
    this.leewaySec = seconds(env.TOKEN_LEEWAY_SECONDS, 5) / 1000;
    this.queueTtl = seconds(env.QUEUE_STATE_TTL_SECONDS, 5);
    this.keys = this.jwksUrl ? this.newKeys(this.jwksUrl) : null;
    this.queues = new Map(); // origin and show → { on, at } | { pending }
  }

  newKeys(url) {
    return new KeySet({ url, fetch: this.fetch, ttlMs: this.jwksTtl, minIntervalMs: this.minRefetch, now: this.now });
  }

  async handle(request) {
    const url = new URL(request.url);
    // Without ORIGIN or JWKS_URL, the JWKS is the zone's own (the worker runs on the origin's hostname).
    this.keys ??= this.newKeys(new URL("/.well-known/jwks.json", url).href);
    const route = match(request.method, url.pathname);
    switch (route.guard) {
      case Guard.SHOW_IN_PATH:
        return this.decide(request, route.show);
      case Guard.SHOW_IN_BODY:
        return this.gateHold(request);
      case Guard.TOKEN_IF_SENT:
        return this.gatePayment(request);
    }
    return this.forward(request);
  }

  // decide passes request on when its admission token (the header, else the show's cookie) is valid for show,
  // or when the show's queue is off; otherwise the fan goes to the waiting room.
  async decide(request, show, body) {
    const raw = request.headers.get(ADMISSION_HEADER) || cookie(request, cookieName(show));
    if (raw) {
      try {
        await verify(raw, { keys: this.keys, show, leewaySec: this.leewaySec, now: this.now });
        return this.forward(request, body);
      } catch (e) {
        if (!(e instanceof TokenError)) throw e;
        if (e.reason === Refusal.UNVERIFIABLE) return this.forward(request, body);
      }
    }
    // Refused here only when the origin says the show's queue is on: a show without a queue admits everyone,
    // and a state the origin cannot tell is the origin's to decide.
    const base = this.origin ?? new URL(request.url).origin;
    if ((await this.queueOn(base, show)) !== true) return this.forward(request, body);
    return refuse(request, show, raw ? 403 : 401);
  }

  // gateHold gates POST /api/v1/bookings/hold by the show its JSON body names, as the edge does. A body the
  // worker cannot read as such (compressed, too large, not JSON, no showId) goes on to the origin, which refuses it.
  async gateHold(request) {
    const enc = request.headers.get("Content-Encoding");
    const length = Number(request.headers.get("Content-Length") || "0");
    if ((enc && enc.toLowerCase() !== "identity") || length > MAX_HOLD_BODY) return this.forward(request);
    const body = await request.arrayBuffer();
    let show;
    try {
      show = JSON.parse(new TextDecoder().decode(body))?.showId;
    } catch {
      show = undefined;
    }
    if (typeof show !== "string" || show === "" || body.byteLength > MAX_HOLD_BODY) {
      return this.forward(request, body);
    }
    return this.decide(request, show, body);
  }

  // gatePayment: paying names a booking, not a show, so a token sent is checked for everything but its show
  // (booking matches it to the booking's show); no token is booking's to judge.
  async gatePayment(request) {
    const raw = request.headers.get(ADMISSION_HEADER);
    if (!raw) return this.forward(request);
    try {
      await verify(raw, { keys: this.keys, leewaySec: this.leewaySec, now: this.now });
    } catch (e) {
      if (!(e instanceof TokenError)) throw e;
      if (e.reason !== Refusal.UNVERIFIABLE) {
        return problem(403, "forbidden", "Forbidden", "The admission token is not valid.");
      }
    }
    return this.forward(request);
  }

  // queueOn asks the origin's gate endpoint, without credentials, whether show's queue is on: 204 off, 401 on.
  // The answer is the same for every fan, so it is kept queueTtl and shared by concurrent requests; anything
  // else (the origin failing, 503 state unknown) is undefined and not kept.
  async queueOn(base, show) {
    const now = this.now();
    const key = `${base} ${show}`;
    const c = this.queues.get(key);
    if (c?.pending) return c.pending;
    if (c && now - c.at < this.queueTtl) return c.on;
    const pending = (async () => {
      try {
        const resp = await this.fetch(new URL(`/queue/${encodeURIComponent(show)}/gate`, base).href,
          { redirect: "manual" });
        await resp.body?.cancel();
        if (resp.status === 204) return false;
        if (resp.status === 401 || resp.status === 403) return true;
      } catch {
        // the origin is unreachable: undefined, and the request goes on to fail or succeed there
      }
      return undefined;
    })();
    this.queues.set(key, { pending });
    const on = await pending;
    if (on === undefined) this.queues.delete(key);
    else this.queues.set(key, { on, at: this.now() });
    if (this.queues.size > 10000) this.queues.clear(); // bounded: show ids come from requests
    return on;
  }

  // forward sends request to the origin as it came (body: the bytes already read from it, if any), redirects
  // and streams included.
  async forward(request, body) {
    const init = { method: request.method, headers: request.headers, redirect: "manual" };
    if (body !== undefined) init.body = body;
    else if (request.body) Object.assign(init, { body: request.body, duplex: "half" });
    let target = request.url;
    if (this.origin) {
      const u = new URL(request.url);
      u.protocol = this.origin.protocol;
      u.host = this.origin.host;
      target = u.href;
    }
    try {
      return await this.fetch(new Request(target, init));
    } catch {
      return problem(502, "bad-gateway", "Bad Gateway", "The origin is unreachable; retry shortly.");
    }
  }
}

// cookie returns the value of the cookie name in request, or "".
function cookie(request, name) {
  for (const part of (request.headers.get("Cookie") || "").split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return "";
}

// refuse sends a fan without an acceptable admission to show's waiting room, as the edge does: a browser by a
// redirect, an API client by a problem naming the room (401 when no token was sent, 403 when it was refused).
function refuse(request, show, status) {
  const queueUrl = `/queue/${encodeURIComponent(show)}`;
  if ((request.headers.get("Accept") || "").includes("text/html")) {
    return new Response(null, { status: 303, headers: { Location: queueUrl, "Cache-Control": "no-store" } });
  }
  const detail = status === 401
    ? "This show's waiting room is open; join it to get an admission token."
    : "The admission token was refused; join the show's waiting room for a new one.";
  return problem(status, "queue-required", status === 401 ? "Unauthorized" : "Forbidden", detail,
    { queueUrl, showId: show });
}

// problem is an RFC 9457 answer, never cached.
function problem(status, slug, title, detail, extensions = {}) {
  return new Response(JSON.stringify({ ...extensions, type: PROBLEM_BASE + slug, title, status, detail }), {
    status,
    headers: { "Content-Type": "application/problem+json", "Cache-Control": "no-store" },
  });
}

let gate; // one per isolate, so the JWKS and queue states are shared by its requests

export default {
  async fetch(request, env) {
    gate ??= new Gate(env);
    return gate.handle(request);
  },
};
