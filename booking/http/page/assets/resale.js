// resale.js: the face-value exchange in the browser, on two pages. On the booking page (booking.js calls
// resaleTickets), each paid ticket of a show whose exchange is open gets "Sell at face value…": a price form
// naming the seat's cap (the server refuses more with 422 price-above-cap, shown as such); a listed ticket says so
// and can be withdrawn; what sold is listed with the payout. On the show page, "Tickets from fans" lists the
// show's listings with a Buy button: buying is a hold of that seat (gated by the show's queue as a hold is), paid
// on the normal checkout page.
import { get, post, del, ApiError, Problem, session, resetSession } from "./api.js";
import { money, showError, clearError, flash } from "./ui.js";
import { el, $ } from "./dom.js";
import { bookingPath } from "./order.js";

let counter = 0;
let drawn = 0; // the booking page's latest drawing: an older one's answer arriving late adds nothing

const ticketPath = (id) => "/api/v1/tickets/" + encodeURIComponent(id) + "/resale";

// retried runs call once more after signing in again when the session cookie expired (a 401).
async function retried(call) {
  try {
    return await call();
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    resetSession();
    await session();
    return call();
  }
}

// said is the exchange's live region on the booking page, after the ticket list: kept across re-renders, so what
// a listing or a withdrawal did is announced once the page shows it.
function said(list) {
  let box = $("resale");
  if (!box) {
    box = el("section", { id: "resale", "aria-labelledby": "resale-title" },
      el("h2", { id: "resale-title", text: "Sold on the exchange", hidden: true }),
      el("ul", { class: "payouts", "aria-label": "Payouts", hidden: true }),
      el("p", { id: "resale-status", class: "result", role: "status", "aria-live": "polite" }));
    list.after(box);
  }
  return box;
}

// resaleTickets adds the exchange to the booking page's ticket list: b is the booking as shown, list the <ul> of
// its tickets (each live one an li[data-ticket] with its status), render redraws the page from a booking.
export async function resaleTickets(b, list, errorBox, render) {
  const box = said(list);
  const mine = ++drawn;
  payouts(box, b);
  if (b.status !== "CONFIRMED") return;
  let v;
  try {
    ({ data: v } = await get(bookingPath(b.bookingId) + "/resale"));
  } catch (e) {
    if (mine === drawn) showError(errorBox, "Could not read the exchange: " + e.message);
    return;
  }
  if (mine !== drawn) return;
  const cap = Object.fromEntries(v.seats.map((s) => [s.seatId, s.cap]));
  const listed = Object.fromEntries(v.listings.filter((l) => l.status === "LISTED").map((l) => [l.ticketId, l]));
  const reload = async (text) => {
    const { data } = await get(bookingPath(b.bookingId));
    render(data);
    $("resale-status").textContent = text;
  };
  for (const li of list.querySelectorAll("li.ticket[data-ticket]")) {
    const t = { ticketId: li.dataset.ticket, status: li.dataset.status,
      seatId: (b.tickets.find((x) => x.ticketId === li.dataset.ticket) || {}).seatId };
    const where = li.lastElementChild || li;
    if (t.status === "LISTED" && listed[t.ticketId]) {
      where.append(listedControl(t, listed[t.ticketId], errorBox, reload));
    } else if (t.status === "VALID" && v.open && cap[t.seatId]) {
      where.append(sellControl(t, cap[t.seatId], v, errorBox, reload));
    }
  }
}

// payouts lists the seats this booking sold on the exchange, with what the seller is paid.
function payouts(box, b) {
  const ps = b.payouts || [];
  const ul = box.querySelector("ul.payouts");
  box.querySelector("h2").hidden = ul.hidden = ps.length === 0;
  ul.replaceChildren(...ps.map((p) => el("li", { "data-status": p.status },
    `Seat ${p.seatIds.join(", ")} resold: you are paid ${money(p.amount, p.currency)}` +
    (p.fee ? ` (the exchange kept ${money(p.fee, p.currency)})` : "") +
    (p.status === "SUCCEEDED" ? ", returned to your card." : ", on its way to your card."))));
}

// listedControl is a listed ticket's state and its "Withdraw listing" button.
function listedControl(t, l, errorBox, reload) {
  const withdraw = el("button", { type: "button", text: "Withdraw listing of seat " + t.seatId });
  withdraw.addEventListener("click", async () => {
    clearError(errorBox);
    withdraw.disabled = true;
    try {
      await retried(() => del(ticketPath(t.ticketId)));
      await reload(`Seat ${t.seatId} is off the exchange: your ticket admits again.`);
    } catch (e) {
      withdraw.disabled = false;
      showError(errorBox, e.message);
    }
  });
  return el("div", { class: "resale", "data-listing": l.listingId },
    el("p", { class: "listed" }, el("strong", { text: "Listed" }),
      ` on the exchange at ${money(l.price, l.currency)}: you are paid ${money(l.payout, l.currency)} when it sells. ` +
      "Until then this ticket does not admit."),
    el("div", { class: "buttons" }, withdraw));
}

