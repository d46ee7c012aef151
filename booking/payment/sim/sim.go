// Package sim is the bundled payment gateway simulator: a small HTTP server speaking the subset of Stripe's API
// that booking's stripe adapter uses (create-and-confirm, capture, cancel and retrieve a PaymentIntent; create a
// refund), with Stripe's idempotency-key semantics and signed webhooks. `make run` points booking at it, so the
// code path exercised in development and tests is the one that talks to Stripe in production.
//
// It is a test double of an external system, so its state lives in memory and dies with it. The contract's test
// payment methods decide each outcome:
//
//	pm_card_ok        approves (pm_card_visa, pm_card_mastercard too)
//	pm_card_declined  declines with a 402 card_error (pm_card_chargeDeclined too)
//	pm_card_slow      answers only after SlowDelay, longer than booking's gateway timeout, and then approves
//	pm_card_error     fails with a 500 api_error, changing nothing
package sim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// Test payment methods (see the package comment).
const (
	CardOK       = "pm_card_ok"
	CardDeclined = "pm_card_declined"
	CardSlow     = "pm_card_slow"
	CardError    = "pm_card_error"
)

// Config configures a simulator.
type Config struct {
	Addr string // listen address for Run, e.g. ":8082"
	// WebhookURL receives signed events; empty sends none.
	WebhookURL string
	// WebhookSecret signs the events; with WebhookURL set and no secret, events go unsigned (and a verifying
	// receiver will refuse them), which Run logs as a warning.
	WebhookSecret string
	// APIKey, when set, is the only secret key accepted; empty accepts any non-empty key, as stripe-mock does.
	APIKey string
	// Latency delays every answer.
	Latency time.Duration
	// FailureRate in [0,1] is the share of calls answered 500 without any effect.
	FailureRate float64
	// SlowDelay is how long pm_card_slow takes to authorize. Default 8s.
	SlowDelay time.Duration
}

// Validate reports a config Run would not work with.
func (c Config) Validate() error {
	if c.FailureRate < 0 || c.FailureRate > 1 || math.IsNaN(c.FailureRate) {
		return fmt.Errorf("sim: failure rate %v outside [0,1]", c.FailureRate)
	}
	if c.Latency < 0 || c.SlowDelay < 0 {
		return errors.New("sim: latency and slow delay must not be negative")
	}
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("sim: webhook URL %q must be an http(s) URL", c.WebhookURL)
		}
	}
	return nil
}

// ConfigFromEnv reads PAYSIM_ADDR (default ":8082"), PAYMENT_WEBHOOK_URL (default
// "http://127.0.0.1:8081/webhooks/payments"; "off" disables webhooks), PAYMENT_WEBHOOK_SECRET, PAYSIM_API_KEY,
// PAYSIM_LATENCY (a Go duration), PAYSIM_FAILURE_RATE (0..1) and PAYSIM_SLOW_DELAY (a Go duration).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Addr:          getenv("PAYSIM_ADDR"),
		WebhookURL:    getenv("PAYMENT_WEBHOOK_URL"),
		WebhookSecret: getenv("PAYMENT_WEBHOOK_SECRET"),
		APIKey:        getenv("PAYSIM_API_KEY"),
	}
	if c.Addr == "" {
		c.Addr = ":8082"
	}
	switch c.WebhookURL {
	case "":
		c.WebhookURL = "http://127.0.0.1:8081/webhooks/payments"
	case "off":
		c.WebhookURL = ""
	}
	var err error
	durations := []struct {
		name string
		dst  *time.Duration
	}{{"PAYSIM_LATENCY", &c.Latency}, {"PAYSIM_SLOW_DELAY", &c.SlowDelay}}
	for _, d := range durations {
		if v := getenv(d.name); v != "" {
			if *d.dst, err = time.ParseDuration(v); err != nil {
				return Config{}, fmt.Errorf("sim: %s: %w", d.name, err)
			}
		}
	}
	if v := getenv("PAYSIM_FAILURE_RATE"); v != "" {
		if c.FailureRate, err = strconv.ParseFloat(v, 64); err != nil {
			return Config{}, fmt.Errorf("sim: PAYSIM_FAILURE_RATE: %w", err)
		}
	}
	return c, c.Validate()
}

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
	WebhooksSent   int // delivered with a 2xx answer
	WebhooksFailed int // given up after retries
}

