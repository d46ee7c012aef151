// waitlist.js: the show page's waitlist panel. On a sold-out show the fan joins the line (seats, category); the
// panel then follows their entry live from GET /api/v1/shows/{id}/waitlist/stream: their place, an offer of seats
// held for them (with a link to pay before it lapses), the outcome. The panel stays hidden while seats are on sale
// and the fan has no entry.
import { get, post, del, session, ApiError, Problem } from "./api.js";
import { showError, clearError } from "./ui.js";
import { follow } from "./stream.js";

const $ = (id) => document.getElementById(id);
const show = $("show").dataset.show;
const path = `/api/v1/shows/${encodeURIComponent(show)}/waitlist`;
const box = $("waitlist");
let following = false; // the entry is followed, live or by polling
let last = { status: "NONE" };

const soldOut = () => /^0 of /.test($("avail").textContent);

function render(e) {
  last = e;
  const offer = e.status === "OFFERED" && e.offer;
  $("wl-offer").hidden = !offer;
  $("wl-join").hidden = e.status === "WAITING" || e.status === "OFFERED" || e.status === "ACCEPTED";
  $("wl-leave").hidden = !(e.status === "WAITING" || e.status === "OFFERED");
  const n = e.seats === 1 ? "1 seat" : `${e.seats} seats`;
  let text;
  switch (e.status) {
    case "WAITING":
      text = `You are number ${e.position} in line for ${n}${e.category ? " (" + e.category + ")" : ""}.`;
      break;
    case "OFFERED": {
      const until = new Date(e.offer.expiresAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      text = `Seats ${e.offer.seatIds.join(", ")} are held for you until ${until}. Pay before then and they are yours.`;
      $("wl-pay").href = `/checkout/${encodeURIComponent(e.offer.bookingId)}`;
      break;
    }
    case "ACCEPTED":
      text = "You have the seats you waited for: your tickets are in My bookings.";
      break;
    case "LAPSED":
      text = "Your offer lapsed and passed to the next fan. Join again to go back in line.";
      break;
    default:
      text = soldOut() ? "Sold out. Join the waitlist: when seats come back, they are offered to the fans in line, in turn." : "";
  }
  $("wl-status").textContent = text;
  box.hidden = !text;
}

// listen follows the entry live; EventSource reconnects by itself, and each (re)connection sends the entry afresh.
// Where the stream cannot get through (stream.js), the panel reads the entry again every few seconds instead.
function listen() {
  if (following) return;
  following = true;
  follow(path + "/stream", {
    events: { waitlist: (ev) => { try { render(JSON.parse(ev.data)); } catch { /* a malformed event changes nothing */ } } },
    fallback: poll,
  });
}

// poll reads the entry every 5 s, for good.
function poll() {
  setInterval(async () => {
    try {
      render((await get(path)).data);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) render({ status: "NONE" });
    }
  }, 5000);
}

async function start() {
  await session();
  try {
    render((await get(path)).data);
    listen();
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 404) throw e;
    render({ status: "NONE" });
  }
}

$("wl-join").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  clearError($("wl-error"));
  const body = { seats: parseInt($("wl-seats").value, 10) };
  if ($("wl-cat").value) body.category = $("wl-cat").value;
  try {
    await session();
    render((await post(path, body)).data);
    listen();
  } catch (e) {
    showError($("wl-error"), e.kind === Problem.NotSoldOut ? "Seats are on sale again: choose them on the map." : e);
  }
});

$("wl-leave").addEventListener("click", async () => {
  clearError($("wl-error"));
  try {
    render((await del(path)).data);
  } catch (e) {
    showError($("wl-error"), e);
  }
});

// The seat map keeps the availability line current: a show that sells out while the page is open shows the panel.
new MutationObserver(() => render(last)).observe($("avail"), { childList: true, characterData: true, subtree: true });

start().catch((e) => showError($("wl-error"), e));
