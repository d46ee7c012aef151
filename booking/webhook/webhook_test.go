package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/booking/webhook"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

// receiver is an operator's endpoint: it checks every delivery's signature with the endpoint's secret and answers
// the statuses queued in fail (then 200).
type receiver struct {
	srv    *httptest.Server
	secret string
	fail   atomic.Int64 // answer 500 this many more times
	mu     sync.Mutex
	got    []map[string]any
	bad    int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := payment.VerifySignature(body, req.Header.Get(webhook.SignatureHeader), r.secret, 5*time.Minute, time.Now()); err != nil {
			r.bad++
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.fail.Load() > 0 {
			r.fail.Add(-1)
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		if m["id"] != req.Header.Get(webhook.EventIDHeader) {
			r.bad++
		}
		r.got = append(r.got, m)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) }

func event(id, typ, show string) booking.LifecycleEvent {
	return booking.LifecycleEvent{ID: id, Type: typ, ShowID: show, Subject: "bk_1", At: time.Now(),
		Data: json.RawMessage(`{"showId":"` + show + `","bookingId":"bk_1"}`)}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestWebhookDeliveries: endpoints for one show, for every show, and for one event type get exactly the events
// that match them, signed with their own secret; an event delivered twice by the stream is sent once; an endpoint
// that fails is retried with backoff until it answers, and one that keeps failing ends FAILED; a replay sends it
// again; a deleted endpoint gets nothing more.
func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	store := postgres.New(pgtest.New(t))
	var delivered, retried, gaveUp atomic.Int64
	svc := webhook.New(store, webhook.Config{RetryBase: 50 * time.Millisecond, MaxAttempts: 3, PollEvery: 20 * time.Millisecond,
		AllowPrivate: true, OnAttempt: func(r webhook.Result) {
			switch {
			case r.OK:
				delivered.Add(1)
			case r.GiveUp:
				gaveUp.Add(1)
			default:
				retried.Add(1)
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)

	showA, all, confirmed := newReceiver(t), newReceiver(t), newReceiver(t)
	reg := func(r *receiver, show string, types ...string) webhook.Endpoint {
		e, err := svc.Register(ctx, webhook.Registration{URL: r.srv.URL + "/hook", ShowID: show, Types: types})
		if err != nil {
			t.Fatal(err)
		}
		r.secret = e.Secret
		return e
	}
	epA := reg(showA, "sh_a")
	epAll := reg(all, "")
	reg(confirmed, "", booking.EventConfirmed)

	for _, e := range []booking.LifecycleEvent{event("ob_1", booking.EventHeld, "sh_a"), event("ob_2", booking.EventHeld, "sh_b"),
		event("ob_3", booking.EventConfirmed, "sh_b"), event("ob_1", booking.EventHeld, "sh_a")} { // ob_1 redelivered
		if err := svc.HandleEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "deliveries", func() bool { return showA.count() == 1 && all.count() == 3 && confirmed.count() == 1 })
	time.Sleep(100 * time.Millisecond)
	if showA.count() != 1 || all.count() != 3 || confirmed.count() != 1 || showA.bad+all.bad+confirmed.bad != 0 {
		t.Fatalf("show A got %d, all %d, confirmed-only %d (bad signatures %d), want 1, 3, 1 and none bad",
			showA.count(), all.count(), confirmed.count(), showA.bad+all.bad+confirmed.bad)
	}
	if got := confirmed.got[0]; got["type"] != booking.EventConfirmed || got["id"] != "ob_3" || got["showId"] != "sh_b" {
		t.Fatalf("body %v", got)
	}

	// Two failures, then success: three attempts, backing off.
	showA.fail.Store(2)
	start := time.Now()
	if err := svc.HandleEvent(ctx, event("ob_4", booking.EventExpired, "sh_a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the retried delivery", func() bool { return showA.count() == 2 })
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("delivered after %s: the retries did not back off (50ms, then 100ms)", took)
	}
	var ds []webhook.Delivery
	var err error
	waitFor(t, "the delivery recorded", func() bool {
		ds, err = svc.Deliveries(ctx, epA.ID, 10)
		return err != nil || (len(ds) > 0 && ds[0].Status != webhook.Pending)
	})
	if err != nil || len(ds) != 2 || ds[0].EventID != "ob_4" || ds[0].Status != webhook.Delivered || ds[0].Attempts != 3 {
		t.Fatalf("deliveries %+v %v, want ob_4 DELIVERED after 3 attempts, newest first", ds, err)
	}

	// An endpoint that keeps failing: FAILED after MaxAttempts, then replayed once it works again.
	showA.fail.Store(100)
	if err := svc.HandleEvent(ctx, event("ob_5", booking.EventCancelled, "sh_a")); err != nil {
		t.Fatal(err)
	}
	var failed webhook.Delivery
	waitFor(t, "the delivery to fail", func() bool {
		ds, _ := svc.Deliveries(ctx, epA.ID, 1)
		if len(ds) == 1 && ds[0].Status == webhook.Failed {
			failed = ds[0]
			return true
		}
		return false
	})
	if failed.Attempts != 3 || failed.LastStatus != 500 || failed.LastError == "" {
		t.Fatalf("failed delivery %+v, want 3 attempts, last status 500 and its error", failed)
	}
	showA.fail.Store(0)
	if d, err := svc.Replay(ctx, epA.ID, failed.ID); err != nil || d.Status != webhook.Pending {
		t.Fatalf("replay: %+v %v", d, err)
	}
	waitFor(t, "the replayed delivery", func() bool { return showA.count() == 3 })
	if _, err := svc.Replay(ctx, epAll.ID, failed.ID); !errors.Is(err, booking.ErrNotFound) {
		t.Fatalf("replaying another endpoint's delivery: %v, want ErrNotFound", err)
	}

	waitFor(t, "every event at the all-shows endpoint", func() bool { return all.count() == 5 }) // ob_1..ob_5
	if err := svc.Delete(ctx, epAll.ID); err != nil {
		t.Fatal(err)
	}
	if err := svc.Delete(ctx, epAll.ID); !errors.Is(err, booking.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	if err := svc.HandleEvent(ctx, event("ob_6", booking.EventHeld, "sh_z")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if all.count() != 5 {
		t.Fatalf("a deleted endpoint got %d deliveries, want still 5", all.count())
	}
	// The metrics hook saw every attempt: ob_4's two failures, ob_5's two retries and its giving up.
	if retried.Load() != 4 || gaveUp.Load() != 1 || delivered.Load() < 7 {
		t.Errorf("attempts seen: %d delivered, %d to retry, %d given up; want at least 7, 4 and 1",
			delivered.Load(), retried.Load(), gaveUp.Load())
	}
	eps, _ := svc.Endpoints(ctx)
	if len(eps) != 2 {
		t.Fatalf("%d endpoints listed, want 2 after the delete", len(eps))
	}
}

// TestWebhookRegistrationRefusals: bad URLs, show ids and event types are refused as validation errors.
func TestWebhookRegistrationRefusals(t *testing.T) {
	t.Parallel()
	svc := webhook.New(postgres.New(pgtest.New(t)), webhook.Config{})
	for _, r := range []webhook.Registration{
		{URL: ""}, {URL: "ftp://x/y"}, {URL: "/relative"}, {URL: "http://user:pw@host/"}, {URL: "file:///etc/passwd"},
		{URL: "javascript:alert(1)"}, {URL: "gopher://ok.example/"},
		{URL: "https://ok.example/h", ShowID: "bad id!"}, {URL: "https://ok.example/h", Types: []string{"booking.nope"}},
		// Private hosts, refused by default.
		{URL: "http://localhost:8080/h"}, {URL: "http://api.localhost/h"}, {URL: "http://127.0.0.1/h"},
		{URL: "http://10.1.2.3/h"}, {URL: "http://192.168.0.1/h"}, {URL: "http://172.16.5.5/h"},
		{URL: "http://169.254.169.254/latest/meta-data/"}, {URL: "http://[::1]/h"}, {URL: "http://[fd00::1]/h"},
		{URL: "http://[fe80::1]/h"}, {URL: "http://[::ffff:127.0.0.1]/h"}, {URL: "http://0.0.0.0/h"},
		{URL: "http://100.100.100.200/h"},
	} {
		if _, err := svc.Register(context.Background(), r); !errors.Is(err, booking.ErrValidation) {
			t.Errorf("%+v: %v, want ErrValidation", r, err)
		}
	}
}

// TestWebhookPrivateAddressesAllowed: with AllowPrivate (development, tests) a loopback endpoint registers.
func TestWebhookPrivateAddressesAllowed(t *testing.T) {
	t.Parallel()
	svc := webhook.New(postgres.New(pgtest.New(t)), webhook.Config{AllowPrivate: true})
	if _, err := svc.Register(context.Background(), webhook.Registration{URL: "http://127.0.0.1:9/h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Register(context.Background(), webhook.Registration{URL: "https://hooks.example.com/h"}); err != nil {
		t.Fatal(err)
	}
}

// TestWebhookDialGuard: an endpoint whose address turns private after it was registered (a name rebound to
// 127.0.0.1; here the row is written as a registration of a public name would have left it) gets nothing: the
// connection is refused at dial time, the delivery records why and is retried, and the receiver sees no request.
func TestWebhookDialGuard(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	store := postgres.New(pool)
	var results []webhook.Result
	var mu sync.Mutex
	svc := webhook.New(store, webhook.Config{MaxAttempts: 2, RetryBase: 10 * time.Millisecond,
		OnAttempt: func(r webhook.Result) { mu.Lock(); results = append(results, r); mu.Unlock() }})
	recv := newReceiver(t)
	ep := webhook.Endpoint{ID: booking.NewID("we_"), URL: recv.srv.URL + "/hook", Types: []string{}, Secret: "whsec_x",
		CreatedAt: time.Now()}
	if err := store.CreateEndpoint(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := svc.HandleEvent(ctx, event("ev_1", booking.EventHeld, "sh_a")); err != nil {
		t.Fatal(err)
	}
	if n := svc.Send(ctx); n != 1 {
		t.Fatalf("sent %d, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(results) != 1 || results[0].OK || !strings.Contains(results[0].Error, "private") {
		t.Fatalf("attempt results %+v, want one refused as private", results)
	}
	if recv.count() != 0 || recv.bad != 0 {
		t.Fatalf("the private receiver got %d deliveries (%d bad)", recv.count(), recv.bad)
	}
	ds, err := svc.Deliveries(ctx, ep.ID, 10)
	if err != nil || len(ds) != 1 || ds[0].Status != webhook.Pending || !strings.Contains(ds[0].LastError, "private") {
		t.Fatalf("deliveries %+v (%v), want one PENDING with the refusal as its last error", ds, err)
	}
}

// TestWebhookSecretRoll: after a roll, deliveries carry two v1 signatures, the new secret's first, so a receiver
// still holding the old secret and one already holding the new one both verify them; once the grace period is
// over (or with no grace) only the new secret signs. An unknown endpoint or a grace out of range is refused.
func TestWebhookSecretRoll(t *testing.T) {
	t.Parallel()
	store := postgres.New(pgtest.New(t))
	svc := webhook.New(store, webhook.Config{AllowPrivate: true})
	ctx := context.Background()
	var mu sync.Mutex
	var headers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		headers = append(headers, r.Header.Get(webhook.SignatureHeader)+"|"+string(body))
		mu.Unlock()
	}))
	defer srv.Close()
	ep, err := svc.Register(ctx, webhook.Registration{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	old := ep.Secret
	send := func(id string) (header string, body []byte) {
		t.Helper()
		if err := svc.HandleEvent(ctx, event(id, booking.EventHeld, "sh_a")); err != nil {
			t.Fatal(err)
		}
		if n := svc.Send(ctx); n != 1 {
			t.Fatalf("sent %d, want 1", n)
		}
		mu.Lock()
		defer mu.Unlock()
		h, b, _ := strings.Cut(headers[len(headers)-1], "|")
		return h, []byte(b)
	}
	verifies := func(h string, body []byte, secret string) bool {
		return payment.VerifySignature(body, h, secret, time.Minute, time.Now()) == nil
	}

	rolled, err := svc.RollSecret(ctx, ep.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rolled.Secret == old || !strings.HasPrefix(rolled.Secret, "whsec_") ||
		time.Until(rolled.PreviousSecretExpiresAt) < 59*time.Minute {
		t.Fatalf("rolled endpoint %+v, want a new secret and the old one signing for an hour", rolled)
	}
	h, body := send("ev_1")
	if strings.Count(h, "v1=") != 2 || !verifies(h, body, old) || !verifies(h, body, rolled.Secret) {
		t.Fatalf("during the grace period the signature %q does not carry both secrets", h)
	}
	ts, _, _ := strings.Cut(strings.TrimPrefix(h, "t="), ",")
	unix, _ := strconv.ParseInt(ts, 10, 64)
	if want := payment.SignAll(body, time.Unix(unix, 0), rolled.Secret, old); h != want {
		t.Fatalf("signature %q, want the new secret's first: %q", h, want)
	}
	eps, err := svc.Endpoints(ctx)
	if err != nil || len(eps) != 1 || eps[0].PreviousSecretExpiresAt.IsZero() {
		t.Fatalf("endpoints %+v (%v), want the previous secret's expiry listed", eps, err)
	}

	again, err := svc.RollSecret(ctx, ep.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, body = send("ev_2")
	if strings.Count(h, "v1=") != 1 || !verifies(h, body, again.Secret) || verifies(h, body, rolled.Secret) ||
		!again.PreviousSecretExpiresAt.IsZero() {
		t.Fatalf("after a roll with no grace the signature %q (endpoint %+v) is not the new secret's alone", h, again)
	}

	if _, err := svc.RollSecret(ctx, "we_nope", time.Hour); !errors.Is(err, booking.ErrNotFound) {
		t.Fatalf("roll of an unknown endpoint: %v, want ErrNotFound", err)
	}
	if _, err := svc.RollSecret(ctx, ep.ID, 8*24*time.Hour); !errors.Is(err, booking.ErrValidation) {
		t.Fatalf("roll with a week and a day of grace: %v, want ErrValidation", err)
	}
}
