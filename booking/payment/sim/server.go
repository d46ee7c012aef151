package sim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// Server is the simulator. Its zero value is not usable; call New.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	latency atomic.Int64  // time.Duration
	failure atomic.Uint64 // math.Float64bits of the rate
	stop    chan struct{} // closed by Close: slow calls finish at once, webhook retries give up
	closeMu sync.Once
	hooks   *webhooks

	mu      sync.Mutex
	seq     int64
	intents map[string]*intent
	methods map[string]*method // tokenized cards (methods.go)
	idem    map[string]*idemEntry
	stats   Stats
}

// Stats counts what the simulator did, so tests can assert that a retry never authorized twice.
type Stats struct {
	Requests       int // every API request, replays included
	Replays        int // answered from the idempotency cache
	Authorizations int // intents that reached requires_capture (or succeeded directly)
	Declines       int
	Captures       int
	Voids          int
	Refunds        int
	InjectedErrors int // pm_card_error and FailureRate answers
	PaymentMethods int // cards tokenized by POST /v1/payment_methods
	Challenges     int // 3-D Secure challenges answered (passed or failed)
	WebhooksSent   int // delivered with a 2xx answer
	WebhooksFailed int // given up after retries
}

type intent struct {
	seq      int64 // creation order, since created has only second resolution
	obj      payment.WireObject
	refunded int64
	charge   string
	// challenge is the secret of a requires_action intent's 3-D Secure page (challenge.go): the page's URL is
	// what lets a browser answer it. returnURL is where the browser goes afterwards.
	challenge string
	returnURL string
}

// idemEntry is one idempotency key's first request: its fingerprint, and once done its answer.
type idemEntry struct {
	fingerprint string
	done        bool
	status      int
	body        []byte
}

// New returns a simulator serving cfg's behaviour; logger may be nil.
func New(cfg Config, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SlowDelay == 0 {
		cfg.SlowDelay = 8 * time.Second
	}
	s := &Server{cfg: cfg, log: logger, stop: make(chan struct{}),
		intents: map[string]*intent{}, methods: map[string]*method{}, idem: map[string]*idemEntry{}}
	s.SetLatency(cfg.Latency)
	s.SetFailureRate(cfg.FailureRate)
	s.hooks = newWebhooks(cfg.WebhookURL, cfg.WebhookSecret, logger, s.stop, s.countWebhook)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/payment_intents", s.api(s.create))
	s.mux.HandleFunc("GET /v1/payment_intents/{id}", s.api(s.retrieve))
	s.mux.HandleFunc("POST /v1/payment_intents/{id}/capture", s.api(s.capture))
	s.mux.HandleFunc("POST /v1/payment_intents/{id}/cancel", s.api(s.cancel))
	s.mux.HandleFunc("POST /v1/refunds", s.api(s.refund))
	s.mux.HandleFunc("GET "+LedgerPath, s.ledger)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	s.mux.HandleFunc("OPTIONS /v1/payment_methods", s.cors(s.preflight))
	s.mux.HandleFunc("POST /v1/payment_methods", s.cors(s.createMethod))
	s.mux.HandleFunc("GET "+ChallengePath+"{id}", s.challengePage)
	s.mux.HandleFunc("POST "+ChallengePath+"{id}", s.answerChallenge)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, payment.WireError{Type: "invalid_request_error",
			Message: "Unrecognized request URL (" + r.Method + ": " + r.URL.Path + ")."})
	})
	return s
}

// SetLatency changes the delay of every answer, e.g. for a benchmark at 200 ms.
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// SetFailureRate changes the share of calls answered 500, e.g. to trip a circuit breaker in a test.
func (s *Server) SetFailureRate(f float64) { s.failure.Store(math.Float64bits(f)) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close makes pending slow calls finish and stops webhook delivery, waiting for deliveries in flight.
func (s *Server) Close() {
	s.closeMu.Do(func() { close(s.stop) })
	s.hooks.wait()
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Intent returns one intent's current state.
func (s *Server) Intent(id string) (payment.Intent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[id]
	if !ok {
		return payment.Intent{}, false
	}
	return in.obj.Intent(), true
}

// Intents returns every intent, oldest first.
func (s *Server) Intents() []payment.Intent {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]*intent, 0, len(s.intents))
	for _, in := range s.intents {
		all = append(all, in)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	out := make([]payment.Intent, len(all))
	for i, in := range all {
		out[i] = in.obj.Intent()
	}
	return out
}

func (s *Server) countWebhook(ok bool) {
	s.mu.Lock()
	if ok {
		s.stats.WebhooksSent++
	} else {
		s.stats.WebhooksFailed++
	}
	s.mu.Unlock()
}

// reply is an answer before it is written, so the idempotency cache can store it.
type reply struct {
	status int
	body   any
	cache  bool // Stripe saves an answer once the endpoint has started executing; injected 5xx are not saved
}

func ok(v any) reply { return reply{status: http.StatusOK, body: v, cache: true} }

func fail(status int, e payment.WireError) reply {
	return reply{status: status, body: map[string]any{"error": e}, cache: status < 500}
}

// admit is the start of every API call: it counts the request, checks its key with allowed, waits the latency and
// parses the form, answering the request itself (and returning false) when it cannot go on.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, allowed func(*http.Request) bool, limit int64) bool {
	s.mu.Lock()
	s.stats.Requests++
	s.mu.Unlock()
	if !allowed(r) {
		writeError(w, http.StatusUnauthorized, payment.WireError{Type: "invalid_request_error",
			Message: "Invalid API Key provided."})
		return false
	}
	s.sleep(time.Duration(s.latency.Load()))
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, payment.WireError{Type: "invalid_request_error",
			Message: "Invalid request body: " + err.Error()})
		return false
	}
	return true
}

