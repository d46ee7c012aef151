// The Fans panel: a fan looked up by user or booking id: their place in line or admission, and their bookings.
// Kick revokes an admission; Refund refunds a confirmed booking.
import { $, el } from "./dom.js";
import { money } from "./ui.js";
import { wait } from "./format.js";

const enc = encodeURIComponent;

export function mount({ call, changed }) {
  $("fan-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = $("fan-result");
    out.replaceChildren();
    const err = el("p", { class: "error", role: "alert" });
    out.append(err);
    try {
      let user = $("fan-user").value.trim();
      let show = $("fan-show").value;
      let bookings;
      const bid = $("fan-booking").value.trim();
      if (bid) {
        const b = await call("GET", `/admin/v1/bookings/${enc(bid)}`);
        user = b.userId;
        show = b.showId;
        bookings = [b];
      } else if (user) {
        bookings = (await call("GET", `/admin/v1/users/${enc(user)}/bookings`)).bookings;
      } else {
        throw new Error("give a user id or a booking id");
      }
      let place;
      try {
        place = await call("GET", `/admin/v1/shows/${enc(show)}/fans/${enc(user)}`);
      } catch (e) {
        if (e.status !== 404) throw e;
      }
      out.append(el("h3", { text: `Fan ${user}` }));
      out.append(el("p", { "data-c": "place", text: describePlace(show, place) }));
      if (place && place.status === "admitted") {
        const kick = el("button", { type: "button", text: `Kick ${user} (revoke admission)` });
        kick.addEventListener("click", async () => {
          try {
            await call("POST", `/admin/v1/shows/${enc(show)}/fans/${enc(user)}/revoke`);
            kick.replaceWith(el("p", { role: "status", text: `${user}'s admission is revoked.` }));
            changed();
          } catch (e) { err.textContent = `Kick failed: ${e.message}`; }
        });
        out.append(kick);
      }
      const list = el("ul", { "data-c": "bookings" });
      for (const b of bookings) list.append(bookingItem(b));
      if (!bookings.length) list.append(el("li", { text: "No bookings." }));
      out.append(list);
    } catch (e) {
      err.textContent = `Look-up failed: ${e.message}`;
    }

    function bookingItem(b) {
      const li = el("li", { text: `${b.bookingId}: ${b.status}, show ${b.showId}, seats ${b.seatIds.join(" ")}, ${money(b.totalAmount || 0, b.currency)} ` });
      if (b.status === "CONFIRMED") {
        const refund = el("button", { type: "button", text: `Refund ${b.bookingId}` });
        refund.addEventListener("click", async () => {
          try {
            const r = await call("POST", `/admin/v1/bookings/${enc(b.bookingId)}/refund`);
            refund.replaceWith(`now ${r.status}`);
            changed();
          } catch (e) { err.textContent = `Refund failed: ${e.message}`; }
        });
        li.append(refund);
      }
      return li;
    }
  });

  return {
    // render offers every show the figures name in the look-up's show list.
    render(snap) {
      const select = $("fan-show");
      const have = new Set([...select.options].map((o) => o.value));
      for (const f of snap.shows || []) {
        if (!have.has(f.showId)) select.append(el("option", { value: f.showId, text: `${f.title} (${f.showId})` }));
      }
    },
  };
}

function describePlace(show, p) {
  if (!p) return `Not in the queue of ${show}.`;
  if (p.status === "admitted") return `Admitted to ${show} until ${p.expiresAt} (token ${p.jti}).`;
  if (p.position) return `${p.status} in the queue of ${show}: position ${p.position}, about ${wait(p.etaSeconds)}.`;
  return `${p.status} in the queue of ${show}.`;
}
