package http

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"

	"github.com/flashseat/flashseat/edge"
)

// The fast path forwards ordinary requests (a hold, a seat map, a search) with fasthttp's HostClient, which
// reuses its request, response and buffers, where the net/http Transport costs two goroutines' hand-offs, a
// header map and a context per exchange: under a hold storm the Transport path spent more CPU than the fiber
// server itself. Anything that may answer with an event stream keeps the Transport path (see Proxy): the
// HostClient applies one read deadline to headers and body alike and buffers the whole body, so it only carries
// answers that are complete within the exchange's bounds.
//
// The fast path keeps the Transport path's policies: the same target URL and header hygiene, 504 on timeout
// (response headers and body within HeaderTimeout of sending, the whole within Timeout), 502 otherwise, and a
// request is sent a second time only when replayable (fasthttp would also resend a POST whose connection closed
// before the first response byte; MaxIdemponentCallAttempts 1 turns all of its own retries off).

// maxFastBody bounds an upstream body buffered by the fast path; a larger one is a 502.
const maxFastBody = 64 << 20

// maxStaleConns bounds the pooled connections one request may find closed (after an upstream restart) before it
// is answered 502.
const maxStaleConns = 64

func newHostClient(cfg ProxyConfig) *fasthttp.HostClient {
	t := cfg.Target
	addr := t.Host
	if t.Port() == "" {
		if t.Scheme == "https" {
			addr = net.JoinHostPort(t.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(t.Hostname(), "80")
		}
	}
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	return &fasthttp.HostClient{
		Addr:  addr,
		IsTLS: t.Scheme == "https",
		Dial: func(addr string) (net.Conn, error) {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return nil, err
			}
			return newCheckedConn(c), nil
		},
		MaxConns:                  1 << 16, // like the Transport: no bound on connections in use
		MaxIdleConnDuration:       cfg.IdleConnTimeout,
		ReadTimeout:               cfg.HeaderTimeout,
		MaxIdemponentCallAttempts: 1,
		NoDefaultUserAgentHeader:  true,
		DisablePathNormalizing:    true,
		ReadBufferSize:            16 << 10, // response headers (cookies) up to this size
		MaxResponseBodySize:       maxFastBody,
	}
}

// mayStream reports whether the upstream may answer the request with an event stream, which must take the
// Transport path: the client asks for one, or the path, as sent or decoded, mentions "stream" in any case (booking's
// seat stream; a broad match, since the Transport path is always correct, only slower).
func mayStream(c *fiber.Ctx) bool {
	u := c.Request().URI()
	return containsFold(c.Request().Header.Peek(fiber.HeaderAccept), "event-stream") ||
		containsFold(u.Path(), "stream") || containsFold(u.PathOriginal(), "stream")
}

