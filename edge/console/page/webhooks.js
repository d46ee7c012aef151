// The Webhooks panel: operators' endpoints (for one show or all), their deliveries, replaying one, and rolling an
// endpoint's signing secret.
import { $, el } from "./dom.js";

const enc = encodeURIComponent;

export function mount({ call }) {
  async function load() {
    try {
      const r = await call("GET", "/admin/v1/webhooks");
      $("hooks").replaceChildren(...r.webhooks.map((h) => el("li", {}, `${h.url} (${h.showId || "every show"}) `,
        el("button", { type: "button", text: "Deliveries", "aria-label": `Deliveries to ${h.url}`, onclick: () => deliveries(h) }), " ",
        el("button", { type: "button", text: "Roll secret", "aria-label": `Roll the secret of the webhook to ${h.url}`, onclick: () => act(async () => {
          const r = await call("POST", `/admin/v1/webhooks/${enc(h.id)}/roll-secret`, { graceSeconds: 86400 });
          $("hook-result").textContent = `New signing secret, shown this once: ${r.secret}. ` +
            `The old one also signs until ${r.previousSecretExpiresAt}.`;
        }) }), " ",
        el("button", { type: "button", text: "Delete", "aria-label": `Delete the webhook to ${h.url}`, onclick: () => act(async () => {
          await call("DELETE", `/admin/v1/webhooks/${enc(h.id)}`);
          $("deliveries-h").hidden = true;
          $("deliveries").replaceChildren();
        }) }))));
    } catch (e) {
      $("hook-error").textContent = `The webhooks could not be read: ${e.message}`;
    }
  }

  async function act(f) {
    $("hook-error").textContent = "";
    try { await f(); } catch (e) { $("hook-error").textContent = e.message; }
    await load();
  }

  async function deliveries(h) {
    $("hook-error").textContent = "";
    try {
      const r = await call("GET", `/admin/v1/webhooks/${enc(h.id)}/deliveries?limit=20`);
      $("deliveries-h").textContent = `Deliveries to ${h.url}`;
      $("deliveries-h").hidden = false;
      $("deliveries").replaceChildren(...r.deliveries.map((d) => el("li", {},
        `${d.createdAt} ${d.eventType} (${d.eventId}): ${d.status} after ${d.attempts} attempt(s)` +
        `${d.lastStatus ? `, last answer ${d.lastStatus}` : ""}${d.lastError ? `: ${d.lastError}` : ""} `,
        el("button", { type: "button", text: "Replay", "aria-label": `Replay ${d.eventType} ${d.eventId}`, onclick: async () => {
          try {
            await call("POST", `/admin/v1/webhooks/${enc(h.id)}/deliveries/${enc(d.id)}/replay`);
            $("hook-result").textContent = `Replaying ${d.eventType} ${d.eventId}.`;
          } catch (e) { $("hook-error").textContent = e.message; }
          deliveries(h);
        } }))));
    } catch (e) {
      $("hook-error").textContent = `The deliveries could not be read: ${e.message}`;
    }
  }

  $("hook-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = { url: $("hook-url").value };
    if ($("hook-show").value.trim()) body.showId = $("hook-show").value.trim();
    act(async () => {
      const r = await call("POST", "/admin/v1/webhooks", body);
      $("hook-result").textContent = `Registered. Its signing secret, shown this once: ${r.secret}`;
      $("hook-form").reset();
    });
  });
  return { signedIn: load };
}
