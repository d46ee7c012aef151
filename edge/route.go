package edge

import (
	"net/http"
	"net/netip"
	"strings"
)

// Class groups routes that share a rate limit.
type Class int

// Route classes. The waiting room has its own, gentler class: a flash crowd joins it all at once, and turning a
// fan away there is the one thing the queue exists to avoid.
const (
	ClassAPI   Class = iota // the booking API and pages behind the edge
	ClassQueue              // the waiting room: /queue/..., its JWKS
	ClassOps                // /healthz, /readyz: never limited
	// ClassStatic: the pages' stylesheets and scripts (/assets/..., the waiting room's /queue/assets/...) and the
	// favicon: immutable files, cached by browsers and CDNs, never limited. A page load fetches several at once,
	// and counting them against the fan's API budget turned the next page or API call away with 429.
	ClassStatic
)

func (c Class) String() string {
	switch c {
	case ClassQueue:
		return "queue"
	case ClassOps:
		return "ops"
	case ClassStatic:
		return "static"
	}
	return "api"
}

// Guard says how the admission gate treats a route.
type Guard int

// Guards, named for what the gate does for the route.
const (
	Ungated                  Guard = iota // not gated
	RequirePathShowAdmission              // an admission to the show whose id is a path segment
	RequireBodyShowAdmission              // an admission to the show in the JSON body's "showId" (a hold)
	// VerifyTokenIfSent: the show is not in the request (pay): a token sent is verified as a CDN could; the
	// show match and revocation are booking's.
	VerifyTokenIfSent
)

// Route is what the edge's policies need to know about a request.
type Route struct {
	Class  Class
	Guard  Guard
	ShowID string // for RequirePathShowAdmission
	// Write marks a route that changes state for a user, which must carry a user token when gated.
	Write bool
	// Shared marks a read whose successful answer is the same for every caller (the seat map's JSON): identical
	// requests in flight at once may share one upstream fetch, once each has passed the gate on its own.
	Shared bool
}

// Classify returns the rate-limit class of a request.
func Classify(method, path string) Class {
	p := strings.ToLower(path)
	switch {
	case p == "/healthz" || p == "/readyz":
		return ClassOps
	case (method == http.MethodGet || method == http.MethodHead) && (strings.HasPrefix(p, "/assets/") ||
		queueAsset(p) || p == "/favicon.ico"):
		return ClassStatic
	case p == "/queue" || strings.HasPrefix(p, "/queue/") || p == "/.well-known/jwks.json":
		return ClassQueue
	}
	return ClassAPI
}

// queueAsset tells the waiting room's files, /queue/assets/{version}/{name}, from a show's routes: a show may be
// called "assets", and its /queue/assets/status is the queue's, limited as such.
func queueAsset(p string) bool {
	return strings.HasPrefix(p, "/queue/assets/") && strings.Count(strings.TrimRight(p, "/"), "/") == 4
}

// Match returns the route of a request. path is matched the way fiber routes it: case-insensitively and
// ignoring trailing slashes, so no spelling of a protected path reaches booking's handler without the gate. The
// caller should match both the raw and the decoded path and gate if either is gated.
func Match(method, path string) Route {
	r := Route{Class: Classify(method, path)}
	// The segments, as strings.Split would give them; only the first few are ever compared, so they are kept in
	// an array (every request is matched, and the slice was an allocation each) and n counts them all.
	var seg [6]string
	n := 0
	for rest := strings.TrimPrefix(strings.TrimRight(path, "/"), "/"); ; {
		s, after, more := strings.Cut(rest, "/")
		if n < len(seg) {
			seg[n] = s
		}
		n++
		if !more {
			break
		}
		rest = after
	}
	eq := func(i int, s string) bool { return i < n && i < len(seg) && strings.EqualFold(seg[i], s) }
	read := method == http.MethodGet || method == http.MethodHead
	switch {
	case read && n == 2 && eq(0, "shows") && seg[1] != "":
		// The seat-map page.
		r.Guard, r.ShowID = RequirePathShowAdmission, seg[1]
	case read && eq(0, "api") && eq(1, "v1") && eq(2, "shows") && n >= 5 && seg[3] != "" && eq(4, "seats") &&
		(n == 5 || (n == 6 && eq(5, "stream"))):
		r.Guard, r.ShowID, r.Shared = RequirePathShowAdmission, seg[3], method == http.MethodGet && n == 5
	case method == http.MethodPost && n == 4 && eq(0, "api") && eq(1, "v1") && eq(2, "bookings") &&
		eq(3, "hold"):
		r.Guard, r.Write = RequireBodyShowAdmission, true
	case method == http.MethodPost && n == 5 && eq(0, "api") && eq(1, "v1") && eq(2, "bookings") &&
		seg[3] != "" && eq(4, "pay"):
		r.Guard, r.Write = VerifyTokenIfSent, true
	case method == http.MethodPost && n == 5 && eq(0, "api") && eq(1, "v1") && eq(2, "resale") &&
		seg[3] != "" && eq(4, "buy"):
		// Buying on the exchange is a hold of the listing's seat; its show is the listing's, which booking reads.
		r.Guard, r.Write = VerifyTokenIfSent, true
	}
	return r
}

// LimitKey is the rate-limit key of a client address: the address itself for IPv4, its /64 for IPv6, since one
// subscriber is usually given a whole /64 and could otherwise rotate through it.
func LimitKey(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}
