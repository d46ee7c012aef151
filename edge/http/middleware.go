package http

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/edge"
)

// HeaderRequestID carries the request id to the upstream and back to the client.
const HeaderRequestID = "X-Request-Id"

// localState keys the request's state among fiber's locals.
const localState = "edge.state"

// state is what the middleware learns about a request once and every later step reads: one value per request,
// where a local each (the id, the address, the user) cost an allocation apiece to box.
type state struct {
	id     string
	peer   netip.Addr  // the connection's address
	client netip.Addr  // the client's, by the trusted-proxy policy
	user   string      // the verified user token's subject, or ""
	route  *edge.Route // the route of the path as sent, once routeOf has matched it
	class  edge.Class  // the request's class, once classOf has found it (classKnown)

	classKnown bool
}

// classOf is the request's route class, found once: the rate limits and the metrics both ask.
func classOf(c *fiber.Ctx) edge.Class {
	st := stateOf(c)
	if !st.classKnown {
		st.class, st.classKnown = edge.Classify(c.Method(), c.Path()), true
	}
	return st.class
}

// routeOf is the route of the request's path as sent, matched once: the gate and the proxy's sharing both ask.
func routeOf(c *fiber.Ctx) edge.Route {
	st := stateOf(c)
	if st.route == nil {
		r := edge.Match(c.Method(), string(c.Request().URI().PathOriginal()))
		st.route = &r
	}
	return *st.route
}

// stateOf is the request's state, made empty for a request identify has not seen (a handler tested alone).
func stateOf(c *fiber.Ctx) *state {
	if st, ok := c.Locals(localState).(*state); ok {
		return st
	}
	st := &state{}
	c.Locals(localState, st)
	return st
}

// RequestID returns the id of the request: the client's X-Request-Id when it looks like one, else a fresh one.
func RequestID(c *fiber.Ctx) string { return stateOf(c).id }

// ClientAddr returns the client's address as decided by the trusted-proxy policy.
func ClientAddr(c *fiber.Ctx) netip.Addr { return stateOf(c).client }

// identify gives every request its id and client address before anything else runs, so logs, rate limits and
// the upstream all see the same ones.
func identify(trusted edge.TrustedProxies) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := stateOf(c)
		if id := c.Request().Header.Peek(HeaderRequestID); validRequestID(id) {
			st.id = string(id) // a copy: fiber reuses the buffer
		} else {
			st.id = newRequestID()
		}
		c.Set(HeaderRequestID, st.id)
		st.peer = peerAddr(c)
		var xff []string
		if trusted.Trusts(st.peer) { // anyone else's X-Forwarded-For is not read (ClientAddr ignores it)
			c.Request().Header.VisitAll(func(k, v []byte) {
				if string(k) == "X-Forwarded-For" {
					xff = append(xff, string(v))
				}
			})
		}
		st.client = trusted.ClientAddr(st.peer, xff)
		return c.Next()
	}
}

// newRequestID returns a random (version 4) UUID. Request ids correlate logs and need to be unique, not secret,
// so the bits come from math/rand/v2's per-thread generator: crypto/rand's, behind uuid.NewString, cost the edge
// a measurable share of a proxied request's CPU.
func newRequestID() string {
	hi, lo := rand.Uint64(), rand.Uint64()
	hi = hi&^(0xf<<12) | 0x4<<12 // version 4
	lo = lo&^(0xc<<60) | 0x8<<60 // variant 10 (RFC 9562)
	var b [36]byte
	const digits = "0123456789abcdef"
	j := 0
	for i := 0; i < 16; i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		w := hi
		if i >= 8 {
			w = lo
		}
		v := byte(w >> (56 - 8*(i%8)))
		b[j], b[j+1] = digits[v>>4], digits[v&0xf]
		j += 2
	}
	return string(b[:])
}

// validRequestID accepts ids a client or CDN may reasonably send: short, and of characters safe in logs.
func validRequestID(id []byte) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' ||
			b == '.' || b == ':') {
			return false
		}
	}
	return true
}

func peerAddr(c *fiber.Ctx) netip.Addr {
	if ta, ok := c.Context().RemoteAddr().(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

// observe counts every request by route class, method and status, including those answered by the error handler.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// Render the error now so the status counted is the status sent.
		if herr := s.handleError(c, err); herr != nil {
			return herr
		}
	}
	s.metrics.request(classOf(c), methodLabel(c.Method()), c.Response().StatusCode(),
		time.Since(start).Seconds())
	return nil
}

// methodLabel bounds the method label's values: clients may send any token as a method. It returns constants,
// never m itself: fiber's strings alias buffers it reuses, and Prometheus keeps label values.
func methodLabel(m string) string {
	switch m {
	case fiber.MethodGet:
		return fiber.MethodGet
	case fiber.MethodHead:
		return fiber.MethodHead
	case fiber.MethodPost:
		return fiber.MethodPost
	case fiber.MethodPut:
		return fiber.MethodPut
	case fiber.MethodPatch:
		return fiber.MethodPatch
	case fiber.MethodDelete:
		return fiber.MethodDelete
	case fiber.MethodOptions:
		return fiber.MethodOptions
	}
	return "OTHER"
}
