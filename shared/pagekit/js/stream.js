// stream.js: follows an event stream where it can get through, and hands over to polling where it cannot: the
// browser has no EventSource, or the stream fails three times without opening, or has not opened after 20 s (a
// network or proxy that refuses event streams or holds their answer back). The seat map and the waitlist panel
// follow theirs with it.

// follow opens url and calls events[name] for each event of that name, open when the stream (re)opens and error
// on each failure it rides out; fallback, once, when the page should poll instead. It returns the EventSource, or
// null when there is none.
export function follow(url, { events, open, error, fallback }) {
  if (!window.EventSource) {
    fallback();
    return null;
  }
  const es = new EventSource(url);
  let failures = 0;
  const giveUp = () => {
    clearTimeout(opening);
    es.close();
    fallback();
  };
  const opening = setTimeout(() => { if (es.readyState === EventSource.CONNECTING) giveUp(); }, 20000);
  for (const [name, fn] of Object.entries(events)) es.addEventListener(name, fn);
  es.onopen = () => {
    clearTimeout(opening);
    failures = 0;
    if (open) open();
  };
  es.onerror = () => {
    if (++failures >= 3) return giveUp();
    if (es.readyState === EventSource.CLOSED) clearTimeout(opening); // refused: the browser will not retry it
    if (error) error(es);
  };
  return es;
}
