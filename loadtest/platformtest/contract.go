package platformtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The contract checked on real answers: a test's requests to the platform go through a reverse proxy that checks
// each request and each answer against openapi.yaml (kin-openapi's openapi3filter), the way an independent
// validator proxying an acceptance run would, so a drift between the code and the contract fails the test that
// meets it rather than a client generated from the spec.
//
// What counts as a drift:
//   - an answer whose body does not match the schema of its documented status (a null where a string is
//     promised, a missing required member, a wrong type);
//   - a 2xx answer to a request the contract says is malformed (a test may send bad input on purpose, and a 4xx
//     to it is right).
//
// Paths the contract does not describe (the pages' assets) and event streams pass unchecked.

var (
	specOnce sync.Once
	specDoc  *openapi3.T
	specErr  error
)

// spec loads the repository's openapi.yaml once per test binary.
func spec() (*openapi3.T, error) {
	specOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "..", "..", "openapi.yaml")
		raw, err := os.ReadFile(path)
		if err != nil {
			specErr = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			specErr = err
			return
		}
		doc.Servers = nil // match paths whatever the test server's address
		specDoc = doc
	})
	return specDoc, specErr
}

// contractProxy starts the checking proxy in front of target and returns its URL.
func contractProxy(t testing.TB, target string) string {
	t.Helper()
	doc, err := spec()
	if err != nil {
		t.Fatalf("platformtest: openapi.yaml: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("platformtest: openapi.yaml router: %v", err)
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &contract{t: t, router: router}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // event streams go through as they come
	rp.ModifyResponse = c.check
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(http.StatusBadGateway) // the platform went away (a chaos test); the client sees it as such
	}
	// The request's body as the client sent it, kept for the check: the transport consumes the one it forwards.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sentBody{}, b)))
	}))
	t.Cleanup(func() {
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

type contract struct {
	t      testing.TB
	router routers.Router

	mu   sync.Mutex
	done bool
	seen map[string]bool // each drift once per test
}

// sentBody keys the request body the client sent in the request's context.
type sentBody struct{}

func (c *contract) check(res *http.Response) error {
	req := res.Request
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return nil
	}
	route, params, err := c.router.FindRoute(routeRequest(req))
	if err != nil {
		return nil // not in the contract: an asset, or a path a test made up to see it refused
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil // the client sees the same broken body
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: false}
	in := &openapi3filter.RequestValidationInput{Request: routeRequest(req), PathParams: params, Route: route,
		Options: opts}
	if res.StatusCode < 300 {
		if rerr := c.requestErr(req, in); rerr != nil {
			c.fail(req, res.StatusCode, "a 2xx answer to a request the contract calls malformed: "+rerr.Error())
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.StatusCode,
		Header: res.Header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts}
	if ct := res.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
		opts.ExcludeResponseBody = true // pages, images, PDFs: their status and headers only
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.fail(req, res.StatusCode, "answer: "+err.Error())
	}
	return nil
}

// requestErr checks the request as the client sent it.
func (c *contract) requestErr(req *http.Request, in *openapi3filter.RequestValidationInput) error {
	b, _ := req.Context().Value(sentBody{}).([]byte)
	in.Request.Body = io.NopCloser(bytes.NewReader(b))
	return openapi3filter.ValidateRequest(context.Background(), in)
}

// routeRequest is req as the contract sees it: the path and query the client sent, with no host.
func routeRequest(req *http.Request) *http.Request {
	r := req.Clone(context.Background())
	r.URL.Scheme, r.URL.Host, r.Host = "", "", ""
	r.RequestURI = ""
	return r
}

func (c *contract) fail(req *http.Request, status int, msg string) {
	key := req.Method + " " + req.URL.Path + " " + msg
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.seen[key] {
		return
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[key] = true
	c.t.Errorf("contract drift: %s %s → %d: %s", req.Method, req.URL.Path, status, msg)
}
