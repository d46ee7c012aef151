package booking_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/booking/payment/stripe"
	"github.com/flashseat/flashseat/booking/postgres"
	bookingredis "github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
)

// admittedEnv is a show with its waiting room on, payments through the simulator, and the admission tokens the
// waiting room would issue.
type admittedEnv struct {
	env *bookingtest.Env
	pay *booking.Checkout
	key token.Key
	// checkout is another Checkout on store (the env's, or a wrapper of it), sharing the env's service and gateway.
	checkout func(store booking.PaymentStore) *booking.Checkout
}

func newAdmittedEnv(t *testing.T) *admittedEnv { return newAdmittedEnvLeeway(t, 0) }

// newAdmittedEnvLeeway is newAdmittedEnv with a gate accepting tokens up to leeway past their expiry.
func newAdmittedEnvLeeway(t *testing.T, leeway time.Duration) *admittedEnv {
	t.Helper()
	key, _ := token.GenerateKey()
	rdb := bookingtest.Redis(t)
	pool := pgtest.New(t)
	queues := admissiontest.Keeper(t, pool, rdb)
	gate := admission.NewGate(queues, token.NewStaticKeys(key.Public()), leeway)
	env := &bookingtest.Env{Store: postgres.New(pool), Locks: bookingredis.New(rdb), Pool: pool, RDB: rdb,
		Queues: queues}
	env.Svc = booking.New(env.Store, env.Locks, gate, booking.Config{})
	env.Show = env.NewShow(t)
	s := sim.New(sim.Config{}, nil)
	srv := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); srv.Close() })
	gw, _ := stripe.New(stripe.Config{BaseURL: srv.URL, SecretKey: "sk_test_adm"})
	tk, _, _ := ticket.LoadKey("")
	signer, _ := ticket.NewSigner(tk)
	checkout := func(store booking.PaymentStore) *booking.Checkout {
		p := booking.NewCheckout(env.Svc, store, gw, signer, ticket.NewVerifier(token.NewStaticKeys(signer.Public())),
			booking.CheckoutConfig{})
		t.Cleanup(p.Close)
		return p
	}
	settings := admission.DefaultSettings()
	settings.Enabled = true
	env.QueueOn(t, env.Show.ID, settings)
	return &admittedEnv{env: env, pay: checkout(env.Store), key: key, checkout: checkout}
}

// admit issues user an admission token jti to the show, holding an active slot, as the waiting room would.
func (a *admittedEnv) admit(t *testing.T, user, jti string) string {
	t.Helper()
	raw, _ := a.admitFor(t, user, jti, time.Now(), time.Minute)
	return raw
}

// admitFor is admit with a token issued at iat for ttl; it returns the token's expiry too.
func (a *admittedEnv) admitFor(t *testing.T, user, jti string, iat time.Time, ttl time.Duration) (string, time.Time) {
	t.Helper()
	show := a.env.Show.ID
	raw, exp, err := token.NewIssuer(a.key).Issue(user, show, jti, iat, ttl)
	if err != nil {
		t.Fatal(err)
	}
	a.env.RDB.ZAdd(context.Background(), rediskey.QueueActive(show),
		goredis.Z{Score: float64(exp.UnixMilli()), Member: jti})
	return raw, exp
}

