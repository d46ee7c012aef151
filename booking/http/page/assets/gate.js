// gate.js: the door's page, /gate. Staff sign in with the staff token, pick the show and download its gate kit
// (public keys and valid tickets, docs/TICKETS.md), then scan: each code is checked on this device with the kit
// alone (gate/codecheck.js), and, when the platform is reachable, checked in there too (POST /api/v1/checkin: the
// server decides). Offline, admissions are kept (gate/scanlog.js) and sent when the network is back. A service
// worker (/gate/sw.js) keeps the page, its scripts and the last kit, so a device that loaded it once opens it
// with no network.
import { get, post, ApiError } from "./api.js";
import { el, $ } from "./dom.js";
import { showError, clearError } from "./ui.js";
import { Checker, REASONS } from "./codecheck.js";
import { Scanner } from "./scanner.js";
import { ScanLog } from "./scanlog.js";

// The staff token lives in this tab's sessionStorage (never localStorage or a URL): a reload while offline keeps
// it, closing the tab forgets it.
const TOKEN_KEY = "fs_gate_staff";
const SHOW_KEY = "fs_gate_show";
const SYNC_EVERY_MS = 15000;
const SYNC_TIMEOUT_MS = 20000;
const SAME_CODE_MS = 3000; // a ticket still in view is not judged again until it has been out of view this long
const KIT_EVERY_MS = 120000; // the kit is fetched again this often while online, for the tickets sold since
// STALE are the kit's refusals that a newer kit might not make: online, the server decides those.
const STALE = new Set(["not-valid", "unknown-key"]);

let token = sessionStorage.getItem(TOKEN_KEY) || "";
let checker = null, log = null, kit = null;
let lastCert = "", lastText = "", lastSeen = 0;
let syncing = false;
const scanner = new Scanner($("video"), $("frame"), onCode);
const auth = () => ({ headers: { Authorization: "Bearer " + token } });
const online = () => navigator.onLine !== false;

function show(id, on) { $(id).hidden = !on; }

function signedIn() {
  show("signin", !token);
  show("kit", !!token);
  if (token) loadShows();
}

async function loadShows() {
  const sel = $("show");
  const want = localStorage.getItem(SHOW_KEY) || "";
  try {
    const { data } = await get("/api/v1/events");
    const opts = [];
    for (const e of data.events || []) {
      for (const s of e.shows || []) {
        const when = new Date(s.startsAt).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
        opts.push(el("option", { value: s.showId, text: `${e.title} · ${when} · ${s.venue}` }));
      }
    }
    if (want && !opts.some((o) => o.value === want)) opts.unshift(el("option", { value: want, text: "Last show (" + want + ")" }));
    sel.replaceChildren(el("option", { value: "", text: opts.length ? "Choose a show" : "No upcoming shows" }), ...opts);
  } catch (e) {
    sel.replaceChildren(el("option", { value: want, text: want ? "Last show (" + want + ")" : "Shows unavailable offline" }));
  }
  sel.value = want;
  if (want) downloadKit(want);
}

// downloadKit fetches the show's gate kit (from the network, or the service worker's copy offline).
async function downloadKit(showId, quiet = false) {
  if (!quiet) clearError($("error"));
  const t0 = Date.now();
  let data;
  try {
    ({ data } = await get("/api/v1/shows/" + encodeURIComponent(showId) + "/gate-kit", auth()));
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
      signOut();
      showError($("error"), "The staff token was refused. Sign in again.");
      return;
    }
    if (!quiet) showError($("error"), e.status === 0 ? "No gate kit for this show on this device yet: connect once to download it." : e.message);
    return;
  }
  const t1 = Date.now();
  kit = data;
  checker = new Checker(kit);
  if (!log || log.showId !== kit.showId) log = new ScanLog(kit.showId); // one log a show: a sync in flight keeps it
  localStorage.setItem(SHOW_KEY, kit.showId);
  const at = Date.parse(kit.generatedAt);
  $("kit-info").textContent = `Gate kit of ${kit.title || kit.showId}: ${(kit.tickets || []).length} tickets, made ${new Date(at).toLocaleString()}.`;
  $("kit-info").dataset.show = kit.showId;
  // Fetched through the service worker, the kit is kept for offline use; the first load's is fetched again once
  // the worker takes over (controllerchange below).
  if (navigator.serviceWorker && navigator.serviceWorker.controller) {
    $("kit-info").dataset.kept = "true";
    $("kit-info").textContent += " Kept on this device for use offline.";
  }
  // The door checks a code's age with its own clock: show how far that is from the server's (a fresh kit only).
  const offset = (t0 + t1) / 2 - at;
  $("clock").textContent = Math.abs(offset) < 60000 && online()
    ? `This device's clock is ${(Math.abs(offset) / 1000).toFixed(1)} s ${offset >= 0 ? "ahead of" : "behind"} the server's` +
      (Math.abs(offset) > (kit.skewSeconds || 5) * 1000 ? ": set it right, or good codes are refused." : ".")
    : "";
  show("scan", true);
  show("sync", true);
  renderSync();
}

function verdict(state, word, why) {
  const v = $("verdict");
  v.dataset.state = state;
  v.replaceChildren(el("p", { class: "word", text: word }), el("p", { class: "why", text: why }));
}

function admit(r, how) {
  $("verdict").dataset.reason = "";
  verdict("admit", "ADMIT", `Seat ${r.seatId}${r.category ? " · " + r.category : ""}${how}`);
  $("verdict").dataset.ticket = r.ticketId;
}

