// Package webhook delivers lifecycle events to operators' HTTP endpoints. An operator registers an endpoint for
// one show or for every show (optionally for some event types only); each event read from the event stream (the
// "webhooks" consumer group) becomes one delivery per matching endpoint, recorded in PostgreSQL, then POSTed,
// signed as Stripe signs its webhooks, and retried with exponential backoff until the endpoint answers 2xx or the
// attempts run out. Deliveries are listed and replayable from the operator API.
//
// Signature: header Flashseat-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>, the
// endpoint's own secret (whsec_...), so a receiver checks it with any Stripe-compatible verifier and rejects old
// timestamps to stop replays.
package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment"
)

// Headers of a delivery.
const (
	SignatureHeader = "Flashseat-Signature"
	EventIDHeader   = "Flashseat-Event-Id"
	DeliveryHeader  = "Flashseat-Delivery-Id"
)

// Status is where a delivery stands.
type Status string

// PENDING until the endpoint answered 2xx (DELIVERED) or the attempts ran out (FAILED).
const (
	Pending   Status = "PENDING"
	Delivered Status = "DELIVERED"
	Failed    Status = "FAILED"
)

// Endpoint is a registered receiver.
type Endpoint struct {
	ID        string
	URL       string
	ShowID    string   // empty: every show
	Types     []string // empty: every event type
	Secret    string
	CreatedAt time.Time
	// PreviousSecretExpiresAt is when the secret replaced by the last roll stops signing deliveries; zero when
	// it no longer does.
	PreviousSecretExpiresAt time.Time
}

// Delivery is one event sent (or to be sent) to one endpoint.
type Delivery struct {
	ID          string
	EndpointID  string
	EventID     string
	EventType   string
	ShowID      string
	Body        []byte
	Status      Status
	Attempts    int
	NextAt      time.Time
	LastStatus  int
	LastError   string
	CreatedAt   time.Time
	DeliveredAt time.Time
	// URL and Secret are the endpoint's, filled by Claim for the sender; PreviousSecret too while a rolled
	// secret still signs ("" otherwise).
	URL, Secret, PreviousSecret string
}

// Result is the outcome of one attempt.
type Result struct {
	OK         bool
	StatusCode int
	Error      string
	Next       time.Time // when to try again if not OK
	GiveUp     bool      // no attempts left: FAILED
}

// Store keeps endpoints and deliveries; booking/postgres implements it.
type Store interface {
	CreateEndpoint(ctx context.Context, e Endpoint) error
	Endpoints(ctx context.Context) ([]Endpoint, error)
	// DeleteEndpoint removes an endpoint (its deliveries stay listed, its pending ones are not sent);
	// booking.ErrNotFound when there is none.
	DeleteEndpoint(ctx context.Context, id string) error
	// Enqueue records a delivery of the event to every live endpoint matching its show and type; a delivery the
	// endpoint already has for this event id is not added again. It returns how many were added.
	Enqueue(ctx context.Context, e booking.LifecycleEvent, body func(Endpoint) (id string, body []byte)) (int, error)
	// Claim leases up to limit due PENDING deliveries of live endpoints for lease, counting an attempt for each.
	Claim(ctx context.Context, lease time.Duration, limit int) ([]Delivery, error)
	// Record stores an attempt's result.
	Record(ctx context.Context, deliveryID string, r Result) error
	// Deliveries lists an endpoint's deliveries, newest first; booking.ErrNotFound for an unknown endpoint.
	Deliveries(ctx context.Context, endpointID string, limit int) ([]Delivery, error)
	// RollSecret gives a live endpoint a new secret; the old one keeps signing until graceUntil (not at all if
	// that is past). booking.ErrNotFound when there is no such endpoint.
	RollSecret(ctx context.Context, id, secret string, graceUntil time.Time) (Endpoint, error)
	// Replay makes a delivery of the endpoint PENDING and due now with its attempts reset, whatever its status;
	// booking.ErrNotFound when the endpoint has no such delivery.
	Replay(ctx context.Context, endpointID, deliveryID string) (Delivery, error)
}

