// Package siteverifytest stands in for the human-check providers (Cloudflare Turnstile, hCaptcha, Google
// reCAPTCHA) in tests, which cannot reach the real services: New starts a local server that speaks their
// siteverify protocol and serves a widget script that renders into the providers' elements the way theirs do.
// It is a test double for the third-party widget and its verification endpoint only, for siteverify's own tests
// and for any test (a browser test of the waiting room, say) that needs a fan to pass or fail the check.
//
// The server issues one-time tokens (Token, or the widget's button), accepts each once and Pass any number of
// times, checks the secret, and refuses everything else with success false and the error codes the provider it
// was told to be would send. It records every verification request, and Fail makes it answer 500, hang, or
// answer something that is not JSON.
package siteverifytest

import (
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/waitroom/siteverify"
)

// The server's keys and its always-good token, unless options say otherwise.
const (
	Secret  = "siteverifytest-secret"
	SiteKey = "siteverifytest-site-key"
	// Pass is a token the server accepts any number of times, like the providers' test keys: for a test that is
	// not about single use.
	Pass = "siteverifytest-pass"
	// Hostname is the site Token's and Pass's tokens say they were solved on. The widget's tokens say the page's
	// own hostname.
	Hostname = "localhost"
)

// Failure is how Fail makes the server misbehave on /siteverify; the widget script and /token keep working.
type Failure int

const (
	NoFailure Failure = iota // answer normally
	Status500                // 500 Internal Server Error, as a provider's outage
	Hang                     // never answer: the request waits until its client gives up or the test ends
	NotJSON                  // 200 with an HTML page, as a captive portal or a misrouted proxy answers
)

// Request is one verification request as the server received it.
type Request struct {
	ContentType    string
	Secret         string
	Response       string
	RemoteIP       string
	SiteKey        string // hCaptcha's optional field
	IdempotencyKey string // Turnstile's optional field
}

// Server is a local siteverify provider; it stops when the test ends.
type Server struct {
	srv                                 *httptest.Server
	provider, secret, siteKey, hostname string
	quit                                chan struct{}

	mu       sync.Mutex
	tokens   map[string]*issued
	requests []Request
	failure  Failure
}

type issued struct {
	hostname string
	at       time.Time
	used     bool
}

// Option configures New.
type Option func(*Server)

// WithProvider makes the server speak as provider (siteverify.Turnstile, the default, HCaptcha or ReCAPTCHA):
// its error codes are that provider's.
func WithProvider(provider string) Option { return func(s *Server) { s.provider = provider } }

// WithSecret sets the secret the server expects instead of Secret.
func WithSecret(secret string) Option { return func(s *Server) { s.secret = secret } }

// WithSiteKey sets the site key the widget must be rendered with instead of SiteKey.
func WithSiteKey(key string) Option { return func(s *Server) { s.siteKey = key } }

// WithHostname sets the hostname Token's and Pass's tokens say they were solved on instead of Hostname.
func WithHostname(host string) Option { return func(s *Server) { s.hostname = host } }

// New starts a server for t.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{provider: siteverify.Turnstile, secret: Secret, siteKey: SiteKey, hostname: Hostname,
		quit: make(chan struct{}), tokens: map[string]*issued{}}
	for _, o := range opts {
		o(s)
	}
	switch s.provider {
	case siteverify.Turnstile, siteverify.HCaptcha, siteverify.ReCAPTCHA:
	default:
		t.Fatalf("siteverifytest: unknown provider %q", s.provider)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /siteverify", s.verify)
	mux.HandleFunc("GET /token", s.widgetToken)
	mux.HandleFunc("GET /api.js", serveScript)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(s.quit) // first, or Close would wait for hanging requests
		s.srv.Close()
	})
	return s
}

// VerifyURL is the siteverify address, for siteverify.Config.VerifyURL.
func (s *Server) VerifyURL() string { return s.srv.URL + "/siteverify" }

// ScriptURL is the widget script's address, for siteverify.Config.ScriptURL.
func (s *Server) ScriptURL() string { return s.srv.URL + "/api.js" }

// Config is a siteverify configuration that talks to this server with its provider and keys.
func (s *Server) Config() siteverify.Config {
	return siteverify.Config{Provider: s.provider, SiteKey: s.siteKey, Secret: s.secret, VerifyURL: s.VerifyURL(),
		ScriptURL: s.ScriptURL()}
}

