// The Shows panel: a card per upcoming show with its live figures and its controls: the waiting room's switch,
// pause and resume, the queue settings (with the bot settings of bots.js), the sale's opening, closing the sale,
// and the queue's fairness record.
import { get } from "./api.js";
import { $, el } from "./dom.js";
import { money, count } from "./ui.js";
import { utc, wait } from "./format.js";
import { settingsFields } from "./bots.js";

const FIGS = [
  ["waiting", "waiting"], ["active", "active now"], ["admitted", "admitted in total"], ["rate", "admission rate"],
  ["eta", "wait of the last fan"], ["available", "available"], ["held", "held"], ["sold", "sold"],
  ["revenue", "revenue"], ["conversion", "admitted fans who bought"], ["failures", "payment failures"],
];

export function mount({ call, changed }) {
  const shows = new Map(); // showId -> the card's parts

  function card(f) {
    const id = f.showId;
    const figs = el("dl", { class: "figs" });
    const dd = {};
    for (const [k, label] of FIGS) {
      dd[k] = el("dd", { "data-f": k });
      figs.append(el("div", {}, el("dt", { text: label }), dd[k]));
    }
    const lanes = laneTable(id);
    const err = el("p", { class: "error", role: "alert" });
    const act = async (what, fn) => {
      err.textContent = "";
      try { await fn(); changed(); } catch (e) { err.textContent = `${what} failed: ${e.message}`; }
    };
    const queueURL = `/admin/v1/shows/${id}/queue`;
    const queue = el("input", { type: "checkbox", role: "switch", id: `q-${id}` });
    queue.addEventListener("change", () => act("Switching the queue", async () => {
      queue.disabled = true;
      try { await call("PUT", queueURL, { enabled: queue.checked }); } finally { queue.disabled = false; }
    }));
    const pause = el("button", { type: "button", "data-c": "pause" });
    pause.addEventListener("click", () => act("Pausing admission", async () => {
      const paused = pause.dataset.paused !== "true";
      await call("PUT", queueURL, { paused });
      setPaused(pause, paused);
    }));
    const rate = el("input", { type: "number", min: "0.1", step: "0.1", id: `r-${id}`, required: "" });
    const maxA = el("input", { type: "number", min: "1", step: "1", id: `m-${id}`, required: "" });
    const ttl = el("input", { type: "number", min: "10", step: "1", id: `t-${id}`, required: "" });
    const bot = settingsFields(id);
    const settings = el("form", { class: "settings" },
      el("label", { for: `r-${id}`, text: "Admission rate (fans per second)" }), rate,
      el("label", { for: `m-${id}`, text: "Max active fans" }), maxA,
      el("label", { for: `t-${id}`, text: "Admission token lifetime (seconds)" }), ttl,
      ...bot.fields,
      el("button", { type: "submit", text: "Save queue settings" }));
    settings.addEventListener("submit", (ev) => {
      ev.preventDefault();
      act("Saving the queue settings", () => call("PUT", queueURL, {
        admitPerSecond: Number(rate.value), maxActive: Number(maxA.value), tokenTtlSeconds: Number(ttl.value),
        ...bot.body(),
      }));
    });
    const opens = el("input", { type: "datetime-local", id: `o-${id}`, required: "" });
    const opening = el("form", { class: "opening" },
      el("label", { for: `o-${id}`, text: "Sale opens at (UTC)" }), opens,
      el("button", { type: "submit", text: "Schedule opening" }));
    opening.addEventListener("submit", (ev) => {
      ev.preventDefault();
      act("Scheduling the opening", () => call("PATCH", `/admin/v1/shows/${id}`, { saleStartsAt: utc(opens.value) }));
    });
    const close = el("button", { type: "button", "data-c": "close", text: "Close sale" });
    close.addEventListener("click", () => {
      if (close.dataset.confirm !== "true") {
        close.dataset.confirm = "true";
        close.textContent = "Confirm: close the sale now";
        return;
      }
      act("Closing the sale", () => call("POST", `/admin/v1/shows/${id}/close`));
    });
    const fair = el("p", { "data-c": "fairness" });
    const details = el("details", {}, el("summary", { text: "Fairness of the queue" }), fair);
    details.addEventListener("toggle", () => { if (details.open) loadFairness(id, fair); });
    const title = el("h3", { id: `h-${id}` });
    const meta = el("p", { class: "meta" });
    const e = el("article", { class: "show", "data-show": id, "aria-labelledby": `h-${id}` }, title, meta, figs, lanes.el,
      el("div", { class: "controls" },
        el("p", {}, queue, el("label", { for: `q-${id}`, text: `Waiting room queue on for ${f.title}` })),
        el("p", {}, pause, " ", close), settings, opening, details), err);
    return { el: e, dd, lanes, queue, pause, rate, maxA, ttl, bot, opens, title, meta, close, loaded: false };
  }

  function update(s, f) {
    const q = f.queue || {};
    s.title.textContent = `${f.title}: ${f.venue}, ${f.city} (${f.hall})`;
    const closed = f.saleClosedAt ? ` Sale closed at ${f.saleClosedAt}.` : "";
    s.meta.textContent = `Show ${f.showId} starts ${f.startsAt}; sale opens ${f.saleStartsAt}.${closed}`;
    s.dd.waiting.textContent = `${count(q.waiting)} waiting`;
    s.dd.active.textContent = `${count(q.active)} active`;
    s.dd.admitted.textContent = `${count(q.admittedTotal)} admitted`;
    s.dd.rate.textContent = `set ${q.admitPerSecond}/s, actual ${Number(q.actualRate || 0).toFixed(1)}/s`;
    s.dd.eta.textContent = q.enabled ? wait(q.lastEtaSeconds) : "queue off";
    s.dd.available.textContent = `${count(f.available)} available of ${count(f.totalSeats)}`;
    s.dd.held.textContent = `${count(f.held)} held`;
    s.dd.sold.textContent = `${count(f.booked)} sold`;
    s.dd.revenue.textContent = money(f.revenue || 0, f.currency);
    s.dd.conversion.textContent = `${(100 * (f.conversion || 0)).toFixed(1)} %`;
    s.dd.failures.textContent = `${count(f.paymentFailures)} failed`;
    s.lanes.fill(q.lanes || []);
    if (document.activeElement !== s.queue && !s.queue.disabled) s.queue.checked = !!q.enabled;
    if (document.activeElement !== s.pause) setPaused(s.pause, !!q.paused);
    s.pause.disabled = !q.enabled;
    s.close.disabled = !!f.saleClosedAt;
    if (f.saleClosedAt) s.close.textContent = "Sale closed";
    if (!s.loaded) { // the settings forms start from the values in force, then are the operator's to edit
      s.loaded = true;
      s.rate.value = q.admitPerSecond;
      s.maxA.value = q.maxActive;
      s.ttl.value = q.tokenTtlSeconds;
      s.bot.fill(q);
      s.opens.value = (f.saleStartsAt || "").slice(0, 16);
    }
  }

  return {
    render(snap) {
      $("breaker").textContent = snap.breaker || "unknown";
      $("app-error").textContent = snap.error || "";
      const seen = new Set();
      for (const f of snap.shows || []) {
        seen.add(f.showId);
        let s = shows.get(f.showId);
        if (!s) { s = card(f); shows.set(f.showId, s); $("shows").append(s.el); }
        update(s, f);
      }
      for (const [id, s] of shows) if (!seen.has(id)) { s.el.remove(); shows.delete(id); }
    },
  };
}

