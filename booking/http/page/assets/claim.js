// claim.js: the claim page of a transfer, /transfers/{id}#<secret>. The secret is the link's fragment, which the
// browser never sends to a server; the page posts it to claim the ticket for the fan signed in here (a guest
// session when there is none) and then shows the reissued ticket's QR code. Claiming again, or coming back to
// the link later, shows the same ticket.
import { get, post, ApiError, session } from "./api.js";
import { showError, clearError } from "./ui.js";
import { el } from "./dom.js";
import { showFacts } from "./order.js";

const root = document.getElementById("claim");
const transferId = root.dataset.transfer;
const $ = (id) => document.getElementById(id);
const secret = decodeURIComponent(location.hash.slice(1));

function status(text) {
  $("status").textContent = text;
  $("status").hidden = !text;
}

async function show(t) {
  let info = null;
  try {
    info = (await get("/api/v1/shows/" + encodeURIComponent(t.showId))).data;
  } catch { /* the ticket stands without its show's facts */ }
  const facts = showFacts({ show: info, showId: t.showId });
  $("title").textContent = "Your ticket";
  document.title = "Your ticket · flashseat";
  $("offer").hidden = true;
  $("tickets").replaceChildren(el("li", { class: "ticket", "data-status": t.status, "data-ticket": t.ticketId },
    el("img", { src: `/api/v1/tickets/${encodeURIComponent(t.ticketId)}/qr.png`, width: "200", height: "200",
      alt: `QR code of ticket ${t.ticketId}, seat ${t.seatId}` }),
    el("div", {}, el("h2", { text: "Seat " + t.seatId }), facts, el("p", { class: "muted", text: "Ticket " + t.ticketId }))));
  $("tickets").hidden = false;
  $("actions").hidden = false;
  status(t.status === "VALID" ? "The ticket is yours. Show this QR code at the entrance." : "This ticket is " + t.status + ".");
}

async function claim() {
  clearError($("error"));
  $("claim-button").disabled = true;
  try {
    await session();
    const { data } = await post("/api/v1/transfers/" + encodeURIComponent(transferId) + "/claim", { secret });
    await show(data);
  } catch (e) {
    $("claim-button").disabled = false;
    showError($("error"), e instanceof ApiError && e.status === 404
      ? "This claim link is not valid: check that you have the whole link, including the part after #."
      : e.message || String(e));
  }
}

$("print").addEventListener("click", () => window.print());
if (!secret) {
  $("offer").hidden = true;
  showError($("error"), "This claim link is incomplete: it needs the part after #. Ask the sender for the whole link.");
} else {
  $("claim-button").addEventListener("click", claim);
  session().catch((e) => showError($("error"), e.message || String(e)));
}
