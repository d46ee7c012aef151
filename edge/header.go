package edge

import (
	"net/http"
	"net/textproto"
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

// RemoveHopByHop deletes from h the hop-by-hop headers and every header the Connection header names.
func RemoveHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// IsHopByHop reports whether the canonical header name is always hop-by-hop.
func IsHopByHop(name string) bool {
	for _, h := range hopByHop {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
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

// Replayable reports whether a request may be sent to the upstream a second time after a failure: only methods
// that are safe or idempotent by definition. A POST may have taken effect before the connection broke (a hold
// placed, a card charged), so the edge answers 502 rather than guess.
func Replayable(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}