// Config tunes a Service.
type Config struct {
	Timeout     time.Duration // per attempt (WEBHOOK_TIMEOUT); default 10s
	MaxAttempts int           // attempts before FAILED (WEBHOOK_MAX_ATTEMPTS); default 12
	RetryBase   time.Duration // first retry after this, doubling each time up to an hour (WEBHOOK_RETRY_BASE); default 10s
	PollEvery   time.Duration // the sender looks for due deliveries this often; default 1s
	Client      *http.Client  // default one with Timeout that refuses private addresses unless AllowPrivate
	// AllowPrivate lets endpoints be on loopback, private and link-local addresses (WEBHOOK_ALLOW_PRIVATE):
	// development and tests, whose receivers run beside the platform. Off, such URLs are refused when registered
	// if their host says so, and every delivery's connection is refused if it would reach one (dial.go).
	AllowPrivate bool
	Now          func() time.Time
	Logger       *slog.Logger
	// OnAttempt is told the result of every delivery attempt (metrics): delivered, failed for good, or to be
	// retried; nil is fine.
	OnAttempt func(Result)
}

// Service manages endpoints and sends deliveries.
type Service struct {
	store Store
	cfg   Config
	log   *slog.Logger
	kick  chan struct{}
}

// New returns a Service over store.
func New(store Store, cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 12
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 10 * time.Second
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = time.Second
	}
	if cfg.Client == nil {
		cfg.Client = guardedClient(cfg.Timeout, cfg.AllowPrivate)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1)}
}

// Registration is what an operator asks for.
type Registration struct {
	URL    string
	ShowID string
	Types  []string
}

// knownTypes are the event types an endpoint may subscribe to.
var knownTypes = map[string]bool{
	booking.EventHeld: true, booking.EventExpired: true, booking.EventCancelled: true, booking.EventConfirmed: true,
	booking.EventRefunded: true, booking.EventPaymentAuthorized: true, booking.EventPaymentDeclined: true,
	booking.EventCheckedIn: true, booking.EventWaitlistOffered: true, booking.EventWaitlistAccepted: true,
	booking.EventWaitlistLapsed: true, booking.EventQueueOpened: true, booking.EventQueuePaused: true,
	booking.EventQueueSoldOut: true, booking.EventQueueClosed: true,
}

// Register adds an endpoint and returns it with its secret, which is shown this once.
func (s *Service) Register(ctx context.Context, r Registration) (Endpoint, error) {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(r.URL) > 2048 {
		return Endpoint{}, booking.Unprocessable("url must be an absolute http(s) URL without credentials")
	}
	if !s.cfg.AllowPrivate && privateHost(u) {
		return Endpoint{}, booking.Unprocessable("url must not point at a private, loopback or link-local address")
	}
	if r.ShowID != "" && !booking.ValidID(r.ShowID) {
		return Endpoint{}, booking.Unprocessable("showId is not a show id")
	}
	if len(r.Types) > len(knownTypes) {
		return Endpoint{}, booking.Unprocessable("too many event types")
	}
	for _, t := range r.Types {
		if !knownTypes[t] {
			return Endpoint{}, booking.Unprocessable("unknown event type %q (see docs/EVENTS.md)", clip(t))
		}
	}
	e := Endpoint{ID: booking.NewID("we_"), URL: r.URL, ShowID: r.ShowID, Types: r.Types,
		Secret: newSecret(), CreatedAt: s.cfg.Now().UTC().Truncate(time.Millisecond)}
	if e.Types == nil {
		e.Types = []string{}
	}
	if err := s.store.CreateEndpoint(ctx, e); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// Endpoints lists the live endpoints.
func (s *Service) Endpoints(ctx context.Context) ([]Endpoint, error) { return s.store.Endpoints(ctx) }

// Delete removes an endpoint.
func (s *Service) Delete(ctx context.Context, id string) error {
	if !booking.ValidID(id) {
		return fmt.Errorf("webhook endpoint: %w", booking.ErrNotFound)
	}
	return s.store.DeleteEndpoint(ctx, id)
}

// MaxSecretGrace bounds how long a rolled secret may keep signing.
const MaxSecretGrace = 7 * 24 * time.Hour

// RollSecret replaces an endpoint's signing secret and returns the endpoint with the new one, shown this once.
// For grace (at most MaxSecretGrace; zero: not at all) every delivery is signed with both, the new one first
// (Flashseat-Signature: t=...,v1=<new>,v1=<old>), so the receiver can move to the new secret when it likes.
func (s *Service) RollSecret(ctx context.Context, id string, grace time.Duration) (Endpoint, error) {
	if !booking.ValidID(id) {
		return Endpoint{}, fmt.Errorf("webhook endpoint: %w", booking.ErrNotFound)
	}
	if grace < 0 || grace > MaxSecretGrace {
		return Endpoint{}, booking.Unprocessable("graceSeconds must be between 0 and %d", int(MaxSecretGrace.Seconds()))
	}
	secret := newSecret()
	e, err := s.store.RollSecret(ctx, id, secret, s.cfg.Now().Add(grace))
	if err != nil {
		return Endpoint{}, err
	}
	e.Secret = secret
	return e, nil
}

// Deliveries lists an endpoint's latest deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, endpointID string, limit int) ([]Delivery, error) {
	if !booking.ValidID(endpointID) {
		return nil, fmt.Errorf("webhook endpoint: %w", booking.ErrNotFound)
	}
	return s.store.Deliveries(ctx, endpointID, limit)
}

