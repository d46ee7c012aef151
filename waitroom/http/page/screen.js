// screen.js: what the waiting room shows: one view at a time (queue.html's sections), the line of progress while
// the fan gets a place, the alert, and the place itself: a position with its bar and wait, a paused line, the
// countdown to the opening. Deciding what to show is queue.js's.
import { $ } from "./dom.js";
import { showError, clearError } from "./ui.js";
import { t, tf, fmt, span } from "./lang.js";

const views = ["connecting", "waiting", "paused", "opens", "admitted", "soldout", "closed", "off"];
let first = 0, countdown = null, opensAt = 0;

// view shows the section name and hides the others (the human check belongs to getting a place).
export function view(name) {
  for (const s of views) $(s).hidden = s !== name;
  if (name !== "connecting") $("human").hidden = true;
}

// steady says whether the view shown is one the stream only repeats now and then (before the opening, sold out,
// paused), rather than one it updates every few seconds.
export function steady() { return ["opens", "soldout", "paused"].some((v) => !$(v).hidden); }

// say announces msg in the alert; nothing clears it.
export function say(msg) { if (msg) showError($("error"), msg); else clearError($("error")); }
export function reconnecting() { say(t("Reconnecting… your place is kept.")); }

// progress says what getting a place is doing, in the connecting view.
export function progress(title, detail) {
  if ($("connecting-title").textContent !== title) $("connecting-title").textContent = title;
  $("connecting-detail").textContent = detail;
}

// holdNote tells the fan the truth about a locked phone: the page stops while the phone sleeps, and the waiting
// room holds a turn that came meanwhile for the show's turn hold.
export function holdNote(secs) {
  $("hold").textContent = tf("When it is your turn this page takes you to the seats. If your phone locks or you switch apps, this page stops, but your turn is held for {}: come back to this page within that time and you go straight in. Reloading keeps your place.", span(secs));
}

export function clearCountdown() { if (countdown) { clearInterval(countdown); countdown = null; } }

// showPosition shows the fan's place in line, and how far they have come since the longest line they saw.
export function showPosition(p) {
  clearCountdown();
  view("waiting");
  if (!first || p.position > first) first = p.position;
  $("position").textContent = p.position.toLocaleString();
  const pct = Math.round(100 * (1 - (p.position - 1) / first));
  $("progress").style.width = pct + "%";
  $("bar").setAttribute("aria-valuenow", String(pct));
  $("eta").textContent = p.etaSeconds > 0 ? tf("About {} to go.", fmt(p.etaSeconds)) : t("Almost there…");
}

export function showPaused(p) {
  clearCountdown();
  view("paused");
  $("paused-pos").textContent = p.position ? tf(" (number {})", p.position.toLocaleString()) : "";
}

// showOpens counts down to the opening, locally between the server's (infrequent) waiting events, from the
// server's own ETA.
export function showOpens(p) {
  view("opens");
  if (!p.opensAt) { $("countdown").textContent = t("Opening soon"); return; }
  opensAt = Date.now() + (p.etaSeconds || 0) * 1000;
  const tick = () => {
    const left = (opensAt - Date.now()) / 1000;
    $("countdown").textContent = left > 0 ? tf("Opens in {}", fmt(left)) : t("Opening… drawing places");
  };
  tick();
  if (!countdown) countdown = setInterval(tick, 1000);
}
