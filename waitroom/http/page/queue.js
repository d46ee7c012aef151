// The waiting room's page script. It gets the fan a place in line (earning it, when the show's bot protection asks,
// with a proof of work solved in a Web Worker and, if the show asks for one, the human check: earn.js), then
// follows the place on the position stream (polling status where EventSource is missing or the stream keeps
// failing or stalls: the toolkit's stream.js) until the fan's turn, and takes them to the seats. Everything
// personal travels in HttpOnly cookies (fs_session, fs_place_{show}, fs_adm_{show}); this script never sees a
// token. Calls and the guest session are the browser toolkit's (api.js); what the fan sees is screen.js's, in the
// page's language (lang.js); a refusal's words come with the page (data-refusals), keyed by its reason.
import { api, get, post, ApiError, session, resetSession } from "./api.js";
import { warm } from "./pow.js";
import { follow } from "./stream.js";
import { $ } from "./dom.js";
import { flash, takeFlash } from "./ui.js";
import { t, tf, span } from "./lang.js";
import { view, steady, say, reconnecting, progress, holdNote, clearCountdown, showPosition, showPaused, showOpens } from "./screen.js";
import { earn, challenge, humanSpent } from "./earn.js";
import { offer } from "./register.js";

const show = decodeURIComponent(location.pathname.replace(/^\/queue\//, "").replace(/\/.*$/, ""));
const base = "/queue/" + encodeURIComponent(show);
const seatsURL = "/shows/" + encodeURIComponent(show);
// feed follows the place (listen), null while the page gets one or is done with it.
let feed = null, done = false, info = null, entering = false, refusals = 0, skew = 0;
// drawPending: the fan joined before the sale's opening draw, so their place receipt (an HttpOnly cookie, which
// brings the same place back if the waiting room loses its state) names no ticket yet; the first position after
// the draw asks status for one that does.
let drawPending = false;
// words are each refusal's, by reason, in the page's language, with what the server's table says the page must
// know of it (fresh: a fresh challenge helps; humanKept: a human-check token sent with it is still good).
let words = {};
try { words = JSON.parse(document.documentElement.getAttribute("data-refusals") || "{}") || {}; } catch { words = {}; }

// wait is how long to wait before trying again: the answer's Retry-After (seconds), else def, in milliseconds.
function wait(retryAfter, def) { return (retryAfter > 0 ? retryAfter : def) * 1000; }
// now is the server's clock as best known (from the Date of its last answer), for the admission's deadline.
function now() { return Date.now() + skew; }
function noteDate(headers) {
  const d = Date.parse(headers.get("Date") || "");
  if (d) skew = d - Date.now();
}

$("fairness").href = base + "/fairness";
$("showlink").href = seatsURL;
const carried = takeFlash();
if (carried) { $("flash").textContent = carried; $("flash").hidden = false; }
// toSeats goes to the seats. A fan sent back here with a message (an admission that ended) and let straight
// back in would otherwise land on the seats again with no word of why the choice was lost.
function toSeats() {
  if (!$("flash").hidden) flash("Your admission had ended; you have been let straight back in. Choose your seats again.");
  location.assign(seatsURL);
}

// joined remembers, for this tab only, that it has a place in this show's line: a reload then asks for its place
// without a proof first, rather than a challenge it does not need (each challenge counts against the fan's
// network). It is a hint, not a secret: the place itself is the fs_place_{show} cookie's.
const joinedKey = "fs_joined:" + show;
function joined(on) {
  try {
    if (on === undefined) return sessionStorage.getItem(joinedKey) === "1";
    if (on) sessionStorage.setItem(joinedKey, "1"); else sessionStorage.removeItem(joinedKey);
  } catch { /* storage off */ }
  return false;
}

// signIn makes sure the browser has an identity (the fs_session cookie), starting a guest session if it has none.
// A guest session refused in words (a busy network, a blocked one) is a refusal like a join's.
function signIn() {
  return session().catch((e) => {
    if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 401) {
      e.refusal = true;
      e.guest = true;
    }
    throw e;
  });
}

// showInfo reads the show's public details, which a CDN may serve.
function showInfo() {
  return get("/api/v1/shows/" + encodeURIComponent(show), { cache: "default" }).then((r) => r.data);
}

function loadShow() {
  return showInfo().then((s) => {
    info = s;
    $("title").textContent = s.title;
    const at = new Date(s.startsAt);
    $("facts").textContent = at.toLocaleString(undefined, { weekday: "short", day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit" }) +
      " · " + s.venue + ", " + s.city + " · " + s.hall;
    document.title = t("Waiting room") + " · " + s.title + " · flashseat";
    if (s.maxSeatsPerBooking) $("group").max = String(s.maxSeatsPerBooking);
  }).catch(() => { $("facts").textContent = t("Show details are not available right now; your place in the queue is not affected."); });
}

// The proof-of-work solver's worker starts at once, so that its script loads beside the page's other requests.
warm();

// ---- Joining.

// enter gets the fan a place: with a fresh challenge solved, or, given ask (a refusal's), with what it asks. A
// tab that joined before (a reload) first asks for its place without a proof.
function enter(ask) {
  if (done || entering) return;
  entering = true;
  stop();
  view("connecting");
  signIn().then(() => {
    if (ask !== undefined) return ask;
    if (joined()) return null;
    return challenge(base);
  }).then((a) => earn(a).then((body) => join(body, a))).catch((err) => {
    if (err && err.message === "superseded") return; // a newer challenge is being solved
    entering = false;
    if (err && err.refusal) return refused(err, null, err.guest);
    if (err && (err.message === "unsupported" || (err.problem && err.problem.unsupported))) {
      say(t("This browser cannot run the check the queue needs to keep bots out. Update it, or try another browser."));
      return;
    }
    reconnecting();
    setTimeout(() => enter(ask), 3000);
  });
}

// join sends the join, and again after an outage with the same body: a proof is good until it is spent.
function join(body, ask) {
  return api("POST", base + "/join", body).then((r) => {
    noteDate(r.headers);
    entering = false;
    refusals = 0;
    if (body && body.humanToken) humanSpent();
    joined(true);
    // When the fan got their place, from the page's navigation: for real-user monitoring and the benchmark.
    try { performance.mark("queue-joined"); } catch { /* old browser */ }
    say("");
    onPlace(r.data);
    if (!done && r.data.status !== "closed") listen();
  }, (e) => {
    if (!(e instanceof ApiError) || e.status === 0) { reconnecting(); setTimeout(() => join(body, ask), 3000); return; }
    if (e.status === 401) { entering = false; resetSession(); setTimeout(enter, 500); return; }
    if (e.status >= 500) { // opening (the draw) or an outage: the same join again
      reconnecting();
      setTimeout(() => join(body, ask), wait(e.retryAfter, 2));
      return;
    }
    entering = false;
    refused(e, body);
  });
}

// refused answers a refusal (an ApiError) of a join, a status poll, a stream or a guest session: by earning the
// place where the answer says how, else by telling the fan why, in words.
function refused(e, body, guest) {
  if (done) return;
  stop();
  const p = e.problem || {};
  const reason = p.reason || "";
  let again = p.challenge || p.humanCheck ? { challenge: p.challenge, humanCheck: p.humanCheck } : null;
  if (guest) again = null; // a guest session's challenge buys a session, not a place
  const w = words[reason];
  // A human-check token is verified once, whatever the answer, unless the join was refused before it was looked at.
  if (body && body.humanToken && !(w && w.humanKept)) humanSpent();
  if (reason) joined(false);
  refusals++;
  if (refusals > 5) { // something keeps refusing what this page brings: slow down rather than spin
    refusals = 0;
    say(t("We could not get you a place in line just now. Trying again in a few seconds…"));
    setTimeout(() => enter(again || undefined), 5000);
    return;
  }
  if (w && (again || w.fresh)) { // earned again at once: with what the answer carries, else a fresh challenge
    say(w.say || "");
    return enter(again || undefined);
  }
  if (w) { // said in words; one that says when to try again (429, Retry-After) is tried again then
    view("connecting");
    progress(w.title, w.hint);
    say(guest && w.guest ? w.guest : w.say);
    if (w.register) offer(show, base, () => { say(""); enter(); });
    if (e.status === 429) setTimeout(() => enter(), wait(e.retryAfter, 60));
    return;
  }
  if (again) return enter(again);
  if (e.status === 404) {
    view("connecting");
    progress(t("No such queue"), t("Check the link, or find the show on the home page."));
    return say(t("There is no waiting room for this show. Check the link, or find the show on the home page."));
  }
  if (e.status === 429) { reconnecting(); setTimeout(() => enter(), wait(e.retryAfter, 2)); return; }
  say(p.detail ? tf("We could not get you a place in line: {} Reload the page to try again.", p.detail) :
    t("We could not get you a place in line. Reload the page to try again."));
}

// ---- Following the place.

function onPlace(p) {
  if (done) return;
  if (p.turnHoldSeconds) holdNote(p.turnHoldSeconds);
  if (p.status === "admitted") return admitted(p);
  if (p.status === "sold_out") { clearCountdown(); view("soldout"); return; }
  if (p.status === "closed") return closed();
  if (p.paused) { clearCountdown(); showPaused(p); return; }
  if (p.position) return onPosition(p);
  drawPending = true;
  showOpens(p);
}
// onPosition shows the place; the first position after the draw renews the receipt: the stream's events cannot set
// cookies, a status answer can (a poll's answer is one). Every early fan gets their position in the same instant,
// so each asks at a random moment within the next 20 s, or half their wait if that is shorter: the crowd's asks
// spread out, and a fan near the front still has their receipt before their turn.
function onPosition(p) {
  if (drawPending) { drawPending = false; if (feed) feed.ask(Math.min(20, (p.etaSeconds || 0) / 2) * 1000); }
  showPosition(p);
}
// closed: the queue is off (the seats are open to all), or the organiser closed the sale.
function closed() {
  stop();
  (info ? Promise.resolve(info) : showInfo()).then((s) => {
    if (s && !s.queueEnabled && !s.saleClosedAt) {
      done = true;
      view("off");
      location.replace(seatsURL);
      return;
    }
    view("closed");
  }).catch(() => view("closed"));
}
// notify tells a fan whose tab is in the background that their turn came, and how long they have to choose.
function notify(expiresAt) {
  if (!window.Notification || Notification.permission !== "granted") return;
  const what = info ? info.title : "the show", left = expiresAt ? (Date.parse(expiresAt) - now()) / 1000 : 0;
  const body = left >= 60 ? "Choose your seats for " + what + " within " + span(left) + "." : "Choose your seats for " + what + " now.";
  try { new Notification("It's your turn", { body, tag: "fs-" + show }); } catch { /* some browsers only notify from a service worker */ }
}
// admitted: status sets the fs_adm_{show} cookie (the token stays out of this script and out of any URL), then
// the fan goes to the seats; failing, the page polls status, which says admitted again or what became of it.
function admitted(p) {
  if (done) return;
  done = true; stop(); clearCountdown(); view("admitted"); say("");
  $("bypass-form").hidden = true;
  joined(false);
  document.title = "✔ Your turn! · " + (info ? info.title : "flashseat");
  notify(p && p.expiresAt);
  get(base + "/status").then((r) => {
    if (r.data.status !== "admitted") { done = false; return onPlace(r.data); }
    toSeats();
  }).catch(() => { done = false; reconnecting(); setTimeout(() => listen(true), 2000); });
}
function stop() {
  if (feed) { feed.close(); feed = null; }
}

// listen follows the place (stream.js), polling from the start when told. The stream sends a position at least
// every 2 s while the fan waits, and repeats a steady state (before the opening, sold out, paused) every 10 s; a
// stream silent longer is stalled (the queue's store may be down while the connection stays open), and the page
// polls status, whose 503 tells when it is back. A page come back (a phone that slept, a tab brought to the
// front, a page restored from the back-forward cache) asks status at once: while it was stopped its turn may
// have come and gone, and a status ask within the show's turn hold puts the fan back at the head of the line.
function listen(polling) {
  stop();
  const data = (e) => { say(""); try { return JSON.parse(e.data); } catch { return {}; } };
  feed = follow(base + "/events", {
    events: {
      position: (e) => { const d = data(e); d.status = "waiting"; onPlace(d); },
      waiting: (e) => onPlace(data(e)),
      admitted: (e) => admitted(data(e)),
      sold_out: (e) => { data(e); onPlace({ status: "sold_out" }); },
      closed: (e) => { data(e); closed(); },
    },
    error: reconnecting,
    poll: status,
    quiet: () => (steady() ? 25000 : 8000),
    resume: true,
    polling,
  });
}
// status asks for the place once: a poll, the ask after the draw, the ask of a page come back. It resolves to the
// answer while the place is followed, and to nothing when the page has moved on (admitted, closed, joining again,
// refused); an outage rejects, and follow asks again after its Retry-After.
function status() {
  return get(base + "/status").then((r) => {
    noteDate(r.headers);
    say(""); onPlace(r.data);
    return done || r.data.status === "closed" ? null : r;
  }, (e) => {
    if (e instanceof ApiError && e.status === 404) { // our place lapsed (away too long, or lost with the store): join again
      joined(false);
      enter();
      return null;
    }
    if (e instanceof ApiError && e.status === 401) { resetSession(); enter(); return null; }
    if (e instanceof ApiError && [403, 409, 422, 429].includes(e.status) && e.problem.reason) { refused(e, null); return null; }
    reconnecting();
    throw e;
  });
}

// A bypass code: a valid one admits the fan at once, whatever their place (the join answers admitted, with the
// admission cookie); a refused one is said in words, and the fan keeps their place in line.
$("bypass-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const code = $("bypass-code").value.trim(), box = $("bypass-error");
  if (!code || done) return;
  box.hidden = true;
  $("bypass-use").disabled = true;
  signIn().then(() => post(base + "/join", { bypassCode: code })).then((r) => {
    noteDate(r.headers);
    $("bypass-code").value = "";
    onPlace(r.data);
  }, (e) => {
    box.textContent = e instanceof ApiError && e.status ? tf("That code did not work: {}", e.problem.detail || e.problem.title || e.status) :
      t("Could not reach flashseat to check the code; try again.");
    box.hidden = false;
    if (e instanceof ApiError && e.status) $("bypass-code").focus();
  }).then(() => { $("bypass-use").disabled = false; });
});

// The waitlist, offered when the show is sold out.
$("waitlist-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const n = parseInt($("group").value, 10);
  post("/api/v1/shows/" + encodeURIComponent(show) + "/waitlist", { seats: n }).then((r) => {
    say("");
    $("waitlist-form").hidden = true;
    $("waitlist-status").textContent = "You are number " + r.data.position + " on the waitlist for " + n + " seat" + (n > 1 ? "s" : "") + ". If seats come back, we offer them to you here.";
    $("waitlist-status").hidden = false;
  }, (e) => {
    say(e instanceof ApiError && e.status ? tf("Could not join the waitlist: {}", e.message) : t("Could not reach flashseat to join the waitlist; try again."));
  });
});

// Notifications: asked for only when the fan clicks, as browsers require.
if (window.Notification && Notification.permission === "default") {
  $("notify-row").hidden = false;
  $("notify").addEventListener("click", () => {
    Notification.requestPermission().then((p) => {
      $("notify").textContent = p === "granted" ? "We will notify you" : "Notifications are off";
      $("notify").disabled = true;
    });
  });
}

// The show's details and the place are fetched side by side: the proof of work is solved while the fan reads.
loadShow();
enter();
