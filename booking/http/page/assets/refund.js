// refund.js: a refund a fan confirms knowing the amount. The first button asks the platform what the show's
// refund policy gives back now for these seats (GET .../refund); only the second, which names that amount,
// refunds. "Keep my tickets" backs out.
import { get, post } from "./api.js";
import { money, showError, clearError } from "./ui.js";
import { el } from "./dom.js";
import { bookingPath } from "./order.js";

// refundControl returns the control for refunding seats (all still paid when seats is empty) of booking b; done
// runs with the booking the refund answered.
export function refundControl(b, seats, label, errorBox, done) {
  const box = el("div", { class: "refund buttons" });
  const query = seats.length ? "?seatIds=" + encodeURIComponent(seats.join(",")) : "";
  const start = el("button", { type: "button", text: label });
  const reset = () => box.replaceChildren(start);
  start.addEventListener("click", async () => {
    clearError(errorBox);
    start.disabled = true;
    try {
      const { data: q } = await get(bookingPath(b.bookingId) + "/refund" + query);
      const fee = q.feePerSeat ? `, less a fee of ${money(q.feePerSeat, q.currency)} a seat` : "";
      const confirm = el("button", { type: "button", class: "primary",
        text: `Confirm refund of ${money(q.amount, q.currency)}` });
      const keep = el("button", { type: "button", text: "Keep my tickets" });
      keep.addEventListener("click", () => { start.disabled = false; reset(); start.focus(); });
      confirm.addEventListener("click", async () => {
        confirm.disabled = keep.disabled = true;
        try {
          const { data } = await post(bookingPath(b.bookingId) + "/refund", seats.length ? { seatIds: seats } : undefined);
          done(data);
        } catch (e) {
          confirm.disabled = keep.disabled = false;
          showError(errorBox, e.message);
        }
      });
      box.replaceChildren(el("p", { role: "status" },
        `Seats ${q.seatIds.join(", ")}: you get back ${money(q.amount, q.currency)} (${q.percent}% of ${money(q.seatsAmount, q.currency)}${fee}).`),
        confirm, keep);
      confirm.focus();
    } catch (e) {
      start.disabled = false;
      showError(errorBox, e.message);
    }
  });
  reset();
  return box;
}

// refundsList says what was refunded and when.
export function refundsList(b) {
  if (!b.refunds || !b.refunds.length) return null;
  return el("ul", { class: "refunds", "aria-label": "Refunds" }, ...b.refunds.map((r) =>
    el("li", {}, `Refunded seats ${r.seatIds.join(", ")}: ${money(r.amount, r.currency)} on ${new Date(r.at).toLocaleString()}` +
      (r.status === "PENDING" ? " (on its way to your card)" : ""))));
}