// laneTable is a card's table of the show's lanes (hidden without lanes): each lane's share of the admission
// rate, its fans waiting, its live admissions and everyone it admitted.
function laneTable(id) {
  const body = el("tbody");
  const head = el("tr", {}, ...["Lane", "Share", "Waiting", "Active", "Admitted"].map(
    (h) => el("th", { scope: "col", text: h })));
  const table = el("table", { class: "lanes", "data-c": "lanes", hidden: true },
    el("caption", { id: `l-${id}`, text: "Lanes" }), el("thead", {}, head), body);
  return {
    el: table,
    fill(lanes) {
      table.hidden = lanes.length === 0;
      body.replaceChildren(...lanes.map((l) => el("tr", { "data-lane": l.name },
        el("th", { scope: "row", text: l.name }), el("td", { text: `${Math.round(100 * l.share)} %` }),
        el("td", { text: count(l.waiting) }), el("td", { text: count(l.active) }),
        el("td", { text: count(l.admitted) }))));
    },
  };
}

function setPaused(b, paused) {
  b.dataset.paused = String(paused);
  b.textContent = paused ? "Resume admission" : "Pause admission";
}

// loadFairness reads the queue's public fairness record: the seed's commitment, and the seed after the draw.
async function loadFairness(id, p) {
  try {
    const f = (await get(`/queue/${encodeURIComponent(id)}/fairness`)).data;
    const parts = [`Commitment (SHA-256 of the seed): ${f.commitment || "none yet (the queue has never been on)"}.`];
    parts.push(f.seed ? `Revealed seed: ${f.seed}.` : "The seed is revealed after the opening draw.");
    p.textContent = parts.join(" ");
  } catch (e) {
    p.textContent = `The fairness record could not be read: ${e.message}`;
  }
}
