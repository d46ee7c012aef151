// Package client speaks flashseat's public HTTP contract (openapi.yaml) the way a fan's browser or an operator's
// script would, through the edge only. It decides nothing: every call returns what the server said (status,
// decoded body, problem) and the crowd decides what that means.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/flashseat/flashseat/shared/problem"
)

// Client calls one platform. It is safe for concurrent use by any number of fans.
type Client struct {
	base       *url.URL
	http       *http.Client // API calls: bounded by Timeout per request
	stream     *http.Client // event streams: no overall timeout, they live as long as the wait
	adminToken string
	timeout    time.Duration
	workers    int // goroutines Solve hashes with
	// Work is the proof of work this client's fans did (Solve).
	Work *Work
}

// Options tune a Client.
type Options struct {
	AdminToken string
	Timeout    time.Duration // per API request; default 15s
	// SolveWorkers is how many goroutines Solve hashes a challenge with: 1 (the default) as one fan's device
	// does, more for a script that spends every core on one place.
	SolveWorkers int
}

// New returns a client of the platform at base sharing transport for every call, so that thousands of fans reuse a
// pool of keep-alive connections instead of each dialling its own.
func New(base string, transport http.RoundTripper, opt Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("client: bad base URL %q", base)
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 15 * time.Second
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{
		base:       u,
		http:       &http.Client{Transport: transport, CheckRedirect: noRedirect},
		stream:     &http.Client{Transport: streamTransport(transport), CheckRedirect: noRedirect},
		adminToken: opt.AdminToken,
		timeout:    opt.Timeout,
		workers:    max(1, opt.SolveWorkers),
		Work:       &Work{},
	}, nil
}

// streamTransport is the transport for event streams: transport's own dialling (its source addresses) with 1 KB
// buffers instead of 4 KB each way, as a stream's request and events are small, and a connection of its own for
// each stream, closed when the stream ends, as a browser's EventSource has. A stadium process holds ten thousand
// streams at once. Any other RoundTripper is used as it is.
func streamTransport(transport http.RoundTripper) http.RoundTripper {
	t, ok := transport.(*http.Transport)
	if !ok {
		return transport
	}
	st := t.Clone()
	st.ReadBufferSize, st.WriteBufferSize = 1<<10, 1<<10
	st.DisableKeepAlives = true
	return st
}

// Base is the platform's base URL.
func (c *Client) Base() string { return c.base.String() }

