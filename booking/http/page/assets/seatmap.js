// seatmap.js: the show page's seat map. Every seat is a <button> (aria-pressed when selected, an aria-label
// naming seat, category, price and state), reachable with the arrow keys; the seat stream keeps it live; a hold
// goes to checkout, a conflict offers the alternatives in one click, a lost admission goes back to the queue.
import { post, get, ApiError, Problem, session, resetSession, idempotencyKey } from "./api.js";
import { follow } from "./stream.js";
import { money, localTimes, showError, clearError, flash, takeFlash } from "./ui.js";

const root = document.getElementById("show");
const showId = root.dataset.show;
const currency = root.dataset.currency;
const maxSeats = parseInt(root.dataset.max, 10) || 10;
const $ = (id) => document.getElementById(id);
const base = "/api/v1/shows/" + encodeURIComponent(showId);

const seats = new Map(); // seatId -> {seat, el}
const selected = new Set(); // in the order the fan picked them
let alternatives = [];
let busy = false;
let focusId = null; // the one seat in the tab order (roving tabindex)

function stateOf(s) {
  if (selected.has(s.seatId)) return "selected";
  return s.status === "AVAILABLE" ? "available" : s.status === "HELD" ? "held" : "booked";
}

function paint(id) {
  const e = seats.get(id);
  if (!e) return;
  const st = stateOf(e.seat);
  e.el.dataset.state = st;
  e.el.setAttribute("aria-label", `Seat ${e.seat.seatId}, ${e.seat.category}, ${money(e.seat.price, currency)}, ${st}`);
  e.el.setAttribute("aria-pressed", st === "selected" ? "true" : "false");
  e.el.setAttribute("aria-disabled", st === "held" || st === "booked" ? "true" : "false");
  e.el.classList.toggle("alt", alternatives.includes(id));
}

function renderSelection() {
  const ids = [...selected];
  const total = ids.reduce((sum, id) => sum + seats.get(id).seat.price, 0);
  $("selection").textContent = ids.length
    ? `${ids.join(", ")}: ${ids.length} of at most ${maxSeats} seats, ${money(total, currency)}`
    : `No seats selected (at most ${maxSeats}).`;
  const hold = $("hold");
  hold.disabled = busy || ids.length === 0;
  hold.textContent = ids.length ? `Hold ${ids.length} seat${ids.length > 1 ? "s" : ""} · ${money(total, currency)}` : "Hold selected seats";
  $("clear").disabled = busy || ids.length === 0;
  $("take-alt").disabled = busy;
}

function updateAvailability() {
  let free = 0;
  for (const { seat } of seats.values()) if (seat.status === "AVAILABLE") free++;
  $("avail").textContent = `${free} of ${seats.size} seats available`;
}

function notice(text) {
  const n = $("notice");
  n.textContent = text;
  n.hidden = !text;
}

// setStatus applies one seat's new status, from the stream or a reload. A selected seat someone else took leaves
// the selection, and the fan is told: the page never changes a selection silently.
function setStatus(id, status) {
  const e = seats.get(id);
  if (!e || e.seat.status === status) return;
  e.seat.status = status;
  if (status !== "AVAILABLE" && selected.has(id)) {
    selected.delete(id);
    notice(`Seat ${id} was just taken by someone else and left your selection.`);
    renderSelection();
  }
  paint(id);
  updateAvailability();
}

function toggle(id) {
  const e = seats.get(id);
  if (!e || busy) return;
  clearError($("error"));
  if (selected.has(id)) {
    selected.delete(id);
  } else if (e.seat.status !== "AVAILABLE") {
    showError($("error"), `Seat ${id} is ${stateOf(e.seat)}; choose an available seat.`);
    return;
  } else if (selected.size >= maxSeats) {
    showError($("error"), `You can hold at most ${maxSeats} seats at once.`);
    return;
  } else {
    selected.add(id);
  }
  paint(id);
  renderSelection();
}

function setFocusable(id) {
  if (focusId && seats.has(focusId)) seats.get(focusId).el.tabIndex = -1;
  focusId = id;
  seats.get(id).el.tabIndex = 0;
}

