package http

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

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
	out, err := p.target(c)
	if err != nil {
		return err
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	if err := p.fastOutgoing(c, req, &out); err != nil {
		return err
	}
	// Replayed as the Transport replays: only safe methods, or a request carrying an Idempotency-Key.
	replayable := c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead ||
		c.Method() == fiber.MethodOptions || c.Method() == fiber.MethodTrace ||
		len(req.Header.Peek("Idempotency-Key")) > 0
	deadline := time.Now().Add(p.cfg.Timeout)
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
		return err
	}
	p.fastRespond(c, resp)
	return nil
}

func fastTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		(errors.As(err, &t) && t.Timeout())
}

// fastOutgoing fills req as outgoing builds the Transport's request: same method, target, headers and body, minus
// hop-by-hop headers and those the Connection header names, plus X-Forwarded-* and the request id.
func (p *Proxy) fastOutgoing(c *fiber.Ctx, req *fasthttp.Request, out *url.URL) error {
	fr := c.Request()
	req.Header.SetMethodBytes(fr.Header.Method())
	req.Header.SetNoDefaultContentType(true)
	req.SetRequestURI(out.RequestURI())
	req.URI().SetScheme(out.Scheme)
	req.SetHost(out.Host)

	// Headers the Connection header names are hop-by-hop too.
	var named []string
	var xff []string
	var proto, host string
	fr.Header.VisitAll(func(k, v []byte) {
		switch {
		case bytes.EqualFold(k, []byte("Connection")):
			named = connectionTokens(named, v)
		case bytes.EqualFold(k, []byte("X-Forwarded-For")):
			xff = append(xff, string(v))
		case bytes.EqualFold(k, []byte("X-Forwarded-Proto")):
			if proto == "" {
				proto = string(v)
			}
		case bytes.EqualFold(k, []byte("X-Forwarded-Host")):
			if host == "" {
				host = string(v)
			}
		}
	})
	var bad error
	fr.Header.VisitAll(func(k, v []byte) {
		if bad != nil {
			return
		}
		name := string(k)
		if !httpguts.ValidHeaderFieldName(name) || !validHeaderValue(v) {
			bad = fmt.Errorf("%w: header %q", edge.ErrBadRequest, name)
			return
		}
		switch http.CanonicalHeaderKey(name) {
		case "Host", "Content-Length", "Expect", HeaderRequestID,
			"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host":
			return // set below, or carried by the request itself
		}
		if hopByHop(name, named) {
			return
		}
		req.Header.AddBytesKV(k, v)
	})
	if bad != nil {
		return bad
	}

	peer := c.Context().RemoteIP().String()
	trusted := p.trusted.Trusts(peerAddr(c))
	if trusted && len(xff) > 0 {
		req.Header.Set("X-Forwarded-For", strings.Join(xff, ", ")+", "+peer)
	} else {
		req.Header.Set("X-Forwarded-For", peer)
	}
	if !trusted || proto == "" {
		proto = "http"
		if c.Context().IsTLS() {
			proto = "https"
		}
	}
	req.Header.Set("X-Forwarded-Proto", proto)
	if !trusted || host == "" {
		host = string(fr.Host())
	}
	req.Header.Set("X-Forwarded-Host", host)
	req.Header.Set(HeaderRequestID, RequestID(c))
	// The exchange ends before the handler returns, so the client's body buffer can be sent as it is.
	req.SetBodyRaw(fr.Body())
	return nil
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
	var named []string
	resp.Header.VisitAll(func(k, v []byte) {
		if bytes.EqualFold(k, []byte("Connection")) {
			named = connectionTokens(named, v)
		}
	})
	rh := &c.Response().Header
	resp.Header.VisitAll(func(k, v []byte) {
		name := string(k)
		switch http.CanonicalHeaderKey(name) {
		case "Content-Length", "Date", "Server", HeaderRequestID:
			return // fasthttp writes its own; the request id is already set
		}
		if hopByHop(name, named) {
			return
		}
		rh.AddBytesKV(k, v)
	})
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

// connectionTokens appends to named the header names a Connection header's value v lists.
func connectionTokens(named []string, v []byte) []string {
	for _, n := range strings.Split(string(v), ",") {
		if n = strings.TrimSpace(n); n != "" {
			named = append(named, n)
		}
	}
	return named
}

// hopByHop reports whether a header is hop-by-hop: always, or because the message's Connection header names it.
func hopByHop(name string, named []string) bool {
	if edge.IsHopByHop(name) {
		return true
	}
	for _, n := range named {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
