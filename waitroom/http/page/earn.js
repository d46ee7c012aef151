// earn.js: earning a place in line when the show's bot protection asks for it: a proof of work, solved in the
// browser toolkit's Web Worker (pow.js), and the human check (Turnstile, hCaptcha or reCAPTCHA, as the deployment
// configures it), whose provider's script renders its widget on this page.
import { get, ApiError, resetSession } from "./api.js";
import { solve } from "./pow.js";
import { $ } from "./dom.js";
import { t } from "./lang.js";
import { say, progress } from "./screen.js";

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
export function humanSpent() {
  if (!human.token) return;
  human.token = "";
  const g = human.check && window[human.globals[human.check.provider]];
  try { if (g && g.reset) g.reset(); } catch { /* the widget renders afresh on its own */ }
}

// earn turns what the queue asks ({challenge, humanCheck}: a challenge's answer or a refusal's) into a join's
// body; null asks nothing (a fan who has a place, or a show without bot protection).
export function earn(ask) {
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

// challenge asks the queue at base what a new place costs: null when the show asks nothing (204). A lapsed
// session or an outage is tried again; any other refusal is the fan's to hear.
export function challenge(base) {
  return get(base + "/challenge").then((r) => (r.status === 204 || !r.data ? null : { challenge: r.data, humanCheck: r.data.humanCheck }), (e) => {
    if (e instanceof ApiError && e.status === 401) resetSession();
    if (!(e instanceof ApiError) || e.status === 0 || e.status === 401 || e.status >= 500) throw new Error("retry");
    e.refusal = true;
    throw e;
  });
}