// onKey moves between seats: left and right along a row, up and down to the nearest seat of the next row.
function onKey(ev) {
  const id = ev.target.dataset.seat;
  if (!id) return;
  const el = ev.target;
  const row = el.parentElement;
  let next = null;
  switch (ev.key) {
    case "ArrowLeft": next = el.previousElementSibling; break;
    case "ArrowRight": next = el.nextElementSibling; break;
    case "Home": next = row.querySelector("button"); break;
    case "End": next = row.lastElementChild; break;
    case "ArrowUp": case "ArrowDown": {
      const other = ev.key === "ArrowUp" ? row.previousElementSibling : row.nextElementSibling;
      if (!other) break;
      const x = el.getBoundingClientRect().left;
      let best = null, bestD = Infinity;
      for (const b of other.querySelectorAll("button")) {
        const d = Math.abs(b.getBoundingClientRect().left - x);
        if (d < bestD) { best = b; bestD = d; }
      }
      next = best;
      break;
    }
    default: return;
  }
  ev.preventDefault();
  if (next && next.dataset.seat) {
    setFocusable(next.dataset.seat);
    next.focus();
  }
}

function build(list) {
  const map = $("map");
  const rows = new Map();
  const frag = document.createDocumentFragment();
  seats.clear();
  for (const seat of list) {
    let row = rows.get(seat.row);
    if (!row) {
      row = document.createElement("div");
      row.className = "row";
      const l = document.createElement("span");
      l.className = "rowlabel";
      l.setAttribute("aria-hidden", "true");
      l.textContent = seat.row;
      row.append(l);
      rows.set(seat.row, row);
      frag.append(row);
    }
    const el = document.createElement("button");
    el.type = "button";
    el.className = "seat cat-" + seat.category;
    el.dataset.seat = seat.seatId;
    el.textContent = seat.number;
    el.tabIndex = -1;
    row.append(el);
    seats.set(seat.seatId, { seat, el });
  }
  for (const id of [...selected]) if (!seats.has(id) || seats.get(id).seat.status !== "AVAILABLE") selected.delete(id);
  map.replaceChildren(frag);
  for (const id of seats.keys()) paint(id);
  const first = [...seats.values()].find((e) => e.seat.status === "AVAILABLE") || seats.values().next().value;
  if (first) setFocusable(first.seat.seatId);
  updateAvailability();
  renderSelection();
}

// backToQueue sends a fan whose admission ended back to the waiting room, with the reason shown there.
function backToQueue(err) {
  flash((err && err.message ? err.message + " " : "") + "Your admission to choose seats has ended; you are back in the waiting room.");
  location.assign((err && err.problem && err.problem.queueUrl) || "/queue/" + encodeURIComponent(showId));
}

// load reads the seat map; it tries again by itself after a failure unless the caller repeats it anyway (poll).
async function load(retry = true) {
  try {
    const r = await get(base + "/seats");
    if (seats.size === 0) build(r.data.seats);
    else for (const s of r.data.seats) setStatus(s.seatId, s.status);
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 403 && e.problem.queueUrl) {
      backToQueue(e);
      return false;
    }
    showError($("error"), "Could not load the seats: " + e.message + " Retrying…");
    if (retry) setTimeout(load, 2000);
    return true;
  }
}

// pollEvery is how often the map reads itself again where its stream cannot get through.
const pollEvery = 3000;

// poll keeps the map current where its stream cannot get through (no EventSource on some older or locked-down
// phones, a network or proxy that refuses the stream): the whole map again every few seconds, which booking serves
// from its snapshot.
async function poll() {
  if (await load(false)) setTimeout(poll, pollEvery);
}

// polling switches the map to reading itself again every few seconds, for good (stream.js says when).
function polling(why) {
  $("live").textContent = `${why}Seats refresh every ${pollEvery / 1000} seconds.`;
  setTimeout(poll, pollEvery);
}

