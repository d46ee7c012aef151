// The Invitations panel: for the show selected, its verified-fan sale: the queue's access setting, the waves
// drawn with their counts (asked, eligible, invited) and their published commitment and seed, and a form that
// draws the next wave. Every wave and access change is audited (the Changes panel). docs/FAIRNESS.md says how
// anyone recomputes a wave from what the waves list publishes.
import { $, el } from "./dom.js";
import { count } from "./ui.js";
import { syncShows } from "./picker.js";

export function mount({ call, changed }) {
  const select = $("waves-show");
  const show = () => select.value;
  const path = (id) => `/admin/v1/shows/${encodeURIComponent(id)}`;
  let loaded = "";
  let loads = 0; // reads begun: only the newest one's answer is shown

  function say(node, text) { node.textContent = text; }
  const fail = (what) => (e) => say($("waves-error"), `${what} did not work: ${e.message}`);

  async function load(id) {
    loaded = id;
    const n = ++loads;
    say($("waves-error"), "");
    try {
      const [q, w] = await Promise.all([call("GET", `${path(id)}/queue`), call("GET", `${path(id)}/invitations`)]);
      if (show() !== id || n !== loads) return;
      $("waves-access").value = q.access || "open";
      list(w.waves || []);
    } catch (e) { fail("Reading the show's waves")(e); }
  }

  function list(waves) {
    const drawn = waves.filter((w) => w.drawnAt);
    const next = waves.find((w) => !w.drawnAt);
    const rows = drawn.map((w) => el("tr", { "data-wave": String(w.waveId) },
      el("th", { scope: "row", text: `Wave ${w.waveId}` }), el("td", { text: w.lane || "general" }),
      el("td", { text: count(w.count) }), el("td", { text: count(w.eligible) }), el("td", { text: count(w.invited) }),
      el("td", { text: w.drawnAt }), el("td", {}, el("code", { text: w.seed.slice(0, 16) + "…" }))));
    $("waves").tBodies[0].replaceChildren(...(rows.length ? rows :
      [el("tr", {}, el("td", { colspan: "7", text: "No wave drawn for this show yet." }))]));
    const invited = drawn.reduce((s, w) => s + w.invited, 0);
    say($("waves-summary"), drawn.length ? `${count(invited)} fans invited in ${drawn.length} wave${drawn.length > 1 ? "s" : ""}.` :
      "Nobody invited yet.");
    say($("waves-next"), next ? `Next wave's commitment (published): ${next.commitment}` :
      "No fan has registered yet: the first registration commits the first wave's seed.");
  }

  $("waves-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = show();
    say($("waves-result"), "");
    say($("waves-error"), "");
    try {
      const w = await call("POST", `${path(id)}/invitations`, { count: Number($("waves-count").value),
        lane: $("waves-lane").value.trim() });
      say($("waves-result"), `Wave ${w.waveId} invited ${count(w.invited)} of ${count(w.eligible)} registered fans not yet invited.`);
      changed();
      await load(id);
    } catch (e) { fail("Drawing the wave")(e); }
  });

  $("waves-access-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = show();
    say($("waves-result"), "");
    say($("waves-error"), "");
    try {
      const q = await call("PUT", `${path(id)}/queue`, { access: $("waves-access").value });
      say($("waves-result"), `Saved: access is ${q.access}.`);
      changed();
    } catch (e) { fail("Saving the access")(e); }
  });

  select.addEventListener("change", () => { if (show()) load(show()); });

  function render(snap) {
    syncShows(select, snap.shows || []);
    $("waves-panel").hidden = !show();
    if (show() && loaded !== show()) load(show());
  }
  return { render };
}
