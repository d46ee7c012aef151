// The worker's routing and its decisions. The route table needs nothing; the gate's decisions run against a
// running platform when FLASHSEAT_ORIGIN is set (see token.test.mjs), and against a stand-in origin otherwise.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Guard, match } from "../src/route.js";
import { Gate } from "../src/index.js";

const env = process.env;
const skip = env.FLASHSEAT_ORIGIN && env.FLASHSEAT_ADMISSION_TOKEN ? false
  : "needs a running platform (go test ./deploy/ -run Worker)";

test("the gated routes are the edge's, however the path is spelled", () => {
  const cases = [
    ["GET", "/shows/s1", Guard.SHOW_IN_PATH, "s1"],
    ["HEAD", "/Shows/s1/", Guard.SHOW_IN_PATH, "s1"],
    ["GET", "/api/v1/shows/s1/seats", Guard.SHOW_IN_PATH, "s1"],
    ["GET", "/API/V1/SHOWS/s1/SEATS//", Guard.SHOW_IN_PATH, "s1"],
    ["GET", "/api/v1/shows/s1/seats/stream", Guard.SHOW_IN_PATH, "s1"],
    ["GET", "/api/v1/shows/s1%2Fseats", Guard.SHOW_IN_PATH, "s1"], // decoded, it is the seat map
    ["GET", "/%61pi/v1/shows/s1/seats", Guard.SHOW_IN_PATH, "s1"],
    ["POST", "/api/v1/bookings/hold", Guard.SHOW_IN_BODY],
    ["POST", "/api/v1/bookings/b1/pay/", Guard.TOKEN_IF_SENT],
    ["GET", "/api/v1/shows/s1", Guard.OPEN],
    ["GET", "/api/v1/shows/s1/seats/other", Guard.OPEN],
    ["POST", "/shows/s1", Guard.OPEN],
    ["GET", "/shows/", Guard.OPEN],
    ["GET", "/queue/s1", Guard.OPEN],
    ["GET", "/api/v1/shows/%zz/seats", Guard.SHOW_IN_PATH, "%zz"], // undecodable: matched as sent
  ];
  for (const [method, path, guard, show] of cases) {
    const r = match(method, path);
    assert.equal(r.guard, guard, `${method} ${path}`);
    if (show) assert.equal(r.show, show, `${method} ${path}`);
  }
});

// origin is a stand-in origin: the gate endpoint answers gateStatus (or fails), everything else 200 "origin".
function origin(gateStatus) {
  const calls = [];
  const f = async (input) => {
    const url = typeof input === "string" ? input : input.url;
    calls.push(url);
    if (url.endsWith("/gate")) {
      if (gateStatus === "down") throw new TypeError("connection refused");
      return new Response(null, { status: gateStatus });
    }
    if (url.endsWith("/jwks.json")) return Response.json({ keys: [] });
    return new Response("origin", { status: 200 });
  };
  f.calls = calls;
  return f;
}

test("a show whose queue is off, or whose state the origin cannot tell, is left to the origin", async () => {
  for (const status of [204, 503, "down"]) {
    const f = origin(status);
    const gate = new Gate({ ORIGIN: "http://origin.test" }, { fetch: f });
    const resp = await gate.handle(new Request("http://cdn.test/api/v1/shows/s1/seats"));
    assert.equal(await resp.text(), "origin", `gate ${status}`);
  }
});

test("the queue state is asked once per show and TTL, however many fans arrive", async () => {
  const f = origin(401);
  let t = 0;
  const gate = new Gate({ ORIGIN: "http://origin.test", QUEUE_STATE_TTL_SECONDS: "5" }, { fetch: f, now: () => t });
  const ask = () => gate.handle(new Request("http://cdn.test/api/v1/shows/s1/seats"));
  const answers = await Promise.all(Array.from({ length: 20 }, ask));
  assert.deepEqual(new Set(answers.map((r) => r.status)), new Set([401]));
  t += 4_000;
  await ask();
  assert.equal(f.calls.filter((u) => u.endsWith("/gate")).length, 1);
  t += 1_000;
  await ask();
  assert.equal(f.calls.filter((u) => u.endsWith("/gate")).length, 2);
});

test("a hold is gated by the show in its body; one the worker cannot read goes on", async () => {
  const gate = new Gate({ ORIGIN: "http://origin.test" }, { fetch: origin(401) });
  const hold = (body, headers = {}) => gate.handle(new Request("http://cdn.test/api/v1/bookings/hold",
    { method: "POST", body, headers: { "Content-Type": "application/json", ...headers } }));
  assert.equal((await hold(`{"showId":"s1","seatIds":["a"]}`)).status, 401);
  assert.equal((await hold(`{"showId":"s1"}`, { Accept: "text/html" })).status, 303);
  assert.equal(await (await hold("not json")).text(), "origin");
  assert.equal(await (await hold(`{"seatIds":["a"]}`)).text(), "origin");
  assert.equal(await (await hold("gzipped", { "Content-Encoding": "gzip" })).text(), "origin");
});

test("an unreachable origin is a 502 problem, not a dropped connection", async () => {
  const gate = new Gate({ ORIGIN: "http://origin.test" }, { fetch: () => Promise.reject(new TypeError("refused")) });
  const resp = await gate.handle(new Request("http://cdn.test/api/v1/events"));
  assert.equal(resp.status, 502);
  assert.equal(resp.headers.get("Content-Type"), "application/problem+json");
});

test("against the platform: tokenless fans asked once, the admitted fan passed, the queue page named", { skip }, async () => {
  let gateCalls = 0;
  const counting = (input, init) => {
    if (String(input.url ?? input).endsWith("/gate")) gateCalls++;
    return fetch(input, init);
  };
  const gate = new Gate({ ORIGIN: env.FLASHSEAT_ORIGIN }, { fetch: counting });
  const seats = `http://cdn.test/api/v1/shows/${env.FLASHSEAT_SHOW}/seats`;
  for (let i = 0; i < 3; i++) {
    const resp = await gate.handle(new Request(seats));
    assert.equal(resp.status, 401);
    assert.equal((await resp.json()).queueUrl, `/queue/${env.FLASHSEAT_SHOW}`);
  }
  assert.equal(gateCalls, 1);
  const page = await gate.handle(new Request(`http://cdn.test/shows/${env.FLASHSEAT_SHOW}`,
    { headers: { Accept: "text/html", Cookie: `other=1; fs_adm_${env.FLASHSEAT_SHOW}=${env.FLASHSEAT_ADMISSION_TOKEN}` } }));
  // The worker passed it: the origin answered (it refuses the revoked token, or serves the page).
  assert.ok(page.headers.get("X-Request-Id"), `status ${page.status} came from the origin`);
});
