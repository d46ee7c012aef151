// bookings.js: "My bookings". Each booking with its show, seats and status; a held one can be paid or cancelled,
// a paid one refunded until its refund window closes. Each action's result is said next to the booking.
import { get, del, ApiError, session } from "./api.js";
import { money, showError, clearError } from "./ui.js";
import { el } from "./dom.js";
import { showFacts, when, bookingPath } from "./order.js";
import { refundControl, refundsList } from "./refund.js";
import { showTransfers } from "./transfer.js";

const $ = (id) => document.getElementById(id);

const label = { HELD: "On hold, not paid", PAYMENT_PENDING: "Payment pending", CONFIRMED: "Confirmed",
  CANCELLED: "Cancelled", EXPIRED: "Hold expired", REFUNDED: "Refunded" };

function item(b) {
  const result = el("p", { class: "result", role: "status" });
  const page = "/bookings/" + encodeURIComponent(b.bookingId);
  const actions = el("div", { class: "buttons" });
  const act = (text, run) => {
    const btn = el("button", { type: "button", text });
    btn.addEventListener("click", async () => {
      clearError($("error"));
      btn.disabled = true;
      try {
        result.textContent = await run();
        await load();
      } catch (e) {
        btn.disabled = false;
        result.textContent = "";
        showError($("error"), `${b.bookingId}: ${e.message}`);
      }
    });
    return btn;
  };
  switch (b.status) {
    case "HELD":
      actions.append(el("a", { class: "button primary", href: "/checkout/" + encodeURIComponent(b.bookingId), text: "Pay" }),
        act("Cancel hold", async () => {
          const r = await del(bookingPath(b.bookingId));
          return `Hold cancelled; seats ${r.data.seatsReleased.join(", ") || b.seatIds.join(", ")} released.`;
        }));
      break;
    case "PAYMENT_PENDING":
      actions.append(el("a", { href: page, text: "Follow the payment" }));
      break;
    case "CONFIRMED":
      actions.append(el("a", { class: "button primary", href: page, text: "View tickets" }));
      if (b.refundableUntil && new Date(b.refundableUntil) > new Date()) {
        actions.append(refundControl(b, [], "Refund…", $("error"), async (r) => {
          result.textContent = (r.status === "REFUNDED" ? "Refunded" : "Partly refunded") +
            ": the money goes back to your card and the seats are on sale again.";
          await load();
        }));
      }
      break;
  }
  const refund = b.status === "CONFIRMED" && b.refundableUntil
    ? el("p", { class: "muted" }, new Date(b.refundableUntil) > new Date() ? "Refundable until " : "Refunds closed on ", when(b.refundableUntil))
    : null;
  return el("li", { class: "booking", id: "b-" + b.bookingId, "data-status": b.status },
    el("h2", {}, el("a", { href: page, text: b.show ? b.show.title : "Booking " + b.bookingId })),
    showFacts(b),
    el("p", {}, el("strong", { class: "state", text: label[b.status] || b.status }),
      ` · seats ${b.seatIds.join(", ")} · ${money(b.totalAmount, b.currency)}`),
    refund, refundsList(b), actions, result);
}

// The fan's registrations for verified-fan sales, which the waiting room keeps (GET /api/v1/me/registrations on
// the edge): each show's status, with the way to its queue.
const regWords = { REGISTERED: "Registered: waiting for an invitation", INVITED: "Invited: you may join the queue",
  NOT_INVITED: "Not invited this time: still registered for the next waves" };
async function showRegistrations() {
  let rs = [];
  try { rs = (await get("/api/v1/me/registrations")).data.registrations || []; } catch { return; } // served by the edge only
  $("registrations").hidden = !rs.length;
  $("registrations").querySelector("ul").replaceChildren(...rs.map((r) => el("li", { "data-show": r.showId, "data-status": r.status },
    el("a", { href: "/queue/" + encodeURIComponent(r.showId), text: r.showId }), " · ",
    el("strong", { text: regWords[r.status] || r.status }))));
}

// results keeps what each action said across the list's reload.
async function load() {
  const { data } = await get("/api/v1/bookings");
  await Promise.all([showTransfers($("transfers"), $("error")), showRegistrations()]);
  const said = new Map([...document.querySelectorAll("li.booking")].map((li) => [li.id, li.querySelector(".result").textContent]));
  if (!data.bookings.length) {
    $("list").replaceChildren(el("p", {}, "You have no bookings yet. ", el("a", { href: "/", text: "Find a show" })));
    return;
  }
  const items = data.bookings.map(item);
  for (const li of items) if (said.get(li.id)) li.querySelector(".result").textContent = said.get(li.id);
  $("list").replaceChildren(el("ul", { class: "bookings" }, ...items));
}

session().then(load).catch((e) => {
  $("list").replaceChildren();
  showError($("error"), e instanceof ApiError ? e.message : String(e));
});
