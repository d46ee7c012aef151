// The routes the edge gates, as the edge matches them (edge/route.go): case-insensitively, ignoring trailing
// slashes, on the path as sent and on its decoded form, so no spelling of a protected route slips past.

// Guard says how a route is gated.
export const Guard = Object.freeze({
  OPEN: "open", // not gated
  SHOW_IN_PATH: "show-in-path", // the seat-map page, the seat map and its stream: the show is a path segment
  SHOW_IN_BODY: "show-in-body", // a hold: the show is the JSON body's "showId"
  TOKEN_IF_SENT: "token-if-sent", // paying a booking: a token sent is verified; its show is booking's to match
});

function matchOne(method, path) {
  const seg = path.replace(/\/+$/, "").replace(/^\//, "").split("/");
  const eq = (i, s) => i < seg.length && seg[i].toLowerCase() === s;
  const read = method === "GET" || method === "HEAD";
  if (read && seg.length === 2 && eq(0, "shows") && seg[1] !== "") {
    return { guard: Guard.SHOW_IN_PATH, show: seg[1], page: true };
  }
  if (read && eq(0, "api") && eq(1, "v1") && eq(2, "shows") && seg.length >= 5 && seg[3] !== "" && eq(4, "seats") &&
      (seg.length === 5 || (seg.length === 6 && eq(5, "stream")))) {
    return { guard: Guard.SHOW_IN_PATH, show: seg[3], page: false };
  }
  if (method === "POST" && seg.length === 4 && eq(0, "api") && eq(1, "v1") && eq(2, "bookings") && eq(3, "hold")) {
    return { guard: Guard.SHOW_IN_BODY };
  }
  if (method === "POST" && seg.length === 5 && eq(0, "api") && eq(1, "v1") && eq(2, "bookings") && seg[3] !== "" &&
      eq(4, "pay")) {
    return { guard: Guard.TOKEN_IF_SENT };
  }
  return { guard: Guard.OPEN };
}

// match returns the gate's view of a request: { guard, show?, page? }. pathname is the URL's path as the
// runtime parsed it (still percent-encoded); a path that does not decode is matched as sent only.
export function match(method, pathname) {
  const r = matchOne(method, pathname);
  if (r.guard !== Guard.OPEN) return r;
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return r;
  }
  return matchOne(method, decoded);
}
