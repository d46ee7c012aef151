// order.js: what the checkout, booking and "My bookings" pages share: a booking's order summary, and following a
// booking until its payment settles.
import { get } from "./api.js";
import { el } from "./dom.js";
import { money } from "./ui.js";

const dateFmt = new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit" });

// when is a <time> in the reader's own zone.
export function when(iso) {
  const d = new Date(iso);
  return el("time", { datetime: iso, text: isNaN(d) ? iso : dateFmt.format(d) });
}

// showLine is "Title" plus time and place, as the pages print them.
export function showFacts(b) {
  const s = b.show;
  if (!s) return el("p", { text: "Show " + b.showId });
  return el("p", { class: "facts" }, el("strong", { text: s.title }), el("br"), when(s.startsAt), el("br"),
    `${s.venue}, ${s.city} · ${s.hall}`);
}

// summary is a booking's order: the show, each seat with its category and price, and the total.
export function summary(b) {
  const rows = (b.seats && b.seats.length ? b.seats : b.seatIds.map((id) => ({ seatId: id })))
    .map((s) => el("tr", {}, el("th", { scope: "row", text: s.seatId }), el("td", { text: s.category || "" }),
      el("td", { class: "num", text: s.price !== undefined ? money(s.price, b.currency) : "" })));
  const table = el("table", { class: "order" },
    el("caption", { class: "sr", text: "Seats" }),
    el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Seat" }), el("th", { scope: "col", text: "Category" }),
      el("th", { scope: "col", class: "num", text: "Price" }))),
    el("tbody", {}, ...rows),
    el("tfoot", {}, el("tr", {}, el("th", { scope: "row", colspan: "2", text: "Total" }),
      el("td", { class: "num", id: "total", text: money(b.totalAmount, b.currency) }))));
  const box = el("div", { class: "summary" }, showFacts(b), table);
  return box;
}

// resume offers the way back to a 3-D Secure challenge the fan left (a back button, a closed tab) while the
// booking waits for it: the page's #resume link, shown only then.
export function resume(b) {
  const link = document.getElementById("resume-link");
  const waiting = b.status === "PAYMENT_PENDING" && b.nextAction && b.nextAction.type === "redirect_to_url";
  if (waiting) link.href = b.nextAction.url;
  document.getElementById("resume").hidden = !waiting;
}

// bookingPath is the API address of a booking.
export const bookingPath = (id) => "/api/v1/bookings/" + encodeURIComponent(id);

// follow polls the booking every interval until its status is no longer PAYMENT_PENDING, calling onChange with
// every answer; it resolves to the last booking. A failed poll is reported through onError and retried.
export async function follow(id, onChange, onError, interval = 1500) {
  for (;;) {
    try {
      const { data } = await get(bookingPath(id));
      onChange(data);
      if (data.status !== "PAYMENT_PENDING") return data;
    } catch (e) {
      if (onError) onError(e);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}