function stream() {
  let lost = false;
  follow(base + "/seats/stream", {
    events: {
      seat: (ev) => {
        try {
          const d = JSON.parse(ev.data);
          setStatus(d.seatId, d.status);
        } catch { /* a malformed event changes nothing */ }
      },
    },
    open: () => {
      $("live").textContent = "Live: seats update as other fans take them.";
      if (lost) load(); // changes may have been missed while the stream was down
      lost = false;
    },
    error: (es) => {
      lost = true;
      $("live").textContent = "Reconnecting to live seat updates…";
      if (es.readyState === EventSource.CLOSED) {
        // Refused rather than dropped (an admission that ended answers 403): the browser gives up on this stream.
        // Reload the seats, which sends the fan back to the queue if that is why, and open a new stream.
        setTimeout(() => { load(); stream(); }, 2000);
      }
    },
    fallback: () => {
      if (!window.EventSource) return polling("");
      load(); // at once: the fan may have been away, or their admission may have ended
      polling("Live updates are unavailable here. ");
    },
  });
}

async function hold(ids) {
  if (busy || ids.length === 0) return;
  busy = true;
  renderSelection();
  clearError($("error"));
  notice("");
  $("live").textContent = `Holding ${ids.join(", ")}…`;
  try {
    await session();
    const key = idempotencyKey();
    const send = () => post("/api/v1/bookings/hold", { showId, seatIds: ids }, { headers: { "Idempotency-Key": key } });
    const r = await send().catch(async (e) => {
      if (!(e instanceof ApiError) || e.status !== 401) throw e;
      resetSession(); // the session cookie expired: sign in again and retry once
      await session();
      return send();
    });
    $("live").textContent = `Held ${r.data.seatIds.join(", ")}. Taking you to checkout…`;
    location.assign("/checkout/" + encodeURIComponent(r.data.bookingId));
    return;
  } catch (e) {
    if (!(e instanceof ApiError)) {
      showError($("error"), "Something went wrong: " + e);
    } else if (e.status === 409 && e.kind === Problem.SeatsUnavailable) {
      conflict(e.problem);
    } else if (e.status === 403 && e.problem.queueUrl) {
      backToQueue(e);
      return;
    } else if (e.status === 503 || e.status === 429) {
      showError($("error"), `${e.message} Your selection is kept; try again in ${e.retryAfter || 2} seconds.`);
    } else {
      showError($("error"), e.message);
    }
  } finally {
    busy = false;
    renderSelection();
  }
}

function conflict(p) {
  const taken = p.unavailable || [];
  for (const id of taken) {
    selected.delete(id);
    setStatus(id, "HELD");
  }
  alternatives = (p.alternatives || []).filter((id) => seats.has(id));
  for (const id of seats.keys()) paint(id);
  const alts = alternatives.length ? ` Suggested instead: ${alternatives.join(", ")}.` : " No similar seats are left together; choose others.";
  showError($("error"), `Sorry, ${taken.join(", ") || "those seats"} ${taken.length === 1 ? "was" : "were"} just taken.${alts}`);
  $("conflict-text").textContent = alternatives.length ? `Hold ${alternatives.join(", ")} in one step.` : "";
  $("conflict").hidden = alternatives.length === 0;
  renderSelection();
  if (alternatives.length) $("take-alt").focus();
}

$("map").addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-seat]");
  if (!b) return;
  setFocusable(b.dataset.seat);
  toggle(b.dataset.seat);
});
$("map").addEventListener("keydown", onKey);
$("hold").addEventListener("click", () => hold([...selected]));
$("clear").addEventListener("click", () => {
  const ids = [...selected];
  selected.clear();
  ids.forEach(paint);
  renderSelection();
});
$("take-alt").addEventListener("click", () => {
  const ids = alternatives;
  $("conflict").hidden = true;
  selected.clear();
  alternatives = [];
  for (const id of seats.keys()) paint(id);
  hold(ids);
});

localTimes();
const msg = takeFlash();
if (msg) notice(msg);
session().catch((e) => showError($("error"), "Could not start a session: " + e.message));
// Stream first, then the map: a change between the two is then in the map or in the stream, never lost.
stream();
load();
