// ui.js: small helpers every page shares: formatting money and times, and announcing messages.

// money formats an amount in minor units: money(45000, "INR") is "450.00 INR".
export function money(amount, currency) {
  return (amount / 100).toFixed(2) + " " + currency;
}

// localTimes rewrites every <time datetime> under root in the reader's own time zone (the server renders UTC).
export function localTimes(root = document) {
  const f = new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit" });
  for (const t of root.querySelectorAll("time[datetime]")) {
    const d = new Date(t.dateTime);
    if (!isNaN(d)) t.textContent = f.format(d);
  }
}

// showError puts err's message in an alert region (role="alert" in the markup), so screen readers announce it.
export function showError(el, err) {
  el.textContent = typeof err === "string" ? err : (err && err.message) || "Something went wrong.";
  el.hidden = false;
}

export function clearError(el) {
  el.textContent = "";
  el.hidden = true;
}

// flash carries one message across a navigation in sessionStorage (never a token: only text for the next page).
export function flash(text) {
  try { sessionStorage.setItem("fs_flash", text); } catch { /* storage off: the message is lost, not the page */ }
}

export function takeFlash() {
  try {
    const t = sessionStorage.getItem("fs_flash");
    sessionStorage.removeItem("fs_flash");
    return t;
  } catch { return null; }
}

// count formats a figure with thousands separators (12,480); a missing one is 0.
export function count(n) {
  return Number(n || 0).toLocaleString("en");
}
