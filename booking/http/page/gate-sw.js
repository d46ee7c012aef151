// The door page's service worker (scope /gate): it keeps /gate, the page's scripts and styles, the last show list
// and the last gate kit of each show in a cache, so a door device that loaded the page once opens it and checks
// tickets with no network. booking/http serves it at /gate/sw.js with the asset URLs of this release before this
// line (PRECACHE, VERSION): a new release is a new worker, which drops the old cache.
const CACHE = "fs-gate-" + VERSION;

self.addEventListener("install", (ev) => {
  ev.waitUntil(caches.open(CACHE).then((c) => c.addAll(["/gate", ...PRECACHE])).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (ev) => {
  ev.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k.startsWith("fs-gate-") && k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

// networkFirst answers from the network and keeps the answer; offline (or a failing platform) from the copy.
async function networkFirst(req) {
  const cache = await caches.open(CACHE);
  try {
    const res = await fetch(req);
    if (res.ok) await cache.put(req, res.clone());
    return res;
  } catch (e) {
    const hit = await cache.match(req, { ignoreVary: true });
    if (hit) return hit;
    throw e;
  }
}

async function cacheFirst(req) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(req);
  if (hit) return hit;
  const res = await fetch(req);
  if (res.ok) await cache.put(req, res.clone());
  return res;
}

self.addEventListener("fetch", (ev) => {
  const req = ev.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== location.origin) return; // check-ins and syncs go to the network
  const p = url.pathname;
  if (p === "/gate") ev.respondWith(networkFirst(new Request("/gate")));
  else if (p.startsWith("/assets/")) ev.respondWith(cacheFirst(req));
  else if (p === "/api/v1/events" || /^\/api\/v1\/shows\/[^/]+\/gate-kit$/.test(p)) ev.respondWith(networkFirst(req));
});
