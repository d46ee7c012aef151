// The Queue mode and autotune panel: for the show selected, its mode and whether the queue is engaged now, the
// live figures against their thresholds, the form that sets the mode, thresholds, cooldown, autotune and what the
// queue does while its store is down (closed, or a trickle per replica), and the
// admission rate over the last ten minutes: a chart, and the same changes as a table (who made each, and
// autotune's reason), read from the audit log (queue.settings and queue.autotune entries).
import { $, el } from "./dom.js";
import { count } from "./ui.js";
import { syncShows } from "./picker.js";

const WINDOW = 10 * 60 * 1000; // the chart's ten minutes
const SVG = "http://www.w3.org/2000/svg";
const W = 600, H = 160, PAD = 28;

export function mount({ call, changed }) {
  const select = $("tune-show");
  const show = () => select.value;
  const path = (id) => `/admin/v1/shows/${encodeURIComponent(id)}/queue`;
  let loaded = ""; // the show whose form is filled
  let changes = []; // [{at, rate, actor, reason}] oldest first, within the window
  let start = null; // the rate in force when the window began
  let seen = ""; // the rate and reason of the last figures: a new pair means a change to read
  let state = ""; // "mode engaged" of the last figures, to announce a change once
  let reading = null;
  let lastRead = 0; // when the last read of the changes began
  // expect is a change of the rate the figures showed and the table does not list yet ({rate, since}): its audit
  // entry is written just after the change, later still on a busy replica, so the changes are read again every
  // two seconds (for a minute at most) until the table has it.
  let expect = null;

  const num = (id) => Number($(id).value);
  // The form is the operator's once they change it: a read that answers late (the panel reads a show again when
  // it is picked) fills it only if nothing was changed since the form last held that show.
  let holds = "";
  let edited = false;
  let loads = 0;
  $("tune-form").addEventListener("input", () => { edited = true; });
  $("tune-form").addEventListener("change", () => { edited = true; });

  function fill(id, q) {
    if (id === holds && edited) return;
    holds = id;
    edited = false;
    for (const r of document.querySelectorAll('#tune-form input[name="mode"]')) r.checked = r.value === q.mode;
    $("tune-active").value = q.activeUsersThreshold;
    $("tune-arrivals").value = q.newUsersPerMinuteThreshold;
    $("tune-cooldown").value = q.cooldownSeconds;
    const a = q.autotune || {};
    $("tune-auto").checked = !!a.enabled;
    $("tune-min").value = a.minAdmitPerSecond;
    $("tune-max").value = a.maxAdmitPerSecond;
    $("tune-p99").value = a.targetHoldP99Ms;
    const d = q.whenStoreDown || {};
    for (const r of document.querySelectorAll('#tune-form input[name="storeDownPolicy"]')) r.checked = r.value === d.policy;
    $("tune-down-rate").value = d.admitPerSecond;
  }

  async function load(id) {
    loaded = id;
    const n = ++loads;
    $("tune-error").textContent = "";
    try {
      const q = await call("GET", path(id));
      if (show() === id && n === loads) fill(id, q);
    } catch (e) {
      $("tune-error").textContent = `Reading the show's queue settings did not work: ${e.message}`;
    }
    readChanges(id);
  }

  // readChanges reads the rate's changes of the last ten minutes; one read at a time, the newest wins.
  function readChanges(id) {
    if (reading) { reading.again = true; return; }
    reading = { again: false };
    lastRead = Date.now();
    const since = new Date(Date.now() - WINDOW).toISOString();
    call("GET", `/admin/v1/audit?showId=${encodeURIComponent(id)}&action=queue.settings,queue.autotune&limit=1000` +
      `&since=${encodeURIComponent(since)}`).then((r) => {
      if (show() !== id) return;
      changes = [];
      start = null;
      for (const e of [...r.entries].reverse()) {
        const before = e.old?.admitPerSecond, after = e.new?.admitPerSecond;
        if (after === undefined || before === after) continue;
        if (start === null) start = before;
        changes.push({ at: Date.parse(e.at), rate: after, actor: e.actor,
          reason: e.actor === "autotune" ? e.new.autotuneReason || "" : "set by an operator" });
      }
      if (expect && changes.length && changes[changes.length - 1].rate === expect.rate) expect = null;
      table();
    }, (e) => {
      $("tune-error").textContent = `Reading the rate's changes did not work: ${e.message}`;
    }).finally(() => {
      const again = reading.again;
      reading = null;
      if (again) readChanges(id);
    });
  }

  function table() {
    const rows = [...changes].reverse().map((c) => el("tr", {},
      el("td", { text: new Date(c.at).toISOString().slice(11, 19) }), el("td", { text: `${c.rate}/s` }),
      el("td", { text: c.actor }), el("td", { text: c.reason })));
    $("tune-changes").tBodies[0].replaceChildren(...(rows.length ? rows :
      [el("tr", {}, el("td", { colspan: "4", text: "No change of the rate in the last 10 minutes." }))]));
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // chart draws the rate as a step line from ten minutes ago to now, a dot (with its reason as a tooltip) at each
  // autotune change, and says the same in words for a screen reader (the table has every change).
  function chart(now, rateNow) {
    const from = now - WINDOW;
    const inWindow = changes.filter((c) => c.at >= from);
    const first = start ?? rateNow;
    const top = Math.max(first, rateNow, ...inWindow.map((c) => c.rate), 1) * 1.15;
    const x = (t) => PAD + ((t - from) / WINDOW) * (W - 2 * PAD);
    const y = (r) => H - PAD + 8 - (r / top) * (H - PAD - 8);
    let d = `M${x(from).toFixed(1)},${y(first).toFixed(1)}`;
    for (const c of inWindow) d += ` H${x(c.at).toFixed(1)} V${y(c.rate).toFixed(1)}`;
    d += ` H${x(now).toFixed(1)} V${y(rateNow).toFixed(1)}`;
    const parts = [
      svg("line", { class: "axis", x1: PAD, y1: y(0), x2: W - PAD, y2: y(0) }),
      svg("line", { class: "axis", x1: PAD, y1: 8, x2: PAD, y2: y(0) }),
      svg("text", { x: 2, y: y(0) + 4 }, "0"),
      svg("text", { x: 2, y: y(top / 1.15) + 4 }, String(Math.round((top / 1.15) * 100) / 100)),
      svg("text", { x: PAD, y: H - 4 }, "10 min ago"),
      svg("text", { x: W - PAD - 20, y: H - 4 }, "now"),
      svg("path", { class: "line", d }),
    ];
    for (const c of inWindow.filter((c) => c.actor === "autotune")) {
      const dot = svg("circle", { class: "dot", cx: x(c.at).toFixed(1), cy: y(c.rate).toFixed(1), r: 4 });
      dot.append(svg("title", {}, `${new Date(c.at).toISOString().slice(11, 19)}: ${c.rate}/s, ${c.reason}`));
      parts.push(dot);
    }
    $("tune-chart").replaceChildren(...parts);
    const auto = inWindow.filter((c) => c.actor === "autotune");
    const last = auto[auto.length - 1];
    $("tune-chart-desc").textContent = `From ${first}/s ten minutes ago to ${rateNow}/s now; ` +
      `${inWindow.length} change${inWindow.length === 1 ? "" : "s"}, ${auto.length} by autotune` +
      (last ? `; the last: ${last.rate}/s, ${last.reason}.` : ".");
  }

  function figures(q) {
    const dd = (f) => document.querySelector(`#tune-figs [data-f="${f}"]`);
    const of = (v, limit) => (limit ? `${count(v || 0)} of ${count(limit)}` : `${count(v || 0)} (no threshold)`);
    dd("activeUsers").textContent = of(q.activeUsers, q.activeUsersThreshold);
    dd("arrivalsPerMinute").textContent = of(q.arrivalsPerMinute, q.newUsersPerMinuteThreshold);
    dd("rateNow").textContent = `${q.admitPerSecond}/s` + (q.autotune?.enabled ? ", set by autotune" : "");
    dd("reason").textContent = q.autotuneReason || "none: an operator set the rate";
    const mode = q.mode || (q.enabled ? "always" : "off");
    const words = mode === "off" ? "Mode off: no queue; fans go straight to the seats." :
      mode === "always" ? "Mode always: the queue is engaged; every fan waits in line." :
        q.engaged ? "Mode threshold: the queue is engaged now; fans wait in line." :
          "Mode threshold: the queue is not engaged now; fans pass straight through.";
    $("tune-state").textContent = words;
    $("tune-state").dataset.mode = mode;
    $("tune-state").dataset.engaged = String(mode === "always" || (mode === "threshold" && !!q.engaged));
    if (state && state !== words) $("tune-announce").textContent = words;
    state = words;
  }

  $("tune-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = show();
    $("tune-result").textContent = "";
    $("tune-error").textContent = "";
    const mode = document.querySelector('#tune-form input[name="mode"]:checked')?.value;
    const policy = document.querySelector('#tune-form input[name="storeDownPolicy"]:checked')?.value;
    try {
      await call("PUT", path(id), { ...(mode ? { mode } : {}), activeUsersThreshold: num("tune-active"),
        newUsersPerMinuteThreshold: num("tune-arrivals"), cooldownSeconds: num("tune-cooldown"),
        autotune: { enabled: $("tune-auto").checked, minAdmitPerSecond: num("tune-min"),
          maxAdmitPerSecond: num("tune-max"), targetHoldP99Ms: num("tune-p99") },
        whenStoreDown: { ...(policy ? { policy } : {}), admitPerSecond: num("tune-down-rate") } });
      if (holds === id) edited = false;
      $("tune-result").textContent = `Saved: ${id} runs in ${mode || "its"} mode, autotune ` +
        `${$("tune-auto").checked ? "on" : "off"}, ${policy || "as before"} while its store is down; ` +
        "every replica applies it within a second.";
      changed();
      readChanges(id);
    } catch (e) {
      $("tune-error").textContent = `Saving the mode and autotune did not work: ${e.message}`;
    }
  });

  select.addEventListener("change", () => { state = ""; seen = ""; expect = null; if (show()) load(show()); });

  function render(snap) {
    const shows = snap.shows || [];
    syncShows(select, shows);
    $("tune-panel").hidden = !show();
    if (!show()) return;
    if (loaded !== show()) load(show());
    const q = shows.find((f) => f.showId === show())?.queue;
    if (!q) return;
    figures(q);
    const now = `${q.admitPerSecond}|${q.autotuneReason || ""}`;
    if (seen && now !== seen) { // the rate changed: read its entry
      expect = { rate: q.admitPerSecond, since: Date.now() };
      readChanges(show());
    } else if (expect && !reading && Date.now() - lastRead >= 2000) {
      if (Date.now() - expect.since > 60000) expect = null;
      else readChanges(show());
    }
    seen = now;
    chart(Date.parse(snap.at) || Date.now(), q.admitPerSecond);
  }

  return { render };
}
