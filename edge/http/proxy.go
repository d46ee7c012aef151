package http

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/edge"
)

// ProxyConfig tunes the upstream side of the proxy.
type ProxyConfig struct {
	Target          *url.URL      // booking, e.g. http://127.0.0.1:8081
	DialTimeout     time.Duration // connecting to the upstream
	HeaderTimeout   time.Duration // from sending the request to the upstream's response headers; past it, 504
	Timeout         time.Duration // a whole non-streamed exchange, body included
	IdleConnTimeout time.Duration // how long a pooled keep-alive connection may sit unused
	MaxIdleConns    int           // pooled keep-alive connections kept to the upstream
	// StreamHeartbeat is how long a proxied event stream may stay silent before the edge writes an SSE comment:
	// it keeps intermediaries from closing the stream and finds clients that have gone away, so their upstream
	// stream is closed too.
	StreamHeartbeat time.Duration
}

// Proxy forwards requests unchanged to one upstream over pooled keep-alive connections, on two paths.
//
// Ordinary requests (a hold, a seat map) take fasthttp's HostClient (fastproxy.go), which costs the least CPU per
// exchange. A request that may be answered with an event stream takes net/http's Transport: it bounds the wait
// for response headers separately from the life of the body (an event stream lasts as long as the fan watches, a
// seat map must answer in seconds), and its requests are cancelled through a context when the client goes away.
// fasthttp's client applies one read deadline to headers and a streamed body alike, buffers the whole body, and
// returns an aborted stream's connection to its pool. Both paths send the request prepare made (forward.go: header
// hygiene, X-Forwarded-*, the request id), replay by the same rule (replayAgain), and fail alike: 504 on timeout,
// 502 otherwise.
type Proxy struct {
	cfg       ProxyConfig
	transport *http.Transport
	fast      *fasthttp.HostClient // ordinary requests; see fastproxy.go
	trusted   edge.TrustedProxies
	metrics   *Metrics
	log       *slog.Logger
	collapse  collapser // seat-map reads in flight share a fetch; see collapse.go

	// streams is cancelled when the server starts shutting down, so proxied event streams end (their clients
	// reconnect to another replica) instead of holding the drain until its deadline.
	streams context.Context
}

// NewProxy returns a proxy to cfg.Target. Cancelling streams ends every proxied stream.
func NewProxy(streams context.Context, cfg ProxyConfig, trusted edge.TrustedProxies, m *Metrics, log *slog.Logger) *Proxy {
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		DialContext:           d.DialContext,
		MaxIdleConns:          cfg.MaxIdleConns,
		MaxIdleConnsPerHost:   cfg.MaxIdleConns,
		IdleConnTimeout:       cfg.IdleConnTimeout,
		ResponseHeaderTimeout: cfg.HeaderTimeout,
		ExpectContinueTimeout: time.Second,
		// Pass the client's Accept-Encoding and the upstream's Content-Encoding through untouched; the Transport
		// would otherwise ask for gzip itself and hand us a decompressed body under the upstream's headers.
		DisableCompression: true,
		ForceAttemptHTTP2:  false,
	}
	return &Proxy{cfg: cfg, transport: t, fast: newHostClient(cfg), trusted: trusted, metrics: m, log: log,
		streams: streams, collapse: collapser{slots: map[string]*slot{}}}
}

// Close drops the pooled upstream connections.
func (p *Proxy) Close() {
	p.transport.CloseIdleConnections()
	p.fast.CloseIdleConnections()
}

// Healthy asks the upstream's /healthz, for the edge's readiness.
func (p *Proxy) Healthy(ctx context.Context) error {
	u := *p.cfg.Target
	u.Path = strings.TrimRight(u.Path, "/") + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upstream /healthz: status %d", resp.StatusCode)
	}
	return nil
}

// Handle forwards the request and writes the upstream's answer.
func (p *Proxy) Handle(c *fiber.Ctx) error {
	if !mayStream(c) {
		if key, ok := sharedKey(c); ok {
			return p.handleShared(c, key)
		}
		return p.handleFast(c)
	}
	return p.handleStream(c)
}

