// The Changes panel: the audit log's latest 50 entries (who, when, the value before and after), read at sign-in,
// after any change the console makes, and on Refresh.
import { $, el } from "./dom.js";

export function mount({ call }) {
  async function load() {
    try {
      const r = await call("GET", "/admin/v1/audit?limit=50");
      $("audit").replaceChildren(...r.entries.map((e) => el("li", { text: `${e.at} ${e.actor}: ${e.action}${e.showId ? ` on ${e.showId}` : ""}: ${JSON.stringify(e.old ?? null)} → ${JSON.stringify(e.new ?? null)}` })));
    } catch (e) {
      $("audit").replaceChildren(el("li", { text: `The changes could not be read: ${e.message}` }));
    }
  }
  $("audit-refresh").addEventListener("click", load);
  return { signedIn: load, changed: load };
}
