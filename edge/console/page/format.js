// format.js: how the console's panels write times and waits (the toolkit's ui.js has money and counts).

// utc reads a datetime-local input's value as UTC (the console's times are all UTC).
export const utc = (v) => new Date(`${v}Z`).toISOString();

// wait is a queue's wait in words.
export const wait = (s) => (s <= 0 ? "none in line" : s < 90 ? `${s} s` : `${Math.round(s / 60)} min`);
