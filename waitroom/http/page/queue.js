// The waiting room's page script. It gets the fan a place in line (earning it, when the show's bot protection asks,
// with a proof of work solved in a Web Worker and, if the show asks for one, the human check), then follows the
// place on the position stream (polling status where EventSource is missing or keeps failing) until the fan's turn,
// and takes them to the seats. Everything personal travels in HttpOnly cookies (fs_session, fs_place_{show},
// fs_adm_{show}); this script never sees a token. Calls and the guest session are the browser toolkit's (api.js),
// the solver is pow.js; a refusal's words come with the page (data-refusals), keyed by its reason.
import { api, get, post, ApiError, session, resetSession } from "./api.js";
import { warm, solve } from "./pow.js";
import { $ } from "./dom.js";
import { showError, clearError, flash, takeFlash } from "./ui.js";

const show = decodeURIComponent(location.pathname.replace(/^\/queue\//, "").replace(/\/.*$/, ""));
const base = "/queue/" + encodeURIComponent(show);
const seatsURL = "/shows/" + encodeURIComponent(show);
let first = 0, es = null, pollTimer = null, errors = 0, done = false, polling = false, info = null;
let countdown = null, opensAt = 0, lastEvent = 0, stalled = false;
let entering = false, refusals = 0, skew = 0;
// drawPending: the fan joined before the sale's opening draw, so their place receipt (an HttpOnly cookie, which
// brings the same place back if the waiting room loses its state) names no ticket yet; renewReceipt fetches one
// that does once the draw has given them a position.
let drawPending = false;

// t is the page's text for the English s, in the language the page was rendered in (pagelang.go): the <html>
// element carries the texts (null for English), English when one is missing. tf fills "{}" with v.
let texts = {};
try { texts = JSON.parse(document.documentElement.getAttribute("data-texts") || "{}") || {}; } catch { texts = {}; }
function t(s) { return texts[s] || s; }
// words are each refusal's, by reason, in the page's language, with what the server's table says the page must
// know of it (fresh: a fresh challenge helps; humanKept: a human-check token sent with it is still good).
let words = {};
try { words = JSON.parse(document.documentElement.getAttribute("data-refusals") || "{}") || {}; } catch { words = {}; }
function tf(s, v) { return t(s).replace("{}", v); }
const views = ["connecting", "waiting", "paused", "opens", "admitted", "soldout", "closed", "off"];
function view(name) {
  for (const s of views) $(s).hidden = s !== name;
  if (name !== "connecting") $("human").hidden = true;
}
function fmt(secs) {
  secs = Math.max(0, Math.round(secs));
  if (secs < 60) return secs + " s";
  const m = Math.floor(secs / 60);
  if (m < 60) return m + " min " + (secs % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}
// span says a duration in words, rounded down to what a fan can act on: "10 minutes", "90 seconds".
function span(secs) {
  secs = Math.max(0, Math.floor(secs));
  if (secs < 120) return secs === 1 ? tf("{} second", secs) : tf("{} seconds", secs);
  const m = Math.floor(secs / 60);
  if (m < 120) return tf("{} minutes", m);
  return tf("{} hours", Math.floor(m / 60));
}
function say(msg) { if (msg) showError($("error"), msg); else clearError($("error")); }
// wait is how long to wait before trying again: the answer's Retry-After (seconds), else def, in milliseconds.
function wait(retryAfter, def) { return (retryAfter > 0 ? retryAfter : def) * 1000; }
function reconnecting() { say(t("Reconnecting… your place is kept.")); }
function progress(title, detail) {
  if ($("connecting-title").textContent !== title) $("connecting-title").textContent = title;
  $("connecting-detail").textContent = detail;
}
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

// ---- Earning a place: the proof of work, solved in the toolkit's worker (started at once, so that its script
// loads beside the page's other requests).
warm();

// ---- Earning a place: the human check (Turnstile, hCaptcha or reCAPTCHA, as the deployment configures it).

// The provider's script renders its widget into an element of its class and hands the token to the function
// named by data-callback; the token is also left in the hidden field named responseField. A token is good for
// one verification.
const human = { el: null, token: "", waiting: [], globals: { turnstile: "turnstile", hcaptcha: "hcaptcha", recaptcha: "grecaptcha" } };
window.fsHumanCheck = (token) => {
  if (!token && human.el && human.check) {
    const input = human.el.querySelector('[name="' + human.check.responseField + '"]');
    token = input ? input.value : "";
  }
  if (!token) return;
  human.token = token;
  const w = human.waiting;
  human.waiting = [];
  for (const resolve of w) resolve(token);
};
window.fsHumanCheckExpired = () => { human.token = ""; };
window.fsHumanCheckError = () => {
  human.token = "";
  say(t("The check could not be completed. Try it again; if it keeps failing, reload this page."));
};
// humanToken shows the widget and resolves to its token when the fan has passed it.
function humanToken(hc) {
  human.check = hc;
  $("human").hidden = false;
  progress(t("Getting you a place in line…"), t("One more step below: confirm you are a person, and you join the line at once."));
  if (human.token) return Promise.resolve(human.token);
  const p = new Promise((resolve) => { human.waiting.push(resolve); });
  if (!human.el) {
    human.el = document.createElement("div");
    human.el.className = hc.className;
    human.el.setAttribute("data-sitekey", hc.siteKey);
    human.el.setAttribute("data-callback", "fsHumanCheck");
    human.el.setAttribute("data-expired-callback", "fsHumanCheckExpired");
    human.el.setAttribute("data-error-callback", "fsHumanCheckError");
    $("human-widget").appendChild(human.el);
    const s = document.createElement("script");
    s.src = hc.scriptUrl;
    s.async = true;
    s.onerror = () => { say(t("The human check could not load. Check your connection and reload this page.")); };
    document.head.appendChild(s);
  }
  return p;
}
// humanSpent forgets a token the server has verified (it is good once), and resets the widget for another.
function humanSpent() {
  if (!human.token) return;
  human.token = "";
  const g = human.check && window[human.globals[human.check.provider]];
  try { if (g && g.reset) g.reset(); } catch { /* the widget renders afresh on its own */ }
}

// ---- Joining.

// earn turns what the queue asks ({challenge, humanCheck}: a challenge's answer or a refusal's) into a join's
// body; null asks nothing (a fan who has a place, or a show without bot protection).
function earn(ask) {
  if (!ask || (!ask.challenge && !ask.humanCheck)) return Promise.resolve(undefined);
  const proof = ask.challenge ? solve(ask.challenge) : Promise.resolve("");
  const token = ask.humanCheck ? humanToken(ask.humanCheck) : Promise.resolve("");
  if (ask.challenge) progress("Getting you a place in line…", ask.humanCheck ?
    "One more step below: confirm you are a person, and you join the line at once." :
    "Your browser is doing a quick check that keeps bots out of the queue. It takes a second or two; there is no need to reload.");
  return Promise.all([proof, token]).then(([pr, tk]) => {
    const body = {};
    if (pr) body.proof = pr;
    if (tk) body.humanToken = tk;
    return body;
  });
}

// challenge asks what a new place costs: null when the show asks nothing (204). A lapsed session or an outage is
// tried again; any other refusal is the fan's to hear.
function challenge() {
  return get(base + "/challenge").then((r) => (r.status === 204 || !r.data ? null : { challenge: r.data, humanCheck: r.data.humanCheck }), (e) => {
    if (e instanceof ApiError && e.status === 401) resetSession();
    if (!(e instanceof ApiError) || e.status === 0 || e.status === 401 || e.status >= 500) throw new Error("retry");
    e.refusal = true;
    throw e;
  });
}

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
    return challenge();
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
    if (!done && r.data.status !== "closed") { if (polling) poll(); else listen(); }
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
  if (p.paused) return onPaused(p);
  if (p.position) return onPosition(p);
  onWaiting(p);
}
// holdNote tells the fan the truth about a locked phone: the page stops while the phone sleeps, and the waiting
// room holds a turn that came meanwhile for the show's turn hold.
function holdNote(secs) {
  $("hold").textContent = tf("When it is your turn this page takes you to the seats. If your phone locks or you switch apps, this page stops, but your turn is held for {}: come back to this page within that time and you go straight in. Reloading keeps your place.", span(secs));
}
function clearCountdown() { if (countdown) { clearInterval(countdown); countdown = null; } }
function onPosition(p) {
  clearCountdown();
  if (drawPending) { drawPending = false; if (!polling) renewReceipt(p.etaSeconds); } // a poll's answer renews it itself
  view("waiting");
  if (!first || p.position > first) first = p.position;
  $("position").textContent = p.position.toLocaleString();
  const pct = Math.round(100 * (1 - (p.position - 1) / first));
  $("progress").style.width = pct + "%";
  $("bar").setAttribute("aria-valuenow", String(pct));
  $("eta").textContent = p.etaSeconds > 0 ? tf("About {} to go.", fmt(p.etaSeconds)) : t("Almost there…");
}
function onPaused(p) {
  clearCountdown();
  view("paused");
  $("paused-pos").textContent = p.position ? tf(" (number {})", p.position.toLocaleString()) : "";
}
function onWaiting(p) {
  view("opens");
  drawPending = true;
  if (!p.opensAt) { $("countdown").textContent = t("Opening soon"); return; }
  // Count down locally between the server's (infrequent) waiting events, from the server's own ETA.
  opensAt = Date.now() + (p.etaSeconds || 0) * 1000;
  const tick = () => {
    const left = (opensAt - Date.now()) / 1000;
    $("countdown").textContent = left > 0 ? tf("Opens in {}", fmt(left)) : t("Opening… drawing places");
  };
  tick();
  if (!countdown) countdown = setInterval(tick, 1000);
}
// renewReceipt asks status once, whose answer sets the receipt cookie with the fan's ticket: the stream's events
// cannot set cookies. Every early fan gets their position in the same instant, so each asks at a random moment
// within the next 20 s, or half their wait if that is shorter: the crowd's asks spread out, and a fan near the
// front still has their receipt before their turn.
function renewReceipt(eta) {
  const within = Math.min(20, (eta || 0) / 2);
  setTimeout(() => {
    if (done) return;
    get(base + "/status").then((r) => { noteDate(r.headers); onPlace(r.data); }, () => { /* the stream or the next poll says what is wrong */ });
  }, Math.random() * within * 1000);
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
// the fan goes to the seats.
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
  }).catch(() => { done = false; reconnecting(); setTimeout(poll, 2000); });
}
function stop() {
  if (es) { es.close(); es = null; }
  if (pollTimer) { clearTimeout(pollTimer); pollTimer = null; }
}

