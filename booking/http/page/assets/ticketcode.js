// ticketcode.js: a rotating ticket code on the holder's page (docs/TICKETS.md). The page fetches the ticket's
// certificate and holder key once (GET /api/v1/tickets/{id}/code), then makes a fresh stamp every 15 s here,
// signed with WebCrypto Ed25519 and drawn as a QR code (vendor/qrcode-generator.js), so the code keeps rotating
// with no network at the door. The clock is the phone's, corrected by the server's time at the last fetch; the
// certificate is fetched again every minute while online and when the phone comes back online.
import { get, ApiError } from "./api.js";
import { el } from "./dom.js";
import qrcode from "./qrcode-generator.js";
import { b64, unb64, u64, concat, stampMessage } from "./codebytes.js";

// An Ed25519 seed as PKCS#8, the one format WebCrypto imports a private key from: this DER prefix, then the seed.
const PKCS8_PREFIX = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70,
  0x04, 0x22, 0x04, 0x20]);
const ed = { name: "Ed25519" };
const REFRESH_MS = 60000;

// rotating tells a ticket of a show with rotating codes (it has no static code, PDF or pass), or a booking with
// such tickets.
export function rotating(x) {
  return x.ticketCodes === "rotating" || (x.tickets || []).some(rotating);
}

// rotatingCode is the live code of one ticket: a QR image, "Updates every 15 s" and a countdown to the next
// code. It runs until the element leaves the document.
export function rotatingCode(ticketId, name) {
  const img = el("img", { class: "code", width: "200", height: "200", alt: "Rotating QR code of " + name + " (updates every 15 seconds)" });
  const next = el("span", { class: "countdown", text: "…" });
  const status = el("p", { class: "code-status muted", role: "status", "aria-live": "polite" });
  const box = el("figure", { class: "rotating", "data-ticket": ticketId }, img,
    el("figcaption", {}, "Updates every 15 s · next in ", next, " s"), status);
  new Rotor(ticketId, img, next, status, box).start();
  return box;
}

class Rotor {
  constructor(ticketId, img, next, status, box) {
    Object.assign(this, { ticketId, img, next, status, box });
    this.offset = 0; // server time minus this phone's, in ms
    this.every = 15;
    this.fetchedAt = 0;
    this.due = 0; // when the next stamp is due, on the corrected clock (ms)
  }

  now() { return Date.now() + this.offset; }

  start() {
    this.onOnline = () => { this.fetchedAt = 0; };
    addEventListener("online", this.onOnline);
    this.timer = setInterval(() => this.tick(), 250);
  }

  stop() {
    clearInterval(this.timer);
    removeEventListener("online", this.onOnline);
  }

  // refresh fetches the certificate and the holder key, and the server's time to correct the clock by.
  async refresh() {
    const t0 = Date.now();
    let data, headers;
    try {
      ({ data, headers } = await get("/api/v1/tickets/" + encodeURIComponent(this.ticketId) + "/code"));
    } catch (e) {
      if (e instanceof ApiError && e.status !== 0) {
        this.stop();
        this.img.removeAttribute("src");
        this.img.alt = "No code: " + e.message;
        this.say(e.message);
        return;
      }
      this.say(this.key ? "Offline: this phone keeps making the code."
        : "Could not load the code. Check your connection; the page tries again.");
      this.fetchedAt = Date.now() - REFRESH_MS + 10000; // try again in 10 s
      return;
    }
    const t1 = Date.now();
    const server = Date.parse(data.serverTime || headers.get("Date") || "");
    if (!isNaN(server)) this.offset = server - (t0 + t1) / 2;
    const parts = String(data.code || "").split(".");
    const cert = unb64(data.certificate || parts[0]);
    const seed = unb64(data.holderKey);
    if (!cert || !seed || seed.length !== 32 || parts.length < 2) {
      this.say("This ticket's code could not be read. Reload the page.");
      return;
    }
    this.key = await crypto.subtle.importKey("pkcs8", concat(PKCS8_PREFIX, seed), ed, false, ["sign"]);
    this.head = b64(cert) + "." + parts[1];
    this.cert = cert;
    this.every = data.rotatesEverySeconds || 15;
    this.fetchedAt = Date.now();
    this.say("");
    await this.stamp();
  }

  // stamp makes the code of this second and draws it.
  async stamp() {
    const now = this.now();
    const sec = Math.floor(now / 1000);
    const stamp = u64(sec);
    const sig = new Uint8Array(await crypto.subtle.sign(ed, this.key, stampMessage(this.cert, stamp)));
    const code = this.head + "." + b64(stamp) + "." + b64(sig);
    const qr = qrcode(0, "M");
    qr.addData(code);
    qr.make();
    this.img.src = qr.createDataURL(4, 16);
    this.img.dataset.code = code;
    this.img.dataset.stamp = String(sec);
    this.due = (sec + this.every) * 1000;
    this.countdown();
  }

  countdown() {
    this.next.textContent = String(Math.max(0, Math.ceil((this.due - this.now()) / 1000)));
  }

  async tick() {
    if (!this.box.isConnected) {
      if (this.box.dataset.seen) this.stop(); // re-rendered away
      return;
    }
    this.box.dataset.seen = "1";
    if (navigator.onLine && Date.now() - this.fetchedAt >= REFRESH_MS && !this.busy) {
      this.busy = true;
      try { await this.refresh(); } catch (e) { this.fail(e); } finally { this.busy = false; }
      return;
    }
    if (this.key && this.now() >= this.due && !this.busy) {
      this.busy = true;
      try { await this.stamp(); } catch (e) { this.fail(e); } finally { this.busy = false; }
      return;
    }
    this.countdown();
  }

  // fail stops on what cannot be retried: a browser without Ed25519 (WebCrypto) cannot make the code.
  fail(e) {
    this.stop();
    this.say("This browser cannot make the ticket's code (" + (e && e.name || e) + "). Update it, or use another browser.");
  }

  say(text) {
    if (this.status.textContent !== text) this.status.textContent = text;
  }
}