// NewTransport is the one transport a run shares. Without a large idle pool per host, Go keeps only two idle
// connections per host and a crowd on one host ends up dialling (and leaving in TIME_WAIT) a socket per request.
// Two or more sources spread outgoing connections to a loopback target over those loopback addresses: a socket
// bound to an address takes an ephemeral port of that address's own range (about 28,000), so a crowd larger than
// that range can still hold its event streams open, and crowds in several processes need not share a range.
func NewTransport(maxConns int, sources ...net.IP) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	dial := d.DialContext
	if len(sources) > 1 {
		var n atomic.Uint64
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() || ip.To4() == nil {
				return d.DialContext(ctx, network, addr)
			}
			ld := *d
			ld.LocalAddr = &net.TCPAddr{IP: sources[n.Add(1)%uint64(len(sources))]}
			return ld.DialContext(ctx, network, addr)
		}
	}
	return &http.Transport{
		Proxy:                 nil, // a load test must never wander through an environment proxy
		DialContext:           dial,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// Loopbacks are n consecutive IPv4 loopback addresses from 127.0.block.1, sources for NewTransport: block 0 is
// 127.0.0.1..n, and each process of a split crowd takes its own block.
func Loopbacks(block, n int) []net.IP {
	ips := make([]net.IP, n)
	for i := range ips {
		ips[i] = net.IPv4(127, 0, byte(block), byte(1+i))
	}
	return ips
}

// Result is what the server answered to one call.
type Result struct {
	Status     int              // 0 when no answer came (Err says why)
	Problem    *problem.Problem // the problem+json body of an error answer, when it had one
	RetryAfter time.Duration    // from a Retry-After header, if any
}

// HeaderPlaceReceipt carries a fan's place receipt on a re-join.
const HeaderPlaceReceipt = "X-Place-Receipt"

// HeaderProof carries a solved challenge on a guest identity's request.
const HeaderProof = "X-Proof"

// ErrDecode marks an answer whose body did not match the contract.
var ErrDecode = errors.New("client: body does not match the contract")

type call struct {
	method, path string
	query        url.Values
	bearer       string
	admission    string
	receipt      string // X-Place-Receipt
	proof        string // X-Proof: a solved guest challenge
	idemKey      string
	body         any
	out          any // decoded on 2xx
	// large says out is a large answer (a seat map), decoded with the JSON v2 decoder: 2.3 times as fast as
	// encoding/json on a 5,000-seat map (BenchmarkSeatMapDecode), the largest share of a stadium generator's CPU
	// once seats were chosen cheaply. It matches field names exactly, as the contract spells them.
	large bool
}

func (c *Client) do(ctx context.Context, k call) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := *c.base
	u.Path = c.base.Path + k.path
	u.RawQuery = k.query.Encode()
	var body io.Reader
	if k.body != nil {
		b, err := json.Marshal(k.body)
		if err != nil {
			return Result{}, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, u.String(), body)
	if err != nil {
		return Result{}, err
	}
	if k.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if k.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+k.bearer)
	}
	if k.admission != "" {
		req.Header.Set("X-Admission-Token", k.admission)
	}
	if k.idemKey != "" {
		req.Header.Set("Idempotency-Key", k.idemKey)
	}
	if k.receipt != "" {
		req.Header.Set(HeaderPlaceReceipt, k.receipt)
	}
	if k.proof != "" {
		req.Header.Set(HeaderProof, k.proof)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	res := Result{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	buf := bodies.Get().(*bytes.Buffer)
	defer bodies.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, 8<<20)); err != nil {
		return res, err
	}
	b := buf.Bytes() // json.Unmarshal copies what it keeps, so the buffer goes back to the pool afterwards
	if resp.StatusCode >= 300 {
		var p problem.Problem
		if json.Unmarshal(b, &p) == nil && p.Status != 0 {
			res.Problem = &p
		}
		return res, nil
	}
	if k.out != nil && len(b) > 0 {
		unmarshal := json.Unmarshal
		if k.large {
			unmarshal = func(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }
		}
		if err := unmarshal(b, k.out); err != nil {
			return res, fmt.Errorf("%w: %s %s: %v", ErrDecode, k.method, k.path, err)
		}
	}
	return res, nil
}

// bodies are the buffers answers are read into. A stadium's admitted fans each read half a megabyte of seat map at
// a time: read with io.ReadAll, that was 200 MB in use in one generator process, and twice as much again in the
// smaller buffers it grows through, all for the collector.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// Outcome condenses a call into the label reports count: the status, or the kind of failure when none came.
func Outcome(res Result, err error) string {
	if res.Status != 0 {
		return strconv.Itoa(res.Status)
	}
	switch {
	case err == nil:
		return "err:none"
	case errors.Is(err, context.DeadlineExceeded):
		return "err:timeout"
	case errors.Is(err, context.Canceled):
		return "err:cancelled"
	case errors.Is(err, ErrDecode):
		return "err:decode"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "err:timeout"
	}
	return "err:conn"
}

// ProblemSlug is the last path segment of a problem's type ("seats-unavailable"), or "".
func (r Result) ProblemSlug() string {
	if r.Problem == nil {
		return ""
	}
	t := r.Problem.Type
	return t[strings.LastIndex(t, "/")+1:]
}

// String reads an extension member that holds a string (for example "reason"), or "".
func (r Result) String(name string) string {
	if r.Problem == nil {
		return ""
	}
	v, _ := r.Problem.Extensions[name].(string)
	return v
}

// StringList reads an extension member that holds a list of strings (for example "alternatives").
func (r Result) StringList(name string) []string {
	if r.Problem == nil {
		return nil
	}
	raw, _ := r.Problem.Extensions[name].([]any)
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
