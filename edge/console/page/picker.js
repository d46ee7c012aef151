// picker.js: the show selects of the panels that work on one show at a time (bots.js, codes.js, tuning.js), kept
// to the upcoming shows of each round of figures: a show gone is removed, a new one added, the choice kept.
import { el } from "./dom.js";

export function syncShows(select, shows) {
  const ids = new Set(shows.map((f) => f.showId));
  for (const o of [...select.options]) if (!ids.has(o.value)) o.remove();
  const have = new Set([...select.options].map((o) => o.value));
  for (const f of shows) if (!have.has(f.showId)) select.append(el("option", { value: f.showId, text: `${f.title} (${f.showId})` }));
}
