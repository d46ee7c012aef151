// codecheck.js: the door's offline check of a rotating ticket code with the gate kit alone, step by step as
// docs/TICKETS.md "Checking a code" says (booking/ticket does the same in Go on the server): the bytes, the
// platform's signature on the certificate, the show, the holder's signature on the stamp, the stamp's age, and
// the kit's list of valid tickets. Every refusal is one row of REASONS, which the page shows as it is.
import { MAX_CODE_LEN, unb64, parseCertificate, certMessage, stampMessage, readU64 } from "./codebytes.js";

// REASONS: why a code is refused, by the slug the server's problem types use where it has one (so an online
// refusal and an offline one read alike).
export const REASONS = Object.freeze({
  "malformed": "Not a ticket code",
  "forged": "Forged or damaged code",
  "ticket-invalid": "Forged or damaged code",
  "unknown-key": "Signed by a key this kit does not know: download the kit again",
  "other-show": "Not a ticket of this show",
  "ticket-expired": "This ticket's show is over",
  "code-expired": "Expired code: a screenshot or an old image. Ask for the live ticket page",
  "code-future": "Code from the future: check this device's clock",
  "rotating-codes": "A static code: this show admits rotating codes only",
  "not-valid": "Not a valid ticket (refunded, transferred or resold)",
  "already-checked-in": "Already admitted",
  "ticket-void": "Refunded: this ticket no longer admits",
  "ticket-transferred": "Transferred: this code was replaced",
  "ticket-listed": "On the resale exchange: not admitted",
  "ticket-resold": "Resold: this code was replaced",
  "not-found": "No such ticket",
  "not-checked": "Not checked in: the staff token was refused",
  "refused": "Refused by the platform",
});

const ed = { name: "Ed25519" };

// Checker verifies codes against one kit: {showId, keys: [{kid, x}], maxAgeSeconds, skewSeconds, tickets}.
export class Checker {
  constructor(kit) {
    this.kit = kit;
    this.tickets = new Map((kit.tickets || []).map((t) => [t.ticketId, t]));
    this.keys = new Map(); // kid → promise of a CryptoKey
    for (const k of kit.keys || []) {
      const x = unb64(k.x);
      if (x && x.length === 32) this.keys.set(k.kid, crypto.subtle.importKey("raw", x, ed, false, ["verify"]));
    }
  }

  // check answers {ok: true, ticketId, seatId, category} or {ok: false, reason, ticketId?, seatId?}, with now in
  // Unix seconds (the door's clock) and admitted(ticketId) telling a ticket this device already let in.
  async check(code, now, admitted = () => false) {
    const no = (reason, c) => ({ ok: false, reason, ticketId: c?.ticketId, seatId: c?.seatId });
    if (typeof code !== "string" || code.length === 0 || code.length > MAX_CODE_LEN) return no("malformed");
    const parts = code.split(".");
    if (parts.length === 2) return no("rotating-codes"); // a static code: one dot
    // 1. four parts, canonical base64url, signatures of 64 bytes, a version 2 certificate, nothing trailing.
    if (parts.length !== 4) return no("malformed");
    const [cert, certSig, stamp, stampSig] = parts.map(unb64);
    if (!cert || !certSig || !stamp || !stampSig || certSig.length !== 64 || stampSig.length !== 64 ||
      stamp.length !== 8) return no("malformed");
    const c = parseCertificate(cert);
    if (!c) return no("malformed");
    // 2. a key of the kit signed the certificate.
    const key = this.keys.get(c.keyId);
    if (!key) return no("unknown-key", c);
    if (!await crypto.subtle.verify(ed, await key, certSig, certMessage(cert))) return no("forged", c);
    // 3. this show's ticket, and the show not over.
    if (c.showId !== this.kit.showId) return no("other-show", c);
    if (now > c.notAfter) return no("ticket-expired", c);
    // 4. the holder's key signed the stamp.
    const holder = await crypto.subtle.importKey("raw", c.holderKey, ed, false, ["verify"]);
    if (!await crypto.subtle.verify(ed, holder, stampSig, stampMessage(cert, stamp))) return no("forged", c);
    // 5. the stamp is fresh: at most skew ahead of the door's clock, at most max age plus skew behind it.
    const t = readU64(stamp, 0);
    const skew = this.kit.skewSeconds ?? 5, maxAge = this.kit.maxAgeSeconds ?? 30;
    if (t > now + skew) return no("code-future", c);
    if (now - t > maxAge + skew) return no("code-expired", c);
    // 6. a valid ticket of the kit, not admitted already.
    const tk = this.tickets.get(c.ticketId);
    if (!tk) return no("not-valid", c);
    if (tk.checkedIn || admitted(c.ticketId)) return no("already-checked-in", c);
    return { ok: true, ticketId: c.ticketId, seatId: tk.seatId || c.seatId, category: tk.category };
  }
}