// handleStream forwards a request that may be answered with an event stream, by net/http's Transport.
func (p *Proxy) handleStream(c *fiber.Ctx) error {
	req, cancelCause, err := p.outgoing(c)
	if err != nil {
		return err
	}
	// Timeout bounds the whole exchange of an ordinary answer; an event stream, once its headers are in, lives
	// until either side ends it (respond stops the timer).
	timer := time.AfterFunc(p.cfg.Timeout, func() { cancelCause(edge.ErrUpstreamTimeout) })
	cancel := func() { timer.Stop(); cancelCause(nil) }
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		// The Transport sends a request again on its own when a pooled connection broke under it: any request of
		// which nothing was written, else only by its own rule (GET, HEAD, OPTIONS, TRACE, an idempotency key),
		// which outgoing keeps within replayable's. This loop adds the replays replayAgain allows and the
		// Transport would not make: a PUT or DELETE, a connection that broke on its first request.
		resp, err = p.transport.RoundTrip(req)
		if err == nil || context.Cause(req.Context()) != nil || !replayAgain(c, attempt, isTimeout(err)) {
			break
		}
		if req, err = rewound(req); err != nil {
			break
		}
	}
	if err != nil {
		cancel()
		if errors.Is(context.Cause(req.Context()), edge.ErrUpstreamTimeout) {
			err = fmt.Errorf("%w: %v", edge.ErrUpstreamTimeout, err)
		}
		err = upstreamError(err)
		p.metrics.upstreamErrors.WithLabelValues(upstreamReason(err)).Inc()
		return err
	}
	p.respond(c, resp, timer, cancel)
	return nil
}

// rewound is req to be sent again, with its body from the start: the Transport closed the one it read.
func rewound(req *http.Request) (*http.Request, error) {
	r := req.WithContext(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return req, err
		}
		r.Body = body
	}
	return r, nil
}

// target is the upstream URL of the request: the path as the client sent it, not fasthttp's normalised one (booking
// must see what the fan asked for), under the target's path, with the query as sent.
func (p *Proxy) target(c *fiber.Ctx) (url.URL, error) {
	fr := c.Request()
	uri, err := url.ParseRequestURI(string(fr.URI().PathOriginal()))
	if err != nil || uri.Host != "" || uri.Scheme != "" {
		return url.URL{}, fmt.Errorf("%w: request target", edge.ErrBadRequest)
	}
	out := *p.cfg.Target
	out.Path = joinPath(p.cfg.Target.Path, uri.Path)
	out.RawPath = ""
	if uri.RawPath != "" {
		out.RawPath = joinPath(p.cfg.Target.EscapedPath(), uri.RawPath)
	}
	out.RawQuery = string(fr.URI().QueryString())
	return out, nil
}

// outgoing builds the upstream request: the same method, path, query and body, and the headers prepare made.
// The returned cancel must be called once the exchange is over.
func (p *Proxy) outgoing(c *fiber.Ctx) (*http.Request, context.CancelCauseFunc, error) {
	fr := c.Request()
	out, err := p.target(c)
	if err != nil {
		return nil, nil, err
	}
	var undo outgoingUndo
	if err := p.prepare(c, &undo); err != nil {
		return nil, nil, err
	}
	h := make(http.Header, 16)
	for k, v := range fr.Header.All() {
		switch name := http.CanonicalHeaderKey(string(k)); name {
		case "Host", "Content-Length":
			// carried by req.Host and req.ContentLength
		default:
			h[name] = append(h[name], string(v))
		}
	}
	undo.apply(c) // after the copy: the client's Connection: close is the server's business, not the upstream's
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // do not let the Transport invent one
	}

	// The body is copied: for a streamed answer the Transport may still be sending it after the handler returns,
	// when fiber has already recycled its buffers.
	var body io.Reader = http.NoBody
	n := len(fr.Body())
	if n > 0 {
		body = bytes.NewReader(bytes.Clone(fr.Body()))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	req, err := http.NewRequestWithContext(ctx, c.Method(), out.String(), body)
	if err != nil {
		cancel(nil)
		return nil, nil, fmt.Errorf("%w: %v", edge.ErrBadRequest, err)
	}
	req.URL = &out
	req.Header = h
	req.ContentLength = int64(n)
	req.Host = p.cfg.Target.Host
	if !replayable(c) {
		// The Transport replays a request with a body it can read again (GetBody) when it carries
		// X-Idempotency-Key, which booking does not read: without GetBody, a request replayable refuses is never
		// sent twice. (One without a body and with that header the Transport would still replay on a pooled
		// connection that broke; only requests that may be answered with an event stream come this way.)
		req.GetBody = nil
	}
	return req, cancel, nil
}

