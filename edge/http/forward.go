package http

import (
	"bytes"
	"fmt"
	"net/netip"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/net/http/httpguts"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/shared/admission"
)

// What crosses the proxy, whichever transport carries the request (fastproxy.go's HostClient or proxy.go's
// Transport): prepare makes the client's request the upstream's in its headers, once, and each transport then only
// points it at the upstream and sends it, as Caddy's reverse proxy prepares a request before handing it to any of its
// transports. The same lists decide which of the upstream's headers reach the client (forwardAnswer, incoming), and
// one rule (edge.Replayable, applied by replayAgain) decides when a failed exchange may be tried again.

// prepare makes the client's request the upstream's in its headers, in place: hop-by-hop headers and those the
// Connection header names go; X-Forwarded-For is the peer's address, after a trusted proxy's own list;
// X-Forwarded-Proto and -Host are a trusted proxy's, or else this connection's; the request id is set; the protocol
// is HTTP/1.1, whose connection the upstream keeps to itself. It works on fasthttp's bytes throughout: every request
// passes here, and string conversions, canonicalised names and joined values were most of what the edge allocated
// per request.
//
// The request is changed only once every header is known valid. undo records what the server reads after the
// handler (the protocol, Connection: close), for the caller to put back with undo.apply once the request has
// gone upstream.
func (p *Proxy) prepare(c *fiber.Ctx, undo *outgoingUndo) error {
	fr := c.Request()
	// One pass finds what must go (hop-by-hop headers, those the Connection header names, those set below) and
	// the forwarding headers a trusted proxy may have set.
	st := stateOf(c)
	trusted := p.trusted.Trusts(st.peer)
	var named [][]byte
	var drop uint32      // bit i: outgoingDropped[i] (at most 32 names) is present
	var xffBuf [128]byte // on the stack: SetBytesV copies it
	xff := xffBuf[:0]
	// A trusted proxy's X-Forwarded-Proto and -Host, copied: their headers go before the new ones are set.
	var protoBuf [16]byte
	var hostBuf [128]byte
	proto, host := protoBuf[:0], hostBuf[:0]
	for k, v := range fr.Header.All() {
		if !validHeaderName(k) || !validHeaderValue(v) {
			return fmt.Errorf("%w: header %q", edge.ErrBadRequest, k)
		}
		i := edge.HeaderIndex(k, outgoingDropped)
		if i < 0 {
			continue
		}
		drop |= 1 << i
		switch outgoingDropped[i] {
		case "Connection":
			named = connectionTokens(named, v)
		case "X-Forwarded-For":
			if trusted {
				xff = append(append(xff, v...), ", "...)
			}
		case "X-Forwarded-Proto":
			if trusted && len(proto) == 0 {
				proto = append(proto, v...)
			}
		case "X-Forwarded-Host":
			if trusted && len(host) == 0 {
				host = append(host, v...)
			}
		}
	}
	xff = appendPeer(xff, c, st.peer)
	if len(proto) == 0 {
		proto = append(proto, "http"...)
		if c.Context().IsTLS() {
			proto = append(proto[:0], "https"...)
		}
	}
	if len(host) == 0 {
		host = append(host, fr.Header.Host()...) // the client's Host, before a transport sets the upstream's
	}

	undo.closeReq = fr.Header.ConnectionClose()
	for _, n := range named { // before Connection goes: they point into its value
		fr.Header.DelBytes(n)
	}
	for i, name := range outgoingDropped {
		// Host and Content-Length are the message's own: each transport sets the upstream's Host, and the
		// length is the body's.
		if drop&(1<<i) != 0 && name != "Host" && name != "Content-Length" {
			fr.Header.Del(name)
		}
	}
	fr.Header.ResetConnectionClose()
	fr.Header.SetNoDefaultContentType(true)
	if !fr.Header.IsHTTP11() {
		undo.protocol = string(fr.Header.Protocol())
		fr.Header.SetProtocol("HTTP/1.1")
	}
	fr.Header.SetBytesV("X-Forwarded-For", xff)
	fr.Header.SetBytesV("X-Forwarded-Proto", proto)
	fr.Header.SetBytesV("X-Forwarded-Host", host)
	fr.Header.Set(HeaderRequestID, st.id)
	if st.client.IsValid() {
		var addr [48]byte
		fr.Header.SetBytesV(admission.ClientHeader, st.client.AppendTo(addr[:0]))
	}
	return nil
}

