// lang.js: the waiting room's words in the language the page was rendered in (pagelang.go). The <html> element
// carries the page's texts, keyed by the English (none for English), and a text missing there is said in English.

let texts = {};
try { texts = JSON.parse(document.documentElement.getAttribute("data-texts") || "{}") || {}; } catch { texts = {}; }

// t is the page's text for the English s.
export function t(s) { return texts[s] || s; }

// tf is t with "{}" filled with v.
export function tf(s, v) { return t(s).replace("{}", v); }

// fmt says a wait on a clock: "45 s", "3 min 20 s", "1 h 5 min".
export function fmt(secs) {
  secs = Math.max(0, Math.round(secs));
  if (secs < 60) return secs + " s";
  const m = Math.floor(secs / 60);
  if (m < 60) return m + " min " + (secs % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

// span says a duration in words, rounded down to what a fan can act on: "10 minutes", "90 seconds".
export function span(secs) {
  secs = Math.max(0, Math.floor(secs));
  if (secs < 120) return secs === 1 ? tf("{} second", secs) : tf("{} seconds", secs);
  const m = Math.floor(secs / 60);
  if (m < 120) return tf("{} minutes", m);
  return tf("{} hours", Math.floor(m / 60));
}
