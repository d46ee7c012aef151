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
func (p *Proxy) forwardFast(c *fiber.Ctx, share bool) (*sharedAnswer, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	if err := p.fastOutgoing(c, req); err != nil {
		return nil, err
	}
	// Replayed as the Transport replays: only safe methods, or a request carrying an Idempotency-Key.
	replayable := c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead ||
		c.Method() == fiber.MethodOptions || c.Method() == fiber.MethodTrace ||
		len(req.Header.Peek("Idempotency-Key")) > 0
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
	if err != nil {
		if fastTimeout(err) {
			err = fmt.Errorf("%w: %v", edge.ErrUpstreamTimeout, err)
		}
		err = upstreamError(err)
		p.metrics.upstreamErrors.WithLabelValues(upstreamReason(err)).Inc()
		return nil, err
	}
	var ans *sharedAnswer
	if share {
		ans = shareable(resp)
	}
	p.fastRespond(c, resp)
	if ans != nil {
		ans.body = bytes.Clone(c.Response().Body()) // the one copy every sharing request's answer points at
	}
	return ans, nil
}

func fastTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		(errors.As(err, &t) && t.Timeout())
}

// fastOutgoing fills req as outgoing builds the Transport's request: same method, target, headers and body, minus
// hop-by-hop headers and those the Connection header names, plus X-Forwarded-* and the request id. It works on
// fasthttp's bytes throughout: every request passes here, and string conversions, canonicalised names and joined
// values were most of what the edge allocated per request.
func (p *Proxy) fastOutgoing(c *fiber.Ctx, req *fasthttp.Request) error {
	fr := c.Request()
	if err := p.fastTarget(c, req); err != nil {
		return err
	}
	req.Header.SetMethodBytes(fr.Header.Method())
	req.Header.SetNoDefaultContentType(true)

	// Headers the Connection header names are hop-by-hop too. The first pass finds them, and the forwarding
	// headers a trusted proxy may have set; the second copies what may cross.
	var named [][]byte
	var proto, host []byte
	xffs := 0
	for k, v := range fr.Header.All() {
		switch {
		case !validHeaderName(k) || !validHeaderValue(v):
			return fmt.Errorf("%w: header %q", edge.ErrBadRequest, k)
		case bytes.EqualFold(k, []byte("Connection")):
			named = connectionTokens(named, v)
		case bytes.EqualFold(k, []byte("X-Forwarded-For")):
			xffs++
		case bytes.EqualFold(k, []byte("X-Forwarded-Proto")):
			if len(proto) == 0 {
				proto = v
			}
		case bytes.EqualFold(k, []byte("X-Forwarded-Host")):
			if len(host) == 0 {
				host = v
			}
		}
	}
	st := stateOf(c)
	trusted := p.trusted.Trusts(st.peer)
	// X-Forwarded-For: a trusted proxy's values, in order, then the peer.
	var xffBuf [128]byte // on the stack: SetBytesV copies it
	xff := xffBuf[:0]
	if trusted && xffs > 0 {
		for k, v := range fr.Header.All() {
			if bytes.EqualFold(k, []byte("X-Forwarded-For")) {
				xff = append(append(xff, v...), ", "...)
			}
		}
	}
	xff = appendPeer(xff, c, st.peer)
	for k, v := range fr.Header.All() {
		if skipOutgoing(k) || hopByHop(k, named) {
			continue
		}
		req.Header.AddBytesKV(k, v)
	}

	req.Header.SetBytesV("X-Forwarded-For", xff)
	if !trusted || len(proto) == 0 {
		proto = []byte("http")
		if c.Context().IsTLS() {
			proto = []byte("https")
		}
	}
	req.Header.SetBytesV("X-Forwarded-Proto", proto)
	if !trusted || len(host) == 0 {
		host = fr.Host()
	}
	req.Header.SetBytesV("X-Forwarded-Host", host)
	req.Header.Set(HeaderRequestID, st.id)
	// The exchange ends before the handler returns, so the client's body buffer can be sent as it is.
	req.SetBodyRaw(fr.Body())
	return nil
}

// fastTarget sets req's target as target builds it: the path as the client sent it, under the upstream's path,
// with the query as sent. A path of characters that url.URL writes back unchanged, under an upstream without a
// path (booking's URL), is that URL already; anything else is built by target.
func (p *Proxy) fastTarget(c *fiber.Ctx, req *fasthttp.Request) error {
	u := c.Request().URI()
	path := u.PathOriginal()
	if p.cfg.Target.Path == "" && p.cfg.Target.RawPath == "" && len(path) > 0 && path[0] == '/' && plainPath(path) {
		var buf [256]byte
		uri := append(buf[:0], path...)
		if q := u.QueryString(); len(q) > 0 {
			uri = append(append(uri, '?'), q...)
		}
		req.SetRequestURIBytes(uri)
	} else {
		out, err := p.target(c)
		if err != nil {
			return err
		}
		req.SetRequestURI(out.RequestURI())
	}
	req.URI().SetScheme(p.cfg.Target.Scheme)
	req.SetHost(p.cfg.Target.Host)
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

// skipOutgoing reports whether a client's header is left out of the upstream request: fastOutgoing sets it itself,
// or the request carries it (Host, Content-Length), or fasthttp has already acted on it (Expect).
func skipOutgoing(k []byte) bool {
	for _, name := range []string{"Host", "Content-Length", "Expect", HeaderRequestID,
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host"} {
		if len(k) == len(name) && bytes.EqualFold(k, []byte(name)) {
			return true
		}
	}
	return false
}

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

// fastRespond copies status, headers and body as respond does, the body already complete.
func (p *Proxy) fastRespond(c *fiber.Ctx, resp *fasthttp.Response) {
	rh := &c.Response().Header
	incoming(resp, rh.AddBytesKV)
	c.Status(resp.StatusCode())
	if c.Request().Header.IsHead() {
		if n := resp.Header.ContentLength(); n > 0 {
			rh.SetContentLength(n)
		}
		return
	}
	// The body changes hands instead of being copied (a seat map is tens of kilobytes): the client's response
	// takes the upstream response's buffer, which is released right after, and the upstream response takes back
	// the client's empty one.
	resp.SwapBody(c.Response().SwapBody(resp.SwapBody(nil)))
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
		if !skipIncoming(k) && !hopByHop(k, named) {
			add(k, v)
		}
	}
}

// skipIncoming reports whether an upstream header is left out of the answer: fasthttp writes its own
// Content-Length, Date and Server, and the request id is already set.
func skipIncoming(k []byte) bool {
	for _, name := range []string{"Content-Length", "Date", "Server", HeaderRequestID} {
		if len(k) == len(name) && bytes.EqualFold(k, []byte(name)) {
			return true
		}
	}
	return false
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

// hopByHop reports whether a header is hop-by-hop: always, or because the message's Connection header names it.
func hopByHop(name []byte, named [][]byte) bool {
	if edge.IsHopByHopBytes(name) {
		return true
	}
	for _, n := range named {
		if bytes.EqualFold(n, name) {
			return true
		}
	}
	return false
}