// api wraps an endpoint with what every Stripe call goes through: authentication, latency, injected failures,
// form parsing and the idempotency cache.
func (s *Server) api(h func(r *http.Request, form url.Values) reply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, s.authorized, 64<<10) {
			return
		}
		if rate := math.Float64frombits(s.failure.Load()); rate > 0 && mrand.Float64() < rate {
			s.mu.Lock()
			s.stats.InjectedErrors++
			s.mu.Unlock()
			writeError(w, http.StatusInternalServerError, payment.WireError{Type: "api_error",
				Message: "Simulated gateway failure."})
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if key == "" || r.Method != http.MethodPost {
			rep := h(r, r.PostForm)
			writeJSON(w, rep.status, rep.body)
			return
		}
		scope := r.Header.Get("Authorization") + "\x00" + key
		fp := fingerprint(r)
		s.mu.Lock()
		e, seen := s.idem[scope]
		switch {
		case seen && e.fingerprint != fp:
			s.mu.Unlock()
			writeError(w, http.StatusBadRequest, payment.WireError{Type: "idempotency_error",
				Message: "Keys for idempotent requests can only be used with the same parameters they were first used with."})
			return
		case seen && !e.done:
			s.mu.Unlock()
			writeError(w, http.StatusConflict, payment.WireError{Type: "idempotency_error", Code: "idempotency_key_in_use",
				Message: "There is currently another in-progress request using this idempotent key."})
			return
		case seen:
			s.stats.Replays++
			status, body := e.status, e.body
			s.mu.Unlock()
			w.Header().Set("Idempotent-Replayed", "true")
			writeRaw(w, status, body)
			return
		}
		e = &idemEntry{fingerprint: fp}
		s.idem[scope] = e
		s.mu.Unlock()

		rep := h(r, r.PostForm)
		body, _ := json.Marshal(rep.body)
		s.mu.Lock()
		if rep.cache {
			e.done, e.status, e.body = true, rep.status, body
		} else {
			delete(s.idem, scope)
		}
		s.mu.Unlock()
		writeRaw(w, rep.status, body)
	}
}

// authorized reports whether the request carries the secret key. A publishable key (pk_...) is never a secret
// key: as at Stripe, it may only tokenize cards (methods.go).
func (s *Server) authorized(r *http.Request) bool {
	key := apiKey(r)
	if key == "" || strings.HasPrefix(key, "pk_") {
		return false
	}
	return s.cfg.APIKey == "" || key == s.cfg.APIKey
}

// apiKey is the key a request authenticates with: a bearer token, or Basic auth's user name as Stripe allows.
func apiKey(r *http.Request) string {
	if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return k
	}
	if user, _, ok := r.BasicAuth(); ok {
		return user
	}
	return ""
}

// sleep waits d, or less if the simulator is closing. It ignores the request's context on purpose: a real gateway
// goes on processing after the client hung up, which is exactly the case a timeout leaves unknown.
func (s *Server) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop:
	}
}

// fingerprint identifies a request's parameters for the idempotency check: method, path and the sorted form.
func fingerprint(r *http.Request) string {
	keys := make([]string, 0, len(r.PostForm))
	for k := range r.PostForm {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", r.Method, r.URL.Path)
	for _, k := range keys {
		fmt.Fprintf(h, "%q=%q\n", k, r.PostForm[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + "_" + strings.TrimRight(base64.RawURLEncoding.EncodeToString(b), "=")
}

func writeError(w http.ResponseWriter, status int, e payment.WireError) {
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", newID("req"))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Run serves the simulator on cfg.Addr until ctx ends, then shuts down gracefully. ready, if not nil, is called
// with the bound address once the listener is open (so tests can pass ":0").
func Run(ctx context.Context, cfg Config, logger *slog.Logger, ready func(addr string)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.WebhookURL != "" && cfg.WebhookSecret == "" {
		logger.Warn("webhooks are sent unsigned: PAYMENT_WEBHOOK_SECRET is not set")
	}
	s := New(cfg, logger)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("sim: listen: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	logger.Info("payment simulator listening", "addr", ln.Addr().String(), "webhook_url", cfg.WebhookURL,
		"latency", cfg.Latency.String(), "failure_rate", cfg.FailureRate)
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("sim: serve: %w", err)
	case <-ctx.Done():
	}
	// Close first so that slow calls in flight answer at once and the drain below is quick.
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("sim: shutdown: %w", err)
	}
	logger.Info("payment simulator stopped")
	return nil
}
