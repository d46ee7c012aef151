// The Catalog panel: a venue with one hall (rows × seats per row × categories, with a preview of the hall), an
// event, and a show with its prices and sale opening.
import { $, el } from "./dom.js";
import { utc } from "./format.js";

export function mount({ call }) {
  for (const id of ["v-rows", "v-seats", "v-cats"]) $(id).addEventListener("input", preview);
  preview();

  async function create(what, path, body, done) {
    $("catalog-result").textContent = "";
    try {
      $("catalog-result").textContent = done(await call("POST", path, body));
    } catch (e) {
      $("catalog-result").textContent = `${what} failed: ${e.message}`;
    }
  }

  $("venue-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    create("Creating the venue", "/admin/v1/venues", { name: $("v-name").value, city: $("v-city").value, halls: [{ name: $("v-hall").value, rows: layout() }] },
      (r) => { $("s-hall").value = r.halls[0].hallId; return `Venue ${r.venueId} created; hall ${r.halls[0].hallId} has ${r.halls[0].seats} seats.`; });
  });
  $("event-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    create("Creating the event", "/admin/v1/events", { title: $("e-title").value, kind: $("e-kind").value, genre: $("e-genre").value, language: $("e-lang").value, durationMinutes: Number($("e-dur").value) },
      (r) => { $("s-event").value = r.eventId; return `Event ${r.eventId} created.`; });
  });
  $("show-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const prices = {};
    for (const part of $("s-prices").value.split(",")) {
      const [c, p] = part.split(":").map((x) => x.trim());
      if (c) prices[c.toUpperCase()] = Number(p);
    }
    create("Creating the show", "/admin/v1/shows", { eventId: $("s-event").value, hallId: $("s-hall").value, startsAt: utc($("s-starts").value), saleStartsAt: utc($("s-sale").value), currency: $("s-cur").value, prices },
      (r) => `Show ${r.showId} created; it appears under Shows within a second.`);
  });
  return {};
}

// layout is the hall the venue form describes: its rows, front to back, each with its category.
function layout() {
  const rows = Number($("v-rows").value), seats = Number($("v-seats").value);
  const cats = [];
  for (const part of $("v-cats").value.split(",")) {
    const [name, n] = part.split(":").map((x) => x.trim());
    if (name) for (let i = 0; i < Number(n || 1); i++) cats.push(name.toUpperCase());
  }
  const out = [];
  for (let i = 0; i < rows; i++) {
    const label = String.fromCharCode(65 + i);
    out.push({ row: label, seats, category: cats[Math.min(i, cats.length - 1)] || "STANDARD" });
  }
  return out;
}

function preview() {
  const rows = layout();
  const grid = $("v-preview");
  grid.replaceChildren(el("div", { class: "stage", text: "stage" }));
  const counts = {};
  for (const r of rows) {
    const line = el("div", { class: "row" }, el("span", { class: "label", text: r.row }));
    for (let n = 1; n <= Math.min(r.seats, 100); n++) line.append(el("span", { class: `seat cat-${r.category.length % 4}`, title: `${r.row}${n} ${r.category}` }));
    grid.append(line);
    counts[r.category] = (counts[r.category] || 0) + r.seats;
  }
  $("v-summary").textContent = `${rows.length} rows; ` + Object.entries(counts).map(([c, n]) => `${n} ${c}`).join(", ") + " seats.";
}