type intent struct {
	seq      int64 // creation order, since created has only second resolution
	obj      payment.WireObject
	refunded int64
	charge   string
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
		intents: map[string]*intent{}, idem: map[string]*idemEntry{}}
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

// LedgerPath is the simulator's own (non-Stripe) endpoint listing every intent with the money it holds, so a
// checker in another process (the load test) can compare the gateway's books with booking's ledger.
const LedgerPath = "/_sim/ledger"

// Entry is one intent in the simulator's ledger.
type Entry struct {
	IntentID   string `json:"intentId"`
	BookingID  string `json:"bookingId"`
	Status     string `json:"status"`
	Capturable int64  `json:"capturable"` // authorized, not captured
	Received   int64  `json:"received"`   // captured
	Refunded   int64  `json:"refunded"`
}

// Ledger returns every intent with the money it holds.
func (s *Server) Ledger() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, len(s.intents))
	for _, in := range s.intents {
		out = append(out, Entry{IntentID: in.obj.ID, BookingID: in.obj.Metadata[payment.MetaBooking], Status: in.obj.Status,
			Capturable: in.obj.AmountCapturable, Received: in.obj.AmountReceived, Refunded: in.refunded})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IntentID < out[j].IntentID })
	return out
}

func (s *Server) ledger(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, payment.WireError{Type: "invalid_request_error", Message: "Invalid API Key provided."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": s.Ledger()})
}

// FetchLedger reads the ledger of a simulator running at baseURL.
func FetchLedger(ctx context.Context, baseURL, apiKey string) ([]Entry, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+LedgerPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sim: ledger: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sim: ledger: HTTP %d", resp.StatusCode)
	}
	var body struct {
		Entries []Entry `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("sim: ledger: %w", err)
	}
	return body.Entries, nil
}

// Refunded returns how much of an intent has been refunded.
func (s *Server) Refunded(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.intents[id]; ok {
		return in.refunded
	}
	return 0
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

// api wraps an endpoint with what every Stripe call goes through: authentication, latency, injected failures,
// form parsing and the idempotency cache.
func (s *Server) api(h func(r *http.Request, form url.Values) reply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.stats.Requests++
		s.mu.Unlock()
		if !s.authorized(r) {
			writeError(w, http.StatusUnauthorized, payment.WireError{Type: "invalid_request_error",
				Message: "Invalid API Key provided."})
			return
		}
		s.sleep(time.Duration(s.latency.Load()))
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			writeError(w, http.StatusBadRequest, payment.WireError{Type: "invalid_request_error",
				Message: "Invalid request body: " + err.Error()})
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

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	var key string
	if k, ok := strings.CutPrefix(h, "Bearer "); ok {
		key = k
	} else if user, _, ok := r.BasicAuth(); ok {
		key = user
	}
	if key == "" {
		return false
	}
	return s.cfg.APIKey == "" || key == s.cfg.APIKey
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

func invalid(param, msg string) reply {
	return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error", Code: "parameter_invalid",
		Param: param, Message: msg})
}

func missing(id string) reply {
	return fail(http.StatusNotFound, payment.WireError{Type: "invalid_request_error", Code: "resource_missing",
		Param: "intent", Message: "No such payment_intent: '" + id + "'"})
}

func unexpectedState(in *intent, action string) reply {
	return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error",
		Code: "payment_intent_unexpected_state", Message: fmt.Sprintf(
			"This PaymentIntent could not be %s because it has a status of %s.", action, in.obj.Status)})
}

func (s *Server) create(r *http.Request, form url.Values) reply {
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		return invalid("amount", "Invalid positive integer")
	}
	currency := strings.ToLower(form.Get("currency"))
	if len(currency) != 3 {
		return invalid("currency", "Invalid currency: "+currency)
	}
	capture := form.Get("capture_method")
	if capture == "" {
		capture = "automatic"
	}
	if capture != "automatic" && capture != "manual" {
		return invalid("capture_method", "Invalid capture_method: "+capture)
	}
	meta := map[string]string{}
	for k, v := range form {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") && len(v) > 0 {
			meta[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	pm := form.Get("payment_method")
	in := &intent{obj: payment.WireObject{ID: newID("pi"), Object: "payment_intent", Amount: amount,
		Currency: currency, CaptureMethod: capture, PaymentMethod: pm, Created: time.Now().Unix(),
		Metadata: meta, Status: string(payment.StatusRequiresPaymentMethod)}}
	if form.Get("confirm") != "true" {
		if pm != "" {
			in.obj.Status = string(payment.StatusRequiresConfirmation)
		}
		s.put(in)
		return ok(in.obj)
	}
	switch pm {
	case CardOK, "pm_card_visa", "pm_card_mastercard":
		s.put(in)
		return ok(s.approve(in))
	case CardSlow:
		in.obj.Status = string(payment.StatusProcessing)
		s.put(in)
		s.sleep(s.cfg.SlowDelay)
		return ok(s.approve(in))
	case CardDeclined, "pm_card_chargeDeclined":
		e := payment.WireError{Type: "card_error", Code: "card_declined", DeclineCode: "generic_decline",
			Message: "Your card was declined.", Param: "payment_method"}
		last := e // a copy: the answer's error embeds the intent, whose last_payment_error must not embed it back
		in.obj.LastPaymentError = &last
		s.put(in)
		s.mu.Lock()
		s.stats.Declines++
		snap := in.obj
		s.mu.Unlock()
		s.hooks.send(payment.EventFailed, snap)
		e.PaymentIntent = &snap
		return fail(http.StatusPaymentRequired, e)
	case CardError:
		s.mu.Lock()
		s.stats.InjectedErrors++
		s.mu.Unlock()
		return fail(http.StatusInternalServerError, payment.WireError{Type: "api_error",
			Message: "An unexpected error occurred at the simulated processor."})
	case "":
		return invalid("payment_method", "You must provide a payment_method to confirm a PaymentIntent.")
	default:
		return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error", Code: "resource_missing",
			Param: "payment_method", Message: "No such PaymentMethod: '" + pm + "'"})
	}
}

func (s *Server) put(in *intent) {
	s.mu.Lock()
	s.seq++
	in.seq = s.seq
	s.intents[in.obj.ID] = in
	s.mu.Unlock()
}

// approve moves a confirmed intent to requires_capture (or straight to succeeded for automatic capture).
func (s *Server) approve(in *intent) payment.WireObject {
	s.mu.Lock()
	s.stats.Authorizations++
	event := payment.EventAuthorized
	if in.obj.CaptureMethod == "manual" {
		in.obj.Status, in.obj.AmountCapturable = string(payment.StatusRequiresCapture), in.obj.Amount
	} else {
		in.obj.Status, in.obj.AmountReceived = string(payment.StatusSucceeded), in.obj.Amount
		in.charge = newID("ch")
		event = payment.EventSucceeded
	}
	snap := in.obj
	s.mu.Unlock()
	s.hooks.send(event, snap)
	return snap
}

func (s *Server) retrieve(r *http.Request, _ url.Values) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, found := s.intents[r.PathValue("id")]
	if !found {
		return missing(r.PathValue("id"))
	}
	return ok(in.obj)
}

// locked finds the intent of the request's path and returns it with s.mu held; a missing intent is answered
// without the lock held.
func (s *Server) locked(r *http.Request) (*intent, *reply) {
	s.mu.Lock()
	in, found := s.intents[r.PathValue("id")]
	if !found {
		s.mu.Unlock()
		rep := missing(r.PathValue("id"))
		return nil, &rep
	}
	return in, nil
}

func (s *Server) capture(r *http.Request, form url.Values) reply {
	in, rep := s.locked(r)
	if rep != nil {
		return *rep
	}
	if in.obj.Status != string(payment.StatusRequiresCapture) {
		defer s.mu.Unlock()
		return unexpectedState(in, "captured")
	}
	amount := in.obj.AmountCapturable
	if v := form.Get("amount_to_capture"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > amount {
			s.mu.Unlock()
			return invalid("amount_to_capture", "amount_to_capture must be positive and at most amount_capturable")
		}
		amount = n
	}
	in.obj.Status, in.obj.AmountCapturable, in.obj.AmountReceived = string(payment.StatusSucceeded), 0, amount
	in.charge = newID("ch")
	s.stats.Captures++
	snap := in.obj
	s.mu.Unlock()
	s.hooks.send(payment.EventSucceeded, snap)
	return ok(snap)
}

func (s *Server) cancel(r *http.Request, _ url.Values) reply {
	in, rep := s.locked(r)
	if rep != nil {
		return *rep
	}
	switch payment.Status(in.obj.Status) {
	case payment.StatusRequiresCapture, payment.StatusRequiresPaymentMethod, payment.StatusRequiresConfirmation,
		payment.StatusRequiresAction:
	default:
		defer s.mu.Unlock()
		return unexpectedState(in, "canceled")
	}
	in.obj.Status, in.obj.AmountCapturable = string(payment.StatusCanceled), 0
	s.stats.Voids++
	snap := in.obj
	s.mu.Unlock()
	s.hooks.send(payment.EventCanceled, snap)
	return ok(snap)
}

func (s *Server) refund(_ *http.Request, form url.Values) reply {
	id := form.Get("payment_intent")
	if id == "" {
		return invalid("payment_intent", "You must provide a payment_intent or charge to refund.")
	}
	s.mu.Lock()
	in, found := s.intents[id]
	if !found {
		s.mu.Unlock()
		return missing(id)
	}
	if in.obj.Status != string(payment.StatusSucceeded) {
		defer s.mu.Unlock()
		return unexpectedState(in, "refunded")
	}
	left := in.obj.AmountReceived - in.refunded
	if left <= 0 {
		s.mu.Unlock()
		return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error",
			Code: "charge_already_refunded", Message: "Charge " + in.charge + " has already been refunded."})
	}
	amount := left
	if v := form.Get("amount"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > left {
			s.mu.Unlock()
			return invalid("amount", "Refund amount must be positive and at most the amount left to refund")
		}
		amount = n
	}
	in.refunded += amount
	s.stats.Refunds++
	ref := payment.WireObject{ID: newID("re"), Object: "refund", Amount: amount, Currency: in.obj.Currency,
		PaymentIntent: id, Status: "succeeded", Created: time.Now().Unix(), Metadata: in.obj.Metadata}
	charge := payment.WireObject{ID: in.charge, Object: "charge", Amount: in.obj.Amount,
		AmountCaptured: in.obj.AmountReceived, AmountRefunded: in.refunded, Refunded: in.refunded == in.obj.AmountReceived,
		Currency: in.obj.Currency, PaymentIntent: id, Status: "succeeded", Metadata: in.obj.Metadata}
	s.mu.Unlock()
	s.hooks.send(payment.EventRefunded, charge)
	return ok(ref)
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

// webhooks delivers signed events to one URL, retrying failed deliveries with backoff.
type webhooks struct {
	url, secret string
	log         *slog.Logger
	stop        <-chan struct{}
	count       func(ok bool)
	client      *http.Client

	mu     sync.Mutex // orders wg.Add against wait's wg.Wait
	closed bool
	wg     sync.WaitGroup
}

func newWebhooks(url, secret string, log *slog.Logger, stop <-chan struct{}, count func(bool)) *webhooks {
	return &webhooks{url: url, secret: secret, log: log, stop: stop, count: count,
		client: &http.Client{Timeout: 5 * time.Second}}
}

// send queues an event built around obj. Each event is delivered by its own goroutine: order is not guaranteed,
// as it is not by Stripe, so receivers must not depend on it.
func (h *webhooks) send(typ string, obj payment.WireObject) {
	if h.url == "" {
		return
	}
	ev := map[string]any{"id": newID("evt"), "object": "event", "type": typ, "created": time.Now().Unix(),
		"livemode": false, "api_version": "2024-06-20", "data": map[string]any{"object": obj}}
	body, _ := json.Marshal(ev)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.deliver(typ, body)
	}()
}

func (h *webhooks) deliver(typ string, body []byte) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := h.post(body)
		if err == nil {
			h.count(true)
			return
		}
		if attempt == 5 {
			h.log.Warn("webhook delivery failed", "type", typ, "attempts", attempt, "err", err)
			h.count(false)
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-h.stop:
			t.Stop()
			h.count(false)
			return
		}
		backoff *= 3
	}
}

func (h *webhooks) post(body []byte) error {
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flashseat-paysim/1")
	if h.secret != "" {
		req.Header.Set(payment.SignatureHeader, payment.Sign(body, h.secret, time.Now()))
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %d", resp.StatusCode)
	}
	return nil
}

func (h *webhooks) wait() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}
