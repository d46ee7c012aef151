// stream.js: follows an event stream where it can get through, and hands over to polling where it cannot: the
// browser has no EventSource, or the stream fails three times without opening, or has not opened after 20 s (a
// network or proxy that refuses event streams or holds their answer back). The seat map, the waitlist panel, the
// console's figures and the waiting room follow theirs with it.

const giveUpAfter = 3; // failures in a row
const openWithin = 20000; // ms
const watchEvery = 2000; // ms between looks at a stream's silence

// follow opens url and calls events[name] for each event of that name, open when the stream (re)opens and error
// on each failure it rides out. Where the stream cannot get through it hands over, once, to polling: to
// fallback(), a page's own; or, given poll, to follow's, which calls poll() until it resolves to nothing. poll
// asks once and resolves to its answer (api.js's {data, headers}: its Retry-After says when to ask next, else
// every ms, 2 s unless told) or to nothing when the page has moved on, which ends the follow; a poll that fails
// is asked again after the error's Retry-After (api.js's ApiError), else every ms. With poll, follow also:
//
//   - polls a stream the server refused (the browser does not retry one), since the poll's answer says why;
//   - given quiet, takes a stream silent for longer than quiet() ms for stalled (open, yet nothing comes: the
//     server's store may be down behind it), polls, and opens the stream again at the first good answer;
//   - given resume, asks once at once when the page comes back (visible again, thawed, restored from the
//     back-forward cache): a phone that slept stopped the page, its stream may have died meanwhile (it is opened
//     again after a good answer, polled after a failed one), and what it follows may have changed;
//   - given polling, polls from the start: the page knows the stream cannot help now.
//
// It returns the follow: close() ends it; polling says whether it polls now; ask(within) asks once, at a random
// moment within `within` ms, unless it polls (its answers do the same), its failure left to the stream: an
// answer can set a cookie, a stream's event cannot, and the random moment spreads out a crowd that all heard the
// same news in the same instant.
export function follow(url, { events, open, error, fallback, poll, quiet, resume, polling, every = 2000 }) {
  let es = null, opening = 0, watch = 0, timer = 0, failures = 0, heard = 0;
  let mode = "stream"; // "stream"; "stalled" (polling until a good answer); "poll" (for good); "closed"
  const f = {
    get polling() { return mode === "stalled" || mode === "poll"; },
    close() {
      mode = "closed";
      shut();
      clearTimeout(timer);
      hook(false);
    },
    ask(within) {
      if (mode !== "stream" || !poll) return;
      setTimeout(() => { if (mode === "stream") poll().then((a) => { if (!a) f.close(); }, () => {}); }, Math.random() * within);
    },
  };

  // shut closes the stream and stops watching it; the mode is the caller's to set.
  const shut = () => {
    clearTimeout(opening);
    clearInterval(watch);
    if (es) { es.close(); es = null; }
  };
  const wait = (secs) => (secs > 0 ? secs * 1000 : every);
  const next = (ms) => {
    clearTimeout(timer);
    timer = setTimeout(ask, ms);
  };
  // ask polls once and carries on from its answer: the next poll, the stream again, or the end.
  const ask = () => {
    if (!f.polling) return;
    poll().then((a) => {
      if (!f.polling) return;
      if (!a) return f.close();
      if (mode === "stalled") return stream();
      next(wait(a.headers ? parseInt(a.headers.get("Retry-After") || "", 10) : 0));
    }, (e) => { if (f.polling) next(wait(e && e.retryAfter)); });
  };
  // handOver gives up on the stream: to the page's fallback, or to polling (m: "poll" for good, or "stalled").
  const handOver = (m) => {
    shut();
    if (!poll) {
      mode = "closed";
      fallback();
      return;
    }
    mode = m;
    next(0);
  };
  const stream = () => {
    mode = "stream";
    failures = 0;
    heard = Date.now();
    es = new EventSource(url);
    const mine = es;
    opening = setTimeout(() => { if (mine.readyState === EventSource.CONNECTING) handOver("poll"); }, openWithin);
    for (const [name, fn] of Object.entries(events)) mine.addEventListener(name, (ev) => { heard = Date.now(); fn(ev); });
    mine.onopen = () => {
      clearTimeout(opening);
      failures = 0;
      if (open) open();
    };
    mine.onerror = () => {
      const refused = mine.readyState === EventSource.CLOSED; // the browser will not retry it
      if (++failures >= giveUpAfter && !poll) return handOver("poll");
      if (refused) clearTimeout(opening);
      if (error) error(mine);
      if (poll && mode === "stream" && (refused || failures >= giveUpAfter)) handOver("poll");
    };
    if (poll && quiet) {
      watch = setInterval(() => {
        if (Date.now() - heard <= quiet()) return;
        if (error) error(mine);
        if (mode === "stream") handOver("stalled");
      }, watchEvery);
    }
  };

  // resumed asks at once for what a page come back may have missed.
  const resumed = () => {
    if (mode === "closed") return;
    heard = Date.now(); // the silence was the page's own, not the stream's
    if (f.polling) return next(0);
    poll().then((a) => {
      if (mode !== "stream") return;
      if (!a) return f.close();
      if (!es || es.readyState === EventSource.CLOSED) { shut(); stream(); }
    }, () => { if (mode === "stream") handOver("stalled"); });
  };
  const visible = () => { if (document.visibilityState === "visible") resumed(); };
  const restored = (e) => { if (e.persisted) resumed(); };
  function hook(on) {
    if (!poll || !resume) return;
    const m = on ? "addEventListener" : "removeEventListener";
    document[m]("visibilitychange", visible);
    document[m]("resume", resumed); // Page Lifecycle: a frozen page thawed
    window[m]("pageshow", restored);
  }

  hook(true);
  if (!window.EventSource || (poll && polling)) handOver("poll");
  else stream();
  return f;
}
