// The operator console's entry: sign-in, the live figures, and the panels. Every call goes to this origin with the
// session cookie (HttpOnly: no script sees it) and the toolkit's CSRF header (api.js); the operator token is sent
// once, at sign-in, and is not kept.
//
// Each panel is a module of its own with a <section> of its own in console.html. A panel exports
// mount({ call, changed }) and returns the hooks it wants, all optional: render(snap) for each round of live
// figures, signedIn() when an operator signs in, changed() after any panel changed something. call(method, path,
// body) answers the JSON body of a 2xx and rejects with the toolkit's ApiError otherwise (a 401 signs the console
// out first); changed() tells every panel that something changed. To add a panel: write its module, add its
// section to console.html, and list it in PANELS.
import { api, ApiError } from "./api.js";
import { follow } from "./stream.js";
import { $ } from "./dom.js";
import * as shows from "./shows.js";
import * as bots from "./bots.js";
import * as fans from "./fans.js";
import * as catalog from "./catalog.js";
import * as audit from "./audit.js";
import * as webhooks from "./webhooks.js";
import * as codes from "./codes.js";
import * as waves from "./waves.js";
import * as tuning from "./tuning.js";
import * as reports from "./reports.js";

const PANELS = [shows, tuning, bots, codes, waves, fans, catalog, reports, audit, webhooks];

let live = null; // the follow of the live figures (stream.js), streamed or polled

async function call(method, path, body) {
  try {
    return (await api(method, path, body)).data;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401 && path !== "/admin/session") signedOut("Your session has ended; sign in again.");
    throw e;
  }
}

const hooks = [];
const each = (name, ...args) => { for (const h of hooks) if (h[name]) h[name](...args); };
const ctx = { call, changed: () => each("changed") };
for (const p of PANELS) hooks.push(p.mount(ctx) || {});

// ---- sign-in ----
function signedIn(s) {
  $("signin").hidden = true;
  $("app").hidden = false;
  $("who").hidden = false;
  $("operator").textContent = `Signed in as ${s.operator}.`;
  $("token").value = "";
  startLive();
  each("signedIn");
}

function signedOut(msg) {
  if (live) { live.close(); live = null; }
  $("app").hidden = true;
  $("who").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = msg || "";
}

$("signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("signin-error").textContent = "";
  try {
    signedIn(await call("POST", "/admin/session", { token: $("token").value, operator: $("opname").value }));
  } catch (e) {
    $("token").value = "";
    $("signin-error").textContent = e.status === 401 ? "Sign-in refused: that is not the operator token." : e.message;
    $("token").focus();
  }
});

$("signout").addEventListener("click", async () => {
  try { await call("DELETE", "/admin/session"); } catch { /* signed out either way */ }
  signedOut("You have signed out.");
});

// ---- live figures ----
// The figures come on an event stream; where it cannot get through (stream.js says when), the console asks for
// them every two seconds instead.
function startLive() {
  if (live) return;
  live = follow("/admin/live", {
    events: { figures: (ev) => render(JSON.parse(ev.data)) },
    open: () => { $("status").textContent = "Live: figures update every second."; },
    error: async () => {
      $("status").textContent = "Reconnecting to live figures…";
      try { await call("GET", "/admin/session"); } catch (e) {
        if (e.status === 401) signedOut("Your session has ended; sign in again.");
      }
    },
    poll: figures,
  });
}

// figures reads the figures once, for a console whose stream cannot get through; nothing after a 401, which
// has signed the console out.
async function figures() {
  try {
    const snap = await call("GET", "/admin/figures");
    render(snap);
    $("status").textContent = `Figures of ${new Date(snap.at).toLocaleTimeString("en-GB")}, read every two seconds: live updates cannot reach this browser.`;
    return snap;
  } catch (e) {
    if (e.status === 401) return null; // call() has signed the console out
    $("status").textContent = `Could not read the figures: ${e.message} Retrying…`;
    throw e;
  }
}

function render(snap) {
  each("render", snap);
  $("status").textContent = `Live: figures of ${new Date(snap.at).toLocaleTimeString("en-GB")} UTC+local.`;
}

call("GET", "/admin/session").then(signedIn, () => signedOut(""));
