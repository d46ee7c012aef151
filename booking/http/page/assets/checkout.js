// checkout.js: pay for a hold. The card goes to the payment gateway's own tokenization (the bundled simulator's
// Stripe.js-like /v1/payment_methods, or Stripe.js itself) and only the pm_... id it returns goes to booking.
// Every answer of POST /pay has its handling: 200 to the tickets, 202 pending (followed live) or to the 3-D
// Secure challenge, 402 another card, 410 back to the seats, 409 and 503 explained.
import { get, post, ApiError, Problem, session, idempotencyKey } from "./api.js";
import { showError, clearError } from "./ui.js";
import { el } from "./dom.js";
import { summary, bookingPath, follow, resume } from "./order.js";

const root = document.getElementById("checkout");
const bookingId = root.dataset.booking;
const gateway = { provider: root.dataset.provider, key: root.dataset.key, api: root.dataset.api };
const $ = (id) => document.getElementById(id);
const bookingURL = "/bookings/" + encodeURIComponent(bookingId);

let booking = null;
let timer = null;
// attempt is the payment in progress: its payment method and the Idempotency-Key that goes with it, kept so that
// retrying the same attempt (a network error, a busy gateway) can never pay twice. A new card starts a new one.
let attempt = null;
let stripe = null;
let stripeCard = null;

function status(text) {
  const s = $("status");
  s.textContent = text;
  s.hidden = !text;
}

function setBusy(busy, label) {
  const b = $("pay");
  b.disabled = busy;
  b.textContent = label || payLabel();
  b.setAttribute("aria-busy", busy ? "true" : "false");
}

function payLabel() {
  return booking ? "Pay " + $("total").textContent : "Pay";
}

// countdown keeps the hold's time left on screen; when it runs out the form goes.
function countdown() {
  clearInterval(timer);
  const tick = () => {
    const left = Math.max(0, Math.floor((new Date(booking.expiresAt) - Date.now()) / 1000));
    const m = Math.floor(left / 60), s = String(left % 60).padStart(2, "0");
    $("countdown").textContent = left > 0 ? `Your seats are held for ${m}:${s}. Pay before the time runs out.` : "Your hold has ended.";
    if (left === 0 && booking.status === "HELD") {
      clearInterval(timer);
      holdLost("Your hold on these seats ran out before the payment was made.");
    }
  };
  tick();
  timer = setInterval(tick, 1000);
}

function holdLost(text) {
  clearInterval(timer);
  $("pay-section").hidden = true;
  $("countdown").textContent = "Your hold has ended.";
  showError($("error"), text + " The seats may be on sale again: choose seats again to book.");
  const back = $("back-link");
  back.href = booking ? "/shows/" + encodeURIComponent(booking.showId) : "/";
  back.textContent = "Back to the seats";
  $("back").hidden = false;
}

function render(b) {
  booking = b;
  $("summary").replaceChildren(summary(b));
  switch (b.status) {
    case "HELD":
      $("pay-section").hidden = false;
      setBusy(false);
      countdown();
      return;
    case "PAYMENT_PENDING":
      $("pay-section").hidden = true;
      countdown();
      pending();
      return;
    case "CONFIRMED":
      location.replace(bookingURL);
      return;
    case "EXPIRED":
      holdLost("This hold has expired.");
      return;
    default:
      $("pay-section").hidden = true;
      clearInterval(timer);
      $("countdown").textContent = "This booking is " + b.status.toLowerCase() + ".";
      $("back").hidden = false;
  }
}

// pending follows a payment the gateway has not settled yet until it is, live on the page.
async function pending() {
  $("pay-section").hidden = true;
  status("Payment pending: waiting for the payment provider to confirm. This page updates by itself.");
  const b = await follow(bookingId, (d) => { booking = d; resume(d); }, () => status("Payment pending: reconnecting…"));
  status("");
  resume(b);
  if (b.status === "CONFIRMED") {
    location.replace(bookingURL);
  } else if (b.status === "HELD") {
    render(b);
    showError($("error"), "The payment did not go through. Nothing was charged; you can try another card.");
  } else {
    render(b);
  }
}

// cardForm reads and checks the card fields, naming the first wrong one.
function cardForm() {
  const number = $("cc-number").value.replace(/[\s-]/g, "");
  const exp = $("cc-exp").value.replace(/\s/g, "");
  const m = /^(\d{1,2})\/?(\d{2}|\d{4})$/.exec(exp);
  const cvc = $("cc-csc").value.trim();
  if (!/^\d{12,19}$/.test(number)) return { error: "Enter the card number (12 to 19 digits).", field: "cc-number" };
  if (!m || +m[1] < 1 || +m[1] > 12) return { error: "Enter the expiry date as MM/YY.", field: "cc-exp" };
  if (!/^\d{3,4}$/.test(cvc)) return { error: "Enter the 3 or 4 digit security code.", field: "cc-csc" };
  return { number, month: m[1], year: m[2], cvc };
}

const fieldOfParam = { "card[number]": "cc-number", "card[exp_month]": "cc-exp", "card[exp_year]": "cc-exp", "card[cvc]": "cc-csc" };

