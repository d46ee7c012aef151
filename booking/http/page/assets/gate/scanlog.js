// scanlog.js: what a door device let in, kept in its localStorage per show so that a reload or a dead battery
// loses nothing: every admission (so the device never admits a ticket twice), and those made offline until the
// server has heard of them (POST /api/v1/shows/{showId}/gate-scans, docs/TICKETS.md "Scans made offline").
import { post } from "./api.js";

const DEVICE_KEY = "fs_gate_device";
const BATCH = 150;

// deviceId names this device to the server, which tells two doors' scans of one ticket apart by it.
export function deviceId() {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id) {
    id = "door-" + crypto.randomUUID();
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

// outcome is what became of this device's scan. "duplicate" means the server had it already: an earlier sending
// reached it and its answer was lost on the way back (a signal dropped mid-request). What that sending made of
// it stands, and firstDevice tells which: this device's scan admitted the ticket, or another door's came first.
function outcome(r) {
  if (r.status !== "duplicate") return r.status;
  return r.firstDevice === deviceId() ? "admitted" : "conflict";
}

// ScanLog is one show's admissions on this device: [{ticketId, seatId, code, scannedAt, synced, result}], where
// synced is false for an offline admission the server has not answered yet, and result is its outcome
// ("admitted", "conflict", "refused") with firstDevice and firstAt.
export class ScanLog {
  constructor(showId) {
    this.showId = showId;
    this.key = "fs_gate_scans:" + showId;
    try { this.scans = JSON.parse(localStorage.getItem(this.key) || "[]"); } catch { this.scans = []; }
  }

  save() { localStorage.setItem(this.key, JSON.stringify(this.scans)); }

  // admitted tells a ticket this device let in already (online or offline).
  admitted(ticketId) { return this.scans.some((s) => s.ticketId === ticketId); }

  // add records an admission: online ones are the server's already (synced), offline ones wait.
  add(scan) {
    this.scans.push(scan);
    this.save();
  }

  pending() { return this.scans.filter((s) => !s.synced); }

  // answered are the offline admissions the server has answered, latest first.
  answered() { return this.scans.filter((s) => s.result).reverse(); }

  // sync sends the waiting admissions with the staff token; it resolves to the server's results, each matched
  // back to its scan by ticket, and rejects as api.js does (status 0 offline, or when signal gives the request up).
  // The server takes BATCH scans a request, and answers one result per scan, in order.
  async sync(staffToken, signal) {
    const all = [];
    for (let waiting = this.pending().slice(0, BATCH); waiting.length; waiting = this.pending().slice(0, BATCH)) {
      const { data } = await post("/api/v1/shows/" + encodeURIComponent(this.showId) + "/gate-scans",
        { deviceId: deviceId(), scans: waiting.map((s) => ({ code: s.code, scannedAt: s.scannedAt })) },
        { headers: { Authorization: "Bearer " + staffToken }, signal });
      const results = (data && data.results) || [];
      if (results.length !== waiting.length) throw new Error("the server answered " + results.length + " of " + waiting.length + " scans");
      results.forEach((r, i) => {
        Object.assign(waiting[i], { synced: true, result: outcome(r), firstDevice: r.firstDevice, firstAt: r.firstAt, reason: r.reason });
      });
      this.save();
      all.push(...results);
    }
    return all;
  }
}