// sellControl is the "Sell at face value…" button of a ticket; it opens the price form.
function sellControl(t, cap, v, errorBox, reload) {
  const box = el("div", { class: "resale" });
  const id = "rs-" + (++counter);
  const start = el("button", { type: "button", text: "Sell seat " + t.seatId + " at face value…" });
  const reset = () => { box.replaceChildren(start); start.disabled = false; };
  start.addEventListener("click", () => {
    clearError(errorBox);
    const price = el("input", { id: id + "-price", type: "number", name: "price", min: "0.01", step: "0.01",
      inputmode: "decimal", required: true, value: (cap / 100).toFixed(2), "aria-describedby": id + "-hint" });
    const fee = v.policy.feePercent ? ` The exchange keeps ${v.policy.feePercent}% of the price; you are paid the rest.` : "";
    const hint = el("p", { class: "muted", id: id + "-hint",
      text: `At most ${money(cap, v.currency)} for this seat.${fee} Fans on the waitlist are offered it first.` });
    const error = el("p", { class: "alert", role: "alert", id: id + "-error", hidden: true });
    const list = el("button", { type: "submit", class: "primary", text: "List seat " + t.seatId });
    const keep = el("button", { type: "button", text: "Keep my ticket" });
    keep.addEventListener("click", () => { reset(); start.focus(); });
    const form = el("form", { class: "resale-form", "aria-label": "Sell seat " + t.seatId },
      el("label", { for: id + "-price", text: `Price (${v.currency})` }), price, hint, error,
      el("div", { class: "buttons" }, list, keep));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clearError(error);
      const minor = Math.round(parseFloat(price.value) * 100);
      if (!(minor > 0)) {
        showError(error, "Give a price above zero.");
        price.focus();
        return;
      }
      list.disabled = keep.disabled = true;
      try {
        const { data } = await retried(() => post(ticketPath(t.ticketId), { price: minor }));
        await reload(`Seat ${t.seatId} is listed at ${money(data.price, data.currency)}.` +
          (data.offeredToWaitlist ? " It is offered to the waitlist first." : ""));
      } catch (e) {
        list.disabled = keep.disabled = false;
        showError(error, e instanceof ApiError && e.kind === Problem.PriceAboveCap
          ? `That is above the cap: this seat may be listed at ${money(cap, v.currency)} at most.`
          : e.message);
        price.setAttribute("aria-invalid", "true");
        price.focus();
      }
    });
    box.replaceChildren(form);
    price.focus();
  });
  reset();
  return box;
}

// fans is the show page's "Tickets from fans": the show's public listings, cheapest first, each with Buy.
async function fans(section) {
  const showId = section.dataset.show;
  const list = $("fans-list");
  const status = $("fans-status");
  const error = $("fans-error");
  let busy = false;
  const load = async () => {
    if (busy) return;
    try {
      const { data } = await get("/api/v1/shows/" + encodeURIComponent(showId) + "/resale");
      if (busy) return;
      list.replaceChildren(...data.listings.map((l) => {
        const buy = el("button", { type: "button", class: "primary", "data-listing": l.listingId,
          text: `Buy seat ${l.seatId} · ${money(l.price, l.currency)}` });
        buy.addEventListener("click", () => purchase(l, buy));
        return el("li", { class: "listing" }, el("span", { text: `Seat ${l.seatId} · ${l.category}` }), buy);
      }));
      section.hidden = data.listings.length === 0;
    } catch (e) {
      if (!section.hidden) showError(error, "Could not refresh the fans' tickets: " + e.message);
    }
  };
  const purchase = async (l, buy) => {
    busy = true;
    clearError(error);
    for (const b of list.querySelectorAll("button")) b.disabled = true;
    status.textContent = `Holding seat ${l.seatId}…`;
    try {
      await session();
      const { data } = await retried(() => post("/api/v1/resale/" + encodeURIComponent(l.listingId) + "/buy"));
      status.textContent = `Held seat ${l.seatId}. Taking you to checkout…`;
      location.assign("/checkout/" + encodeURIComponent(data.bookingId));
      return;
    } catch (e) {
      if (e instanceof ApiError && e.status === 403 && e.problem.queueUrl) {
        flash(e.message + " Your admission has ended; you are back in the waiting room.");
        location.assign(e.problem.queueUrl);
        return;
      }
      status.textContent = "";
      showError(error, e instanceof ApiError && e.kind === Problem.SeatsUnavailable
        ? `Sorry, seat ${l.seatId} was just taken by another fan.` : e.message);
      busy = false;
      await load();
      if (buy.isConnected) buy.focus();
    } finally {
      busy = false;
    }
  };
  await load();
  setInterval(load, 20000); // listings carry no stream: a fan who stays sees new ones within seconds
}

const section = $("fans");
if (section) fans(section);