// tokenize sends the card to the gateway and resolves to a payment method id, or rejects with {message, field}.
async function tokenize() {
  const name = $("cc-name").value.trim();
  if (gateway.provider === "stripe") {
    const r = await stripe.createPaymentMethod({ type: "card", card: stripeCard, billing_details: { name } });
    if (r.error) throw { message: r.error.message };
    return r.paymentMethod.id;
  }
  const c = cardForm();
  if (c.error) throw { message: c.error, field: c.field };
  const body = new URLSearchParams({ type: "card", "card[number]": c.number, "card[exp_month]": c.month,
    "card[exp_year]": c.year, "card[cvc]": c.cvc });
  if (name) body.set("billing_details[name]", name);
  let r;
  try {
    r = await fetch(gateway.api + "/v1/payment_methods", {
      method: "POST", body, credentials: "omit", cache: "no-store",
      headers: { Authorization: "Bearer " + gateway.key, "Content-Type": "application/x-www-form-urlencoded" },
    });
  } catch {
    throw { message: "Could not reach the payment provider. Check your connection and try again." };
  }
  const data = await r.json().catch(() => null);
  if (!r.ok || !data || !data.id) {
    const e = (data && data.error) || {};
    throw { message: e.message || "The payment provider refused the card.", field: fieldOfParam[e.param] };
  }
  return data.id;
}

async function pay(ev) {
  ev.preventDefault();
  clearError($("error"));
  status("");
  setBusy(true, "Paying…");
  try {
    if (!attempt) {
      attempt = { method: await tokenize(), key: idempotencyKey() };
    }
    const { status: code, data } = await post(bookingPath(bookingId) + "/pay",
      { paymentMethod: attempt.method, returnUrl: bookingURL }, { headers: { "Idempotency-Key": attempt.key } });
    if (code === 202 && data.nextAction && data.nextAction.type === "redirect_to_url") {
      status("Your bank asks you to confirm this payment. Taking you there…");
      location.assign(data.nextAction.url);
      return;
    }
    if (code === 202) {
      attempt = null;
      pending();
      return;
    }
    location.replace(bookingURL);
  } catch (e) {
    failed(e);
  }
}

// failed handles whatever stopped a payment: the card's own problem, or the API's answer.
function failed(e) {
  setBusy(false);
  if (!(e instanceof ApiError)) {
    // The gateway refused the card before any payment: fix it and try again.
    showError($("error"), e.message || "The card could not be used.");
    if (e.field) $(e.field).focus();
    return;
  }
  switch (e.status) {
    case 402:
      attempt = null; // this card is done; another starts a new attempt
      showError($("error"), "Your card was declined" + (e.problem.detail ? ": " + e.problem.detail : ".") +
        " Nothing was charged. Try another card while your seats are still held.");
      $("cc-number").value = "";
      $("cc-csc").value = "";
      $("cc-number").focus();
      return;
    case 410:
      attempt = null;
      holdLost("Your hold on these seats was lost before the payment went through; any amount reserved on your card is released.");
      return;
    case 409:
      if (e.kind === Problem.InProgress) {
        showError($("error"), "A payment for this booking is already being processed. We are checking on it; please wait.");
        pending();
        return;
      }
      attempt = null;
      showError($("error"), "This booking can no longer be paid: it is not on hold any more. " + (e.problem.detail || ""));
      get(bookingPath(bookingId)).then((r) => render(r.data), () => {});
      return;
    case 503: {
      const wait = e.retryAfter ? ` in ${e.retryAfter} second${e.retryAfter === 1 ? "" : "s"}` : " in a moment";
      showError($("error"), `The payment service is busy or unreachable, and nothing was charged. Your seats are still held: press Pay again${wait}.`);
      return; // the same attempt (key) is retried: it cannot pay twice
    }
    case 403:
      if (e.problem.queueUrl) {
        showError($("error"), "Your turn from the waiting room has ended, so this payment cannot go on. Join the queue again to book.");
        $("back-link").href = e.problem.queueUrl;
        $("back-link").textContent = "Back to the queue";
        $("back").hidden = false;
        return;
      }
      break;
    case 0:
      showError($("error"), e.message + " Your payment was not lost: press Pay again to check on it.");
      return; // same key: a retry returns the first outcome
  }
  attempt = null;
  showError($("error"), e.message);
}

async function loadStripe() {
  await new Promise((resolve, reject) => {
    const s = el("script", { src: "https://js.stripe.com/v3/" });
    s.onload = resolve;
    s.onerror = () => reject(new Error("Could not load Stripe.js."));
    document.head.append(s);
  });
  stripe = window.Stripe(gateway.key);
  stripeCard = stripe.elements().create("card");
  $("card-fields").hidden = true;
  for (const id of ["cc-number", "cc-exp", "cc-csc"]) $(id).required = false;
  $("stripe-card").hidden = false;
  stripeCard.mount("#stripe-element");
}

async function start() {
  $("card-form").addEventListener("submit", pay);
  // Back from the bank's page, a browser may show this page as it was left ("Taking you there…"): read it afresh.
  window.addEventListener("pageshow", (e) => { if (e.persisted) location.reload(); });
  try {
    await session();
    if (gateway.provider === "stripe") await loadStripe();
    const { data } = await get(bookingPath(bookingId));
    render(data);
  } catch (e) {
    $("countdown").hidden = true;
    if (e instanceof ApiError && e.status === 404) {
      $("summary").replaceChildren(el("p", { text: "There is no such booking for you." }));
      showError($("error"), "This booking was not found. It may belong to another browser or account.");
      $("back").hidden = false;
      return;
    }
    showError($("error"), e.message || String(e));
  }
}

start();
