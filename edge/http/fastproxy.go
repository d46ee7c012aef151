package http

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/edge"
)

// The fast path forwards ordinary requests (a hold, a seat map, a search) with fasthttp's HostClient, which
// reuses its request, response and buffers, where the net/http Transport costs two goroutines' hand-offs, a
// header map and a context per exchange: under a hold storm the Transport path spent more CPU than the fiber
// server itself. Anything that may answer with an event stream keeps the Transport path (see Proxy): the
// HostClient applies one read deadline to headers and body alike and buffers the whole body, so it only carries
// answers that are complete within the exchange's bounds.
//
// The fast path keeps the Transport path's policies: the same target URL, the same prepared headers (forward.go),
// 504 on timeout (response headers and body within HeaderTimeout of sending, the whole within Timeout), 502
// otherwise, and the same replay rule (replayAgain; fasthttp would also resend a POST whose connection closed
// before the first response byte, so MaxIdemponentCallAttempts 1 turns all of its own retries off).

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
// The client's request is sent as it is, changed in place (prepare, fastTarget), and the upstream's answer is read
// into the client's response and cleaned there (fastRespond), as the least a proxy can do: no header or body is
// copied to a second message and back. What the server and fiber read after the handler (the request's protocol
// and Connection: close, its target and Host) is put back once the exchange is over.
func (p *Proxy) forwardFast(c *fiber.Ctx, share bool) (*sharedAnswer, error) {
	req, resp := c.Request(), c.Response()
	var undo outgoingUndo
	err := p.prepare(c, &undo)
	if err == nil {
		err = p.fastTarget(c, &undo)
	}
	if err != nil {
		undo.apply(c)
		return nil, err
	}
	deadline := time.Now().Add(p.cfg.Timeout)
	for attempt, stale := 0, 0; ; {
		err = p.fast.DoDeadline(req, resp, deadline)
		if errors.Is(err, errStaleConn) && stale < maxStaleConns {
			stale++ // nothing was written: try the next pooled connection, or a new one, whatever the method
			continue
		}
		if err == nil || !replayAgain(c, attempt, fastTimeout(err)) {
			break
		}
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

// fastTarget sets the request's upstream target as target builds it: the path as the client sent it, under the
// upstream's path, with the query as sent, and the upstream's Host. A path of characters that url.URL writes back
// unchanged, under an upstream without a path (booking's URL), is that target already; anything else is built by
// target. undo records the client's Host and target; on an error nothing was changed.
func (p *Proxy) fastTarget(c *fiber.Ctx, undo *outgoingUndo) error {
	fr := c.Request()
	u := fr.URI()
	path := u.PathOriginal()
	var out *url.URL
	if !(p.cfg.Target.Path == "" && p.cfg.Target.RawPath == "" && len(path) > 0 && path[0] == '/' && plainPath(path)) {
		t, err := p.target(c)
		if err != nil {
			return err
		}
		out = &t
	}
	undo.targeted = true
	undo.target.set(fr.Header.RequestURI())
	undo.rawPath = u.DisablePathNormalizing
	undo.host.set(fr.Header.Host())
	if out != nil {
		undo.retargeted = true
		fr.SetRequestURI(out.RequestURI())
		u = fr.URI()
	}
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