// respond copies status, headers and body. Known-length bodies are handed to fasthttp to copy; event streams and
// bodies of unknown length are written as they arrive, flushing after each read, so nothing waits in a buffer.
func (p *Proxy) respond(c *fiber.Ctx, resp *http.Response, timer *time.Timer, cancel func()) {
	rh := &c.Response().Header
	var named [][]byte
	for _, v := range resp.Header["Connection"] {
		named = connectionTokens(named, []byte(v))
	}
	for k, vs := range resp.Header {
		if dropped([]byte(k), incomingDropped, named) { // the same headers fastRespond removes
			continue
		}
		for _, v := range vs {
			rh.Add(k, v)
		}
	}
	c.Status(resp.StatusCode)

	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	stream := mt == "text/event-stream"
	switch {
	case c.Method() == http.MethodHead || resp.ContentLength == 0 || resp.StatusCode == http.StatusNoContent ||
		resp.StatusCode == http.StatusNotModified:
		resp.Body.Close()
		cancel()
		if resp.ContentLength > 0 {
			rh.SetContentLength(int(resp.ContentLength))
		}
	case !stream && resp.ContentLength > 0:
		c.Context().SetBodyStream(&closer{ReadCloser: resp.Body, cancel: cancel}, int(resp.ContentLength))
	default:
		if stream {
			timer.Stop()
		}
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			defer cancel()
			defer resp.Body.Close()
			p.metrics.streams.Inc()
			defer p.metrics.streams.Dec()
			p.pipe(w, resp.Body, stream)
		})
	}
}

// pipe copies a streamed body to the client as it arrives. For an event stream it writes a comment after a
// silence of StreamHeartbeat, but only between events, where SSE clients ignore it. It returns when the upstream
// ends, the client goes away (a failed flush) or the server shuts down; the caller then closes the upstream.
func (p *Proxy) pipe(w *bufio.Writer, body io.Reader, eventStream bool) {
	chunks := make(chan []byte)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(chunks)
		buf := bufPool.Get().(*[]byte)
		defer bufPool.Put(buf)
		for {
			n, err := body.Read(*buf)
			if n > 0 {
				select {
				case chunks <- bytes.Clone((*buf)[:n]):
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	hb := p.cfg.StreamHeartbeat
	if !eventStream || hb <= 0 {
		hb = time.Hour
	}
	ticker := time.NewTicker(hb)
	defer ticker.Stop()
	atBoundary := true // no partial event written
	for {
		select {
		case b, ok := <-chunks:
			if !ok {
				_ = w.Flush()
				return
			}
			if _, err := w.Write(b); err != nil {
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
			atBoundary = bytes.HasSuffix(b, []byte("\n\n")) || bytes.HasSuffix(b, []byte("\r\n\r\n"))
			ticker.Reset(hb)
		case <-ticker.C:
			if !eventStream || !atBoundary {
				continue
			}
			if _, err := w.WriteString(":\n\n"); err != nil {
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
		case <-p.streams.Done():
			return
		}
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// closer ends the upstream exchange when fasthttp has finished copying a known-length body.
type closer struct {
	io.ReadCloser
	cancel func()
	once   sync.Once
}

func (c *closer) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.cancel)
	return err
}

// isTimeout reports whether a Transport's exchange failed for lack of time.
func isTimeout(err error) bool { return errors.Is(upstreamError(err), edge.ErrUpstreamTimeout) }

// upstreamError classifies a failed exchange: a timeout is a 504, anything else (refused, reset, malformed
// answer) a 502.
func upstreamError(err error) error {
	var ne net.Error
	if errors.Is(err, edge.ErrUpstreamTimeout) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %v", edge.ErrUpstreamTimeout, err)
	}
	return fmt.Errorf("%w: %v", edge.ErrUpstreamUnavailable, err)
}

func upstreamReason(err error) string {
	if errors.Is(err, edge.ErrUpstreamTimeout) {
		return "timeout"
	}
	return "unavailable"
}

func joinPath(a, b string) string {
	a = strings.TrimRight(a, "/")
	if a == "" {
		return b
	}
	if !strings.HasPrefix(b, "/") {
		b = "/" + b
	}
	return a + b
}
