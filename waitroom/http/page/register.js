// register.js: a verified-fan sale's registration on the queue page. When the join is refused because the show
// lets in only registered or invited fans, the page offers registration: the fan gives an e-mail (and, if they
// like, the name their tickets print; both filled in from the contact they gave before), confirms it with
// the code booking mails to it, and registers (paying the show's proof of work, as a join does: earn.js). Then the
// page follows the fan's status (the notification: registered, invited, not invited this time) and, once invited
// or registered enough for the show's access, joins the line at once.
import { api, get, ApiError } from "./api.js";
import { $ } from "./dom.js";
import { t, tf } from "./lang.js";
import { earn, challenge } from "./earn.js";

let show = "", base = "", onIn = null, watching = null;

function status(msg) { $("register-status").textContent = msg; }
function fail(e) {
  const p = (e && e.problem) || {};
  $("register-error").textContent = p.detail ? tf("That did not work: {}", p.detail) : t("That did not work. Try again.");
  $("register-error").hidden = false;
}
function clear() { $("register-error").hidden = true; $("register-error").textContent = ""; }

// offer shows the registration card for a join refused for want of a registration or an invitation; joinAgain
// is called once the fan may be let in: invited, or newly registered (a sale for registered fans lets them in;
// one for invited fans refuses again, and the page waits for the invitation).
export function offer(showId, queueBase, joinAgain) {
  show = showId; base = queueBase; onIn = joinAgain;
  $("register").hidden = false;
  read();
}

function path() { return "/api/v1/shows/" + encodeURIComponent(show) + "/registration"; }

// read asks the fan's status and shows the step they are at.
function read() {
  get(path()).then((r) => shown(r.data), (e) => {
    if (e instanceof ApiError && e.status === 404) { $("register-email-form").hidden = false; status(""); known(); return; }
    fail(e);
  });
}

function shown(reg, fresh) {
  $("register-email-form").hidden = true;
  $("register-code-form").hidden = true;
  if (reg.status === "INVITED") {
    status(t("You are invited: joining the line now."));
    stopWatching();
    if (onIn) onIn();
    return;
  }
  if (reg.status === "NOT_INVITED") status(t("You were not invited this time. You stay registered for the next waves; this page will tell you."));
  else status(t("You are registered. This page will tell you if a wave of invitations includes you."));
  if (fresh && onIn) { stopWatching(); onIn(); return; } // registered just now: the line may let them in already
  if (!watching) watching = setInterval(() => get(path()).then((r) => { if (r.data.status === "INVITED") shown(r.data); }, () => {}), 3000);
}

// known fills the form with the contact the fan gave before (none: a 404, and the form stays empty).
function known() {
  get("/api/v1/me/contact").then((r) => {
    if (!$("register-email").value) $("register-email").value = r.data.email || "";
    if (!$("register-name").value) $("register-name").value = r.data.name || "";
  }, () => {});
}

function stopWatching() { if (watching) { clearInterval(watching); watching = null; } }

$("register-email-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  clear();
  const contact = { email: $("register-email").value.trim() };
  if ($("register-name").value.trim()) contact.name = $("register-name").value.trim();
  api("PUT", "/api/v1/me/contact", contact).then((r) => {
    if (r.data.confirmed) return registerNow();
    $("register-email-form").hidden = true;
    $("register-code-form").hidden = false;
    status(t("We mailed you a six-digit code. Enter it to confirm your e-mail."));
    $("register-code").focus();
  }, fail);
});

$("register-code-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  clear();
  api("POST", "/api/v1/me/contact/confirm", { code: $("register-code").value.trim() }).then(registerNow, fail);
});

// registerNow registers, with the proof the show's guard asks (none when it asks nothing).
function registerNow() {
  status(t("Registering…"));
  return challenge(base).then((a) => earn(a)).then((body) => api("POST", path(), body || {})).then((r) => shown(r.data, true), fail);
}