// containsFold reports whether s contains the lower-case ASCII word, in any case, without allocating.
func containsFold(s []byte, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		j := 0
		for ; j < len(word); j++ {
			b := s[i+j]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			if b != word[j] {
				break
			}
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

// handleFast forwards a request that cannot be answered with an event stream.
func (p *Proxy) handleFast(c *fiber.Ctx) error {
	_, err := p.forwardFast(c, false)
	return err
}

// forwardFast forwards the request and writes the answer; with share set, it also returns the answer for other
// requests when it may be shared (see sharedAnswer), else nil.
//
// The client's request is sent as it is, changed in place (fastOutgoing), and the upstream's answer is read into
// the client's response and cleaned there (fastRespond), as the least a proxy can do: no header or body is copied
// to a second message and back. What the server and fiber read after the handler (the request's protocol and
// Connection: close, its target and Host) is put back once the exchange is over.
func (p *Proxy) forwardFast(c *fiber.Ctx, share bool) (*sharedAnswer, error) {
	req, resp := c.Request(), c.Response()
	// Replayed as the Transport replays: only safe methods, or a request carrying an Idempotency-Key.
	replayable := c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead ||
		c.Method() == fiber.MethodOptions || c.Method() == fiber.MethodTrace ||
		len(req.Header.Peek("Idempotency-Key")) > 0
	var undo outgoingUndo
	if err := p.fastOutgoing(c, &undo); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(p.cfg.Timeout)
	var err error
	for attempt, stale := 0, 0; ; {
		err = p.fast.DoDeadline(req, resp, deadline)
		if errors.Is(err, errStaleConn) && stale < maxStaleConns {
			stale++ // nothing was written: try the next pooled connection, or a new one
			continue
		}
		if err == nil || !replayable || attempt > 0 || fastTimeout(err) {
			break
		}
		// A replayable request met a broken pooled connection: send it once more, as the Transport would.
		attempt++
	}
	undo.apply(c)
	if err != nil {
		// Whatever of the upstream's answer was read into the response, the error handler resets it.
		if fastTimeout(err) {
			err = fmt.Errorf("%w: %v", edge.ErrUpstreamTimeout, err)
		}
		err = upstreamError(err)
		p.metrics.upstreamErrors.WithLabelValues(upstreamReason(err)).Inc()
		return nil, err
	}
	fastRespond(c)
	if !share {
		return nil, nil
	}
	ans := shareable(resp)
	if ans != nil {
		ans.body = bytes.Clone(resp.Body()) // the one copy every sharing request's answer points at
	}
	return ans, nil
}

func fastTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		(errors.As(err, &t) && t.Timeout())
}

// outgoingUndo is what fastOutgoing changed in the client's request that the server or a later handler reads:
// apply puts it back.
type outgoingUndo struct {
	host       saved  // the client's Host
	target     saved  // the client's request target, as sent (fasthttp writes the upstream's over it)
	retargeted bool   // the upstream's target is not the client's: the URI must be parsed again
	rawPath    bool   // the URI's DisablePathNormalizing, which the HostClient sets
	scheme     string // the URI's scheme, when the upstream's differed
	protocol   string // the client's protocol, when not HTTP/1.1 (the upstream's always is)
	closeReq   bool   // the client asked for Connection: close
}

func (u *outgoingUndo) apply(c *fiber.Ctx) {
	req := c.Request()
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
	if u.protocol != "" {
		req.Header.SetProtocol(u.protocol)
	}
	if u.closeReq {
		req.Header.SetConnectionClose()
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

// fastOutgoing makes the client's request the upstream's, in place, as outgoing builds the Transport's request:
// same method, target, headers and body, minus hop-by-hop headers and those the Connection header names, plus
// X-Forwarded-* and the request id. It works on fasthttp's bytes throughout: every request passes here, and
// string conversions, canonicalised names and joined values were most of what the edge allocated per request.
func (p *Proxy) fastOutgoing(c *fiber.Ctx, undo *outgoingUndo) error {
	fr := c.Request()
	// One pass finds what must go (hop-by-hop headers, those the Connection header names, those set below) and
	// the forwarding headers a trusted proxy may have set; the request is changed only once it is known valid.
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

	if err := p.fastTarget(c, undo); err != nil {
		return err
	}
	undo.closeReq = fr.Header.ConnectionClose()
	for _, n := range named { // before Connection goes: they point into its value
		fr.Header.DelBytes(n)
	}
	for i, name := range outgoingDropped {
		// Host and Content-Length are the message's own, set by fastTarget and by fasthttp from the body.
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
	if len(proto) == 0 {
		proto = append(proto, "http"...)
		if c.Context().IsTLS() {
			proto = append(proto[:0], "https"...)
		}
	}
	fr.Header.SetBytesV("X-Forwarded-Proto", proto)
	if len(host) == 0 {
		host = undo.host.bytes()
	}
	fr.Header.SetBytesV("X-Forwarded-Host", host)
	fr.Header.Set(HeaderRequestID, st.id)
	return nil
}

// fastTarget sets the request's upstream target as target builds it: the path as the client sent it, under the
// upstream's path, with the query as sent, and the upstream's Host. A path of characters that url.URL writes back
// unchanged, under an upstream without a path (booking's URL), is that target already; anything else is built by
// target. undo records the client's Host and target.
func (p *Proxy) fastTarget(c *fiber.Ctx, undo *outgoingUndo) error {
	fr := c.Request()
	u := fr.URI()
	path := u.PathOriginal()
	undo.target.set(fr.Header.RequestURI())
	undo.rawPath = u.DisablePathNormalizing
	if !(p.cfg.Target.Path == "" && p.cfg.Target.RawPath == "" && len(path) > 0 && path[0] == '/' && plainPath(path)) {
		out, err := p.target(c)
		if err != nil {
			return err
		}
		undo.retargeted = true
		fr.SetRequestURI(out.RequestURI())
		u = fr.URI()
	}
	undo.host.set(fr.Header.Host())
	if s := p.cfg.Target.Scheme; string(u.Scheme()) != s {
		undo.scheme = string(u.Scheme())
		u.SetScheme(s)
	}
	// The Host header is the upstream's, and the URI's host (fiber's Hostname) stays the client's.
	fr.UseHostHeader = true
	fr.Header.SetHost(p.cfg.Target.Host)
	return nil
}

// plainPath reports whether url.URL would give back path exactly as it is: only characters a path may carry
// unescaped (RFC 3986's pchar and "/"), and no percent sign, whose decoding target checks.
func plainPath(path []byte) bool {
	for _, b := range path {
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case bytes.IndexByte([]byte("-._~!$&'()*+,;=:@/"), b) >= 0:
		default:
			return false
		}
	}
	return true
}

// appendPeer appends the connection's address as net.IP writes it.
func appendPeer(b []byte, c *fiber.Ctx, peer netip.Addr) []byte {
	if !peer.IsValid() {
		return append(b, c.Context().RemoteIP().String()...)
	}
	return peer.AppendTo(b)
}

// outgoingDropped are the client's headers left out of the upstream request: hop-by-hop ones, those fastOutgoing
// sets itself, those the request carries (Host, Content-Length), and Expect, which fasthttp has already acted on.
// One list, so each header is looked up once.
var outgoingDropped = append(edge.HopByHopNames(), "Host", "Content-Length", "Expect", HeaderRequestID,
	"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host")

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

func validHeaderValue(v []byte) bool {
	for _, b := range v {
		if b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// fastRespond makes the upstream's answer, read into the client's response, the client's: the headers respond
// would not copy are removed, and the request id is set again.
func fastRespond(c *fiber.Ctx) {
	rh := &c.Response().Header
	var named [][]byte
	var drop uint32 // bit i: incomingDropped[i] is present
	for k, v := range rh.All() {
		if i := edge.HeaderIndex(k, incomingDropped); i >= 0 {
			drop |= 1 << i
			if incomingDropped[i] == "Connection" {
				named = connectionTokens(named, v)
			}
		}
	}
	for _, n := range named { // before Connection goes: they point into its value
		rh.DelBytes(n)
	}
	for i, name := range incomingDropped {
		// fasthttp writes the body's own Content-Length, except for HEAD, where the upstream's stands.
		if drop&(1<<i) != 0 && name != "Content-Length" {
			rh.Del(name)
		}
	}
	rh.ResetConnectionClose() // an upstream's Connection: close is about its own connection
	rh.Set(HeaderRequestID, stateOf(c).id)
	if c.Request().Header.IsHead() && rh.ContentLength() < 0 {
		rh.SetContentLength(0)
	}
}

// incoming calls add with each of the upstream's headers that the client is given: not hop-by-hop, not one
// fasthttp writes itself, not the request id.
func incoming(resp *fasthttp.Response, add func(k, v []byte)) {
	var named [][]byte
	for k, v := range resp.Header.All() {
		if bytes.EqualFold(k, []byte("Connection")) {
			named = connectionTokens(named, v)
		}
	}
	for k, v := range resp.Header.All() {
		if !dropped(k, incomingDropped, named) {
			add(k, v)
		}
	}
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
