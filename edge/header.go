package edge

import (
	"net/http"
	"slices"
	"strings"
)

// hopByHop are the headers that describe one connection, not the message (RFC 9110 section 7.6.1), so a proxy must
// not forward them. Proxy-Connection is not standard but old clients send it.
var hopByHop = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// HopByHopNames returns the names of the headers that are always hop-by-hop, for a proxy to build its own lists of
// headers it does not pass on.
func HopByHopNames() []string { return slices.Clone(hopByHop) }

// HeaderIndex returns the index in names of the header name, in fasthttp's bytes and in any case, or -1, without
// converting it: every header of every proxied request and answer is looked up this way.
func HeaderIndex(name []byte, names []string) int {
	for i, h := range names {
		if len(name) == len(h) && strings.EqualFold(h, string(name)) {
			return i
		}
	}
	return -1
}

// Replayable reports whether a request may be sent to the upstream again after its exchange failed once the request
// may have been written, so that the upstream may have acted on it. It may when acting on it twice is the same as
// acting on it once: the methods RFC 9110 (section 9.2.2) defines as idempotent (GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE), and any request carrying an Idempotency-Key: its sender declares it safe to repeat, and booking carries
// out a hold or a payment once per key, answering a repeat as it answered the first. A POST or PATCH without one
// may have taken effect before the connection broke (a hold placed, a card charged), so the edge answers 502
// rather than guess.
//
// A replay's answer may differ from the one lost (a DELETE of a booking the first attempt cancelled is answered
// 409), as it would if the client had retried the 502 itself; what the upstream does, it does once. A request that
// met a connection the upstream had closed before any of the request was written is no replay: it may go on another
// connection whatever its method, since nothing reached the upstream.
func Replayable(method string, idempotencyKey bool) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return idempotencyKey
}