function refuse(reason, r) {
  verdict("refuse", "REFUSED", (REASONS[reason] || reason) + (r && r.seatId ? ` (seat ${r.seatId})` : ""));
  $("verdict").dataset.ticket = (r && r.ticketId) || "";
  $("verdict").dataset.reason = reason;
}

// onCode judges one code read by the camera: offline with the kit first, then by the server when reachable.
async function onCode(text) {
  if (!checker) return;
  const cert = text.split(".")[0];
  const now = Date.now();
  // A ticket still in view is judged once: its code rotating does not make an admitted ticket "already
  // admitted", but a refused one (a screenshot) is judged again when its holder shows a new code.
  if (cert === lastCert && now - lastSeen < SAME_CODE_MS && (text === lastText || $("verdict").dataset.state === "admit")) {
    lastSeen = now;
    return;
  }
  lastCert = cert;
  lastText = text;
  lastSeen = now;
  const r = await checker.check(text, Math.floor(now / 1000), (id) => log.admitted(id));
  // A ticket sold or reissued since the kit was made, or signed by a newer key, is the server's to judge.
  if (!r.ok && !(STALE.has(r.reason) && online())) return refuse(r.reason, r);
  const scannedAt = new Date(now).toISOString();
  if (online()) {
    try {
      const { data } = await post("/api/v1/checkin", { code: text }, auth());
      const seat = r.seatId || (data && data.seatId);
      log.add({ ticketId: r.ticketId || data.ticketId, seatId: seat, code: text, scannedAt, synced: true });
      return admit({ ...r, seatId: seat }, "");
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        showError($("error"), "The staff token was refused. Sign in again to check tickets in.");
        return refuse("not-checked", r);
      }
      if (e instanceof ApiError && e.status !== 0 && e.status < 500) return refuse(e.kind || "refused", r);
      // unreachable, or the platform failing: admit on the kit's word and keep the scan for later
    }
  }
  if (!r.ok) return refuse(r.reason, r);
  log.add({ ticketId: r.ticketId, seatId: r.seatId, code: text, scannedAt, synced: false });
  admit(r, " · offline: will sync");
  renderSync();
}

function renderSync() {
  if (!log) return;
  const n = log.pending().length;
  $("pending").textContent = n ? `${n} scan${n === 1 ? "" : "s"} waiting to sync.` : "Nothing waiting to sync.";
  $("pending").dataset.count = String(n);
  $("sync-now").disabled = n === 0;
  $("sync-results").replaceChildren(...log.answered().map((s) => el("li", { class: "sync-" + s.result, "data-status": s.result,
    "data-ticket": s.ticketId, text: `Seat ${s.seatId}: ${syncWords(s)}` })));
}

function syncWords(s) {
  switch (s.result) {
    case "admitted": return "admitted (synced)";
    case "conflict": return `conflict: first admitted by ${s.firstDevice || "another door"}${s.firstAt ? " at " + new Date(s.firstAt).toLocaleTimeString() : ""}`;
    default: return "refused by the server" + (s.reason ? ": " + (REASONS[s.reason] || s.reason) : "");
  }
}

// sync sends the scans waiting. It does not wait on navigator.onLine, which can stay false after the network is
// back (and is true on a network that reaches nothing): a failed try costs one request, and the interval tries
// again. A request that hangs (a Wi-Fi that drops mid-request) is given up after SYNC_TIMEOUT_MS, so it cannot
// hold every later sync back.
async function sync() {
  if (!log || !token || syncing || !log.pending().length) return;
  syncing = true;
  try {
    await log.sync(token, AbortSignal.timeout(SYNC_TIMEOUT_MS));
    clearError($("error"));
  } catch (e) {
    if (e.status !== 0) showError($("error"), "Sync failed: " + e.message);
  } finally {
    syncing = false;
    renderSync();
  }
}

function netState() {
  $("net").textContent = online() ? "Online" : "Offline: checking with the gate kit alone";
  $("net").dataset.online = String(online());
}

function signOut() {
  token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  scanner.stop();
  signedIn();
  show("scan", false);
  show("sync", false);
}

function start() {
  $("signin").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("staff-token").value.trim();
    $("staff-token").value = "";
    sessionStorage.setItem(TOKEN_KEY, token);
    signedIn();
  });
  $("signout").addEventListener("click", signOut);
  $("kit-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    if ($("show").value) downloadKit($("show").value);
  });
  $("camera").addEventListener("click", async () => {
    const b = $("camera");
    if (scanner.running) {
      scanner.stop();
      b.textContent = "Start camera";
      b.setAttribute("aria-pressed", "false");
      return;
    }
    try {
      await scanner.start();
      b.textContent = "Stop camera";
      b.setAttribute("aria-pressed", "true");
    } catch (e) {
      showError($("error"), "The camera could not start: " + (e.message || e.name));
    }
  });
  $("sync-now").addEventListener("click", sync);
  addEventListener("online", () => { netState(); sync(); });
  addEventListener("offline", netState);
  setInterval(sync, SYNC_EVERY_MS);
  setInterval(() => { if (kit && token && online()) downloadKit(kit.showId, true); }, KIT_EVERY_MS);
  netState();
  signedIn();
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.addEventListener("controllerchange", () => { if (kit && token) downloadKit(kit.showId, true); });
    navigator.serviceWorker.register($("gate").dataset.sw, { scope: "/gate" }).catch(() => { /* no offline copy */ });
  }
}

start();