// replayAgain reports whether an exchange that failed on its first try (attempt 0) is tried once more, after the
// request may have reached the upstream: the request is replayable (edge.Replayable, on the method and
// Idempotency-Key the client sent) and the upstream did not time out (504: a slow upstream is not helped by a second
// request, which would also start the deadline again). The body never stands in the way: it is whole in the edge's
// memory (fiber reads it before any handler runs; the server does not stream request bodies), so it is sent again
// as it was.
func replayAgain(c *fiber.Ctx, attempt int, timedOut bool) bool {
	return attempt == 0 && !timedOut && replayable(c)
}

// replayable is edge.Replayable of the request as the client sent it.
func replayable(c *fiber.Ctx) bool {
	return edge.Replayable(c.Method(), len(c.Request().Header.Peek("Idempotency-Key")) > 0)
}

// outgoingUndo is what prepare and fastTarget changed in the client's request that the server or a later handler
// reads: apply puts it back.
type outgoingUndo struct {
	protocol string // the client's protocol, when not HTTP/1.1 (the upstream's always is)
	closeReq bool   // the client asked for Connection: close

	// Set by fastTarget alone: the Transport path leaves the client's target and Host as they are.
	targeted   bool   // host, target and rawPath hold the client's
	host       saved  // the client's Host
	target     saved  // the client's request target, as sent (fasthttp writes the upstream's over it)
	retargeted bool   // the upstream's target is not the client's: the URI must be parsed again
	rawPath    bool   // the URI's DisablePathNormalizing, which the HostClient sets
	scheme     string // the URI's scheme, when the upstream's differed
}

func (u *outgoingUndo) apply(c *fiber.Ctx) {
	req := c.Request()
	if u.protocol != "" {
		req.Header.SetProtocol(u.protocol)
	}
	if u.closeReq {
		req.Header.SetConnectionClose()
	}
	if !u.targeted {
		return
	}
	req.UseHostHeader = false
	req.Header.SetHostBytes(u.host.bytes())
	req.URI().DisablePathNormalizing = u.rawPath
	if u.retargeted {
		req.SetRequestURIBytes(u.target.bytes())
		req.URI() // parsed again into the buffers fiber's path was read from
	} else {
		req.Header.SetRequestURIBytes(u.target.bytes()) // the URI, parsed from it, is as it was
		if u.scheme != "" {
			req.URI().SetScheme(u.scheme)
		}
	}
}

// saved is a copy of a value fasthttp will write over: in place when it is short, as a host and most targets are,
// so that every request does not allocate one.
type saved struct {
	buf  [128]byte
	n    int
	long []byte
}

func (s *saved) set(b []byte) {
	s.n, s.long = copy(s.buf[:], b), nil
	if len(b) > len(s.buf) {
		s.long = bytes.Clone(b)
	}
}

func (s *saved) bytes() []byte {
	if s.long != nil {
		return s.long
	}
	return s.buf[:s.n]
}

// appendPeer appends the connection's address as net.IP writes it.
func appendPeer(b []byte, c *fiber.Ctx, peer netip.Addr) []byte {
	if !peer.IsValid() {
		return append(b, c.Context().RemoteIP().String()...)
	}
	return peer.AppendTo(b)
}

// outgoingDropped are the client's headers left out of the upstream request: hop-by-hop ones, those prepare sets
// itself, those the request carries (Host, Content-Length), and Expect, which fasthttp has already acted on.
// One list, so each header is looked up once.
var outgoingDropped = append(edge.HopByHopNames(), "Host", "Content-Length", "Expect", HeaderRequestID,
	"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", admission.ClientHeader)

// incomingDropped are the upstream's headers left out of the answer: hop-by-hop ones, those fasthttp writes itself
// (Content-Length, Date, Server), and the request id, which is already set.
var incomingDropped = append(edge.HopByHopNames(), "Content-Length", "Date", "Server", HeaderRequestID)

// validHeaderName is httpguts.ValidHeaderFieldName on bytes: a non-empty token.
func validHeaderName(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, b := range k {
		if b >= utf8.RuneSelf || !httpguts.IsTokenRune(rune(b)) {
			return false
		}
	}
	return true
}

// validHeaderValue is httpguts.ValidHeaderFieldValue on bytes: no control character but a tab.
func validHeaderValue(v []byte) bool {
	for _, b := range v {
		if b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// connectionTokens appends to named the header names a Connection header's value v lists.
func connectionTokens(named [][]byte, v []byte) [][]byte {
	for n := range bytes.SplitSeq(v, []byte(",")) {
		if n = bytes.TrimSpace(n); len(n) > 0 {
			named = append(named, n)
		}
	}
	return named
}

// dropped reports whether a header does not cross the proxy: it is on the list, or the message's Connection header
// names it.
func dropped(name []byte, list []string, named [][]byte) bool {
	if edge.HeaderIndex(name, list) >= 0 {
		return true
	}
	for _, n := range named {
		if bytes.EqualFold(n, name) {
			return true
		}
	}
	return false
}
