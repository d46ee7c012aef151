// transfer.js: sending a ticket to another fan and following one's transfers, for the booking page and "My
// bookings". A transfer is a claim link (its secret after the #, so it never reaches a server log) that the page
// shows to copy and, when the fan gives their friend's e-mail, the platform mails too. Until the friend claims
// it the sender can cancel it; once claimed, the ticket is reissued to the friend with a new QR code and the
// sender's is refused at the door. Both fans see the transfer.
import { get, post, del } from "./api.js";
import { showError, clearError } from "./ui.js";
import { el } from "./dom.js";
import { when } from "./order.js";

let counter = 0;

// transferControl returns the "Transfer" control of ticket t (a VALID ticket of the fan's): the button opens a
// small form (an optional e-mail), whose answer is the claim link. done runs after a transfer is made.
export function transferControl(t, errorBox, done) {
  const box = el("div", { class: "transfer" });
  const id = "tr-" + (++counter);
  const start = el("button", { type: "button", text: "Transfer seat " + t.seatId + "…" });
  const reset = () => { box.replaceChildren(start); start.disabled = false; };
  start.addEventListener("click", () => {
    clearError(errorBox);
    const email = el("input", { id: id + "-email", type: "email", name: "email", autocomplete: "off",
      "aria-describedby": id + "-hint" });
    const send = el("button", { type: "submit", class: "primary", text: "Send ticket" });
    const keep = el("button", { type: "button", text: "Keep my ticket" });
    keep.addEventListener("click", () => { reset(); start.focus(); });
    const form = el("form", { class: "transfer-form", "aria-label": "Transfer seat " + t.seatId },
      el("label", { for: id + "-email", text: "Friend's e-mail (optional)" }), email,
      el("p", { class: "muted", id: id + "-hint",
        text: "We e-mail them the claim link; without an address you get the link to share yourself." }),
      el("div", { class: "buttons" }, send, keep));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clearError(errorBox);
      send.disabled = keep.disabled = true;
      try {
        const body = email.value.trim() ? { email: email.value.trim() } : undefined;
        const { data } = await post("/api/v1/tickets/" + encodeURIComponent(t.ticketId) + "/transfer", body);
        const link = el("input", { id: id + "-link", class: "claim-link", type: "text", readonly: true, value: data.claimUrl });
        const copy = el("button", { type: "button", text: "Copy link" });
        const said = el("p", { role: "status", class: "result" },
          (body ? `Sent to ${body.email}. ` : "") + "Seat " + t.seatId + " goes to whoever claims this link before ",
          when(data.expiresAt), ".");
        copy.addEventListener("click", async () => {
          link.select();
          try { await navigator.clipboard.writeText(data.claimUrl); said.textContent = "Link copied."; }
          catch { said.textContent = "Select the link and copy it."; }
        });
        box.replaceChildren(el("label", { for: id + "-link", text: "Claim link for seat " + t.seatId }), link,
          el("div", { class: "buttons" }, copy), said);
        link.focus();
        if (done) await done(data);
      } catch (e) {
        send.disabled = keep.disabled = false;
        showError(errorBox, e.message);
      }
    });
    box.replaceChildren(form);
    email.focus();
  });
  reset();
  return box;
}

const stateText = { PENDING: "waiting to be claimed", CLAIMED: "claimed", CANCELLED: "cancelled" };

// transferItem says one transfer to the fan it was listed for; a pending one they sent can be cancelled, and a
// ticket they received shows its QR code.
function transferItem(tr, errorBox, reload) {
  const sent = tr.direction === "sent";
  const what = sent
    ? `Seat ${tr.seatId} sent${tr.toEmail ? " to " + tr.toEmail : " by link"}: ${stateText[tr.status] || tr.status}`
    : `Seat ${tr.seatId} received from another fan: ${stateText[tr.status] || tr.status}`;
  const li = el("li", { class: "transfer-item", id: "t-" + tr.transferId, "data-status": tr.status,
    "data-direction": tr.direction }, el("p", {}, el("strong", { text: what })),
  el("p", { class: "muted" }, tr.endedAt ? (tr.status === "CLAIMED" ? "Claimed " : "Ended ") : "Sent ",
    when(tr.endedAt || tr.createdAt), tr.status === "PENDING" ? " · the link works until " : "",
    tr.status === "PENDING" ? when(tr.expiresAt) : ""));
  if (sent && tr.status === "PENDING") {
    const cancel = el("button", { type: "button", text: "Cancel transfer of seat " + tr.seatId });
    cancel.addEventListener("click", async () => {
      clearError(errorBox);
      cancel.disabled = true;
      try {
        await del("/api/v1/transfers/" + encodeURIComponent(tr.transferId));
        await reload();
      } catch (e) {
        cancel.disabled = false;
        showError(errorBox, e.message);
      }
    });
    li.append(el("div", { class: "buttons" }, cancel));
  }
  if (!sent && tr.status === "CLAIMED" && tr.newTicketId) {
    li.append(el("img", { src: `/api/v1/tickets/${encodeURIComponent(tr.newTicketId)}/qr.png`, width: "200",
      height: "200", alt: `QR code of ticket ${tr.newTicketId}, seat ${tr.seatId}` }),
    el("p", { class: "muted", text: "Ticket " + tr.newTicketId }));
  }
  return li;
}

// showTransfers fills section (its list goes in its .list) with the fan's transfers that keep says to (all
// without one), and hides it when there are none. It resolves to the transfers shown.
export async function showTransfers(section, errorBox, keep) {
  const reload = async () => {
    const { data } = await get("/api/v1/transfers");
    const list = data.transfers.filter(keep || (() => true));
    section.querySelector(".list").replaceChildren(
      el("ul", { class: "transfers" }, ...list.map((tr) => transferItem(tr, errorBox, reload))));
    section.hidden = list.length === 0;
    return list;
  };
  return reload();
}