// The stream sends a position at least every 2 s while the fan waits, and repeats a steady state (before the
// opening, sold out) every 10 s. A stream that stays silent longer is stalled (the queue's store may be down
// while the connection stays open): say so, and poll status, whose 503 tells when it is back.
setInterval(() => {
  if (!es || done || stalled) return;
  const quiet = ["opens", "soldout", "paused"].some((v) => !$(v).hidden) ? 25000 : 8000;
  if (Date.now() - lastEvent > quiet) { stalled = true; stop(); reconnecting(); poll(); }
}, 2000);

function listen() {
  if (!window.EventSource) return poll();
  polling = false;
  lastEvent = Date.now();
  es = new EventSource(base + "/events");
  const data = (e) => { lastEvent = Date.now(); errors = 0; say(""); try { return JSON.parse(e.data); } catch { return {}; } };
  es.addEventListener("position", (e) => { const d = data(e); d.status = "waiting"; onPlace(d); });
  es.addEventListener("waiting", (e) => onPlace(data(e)));
  es.addEventListener("admitted", (e) => admitted(data(e)));
  es.addEventListener("sold_out", (e) => { data(e); onPlace({ status: "sold_out" }); });
  es.addEventListener("closed", (e) => { data(e); closed(); });
  es.onerror = () => {
    if (done) return;
    errors++;
    reconnecting();
    // Refused (the place lapsed: the answer is not a stream, and EventSource gives up), or failing again and
    // again (an outage, a proxy that buffers): poll status, which says which.
    if ((es && es.readyState === EventSource.CLOSED) || errors >= 3) { stop(); poll(); }
  };
}
function poll() {
  polling = true;
  if (pollTimer) { clearTimeout(pollTimer); pollTimer = null; }
  get(base + "/status").then((r) => {
    noteDate(r.headers);
    const p = r.data;
    say(""); onPlace(p);
    if (done || p.status === "closed") return;
    if (stalled) { stalled = false; listen(); return; } // the store is back: the stream again
    pollTimer = setTimeout(poll, wait(parseInt(r.headers.get("Retry-After") || "", 10), 2));
  }, (e) => {
    if (!(e instanceof ApiError) || e.status === 0) { reconnecting(); pollTimer = setTimeout(poll, 3000); return; }
    if (e.status === 404) { // our place lapsed (away too long, or lost with the store): join again
      if (stalled) { stalled = false; polling = false; }
      joined(false);
      return enter();
    }
    if (e.status === 401) { resetSession(); return enter(); }
    if ([403, 409, 422, 429].includes(e.status) && e.problem.reason) {
      if (stalled) { stalled = false; polling = false; }
      return refused(e, null);
    }
    reconnecting();
    pollTimer = setTimeout(poll, wait(e.retryAfter, 2));
  }).catch(() => { reconnecting(); pollTimer = setTimeout(poll, 3000); });
}

// resumed asks for the place at once when the page comes back: a phone that slept, a tab brought to the front, a
// page restored from the back-forward cache. While it was stopped its stream may have died and its turn may have
// come and gone; a status poll within the show's turn hold puts the fan back at the head of the line.
function resumed() {
  if (done || entering) return;
  lastEvent = Date.now(); // the silence was the page's own, not the stream's
  if (polling || !es) { if (polling) poll(); return; }
  get(base + "/status").then((r) => {
    noteDate(r.headers);
    onPlace(r.data);
    if (!done && r.data.status !== "closed" && (!es || es.readyState === EventSource.CLOSED)) { stop(); listen(); }
  }, (e) => {
    if (e instanceof ApiError && e.status) { stop(); poll(); } // poll tells a lapsed place, a refusal and an outage apart
  });
}
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") resumed(); });
document.addEventListener("resume", resumed); // Page Lifecycle: a frozen page thawed
window.addEventListener("pageshow", (e) => { if (e.persisted) resumed(); });

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