// Token is a fresh token, good for one verification, as if a fan had passed the widget on the server's hostname.
func (s *Server) Token() string { return s.issue(s.hostname) }

// Requests are the verification requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Fail makes the server misbehave from now on; NoFailure heals it.
func (s *Server) Fail(f Failure) {
	s.mu.Lock()
	s.failure = f
	s.mu.Unlock()
}

func (s *Server) issue(hostname string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	tok := "siteverifytest." + base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	s.tokens[tok] = &issued{hostname: hostname, at: time.Now().UTC()}
	s.mu.Unlock()
	return tok
}

// verify answers a siteverify request: form-encoded as all three providers take it, or JSON as Turnstile also
// does.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	req := Request{ContentType: ct}
	switch ct {
	case "application/json":
		var body struct {
			Secret         string `json:"secret"`
			Response       string `json:"response"`
			RemoteIP       string `json:"remoteip"`
			SiteKey        string `json:"sitekey"`
			IdempotencyKey string `json:"idempotency_key"`
		}
		if json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body) != nil {
			writeResult(w, map[string]any{"success": false, "error-codes": []string{"bad-request"}})
			return
		}
		req.Secret, req.Response, req.RemoteIP = body.Secret, body.Response, body.RemoteIP
		req.SiteKey, req.IdempotencyKey = body.SiteKey, body.IdempotencyKey
	default:
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if r.ParseForm() != nil {
			writeResult(w, map[string]any{"success": false, "error-codes": []string{"bad-request"}})
			return
		}
		f := r.PostForm
		req.Secret, req.Response, req.RemoteIP = f.Get("secret"), f.Get("response"), f.Get("remoteip")
		req.SiteKey, req.IdempotencyKey = f.Get("sitekey"), f.Get("idempotency_key")
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	failure := s.failure
	s.mu.Unlock()
	switch failure {
	case Status500:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.quit:
		}
		return
	case NotJSON:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>Sign in to the network</title>"))
		return
	}
	writeResult(w, s.check(req))
}

// check is the provider's verdict on req.
func (s *Server) check(req Request) map[string]any {
	refuse := func(code string) map[string]any {
		return map[string]any{"success": false, "error-codes": []string{code}}
	}
	switch {
	case req.Secret == "":
		return refuse("missing-input-secret")
	case req.Secret != s.secret:
		return refuse("invalid-input-secret")
	case req.Response == "":
		return refuse("missing-input-response")
	case req.SiteKey != "" && req.SiteKey != s.siteKey:
		return refuse("sitekey-secret-mismatch") // hCaptcha's code; the others take no site key
	}
	host, at := s.hostname, time.Now().UTC()
	if req.Response != Pass {
		s.mu.Lock()
		t, ok := s.tokens[req.Response]
		used := ok && t.used
		if ok {
			t.used = true
			host, at = t.hostname, t.at
		}
		s.mu.Unlock()
		switch {
		case !ok:
			return refuse("invalid-input-response")
		case used:
			return refuse(s.duplicateCode())
		}
	}
	res := map[string]any{"success": true, "challenge_ts": at.Format(time.RFC3339), "hostname": host,
		"error-codes": []string{}}
	if s.provider == siteverify.Turnstile {
		res["action"], res["cdata"] = "", ""
	}
	return res
}

// duplicateCode is the provider's answer to a token verified before.
func (s *Server) duplicateCode() string {
	if s.provider == siteverify.HCaptcha {
		return "invalid-or-already-seen-response"
	}
	return "timeout-or-duplicate"
}

func writeResult(w http.ResponseWriter, res map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// widgetToken issues a token to the widget script: GET /token?sitekey=..., from the page's origin (CORS). The
// token says it was solved on the page's hostname, as the providers' do. A site key other than the server's gets
// {"error": "invalid-sitekey"} and no token, with status 200: the providers' widgets report a bad key to the
// page's error callback, not as a failed request the browser would log as a console error.
func (s *Server) widgetToken(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("sitekey") != s.siteKey {
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid-sitekey"})
		return
	}
	host := s.hostname
	if u, err := url.Parse(origin); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"token": s.issue(host)})
}

//go:embed widget.js
var widgetJS []byte

func serveScript(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Access-Control-Allow-Origin", "*") // a page may load it with crossorigin, as it may the real ones
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(widgetJS)
}
