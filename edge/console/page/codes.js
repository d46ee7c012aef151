// The Bypass codes panel: for the show selected, the show's bypass codes: issue a batch (its codes are shown once,
// here, and never again: only their hashes are kept), list them with their uses, revoke one; and, above them, the
// queue page's form (queuepage.js). Every change is audited (the Changes panel).
import { $, el } from "./dom.js";
import { count } from "./ui.js";
import { utc } from "./format.js";
import { syncShows } from "./picker.js";
import { queuePage } from "./queuepage.js";

export function mount({ call, changed }) {
  const select = $("codes-show");
  const show = () => select.value;
  const path = (id) => `/admin/v1/shows/${encodeURIComponent(id)}`;
  let loaded = ""; // the show whose page settings and codes are on screen
  let loads = 0; // reads begun: only the newest one's answer is shown

  function say(node, text) { node.textContent = text; }
  const fail = (what) => (e) => say($("codes-error"), `${what} did not work: ${e.message}`);
  const page = queuePage({ call, changed, show, alert: $("codes-error") });

  async function load(id) {
    loaded = id;
    const n = ++loads;
    say($("codes-error"), "");
    try {
      const [q, c] = await Promise.all([page.read(id), call("GET", `${path(id)}/bypass-codes`)]);
      if (show() !== id || n !== loads) return;
      page.fill(id, q);
      list(c.codes || []);
    } catch (e) {
      fail("Reading the show's codes")(e);
    }
  }

  function list(codes) {
    const rows = codes.map((c) => {
      const state = c.revokedAt ? "revoked" : Date.parse(c.expiresAt) <= Date.now() ? "expired" :
        c.used >= c.uses ? "used up" : "valid";
      const action = c.revokedAt ? "" : el("button", { type: "button", text: "Revoke",
        "aria-label": `Revoke code ${c.hint}…`, onclick: () => revoke(c) });
      return el("tr", { "data-code": c.id },
        el("th", { scope: "row", text: `${c.hint}…` }), el("td", { text: `${count(c.used)} of ${count(c.uses)}` }),
        el("td", { text: c.expiresAt }), el("td", { text: state }), el("td", {}, action));
    });
    $("codes").tBodies[0].replaceChildren(...(rows.length ? rows :
      [el("tr", {}, el("td", { colspan: "5", text: "No code issued for this show yet." }))]));
  }

  async function revoke(c) {
    const id = show();
    say($("codes-result"), "");
    try {
      await call("DELETE", `${path(id)}/bypass-codes/${encodeURIComponent(c.id)}`);
      say($("codes-result"), `Revoked code ${c.hint}…: it admits nobody from now on.`);
      changed();
      await load(id);
      $("codes-count").focus(); // the button that had focus is gone
    } catch (e) { fail("Revoking the code")(e); }
  }

  $("codes-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = show();
    say($("codes-result"), "");
    say($("codes-error"), "");
    try {
      const r = await call("POST", `${path(id)}/bypass-codes`, { count: Number($("codes-count").value),
        uses: Number($("codes-uses").value), expiresAt: utc($("codes-expiry").value) });
      $("codes-new").replaceChildren(...r.codes.map((c) => el("li", {}, el("code", { text: c.code }))));
      $("codes-new-box").hidden = false;
      say($("codes-result"), `Issued ${r.codes.length} code${r.codes.length > 1 ? "s" : ""} for ${id}. ` +
        "Copy them now: they are not shown again.");
      changed();
      await load(id);
    } catch (e) { fail("Issuing codes")(e); }
  });

  select.addEventListener("change", () => {
    $("codes-new-box").hidden = true;
    $("codes-new").replaceChildren();
    if (show()) load(show());
  });

  function render(snap) {
    const shows = snap.shows || [];
    syncShows(select, shows);
    $("codes-panel").hidden = !show();
    if (show() && loaded !== show()) load(show());
  }

  // A default expiry a day ahead, in the form's UTC.
  $("codes-expiry").value = new Date(Date.now() + 86400000).toISOString().slice(0, 16);
  return { render };
}
