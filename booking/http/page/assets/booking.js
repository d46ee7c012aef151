// booking.js: one booking, where a payment ends (and a 3-D Secure challenge comes back to). Confirmed shows each
// ticket's QR code (an <img> the session cookie authorizes) with seat, show and venue, ready to print; a payment
// still pending is followed live; a booking back on hold after a failed payment offers to pay again.
import { get, ApiError, session } from "./api.js";
import { showError } from "./ui.js";
import { el } from "./dom.js";
import { summary, showFacts, bookingPath, follow, resume } from "./order.js";
import { refundControl, refundsList } from "./refund.js";
import { transferControl, showTransfers } from "./transfer.js";
import { resaleTickets } from "./resale.js";
import { rotating, rotatingCode } from "./ticketcode.js";

const root = document.getElementById("booking");
const bookingId = root.dataset.booking;
const $ = (id) => document.getElementById(id);

function status(text) {
  $("status").textContent = text;
  $("status").hidden = !text;
}

// gone says why a ticket no longer admits.
const gone = { VOID: "Refunded: this ticket no longer admits.", TRANSFERRED: "Transferred: this ticket was reissued to the fan who claimed it.",
  RESOLD: "Resold on the exchange: this ticket was reissued to the fan who bought it." };

function tickets(b) {
  const list = $("tickets");
  const s = b.show || {};
  const cat = Object.fromEntries((b.seats || []).map((x) => [x.seatId, x.category]));
  const refundable = b.refundableUntil && new Date(b.refundableUntil) > new Date();
  list.replaceChildren(...b.tickets.map((t) => {
    const name = `Ticket ${t.ticketId}, seat ${t.seatId}` + (s.title ? `, ${s.title}` : "");
    const heading = el("h2", { text: "Seat " + t.seatId + (cat[t.seatId] ? " · " + cat[t.seatId] : "") });
    if (gone[t.status]) {
      return el("li", { class: "ticket gone", "data-status": t.status },
        el("div", {}, heading, el("p", { text: gone[t.status] }), el("p", { class: "muted", text: "Ticket " + t.ticketId })));
    }
    return el("li", { class: "ticket", "data-status": t.status || "VALID", "data-ticket": t.ticketId },
      rotating(t) ? rotatingCode(t.ticketId, name) : el("img", { src: `/api/v1/tickets/${encodeURIComponent(t.ticketId)}/qr.png`, alt: "QR code of " + name,
        width: "200", height: "200" }),
      el("div", {}, heading, showFacts(b),
        el("p", { class: "muted", text: "Ticket " + t.ticketId }),
        t.status === "VALID" && root.dataset.wallet === "on" && !rotating(t)
          ? el("p", {}, el("a", { class: "button", href: `/api/v1/tickets/${encodeURIComponent(t.ticketId)}/pass.pkpass`,
            text: "Add to Apple Wallet", "aria-label": "Add seat " + t.seatId + " to Apple Wallet" })) : null,
        t.status === "VALID" && refundable
          ? refundControl(b, [t.seatId], "Refund seat " + t.seatId + "…", $("error"), render) : null,
        t.status === "VALID" && b.status === "CONFIRMED" ? transferControl(t, $("error"), () => transfers(b)) : null));
  }));
  list.hidden = false;
  transfers(b);
  resaleTickets(b, list, $("error"), render); // the exchange's controls and payouts (resale.js)
}

// transfers lists the transfers of this booking's tickets (a reissued ticket names the one it replaced).
function transfers(b) {
  const ids = new Set(b.tickets.map((t) => t.ticketId));
  return showTransfers($("transfers"), $("error"), (tr) => ids.has(tr.ticketId) || ids.has(tr.newTicketId))
    .catch((e) => showError($("error"), e.message));
}

function render(b) {
  const params = new URLSearchParams(location.search);
  $("details").replaceChildren(summary(b));
  const refunds = refundsList(b);
  if (refunds) $("details").append(refunds);
  $("tickets").hidden = true;
  $("actions").hidden = true;
  status("");
  resume(b);
  switch (b.status) {
    case "CONFIRMED":
      $("title").textContent = "Confirmed";
      document.title = "Confirmed · flashseat";
      status(b.refunds && b.refunds.length
        ? "Your booking is confirmed; some seats were refunded. Show the remaining QR codes at the entrance."
        : "Your booking is confirmed. Show these QR codes at the entrance.");
      tickets(b);
      $("pdf").hidden = rotating(b); // a rotating code cannot be printed
      $("actions").hidden = false;
      return;
    case "PAYMENT_PENDING":
      $("title").textContent = "Payment pending";
      status("Payment pending: waiting for the payment provider to confirm. This page updates by itself.");
      follow(bookingId, (d) => { if (d.status !== "PAYMENT_PENDING") render(d); else resume(d); },
        () => status("Payment pending: reconnecting…"));
      return;
    case "HELD": {
      $("title").textContent = "Not paid yet";
      const why = params.get("redirect_status") === "failed"
        ? "Your bank did not confirm the payment (3-D Secure authentication failed). Nothing was charged."
        : "This booking is on hold and not paid yet.";
      showError($("error"), why + " Your seats are still held for now: you can pay again, with this or another card.");
      $("details").append(el("p", {}, el("a", { class: "button primary", href: "/checkout/" + encodeURIComponent(bookingId), text: "Pay again" })));
      return;
    }
    case "REFUNDED":
      $("title").textContent = "Refunded";
      status("This booking was refunded; its tickets no longer admit.");
      tickets(b);
      return;
    default:
      $("title").textContent = b.status === "EXPIRED" ? "Hold expired" : "Cancelled";
      status(b.status === "EXPIRED" ? "This hold expired before it was paid." : "This booking was cancelled.");
      $("details").append(el("p", {}, el("a", { href: "/shows/" + encodeURIComponent(b.showId), text: "Choose seats again" })));
  }
}

async function start() {
  $("print").addEventListener("click", () => window.print());
  try {
    await session();
    const { data } = await get(bookingPath(bookingId));
    render(data);
  } catch (e) {
    $("details").replaceChildren();
    showError($("error"), e instanceof ApiError && e.status === 404
      ? "This booking was not found. It may belong to another browser or account."
      : e.message || String(e));
  }
}

start();