// TestHoldEndsWithItsAdmission: paying needs a valid admission token, so a hold made under one that expires before
// the hold TTL ends with it (its expiresAt says so) and its seats go back on sale, instead of staying held for a
// fan who can no longer pay. A token the gate accepts only within its leeway makes no hold at all.
func TestHoldEndsWithItsAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newAdmittedEnvLeeway(t, 30*time.Second)
	show := a.env.Show.ID
	raw, exp := a.admitFor(t, "u1", "jti-1", time.Now(), 3*time.Second)
	b, _, err := a.env.Svc.Hold(ctx, booking.HoldRequest{UserID: "u1", ShowID: show, SeatIDs: []string{"A1"},
		AdmissionToken: raw})
	if err != nil {
		t.Fatal(err)
	}
	if !b.ExpiresAt.Equal(exp) {
		t.Fatalf("hold expires at %v, want the admission's expiry %v (hold TTL %v)", b.ExpiresAt, exp, a.env.Svc.HoldTTL())
	}
	other := a.admit(t, "u2", "jti-2")
	hold2 := func() error {
		_, _, err := a.env.Svc.Hold(ctx, booking.HoldRequest{UserID: "u2", ShowID: show, SeatIDs: []string{"A1"},
			AdmissionToken: other})
		return err
	}
	if err := hold2(); !errors.Is(err, booking.ErrSeatsUnavailable) {
		t.Fatalf("A1 while u1 holds it: %v, want ErrSeatsUnavailable", err)
	}
	// No lock expiry reports this hold's end (its locks keep the hold TTL), and the Reconciler's sweep is 30 s
	// away: the hold itself has the Reconciler look at its expiry.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.env.Svc.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	for deadline := exp.Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := a.env.Svc.Booking(ctx, b.ID, "u1")
		if err == nil && got.Status == booking.StatusExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("u1's hold 5 s after its admission expired: %+v, %v; want EXPIRED", got, err)
		}
	}
	if err := hold2(); err != nil {
		t.Fatalf("A1 after u1's admission expired: %v, want it on sale again", err)
	}

	late, _ := a.admitFor(t, "u3", "jti-3", time.Now().Add(-time.Minute), 50*time.Second) // expired 10 s ago
	_, _, err = a.env.Svc.Hold(ctx, booking.HoldRequest{UserID: "u3", ShowID: show, SeatIDs: []string{"A2"},
		AdmissionToken: late})
	var qe *booking.QueueError
	if !errors.As(err, &qe) || !errors.Is(err, token.ErrExpired) {
		t.Fatalf("hold under a token past its expiry, within the leeway: %v, want a queue error (expired)", err)
	}
	// That refusal took nothing: A2 is free for the next fan at once, not shown taken by this replica's snapshot.
	if _, _, err := a.env.Svc.Hold(ctx, booking.HoldRequest{UserID: "u2", ShowID: show, SeatIDs: []string{"A2"},
		AdmissionToken: other}); err != nil {
		t.Fatalf("A2 after a refused hold of it: %v, want it held", err)
	}
}

// TestAdmissionOutlivesAnEarlierHold: a fan holds twice under one admission (the first hold's answer was lost to
// an outage, so the fan held again), and the first hold ends (it expires unseen, or is cancelled). The fan is
// still admitted for the booking it is paying for; the admission ends with the last booking made under it.
func TestAdmissionOutlivesAnEarlierHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newAdmittedEnv(t)
	show, rdb := a.env.Show.ID, a.env.RDB
	raw := a.admit(t, "u1", "jti-1")
	hold := func(seat string) booking.Booking {
		b, _, err := a.env.Svc.Hold(ctx, booking.HoldRequest{UserID: "u1", ShowID: show, SeatIDs: []string{seat},
			AdmissionToken: raw})
		if err != nil {
			t.Fatalf("hold %s: %v", seat, err)
		}
		return b
	}
	lost, paid := hold("A1"), hold("A2")
	if _, _, err := a.env.Svc.Cancel(ctx, lost.ID, "u1"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZScore(ctx, rediskey.QueueRevoked(show), "jti-1").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("the admission was revoked while another booking made under it is held (%v)", err)
	}
	res, err := a.pay.Pay(ctx, booking.PayRequest{BookingID: paid.ID, UserID: "u1", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k1", AdmissionToken: raw})
	if err != nil || res.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("paying the booking still held: %+v, %v", res, err)
	}
	if err := rdb.ZScore(ctx, rediskey.QueueRevoked(show), "jti-1").Err(); err != nil {
		t.Fatalf("the admission outlived its last booking: %v", err)
	}
}