// Replay sends a delivery again (now, with a fresh round of attempts).
func (s *Service) Replay(ctx context.Context, endpointID, deliveryID string) (Delivery, error) {
	if !booking.ValidID(endpointID) || !booking.ValidID(deliveryID) {
		return Delivery{}, fmt.Errorf("webhook delivery: %w", booking.ErrNotFound)
	}
	d, err := s.store.Replay(ctx, endpointID, deliveryID)
	if err == nil {
		s.nudge()
	}
	return d, err
}

// Body is the JSON a delivery of e carries: {"id","type","created","showId","subject","data"}.
func Body(e booking.LifecycleEvent) []byte {
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	b, _ := json.Marshal(struct {
		ID      string          `json:"id"`
		Type    string          `json:"type"`
		Created int64           `json:"created"`
		ShowID  string          `json:"showId"`
		Subject string          `json:"subject"`
		Data    json.RawMessage `json:"data"`
	}{e.ID, e.Type, e.At.Unix(), e.ShowID, e.Subject, data})
	return b
}

// HandleEvent is the webhooks consumer group's handler: it records a delivery of e to every matching endpoint.
// Redelivered events add nothing (one delivery per endpoint and event id).
func (s *Service) HandleEvent(ctx context.Context, e booking.LifecycleEvent) error {
	body := Body(e)
	n, err := s.store.Enqueue(ctx, e, func(Endpoint) (string, []byte) { return booking.NewID("whd_"), body })
	if n > 0 {
		s.nudge()
	}
	return err
}

func (s *Service) nudge() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollEvery)
	defer t.Stop()
	for {
		for ctx.Err() == nil && s.Send(ctx) == sendBatch {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

const sendBatch = 50

// Send attempts one batch of due deliveries, eight at a time, and returns how many it attempted.
func (s *Service) Send(ctx context.Context) int {
	ds, err := s.store.Claim(ctx, s.cfg.Timeout+5*time.Second, sendBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "webhooks: claim deliveries", "err", err)
		}
		return 0
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := s.attempt(ctx, d)
			if s.cfg.OnAttempt != nil {
				s.cfg.OnAttempt(r)
			}
			if err := s.store.Record(context.WithoutCancel(ctx), d.ID, r); err != nil {
				s.log.WarnContext(ctx, "webhooks: record attempt", "delivery", d.ID, "err", err)
			}
		}()
	}
	wg.Wait()
	return len(ds)
}

// attempt POSTs one delivery, signed at the time of sending.
func (s *Service) attempt(ctx context.Context, d Delivery) Result {
	now := s.cfg.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return s.failed(d, 0, err.Error(), now)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flashseat-webhooks/1")
	secrets := []string{d.Secret}
	if d.PreviousSecret != "" {
		secrets = append(secrets, d.PreviousSecret)
	}
	req.Header.Set(SignatureHeader, payment.SignAll(d.Body, now, secrets...))
	req.Header.Set(EventIDHeader, d.EventID)
	req.Header.Set(DeliveryHeader, d.ID)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return s.failed(d, 0, clip(err.Error()), now)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return Result{OK: true, StatusCode: resp.StatusCode}
	}
	return s.failed(d, resp.StatusCode, "HTTP "+resp.Status, now)
}

// failed is the result of a failed attempt: retry after RetryBase × 2^(attempts-1), at most an hour later, or
// give up after MaxAttempts.
func (s *Service) failed(d Delivery, code int, msg string, now time.Time) Result {
	backoff := s.cfg.RetryBase
	for i := 1; i < d.Attempts && backoff < time.Hour; i++ {
		backoff *= 2
	}
	return Result{StatusCode: code, Error: msg, Next: now.Add(min(backoff, time.Hour)), GiveUp: d.Attempts >= s.cfg.MaxAttempts}
}

// newSecret is an endpoint's signing secret.
func newSecret() string { return "whsec_" + randomHex(24) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// clip keeps error texts short in the delivery log.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
