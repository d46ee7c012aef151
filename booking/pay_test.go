package booking_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/booking/payment/stripe"
	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
)

// payEnv is a booking Service on the real stores with Checkout over the gateway simulator, reached through the
// Stripe adapter over HTTP as in production.
type payEnv struct {
	*bookingtest.Env
	sim      *sim.Server
	gw       payment.Gateway
	pay      *booking.Checkout
	cfg      booking.CheckoutConfig
	signer   *ticket.Signer
	verifier *ticket.Verifier
}

const webhookSecret = "whsec_paytest"

func newPayEnv(t testing.TB, bcfg booking.Config, scfg sim.Config, pcfg booking.CheckoutConfig) *payEnv {
	t.Helper()
	e := &payEnv{Env: bookingtest.New(t, bcfg)}
	e.sim = sim.New(scfg, nil)
	srv := httptest.NewServer(e.sim)
	t.Cleanup(func() { e.sim.Close(); srv.Close() })
	if pcfg.GatewayTimeout == 0 {
		pcfg.GatewayTimeout = 2 * time.Second
	}
	if pcfg.Lease == 0 {
		pcfg.Lease = 500 * time.Millisecond
	}
	if pcfg.PendingRetry == 0 {
		pcfg.PendingRetry = 50 * time.Millisecond
	}
	pcfg.WebhookSecret = webhookSecret
	gw, err := stripe.New(stripe.Config{BaseURL: srv.URL, SecretKey: "sk_test_pay", Timeout: pcfg.GatewayTimeout})
	if err != nil {
		t.Fatal(err)
	}
	e.gw = gw
	key, _, _ := ticket.LoadKey("")
	e.signer, _ = ticket.NewSigner(key)
	e.verifier = ticket.NewVerifier(token.NewStaticKeys(e.signer.Public()))
	e.cfg = pcfg
	e.pay = e.restart(t, e.gw)
	return e
}

// restart builds a fresh Checkout on the same stores, as a new process would.
func (e *payEnv) restart(t testing.TB, gw payment.Gateway) *booking.Checkout {
	p := booking.NewCheckout(e.Svc, e.Store, gw, e.signer, e.verifier, e.cfg)
	t.Cleanup(p.Close)
	return p
}

func (e *payEnv) hold(t *testing.T, user string, seats ...string) booking.Booking {
	t.Helper()
	b, _, err := e.Svc.Hold(context.Background(), booking.HoldRequest{UserID: user, ShowID: e.Show.ID, SeatIDs: seats})
	if err != nil {
		t.Fatalf("hold %v: %v", seats, err)
	}
	return b
}

func (e *payEnv) payWith(b booking.Booking, method, key string) (booking.PayResult, error) {
	return e.pay.Pay(context.Background(), booking.PayRequest{BookingID: b.ID, UserID: b.UserID,
		PaymentMethod: method, IdempotencyKey: key})
}

func (e *payEnv) status(t *testing.T, id string) booking.Status {
	t.Helper()
	var s booking.Status
	if err := e.Pool.QueryRow(context.Background(), `SELECT status FROM bookings WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// settle runs the recovery worker until no attempt of the test has work left, then checks every invariant.
func (e *payEnv) settle(t *testing.T, p *booking.Checkout) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var open int
		if err := e.Pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM payment_attempts WHERE state IN ('STARTED','PENDING','AUTHORIZED','VOIDING','REFUNDING'))
			+ (SELECT count(*) FROM payments WHERE status IN ('AUTHORIZED','REFUNDING'))`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d attempts or payments still unsettled", open)
		}
		time.Sleep(e.cfg.Lease / 5)
		p.Recover(ctx)
	}
	e.checkInvariants(t)
}

// checkInvariants checks the ledger's invariants and that the gateway's books agree with it.
func (e *payEnv) checkInvariants(t *testing.T) {
	t.Helper()
	vs, err := invariant.Check(context.Background(), e.Pool, invariant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var books []invariant.Money
	for _, m := range e.sim.Ledger() {
		books = append(books, invariant.Money{IntentID: m.IntentID, BookingID: m.BookingID, Capturable: m.Capturable,
			Received: m.Received, Refunded: m.Refunded})
	}
	gvs, err := invariant.CheckGateway(context.Background(), e.Pool, books, invariant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(vs, gvs...) {
		t.Error(v)
	}
}

func TestPayConfirms(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	b := e.hold(t, "u1", "D1", "D2")
	res, err := e.payWith(b, sim.CardOK, "k1")
	if err != nil {
		t.Fatal(err)
	}
	got := res.Booking
	if got.Status != booking.StatusConfirmed || got.PaymentID == "" || len(got.Tickets) != 2 || res.Pending {
		t.Fatalf("pay = %+v, want CONFIRMED with a payment and 2 tickets", res)
	}
	for _, tk := range got.Tickets {
		c, err := e.verifier.Verify(tk.Code)
		if err != nil || c.TicketID != tk.ID || c.SeatID != tk.SeatID || c.ShowID != b.ShowID {
			t.Fatalf("ticket %+v code verifies as %+v, %v", tk, c, err)
		}
	}
	again, err := e.payWith(b, sim.CardOK, "k1")
	if err != nil || !again.Replayed || again.Booking.PaymentID != got.PaymentID || len(again.Booking.Tickets) != 2 {
		t.Fatalf("replay = %+v, %v; want the first outcome", again, err)
	}
	if _, err := e.payWith(b, sim.CardDeclined, "k1"); !errors.Is(err, booking.ErrIdempotency) {
		t.Fatalf("same key, other body: %v, want ErrIdempotency", err)
	}
	if _, err := e.payWith(b, sim.CardOK, "k2"); !errors.Is(err, booking.ErrNotHeld) {
		t.Fatalf("pay a confirmed booking with a new key: %v, want ErrNotHeld", err)
	}
	e.pay.Wait() // the capture runs off the fan's path
	st := e.sim.Stats()
	if st.Authorizations != 1 || st.Captures != 1 {
		t.Fatalf("gateway stats = %+v, want 1 authorization and 1 capture", st)
	}
	held, sold, err := e.Locks.Status(context.Background(), b.ShowID, b.SeatIDs)
	if err != nil || held["D1"] || !sold["D1"] || !sold["D2"] {
		t.Fatalf("redis after confirm: held %v sold %v (%v); want sold, not held", held, sold, err)
	}
	view, err := e.pay.BookingView(context.Background(), b.ID, "u1")
	if err != nil || len(view.Tickets) != 2 || view.PaymentID != got.PaymentID {
		t.Fatalf("booking view = %+v, %v", view, err)
	}
	e.settle(t, e.pay)
}

func TestPayDeclinedThenOK(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	b := e.hold(t, "u1", "E5")
	if _, err := e.payWith(b, sim.CardDeclined, "k1"); !errors.Is(err, booking.ErrPaymentDeclined) {
		t.Fatalf("declined card: %v, want ErrPaymentDeclined", err)
	}
	if s := e.status(t, b.ID); s != booking.StatusHeld {
		t.Fatalf("status after decline = %s, want HELD", s)
	}
	if _, err := e.payWith(b, sim.CardDeclined, "k1"); !errors.Is(err, booking.ErrPaymentDeclined) {
		t.Fatalf("replayed decline: %v, want ErrPaymentDeclined", err)
	}
	if _, err := e.payWith(b, "pm_card_bogus", "k2"); !errors.Is(err, booking.ErrValidation) {
		t.Fatalf("unknown method: %v, want ErrValidation", err)
	}
	if _, err := e.payWith(b, "pm card; drop", "k3"); !errors.Is(err, booking.ErrValidation) {
		t.Fatalf("malformed method: %v, want ErrValidation", err)
	}
	for _, key := range []string{"", "nul\x00key", string(make([]byte, 256))} {
		if _, err := e.payWith(b, sim.CardOK, key); !errors.Is(err, booking.ErrInvalid) {
			t.Fatalf("key %q: %v, want ErrInvalid", key, err)
		}
	}
	if res, err := e.payWith(b, sim.CardOK, "k4"); err != nil || res.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("second card: %+v, %v", res, err)
	}
	if st := e.sim.Stats(); st.Declines != 1 || st.Authorizations != 1 {
		t.Fatalf("gateway stats = %+v, want 1 decline and 1 authorization", st)
	}
	e.settle(t, e.pay)
}

func TestPaySlowGatewayResolvedByWorker(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{SlowDelay: 800 * time.Millisecond},
		booking.CheckoutConfig{GatewayTimeout: 150 * time.Millisecond, ReplayWait: 100 * time.Millisecond})
	b := e.hold(t, "u1", "F1")
	res, err := e.payWith(b, sim.CardSlow, "k1")
	if err != nil || !res.Pending {
		t.Fatalf("slow card: %+v, %v; want pending", res, err)
	}
	if s := e.status(t, b.ID); s != booking.StatusPaymentPending {
		t.Fatalf("status = %s, want PAYMENT_PENDING", s)
	}
	if res, err := e.payWith(b, sim.CardSlow, "k1"); err != nil || !res.Pending {
		t.Fatalf("replay while pending: %+v, %v", res, err)
	}
	if _, err := e.payWith(b, sim.CardOK, "k2"); !errors.Is(err, booking.ErrInProgress) {
		t.Fatalf("another key while pending: %v, want ErrInProgress", err)
	}
	held, _, _ := e.Locks.Status(context.Background(), b.ShowID, b.SeatIDs)
	if !held["F1"] {
		t.Fatal("seat not held while the payment is pending")
	}
	e.settle(t, e.pay)
	if s := e.status(t, b.ID); s != booking.StatusConfirmed {
		t.Fatalf("status after recovery = %s, want CONFIRMED", s)
	}
	if res, err := e.payWith(b, sim.CardSlow, "k1"); err != nil || res.Pending || len(res.Booking.Tickets) != 1 {
		t.Fatalf("replay after recovery: %+v, %v; want the confirmation", res, err)
	}
	if st := e.sim.Stats(); st.Authorizations != 1 || st.Captures != 1 {
		t.Fatalf("gateway stats = %+v, want exactly one authorization and capture", st)
	}
}

func TestPaySameKeyConcurrently(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{Latency: 50 * time.Millisecond}, booking.CheckoutConfig{})
	b := e.hold(t, "u1", "G1", "G2", "G3")
	var wg sync.WaitGroup
	results := make([]booking.PayResult, 20)
	errs := make([]error, 20)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = e.payWith(b, sim.CardOK, "same-key") })
	}
	wg.Wait()
	payID := ""
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if payID == "" {
			payID = results[i].Booking.PaymentID
		}
		if results[i].Booking.PaymentID != payID || len(results[i].Booking.Tickets) != 3 {
			t.Fatalf("request %d got %+v, want payment %s with 3 tickets", i, results[i].Booking, payID)
		}
	}
	e.pay.Wait()
	if st := e.sim.Stats(); st.Authorizations != 1 || st.Captures != 1 {
		t.Fatalf("gateway stats = %+v, want one authorization for 20 requests", st)
	}
	e.settle(t, e.pay)
}

func TestPayTwoKeysAtOnce(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{Latency: 30 * time.Millisecond}, booking.CheckoutConfig{})
	for round := range 5 {
		b := e.hold(t, fmt.Sprintf("u%d", round), booking.SeatID("H", round+1))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { _, errs[i] = e.payWith(b, sim.CardOK, fmt.Sprintf("key-%d-%d", round, i)) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, booking.ErrInProgress), errors.Is(err, booking.ErrNotHeld):
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d payments confirmed (%v), want exactly 1", round, ok, errs)
		}
	}
	if st := e.sim.Stats(); st.Authorizations != 5 {
		t.Fatalf("gateway stats = %+v, want one authorization per booking", st)
	}
	e.settle(t, e.pay)
}

func TestPayRacingCancel(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{Latency: 20 * time.Millisecond}, booking.CheckoutConfig{})
	var paid, cancelled atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		b := e.hold(t, fmt.Sprintf("u%d", i), booking.SeatID("I", i+1))
		wg.Go(func() {
			_, err := e.payWith(b, sim.CardOK, "k")
			switch {
			case err == nil:
				paid.Add(1)
			case errors.Is(err, booking.ErrNotHeld), errors.Is(err, booking.ErrHoldExpired):
				// cancelled first, seen at the check or when extending the released locks
			default:
				t.Errorf("pay: %v", err)
			}
		})
		wg.Go(func() {
			// From before the pay starts to after it has confirmed: some cancels beat the check, some land while
			// the gateway is authorizing (the authorization must then be voided), some come too late.
			time.Sleep(time.Duration(i) * 10 * time.Millisecond)
			_, _, err := e.pay.Cancel(context.Background(), b.ID, b.UserID)
			switch {
			case err == nil:
				cancelled.Add(1)
			case errors.Is(err, booking.ErrNotHeld):
			default:
				t.Errorf("cancel: %v", err)
			}
		})
	}
	wg.Wait()
	if paid.Load()+cancelled.Load() != 20 {
		t.Fatalf("%d paid + %d cancelled, want 20 in all: each booking is either sold or cancelled", paid.Load(), cancelled.Load())
	}
	t.Logf("paid %d, cancelled %d", paid.Load(), cancelled.Load())
	e.settle(t, e.pay)
	st := e.sim.Stats()
	t.Logf("gateway: %d authorizations, %d captures, %d voids", st.Authorizations, st.Captures, st.Voids)
	if int64(st.Captures) != paid.Load() || st.Authorizations-st.Captures != st.Voids {
		t.Fatalf("gateway stats = %+v: every authorization must end captured (paid %d) or voided", st, paid.Load())
	}
}

func TestPayRacingHoldExpiry(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	e := newPayEnv(t, booking.Config{HoldTTL: ttl}, sim.Config{}, booking.CheckoutConfig{})
	var paid, expired atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		b := e.hold(t, fmt.Sprintf("u%d", i), booking.SeatID("J", i+1))
		wg.Go(func() {
			// Spread the pays around the moment the hold lapses.
			time.Sleep(ttl - 60*time.Millisecond + time.Duration(i)*6*time.Millisecond)
			_, err := e.payWith(b, sim.CardOK, "k")
			switch {
			case err == nil:
				paid.Add(1)
			case errors.Is(err, booking.ErrHoldExpired):
				expired.Add(1)
			default:
				t.Errorf("pay: %v", err)
			}
		})
	}
	wg.Wait()
	t.Logf("paid %d, expired %d", paid.Load(), expired.Load())
	if paid.Load()+expired.Load() != 20 {
		t.Fatalf("%d + %d answers, want 20", paid.Load(), expired.Load())
	}
	e.settle(t, e.pay)
	if st := e.sim.Stats(); int64(st.Captures) != paid.Load() || st.Authorizations != st.Captures+st.Voids {
		t.Fatalf("gateway stats = %+v, want captures = paid (%d) and nothing else left authorized", st, paid.Load())
	}
}

// hooked is a gateway that runs a hook after each authorization returns.
type hooked struct {
	payment.Gateway
	afterAuthorize func(ctx context.Context)
}

func (g *hooked) Authorize(ctx context.Context, p payment.AuthorizeParams) (payment.Intent, error) {
	in, err := g.Gateway.Authorize(ctx, p)
	if g.afterAuthorize != nil {
		g.afterAuthorize(ctx)
	}
	return in, err
}

func TestPayRedisLostBetweenAuthorizeAndConfirm(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	p := e.restart(t, &hooked{Gateway: e.gw, afterAuthorize: func(context.Context) { bookingtest.DeleteShowKeys(e.RDB, e.Show.ID) }})
	b := e.hold(t, "u1", "A1", "A2")
	_, err := p.Pay(context.Background(), booking.PayRequest{BookingID: b.ID, UserID: "u1", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k1"})
	if !errors.Is(err, booking.ErrHoldExpired) {
		t.Fatalf("pay after Redis lost the locks: %v, want ErrHoldExpired", err)
	}
	if s := e.status(t, b.ID); s != booking.StatusExpired {
		t.Fatalf("status = %s, want EXPIRED", s)
	}
	if st := e.sim.Stats(); st.Authorizations != 1 || st.Voids != 1 || st.Captures != 0 {
		t.Fatalf("gateway stats = %+v, want the authorization voided", st)
	}
	e.settle(t, p)
	// The seats can be held and bought again, under a new fencing epoch.
	b2 := e.hold(t, "u2", "A1", "A2")
	if res, err := e.payWith(b2, sim.CardOK, "k2"); err != nil || res.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("resale: %+v, %v", res, err)
	}
	e.settle(t, e.pay)
}

// crashing is a PaymentStore that stops the process (cancels the saga) at a chosen step.
type crashing struct {
	booking.PaymentStore
	beforeSale func()
}

func (s *crashing) ConfirmSale(ctx context.Context, sale booking.Sale) (booking.Booking, error) {
	if s.beforeSale != nil {
		s.beforeSale()
		<-ctx.Done()
		return booking.Booking{}, ctx.Err()
	}
	return s.PaymentStore.ConfirmSale(ctx, sale)
}

func TestPayProcessKilledBetweenAuthorizeAndConfirm(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()

	// Killed right after the gateway answered, before the intent was even recorded.
	var first *booking.Checkout
	first = booking.NewCheckout(e.Svc, e.Store, &hooked{Gateway: e.gw, afterAuthorize: func(ctx context.Context) {
		go first.Kill()
		<-ctx.Done() // the process is gone before it could record the answer
	}}, e.signer, e.verifier, e.cfg)
	b1 := e.hold(t, "u1", "B1")
	if _, err := first.Pay(ctx, booking.PayRequest{BookingID: b1.ID, UserID: "u1", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k1"}); err == nil {
		t.Fatal("the killed saga reported success")
	}
	first.Kill()

	// Killed with the authorization recorded, just before the sale's transaction.
	var second *booking.Checkout
	second = booking.NewCheckout(e.Svc, &crashing{PaymentStore: e.Store, beforeSale: func() { go second.Kill() }},
		e.gw, e.signer, e.verifier, e.cfg)
	b2 := e.hold(t, "u2", "B2")
	if _, err := second.Pay(ctx, booking.PayRequest{BookingID: b2.ID, UserID: "u2", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k2"}); err == nil {
		t.Fatal("the killed saga reported success")
	}
	second.Kill()
	var states []string
	rows, _ := e.Pool.Query(ctx, `SELECT state FROM payment_attempts ORDER BY created_at`)
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		states = append(states, s)
	}
	if fmt.Sprint(states) != "[STARTED AUTHORIZED]" {
		t.Fatalf("attempts after the crashes = %v, want [STARTED AUTHORIZED]", states)
	}

	// The next process's worker finishes both sales once the dead sagas' leases pass.
	e.settle(t, e.pay)
	for _, b := range []booking.Booking{b1, b2} {
		if s := e.status(t, b.ID); s != booking.StatusConfirmed {
			t.Fatalf("booking %s after recovery = %s, want CONFIRMED", b.ID, s)
		}
	}
	// A client retrying its key after the restart gets the confirmation.
	if res, err := e.payWith(b1, sim.CardOK, "k1"); err != nil || len(res.Booking.Tickets) != 1 {
		t.Fatalf("retry after restart: %+v, %v", res, err)
	}
	if st := e.sim.Stats(); st.Authorizations != 2 || st.Captures != 2 {
		t.Fatalf("gateway stats = %+v, want 2 authorizations (one per booking) and 2 captures", st)
	}
}

func TestPayCircuitBreaker(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{FailureRate: 1}, booking.CheckoutConfig{})
	// The cool-down is long enough that a loaded machine's slow database between the third call and the fourth
	// cannot let it lapse (the fourth call would then be the half-open probe).
	const cooldown = 2 * time.Second
	br := payment.NewBreaker(e.gw, payment.BreakerConfig{MinCalls: 3, Cooldown: cooldown})
	p := e.restart(t, br)
	b := e.hold(t, "u1", "C1")
	pay := func(key string) error {
		_, err := p.Pay(context.Background(), booking.PayRequest{BookingID: b.ID, UserID: "u1",
			PaymentMethod: sim.CardOK, IdempotencyKey: key})
		return err
	}
	for i := range 3 {
		if err := pay("k"); !errors.Is(err, booking.ErrPaymentFailed) || !errors.Is(err, payment.ErrUnavailable) {
			t.Fatalf("call %d: %v, want ErrPaymentFailed", i, err)
		}
	}
	asked := e.sim.Stats().Requests
	err := pay("k")
	var open *payment.OpenError
	// Fast means without asking the gateway at all: counted, not timed, so a loaded machine cannot fail it.
	if !errors.As(err, &open) || open.RetryAfter <= 0 {
		t.Fatalf("4th call: %v, want an OpenError with RetryAfter", err)
	}
	if n := e.sim.Stats().Requests - asked; n != 0 {
		t.Fatalf("4th call, the circuit open: %d gateway requests, want none", n)
	}
	if s := e.status(t, b.ID); s != booking.StatusHeld {
		t.Fatalf("status with the circuit open = %s, want HELD", s)
	}
	e.sim.SetFailureRate(0)
	time.Sleep(cooldown + 100*time.Millisecond)
	if err := pay("k"); err != nil { // the same key runs afresh: failed calls were not recorded as outcomes
		t.Fatalf("after the cool-down: %v", err)
	}
	e.settle(t, p)
}

func TestRefund(t *testing.T) {
	t.Parallel()
	// The fixture's show starts in 48h: a 24h window leaves a day to refund.
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{RefundWindow: 24 * time.Hour})
	ctx := context.Background()
	b := e.hold(t, "u1", "D7", "D8")
	res, err := e.payWith(b, sim.CardOK, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u2"}); !errors.Is(err, booking.ErrNotFound) {
		t.Fatalf("another user's refund: %v, want ErrNotFound", err)
	}
	rb, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1"})
	if err != nil || rb.Status != booking.StatusRefunded {
		t.Fatalf("refund = %+v, %v", rb, err)
	}
	if again, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1"}); err != nil || again.Status != booking.StatusRefunded {
		t.Fatalf("second refund = %+v, %v; want the same answer", again, err)
	}
	intent := e.sim.Intents()[0]
	if got := e.sim.Refunded(intent.ID); got != b.TotalAmount {
		t.Fatalf("gateway refunded %d, want %d", got, b.TotalAmount)
	}
	if _, err := e.pay.CheckIn(ctx, res.Booking.Tickets[0].Code, "staff"); !errors.Is(err, booking.ErrTicketVoid) {
		t.Fatalf("check-in of a refunded ticket: %v, want ErrTicketVoid", err)
	}
	// The seats are on sale again at once.
	b2 := e.hold(t, "u2", "D7", "D8")
	if _, err := e.payWith(b2, sim.CardOK, "k2"); err != nil {
		t.Fatalf("resale after refund: %v", err)
	}
	e.settle(t, e.pay)

	// A booking that is not confirmed, and a show too close to refund.
	b3 := e.hold(t, "u3", "D9")
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b3.ID, UserID: "u3"}); !errors.Is(err, booking.ErrNotConfirmed) {
		t.Fatalf("refund of a held booking: %v, want ErrNotConfirmed", err)
	}
	late := booking.NewCheckout(e.Svc, e.Store, e.gw, e.signer, e.verifier, booking.CheckoutConfig{RefundWindow: 72 * time.Hour})
	defer late.Close()
	if _, err := late.Refund(ctx, booking.RefundRequest{BookingID: b2.ID, UserID: "u2"}); !errors.Is(err, booking.ErrRefundWindow) {
		t.Fatalf("refund inside 72h of a show 48h away: %v, want ErrRefundWindow", err)
	}
}

func TestCheckInOnce(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	b := e.hold(t, "u1", "E1")
	res, err := e.payWith(b, sim.CardOK, "k1")
	if err != nil {
		t.Fatal(err)
	}
	code := res.Booking.Tickets[0].Code
	var ok, used atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, err := e.pay.CheckIn(ctx, code, "gate-1")
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, booking.ErrAlreadyCheckedIn):
				used.Add(1)
			default:
				t.Errorf("scan: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || used.Load() != 19 {
		t.Fatalf("%d scans admitted, %d refused; want 1 and 19", ok.Load(), used.Load())
	}
	other, _, _ := ticket.LoadKey("")
	forger, _ := ticket.NewSigner(other)
	forged, _ := forger.Sign(res.Booking.Tickets[0].ID, b.ShowID, "E1")
	unknownTicket, _ := e.signer.Sign("tk_nosuchticket", b.ShowID, "E1")
	tests := []struct {
		name string
		code string
		want error
	}{
		{"forged", forged, booking.ErrTicketInvalid},
		{"garbage", "not-a-code", booking.ErrTicketInvalid},
		{"empty", "", booking.ErrInvalid},
		{"well signed, unknown ticket", unknownTicket, booking.ErrNotFound},
	}
	for _, tt := range tests {
		if _, err := e.pay.CheckIn(ctx, tt.code, "gate-1"); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := e.pay.Ticket(ctx, res.Booking.Tickets[0].ID, "u2"); !errors.Is(err, booking.ErrNotFound) {
		t.Fatalf("another user's ticket: %v, want ErrNotFound", err)
	}
	if tk, err := e.pay.Ticket(ctx, res.Booking.Tickets[0].ID, "u1"); err != nil || tk.Code == "" {
		t.Fatalf("own ticket: %+v, %v", tk, err)
	}
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	b := e.hold(t, "u1", "F9")
	if _, err := e.payWith(b, sim.CardDeclined, "k1"); !errors.Is(err, booking.ErrPaymentDeclined) {
		t.Fatal(err)
	}
	if _, _, err := e.pay.Cancel(ctx, b.ID, "u1"); err != nil {
		t.Fatal(err)
	}
	var attemptID string
	if err := e.Pool.QueryRow(ctx, `SELECT id FROM payment_attempts WHERE booking_id = $1`, b.ID).Scan(&attemptID); err != nil {
		t.Fatal(err)
	}
	// Money appears at the gateway for the declined attempt of a cancelled booking (a late second authorization,
	// say); the webhook telling us must make us give it back.
	in, err := e.gw.Authorize(ctx, payment.AuthorizeParams{Amount: b.TotalAmount, Currency: "INR", PaymentMethod: sim.CardOK,
		BookingID: b.ID, AttemptID: attemptID, IdempotencyKey: "late"})
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Appendf(nil, `{"id":"evt_1","object":"event","type":"payment_intent.amount_capturable_updated","created":%d,
		"data":{"object":{"id":%q,"object":"payment_intent","status":"requires_capture","amount":%d,
		"metadata":{"booking_id":%q,"attempt_id":%q}}}}`, time.Now().Unix(), in.ID, b.TotalAmount, b.ID, attemptID)
	tests := []struct {
		name string
		sig  string
		want error
	}{
		{"bad signature", payment.Sign(body, "whsec_wrong", time.Now()), booking.ErrWebhook},
		{"stale", payment.Sign(body, webhookSecret, time.Now().Add(-time.Hour)), booking.ErrWebhook},
		{"good", payment.Sign(body, webhookSecret, time.Now()), nil},
		{"redelivered", payment.Sign(body, webhookSecret, time.Now()), nil},
	}
	for _, tt := range tests {
		if err := e.pay.Webhook(ctx, body, tt.sig); !errors.Is(err, tt.want) {
			t.Fatalf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if got, _ := e.sim.Intent(in.ID); !got.Canceled() {
		t.Fatalf("intent after the webhook = %s, want canceled", got.Status)
	}
	if st := e.sim.Stats(); st.Voids != 1 {
		t.Fatalf("gateway stats = %+v, want one void (the redelivery ignored)", st)
	}
	if err := e.pay.Webhook(ctx, []byte(`{"id":`), payment.Sign([]byte(`{"id":`), webhookSecret, time.Now())); !errors.Is(err, booking.ErrWebhook) {
		t.Fatalf("malformed body: %v, want ErrWebhook", err)
	}
	e.settle(t, e.pay)
}

// TestPayCancelledWhileGatewayFails: the paying process dies with the gateway's error unread and the fan cancels
// the hold meanwhile: the worker settles the attempt, and no money is left in motion.
func TestPayCancelledWhileGatewayFails(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	var b booking.Booking
	payCtx, die := context.WithCancel(context.Background())
	p := e.restart(t, &hooked{Gateway: e.gw, afterAuthorize: func(context.Context) {
		// The paying process dies with the gateway's answer unread (its context ends), and the fan, told
		// nothing, cancels the hold.
		die()
		if _, _, err := e.Svc.Cancel(context.Background(), b.ID, "u1"); err != nil {
			t.Errorf("cancel during pay: %v", err)
		}
	}})
	b = e.hold(t, "u1", "D4")
	if res, err := p.Pay(payCtx, booking.PayRequest{BookingID: b.ID, UserID: "u1",
		PaymentMethod: sim.CardError, IdempotencyKey: "k1"}); err == nil && !res.Pending {
		t.Fatalf("pay against a failing gateway: %+v, want an error or pending", res)
	}
	if s := e.status(t, b.ID); s != booking.StatusCancelled {
		t.Fatalf("status = %s, want CANCELLED", s)
	}
	e.settle(t, p)
}

// TestPayGatewayNeverAnswers: the worker gives up on an attempt the gateway keeps silent about, so the seat is not
// held forever; when the authorization shows up after all, its webhook gets it voided.
func TestPayGatewayNeverAnswers(t *testing.T) {
	t.Parallel()
	e := newWebhookedEnv(t, sim.Config{SlowDelay: time.Second},
		booking.CheckoutConfig{GatewayTimeout: 100 * time.Millisecond, GiveUpAfter: 300 * time.Millisecond})
	b := e.hold(t, "u1", "C5")
	if res, err := e.payWith(b, sim.CardSlow, "k1"); err != nil || !res.Pending {
		t.Fatalf("slow card: %+v, %v", res, err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(5 * time.Second); e.status(t, b.ID) != booking.StatusHeld; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never gave up")
		}
		e.pay.Recover(ctx)
	}
	if _, err := e.payWith(b, sim.CardSlow, "k1"); !errors.Is(err, booking.ErrPaymentFailed) {
		t.Fatalf("replay after giving up: %v, want ErrPaymentFailed", err)
	}
	// The simulator authorizes after its delay; the webhook finds a REJECTED attempt holding money and voids it.
	for deadline := time.Now().Add(5 * time.Second); e.sim.Stats().Voids == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the late authorization was never voided: %+v", e.sim.Stats())
		}
	}
	e.settle(t, e.pay)
	if res, err := e.payWith(b, sim.CardOK, "k2"); err != nil || res.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("paying again: %+v, %v", res, err)
	}
	e.settle(t, e.pay)
}

// unheard is a Gateway whose authorizations reach the gateway but whose answers are lost on the way back, as when
// a call times out after the gateway answered.
type unheard struct{ payment.Gateway }

func (g unheard) Authorize(ctx context.Context, p payment.AuthorizeParams) (payment.Intent, error) {
	_, _ = g.Gateway.Authorize(ctx, p)
	return payment.Intent{}, &payment.Error{Kind: payment.ErrTimeout, Message: "the answer was lost"}
}

// TestPayWorkerEndsWhatTheGatewayKeepsFailing: a payment whose live call heard nothing is left to the worker, and
// the gateway answers the worker's every ask with a server error (pm_card_error). The worker asks again for
// FailingAfter, not GiveUpAfter (15 minutes here): then the attempt ends as failed, the seats are the fan's to pay
// for again, and no money is held.
func TestPayWorkerEndsWhatTheGatewayKeepsFailing(t *testing.T) {
	t.Parallel()
	const failingAfter = 2 * time.Second
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{FailingAfter: failingAfter})
	b := e.hold(t, "u1", "C7")
	began := time.Now()
	res, err := e.restart(t, unheard{e.gw}).Pay(context.Background(), booking.PayRequest{BookingID: b.ID,
		UserID: "u1", PaymentMethod: sim.CardError, IdempotencyKey: "k1"})
	if err != nil || !res.Pending {
		t.Fatalf("pay with the answer lost: %+v, %v; want pending", res, err)
	}
	ctx := context.Background()
	e.pay.Recover(ctx)
	if time.Since(began) < failingAfter/2 { // a loaded machine may have taken longer: then this says nothing
		if s := e.status(t, b.ID); s != booking.StatusPaymentPending {
			t.Fatalf("status after the first 5xx = %s, want PAYMENT_PENDING: a 5xx may be transient", s)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); e.status(t, b.ID) != booking.StatusHeld; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker still asks after %s", time.Since(began).Round(time.Millisecond))
		}
		e.pay.Recover(ctx)
	}
	if elapsed := time.Since(began); elapsed < failingAfter {
		t.Fatalf("the attempt ended %s after the payment, before FailingAfter", elapsed)
	}
	if _, err := e.payWith(b, sim.CardError, "k1"); !errors.Is(err, booking.ErrPaymentFailed) {
		t.Fatalf("replay after the worker ended it: %v, want ErrPaymentFailed", err)
	}
	if res, err := e.payWith(b, sim.CardOK, "k2"); err != nil || res.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("paying again with another card: %+v, %v", res, err)
	}
	e.settle(t, e.pay)
	if st := e.sim.Stats(); st.Authorizations != 1 || st.Captures != 1 {
		t.Fatalf("gateway stats = %+v, want the second card's one authorization, captured", st)
	}
}

// TestPayReleasesAdmission: with the show's waiting room on, pay needs the fan's admission, and a confirmation frees
// the fan's active slot and revokes the token, so the queue admits the next fan.
func TestPayReleasesAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newAdmittedEnv(t)
	env, p, show, rdb := a.env, a.pay, a.env.Show.ID, a.env.RDB
	raw := a.admit(t, "u1", "jti-1")
	b, _, err := env.Svc.Hold(ctx, booking.HoldRequest{UserID: "u1", ShowID: show, SeatIDs: []string{"A1"}, AdmissionToken: raw})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pay(ctx, booking.PayRequest{BookingID: b.ID, UserID: "u1", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k1"}); !errors.Is(err, booking.ErrQueueRequired) {
		t.Fatalf("pay without the admission token: %v, want ErrQueueRequired", err)
	}
	if _, err := p.Pay(ctx, booking.PayRequest{BookingID: b.ID, UserID: "u1", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k2", AdmissionToken: raw}); err != nil {
		t.Fatalf("pay with the admission token: %v", err)
	}
	if err := rdb.ZScore(ctx, rediskey.QueueActive(show), "jti-1").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("the fan's slot is still active after the confirmation (%v)", err)
	}
	if err := rdb.ZScore(ctx, rediskey.QueueRevoked(show), "jti-1").Err(); err != nil {
		t.Fatalf("the admission token was not revoked: %v", err)
	}
	// Durably: a waiting room rebuilt after Redis lost its data still refuses it.
	if _, revoked, err := env.Queues.Record().Grants(ctx, show, time.Now()); err != nil || len(revoked) != 1 ||
		revoked[0].JTI != "jti-1" || revoked[0].UserID != "u1" {
		t.Fatalf("revocation on record: %+v, %v", revoked, err)
	}
	// A replay of the key still answers, though the token is revoked now.
	if res, err := p.Pay(ctx, booking.PayRequest{BookingID: b.ID, UserID: "u1", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k2", AdmissionToken: raw}); err != nil || !res.Replayed {
		t.Fatalf("replay after release: %+v, %v", res, err)
	}

	// A fan the operator kicked holds seats but cannot start paying for them: the edge passes a pay's token on
	// its signature alone, so this refusal is the only one.
	raw2 := a.admit(t, "u2", "jti-2")
	b2, _, err := env.Svc.Hold(ctx, booking.HoldRequest{UserID: "u2", ShowID: show, SeatIDs: []string{"A2"}, AdmissionToken: raw2})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Queues.AddGrants(ctx, []admission.Grant{{ShowID: show, JTI: "jti-2", UserID: "u2",
		IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Queues.Kick(ctx, show, "jti-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pay(ctx, booking.PayRequest{BookingID: b2.ID, UserID: "u2", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k3", AdmissionToken: raw2}); !errors.Is(err, booking.ErrQueueRequired) {
		t.Fatalf("pay with a kicked admission: %v, want ErrQueueRequired", err)
	}
}

// TestCaptureRetried: a capture that fails leaves the booking confirmed and its payment AUTHORIZED; the worker
// captures it once the gateway is back, never forgetting it.
func TestCaptureRetried(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	p := e.restart(t, &hooked{Gateway: e.gw, afterAuthorize: func(context.Context) { e.sim.SetFailureRate(1) }})
	b := e.hold(t, "u1", "B7")
	res, err := p.Pay(context.Background(), booking.PayRequest{BookingID: b.ID, UserID: "u1", PaymentMethod: sim.CardOK,
		IdempotencyKey: "k1"})
	if err != nil || res.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("pay with the capture failing: %+v, %v; want CONFIRMED all the same", res, err)
	}
	pay, err := e.Store.PaymentOf(context.Background(), b.ID)
	if err != nil || pay.Status != booking.PaymentAuthorized {
		t.Fatalf("payment = %+v, %v; want AUTHORIZED until captured", pay, err)
	}
	e.sim.SetFailureRate(0)
	e.settle(t, p)
	if st := e.sim.Stats(); st.Captures != 1 {
		t.Fatalf("gateway stats = %+v, want the capture done once", st)
	}
}

// TestPayLedgerBackstop: when the ledger already has one of the seats (whatever Redis and the fences believed),
// the sale is refused by the (show, seat) key, the authorization voided and the pay answered as a conflict.
func TestPayLedgerBackstop(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	other := e.hold(t, "u0", "C9")
	b := e.hold(t, "u1", "C8", "C10")
	// Plant a sale of C10 under the other booking with an old fence, as if Redis had forgotten it.
	if _, err := e.Pool.Exec(ctx, `INSERT INTO sold_seats (show_id, seat_id, booking_id, fence) VALUES ($1, 'C10', $2, 0)`,
		e.Show.ID, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.payWith(b, sim.CardOK, "k1"); !errors.Is(err, booking.ErrSeatsUnavailable) {
		t.Fatalf("pay for a seat the ledger has: %v, want ErrSeatsUnavailable", err)
	}
	if _, err := e.payWith(b, sim.CardOK, "k1"); !errors.Is(err, booking.ErrSeatsUnavailable) {
		t.Fatalf("replay: %v, want ErrSeatsUnavailable", err)
	}
	if st := e.sim.Stats(); st.Authorizations != 1 || st.Voids != 1 || st.Captures != 0 {
		t.Fatalf("gateway stats = %+v, want the authorization voided", st)
	}
	if s := e.status(t, b.ID); s != booking.StatusExpired {
		t.Fatalf("status = %s, want EXPIRED", s)
	}
	var ledger int
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM sold_seats WHERE booking_id = $1`, b.ID).Scan(&ledger); err != nil || ledger != 0 {
		t.Fatalf("booking has %d seats in the ledger (%v), want none: the sale rolled back whole", ledger, err)
	}
}

// TestOutboxRelayed: the hold's, the payment's, the sale's and the refund's lifecycle events reach the publisher
// once each, in order.
func TestOutboxRelayed(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{RefundWindow: time.Hour,
		Publish: func(_ context.Context, ev booking.OutboxEvent) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ev.Type+" "+ev.AggregateID)
			return nil
		}})
	ctx := context.Background()
	b := e.hold(t, "u1", "H9")
	if _, err := e.payWith(b, sim.CardOK, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	e.pay.Recover(ctx)
	e.pay.Recover(ctx) // nothing is relayed twice
	mu.Lock()
	defer mu.Unlock()
	want := []string{"booking.held " + b.ID, "payment.authorized " + b.ID, "booking.confirmed " + b.ID,
		"booking.refunded " + b.ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("relayed %v, want %v", got, want)
	}
}

// TestPayChaos: fans pay with every kind of card at once, replay their keys, cancel, while the gateway is slow
// now and then and the show's Redis keys vanish once. When the dust settles the ledger and the gateway agree:
// every invariant holds, every authorization ended captured (a sale) or voided, and nothing was captured twice.
func TestPayChaos(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{Latency: 5 * time.Millisecond, SlowDelay: 400 * time.Millisecond},
		booking.CheckoutConfig{GatewayTimeout: 150 * time.Millisecond, ReplayWait: 300 * time.Millisecond})
	ctx := context.Background()
	stop := make(chan struct{})
	worker := make(chan struct{})
	go func() { // the recovery worker runs throughout, as in production
		defer close(worker)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				e.pay.Recover(ctx)
			}
		}
	}()
	methods := []string{sim.CardOK, sim.CardOK, sim.CardOK, sim.CardDeclined, sim.CardSlow, sim.CardError}
	var wg sync.WaitGroup
	for i := range 60 {
		b := e.hold(t, fmt.Sprintf("u%d", i), booking.SeatID(string(rune('A'+i/20)), i%20+1))
		wg.Go(func() {
			r := i * 7919
			method := methods[r%len(methods)]
			for try := range 3 {
				// The second try replays the first (same key, same card); the third is a new key with a good card.
				key := fmt.Sprintf("k%d-%d", i, try/2)
				if try == 2 {
					method = sim.CardOK
				}
				_, err := e.payWith(b, method, key)
				switch {
				case err == nil, errors.Is(err, booking.ErrPaymentDeclined), errors.Is(err, booking.ErrPaymentFailed),
					errors.Is(err, booking.ErrNotHeld), errors.Is(err, booking.ErrHoldExpired),
					errors.Is(err, booking.ErrInProgress), errors.Is(err, booking.ErrSeatsUnavailable):
				default:
					t.Errorf("fan %d pay %s: %v", i, method, err)
				}
			}
			if r%5 == 0 {
				_, _, _ = e.pay.Cancel(ctx, b.ID, b.UserID)
			}
		})
		if i == 30 {
			bookingtest.DeleteShowKeys(e.RDB, e.Show.ID) // Redis loses the show mid-sale
		}
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // let the slow authorizations land
	close(stop)
	<-worker
	e.settle(t, e.pay)

	var confirmed int
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM bookings WHERE status = 'CONFIRMED'`).Scan(&confirmed); err != nil {
		t.Fatal(err)
	}
	st := e.sim.Stats()
	t.Logf("%d confirmed; gateway %+v", confirmed, st)
	if st.Captures != confirmed || st.Authorizations != st.Captures+st.Voids {
		t.Fatalf("gateway: %d authorizations, %d captures, %d voids for %d confirmed bookings", st.Authorizations,
			st.Captures, st.Voids, confirmed)
	}
	for _, in := range e.sim.Intents() {
		if in.Authorized() {
			t.Errorf("intent %s still holds money (%s)", in.ID, in.Status)
		}
	}
}

// racing is a PaymentStore that runs a hook once, right after an attempt is recorded AUTHORIZED.
type racing struct {
	booking.PaymentStore
	once            sync.Once
	afterAuthorized func()
}

func (s *racing) UpdateAttempt(ctx context.Context, id string, u booking.AttemptUpdate) (bool, error) {
	ok, err := s.PaymentStore.UpdateAttempt(ctx, id, u)
	if ok && u.To == booking.AttemptAuthorized {
		s.once.Do(s.afterAuthorized)
	}
	return ok, err
}

// TestPayWorkerOvertakesSaga: a saga so slow that its lease passes finds the worker has taken its attempt over and
// sold the seats (so the locks it checks are gone); it must answer with the worker's sale, never void its money.
func TestPayWorkerOvertakesSaga(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	worker := e.restart(t, e.gw)
	store := &racing{PaymentStore: e.Store, afterAuthorized: func() {
		if _, err := e.Pool.Exec(ctx, `UPDATE payment_attempts SET lease_until = now() - interval '1 second'`); err != nil {
			t.Error(err)
		}
		worker.Recover(ctx)
	}}
	slow := booking.NewCheckout(e.Svc, store, e.gw, e.signer, e.verifier, e.cfg)
	defer slow.Close()
	b := e.hold(t, "u1", "G9")
	res, err := slow.Pay(ctx, booking.PayRequest{BookingID: b.ID, UserID: "u1", PaymentMethod: sim.CardOK, IdempotencyKey: "k1"})
	if err != nil || res.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("overtaken saga answered %+v, %v; want the worker's confirmation", res, err)
	}
	e.settle(t, worker)
	if st := e.sim.Stats(); st.Authorizations != 1 || st.Captures != 1 || st.Voids != 0 {
		t.Fatalf("gateway stats = %+v, want one authorization captured and nothing voided", st)
	}
}

// TestWebhookOrphanAuthorization: an authorization for one of our bookings that no attempt knows (its call failed
// after taking effect, and the attempt was given up) is voided when its webhook arrives.
func TestWebhookOrphanAuthorization(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	b := e.hold(t, "u1", "F3")
	in, err := e.gw.Authorize(ctx, payment.AuthorizeParams{Amount: b.TotalAmount, Currency: "INR", PaymentMethod: sim.CardOK,
		BookingID: b.ID, AttemptID: "pa_abandoned"})
	if err != nil {
		t.Fatal(err)
	}
	event := func(id, bookingID string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"type":"payment_intent.amount_capturable_updated","created":1,"data":{"object":
			{"id":%q,"object":"payment_intent","status":"requires_capture","metadata":{"booking_id":%q,"attempt_id":"pa_abandoned"}}}}`,
			id, in.ID, bookingID)
	}
	// Not ours (unknown booking): acknowledged, left alone.
	foreign := event("evt_foreign", "bk_someoneelse")
	if err := e.pay.Webhook(ctx, foreign, payment.Sign(foreign, webhookSecret, time.Now())); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.sim.Intent(in.ID); !got.Authorized() {
		t.Fatalf("a foreign intent was touched: %s", got.Status)
	}
	ours := event("evt_ours", b.ID)
	if err := e.pay.Webhook(ctx, ours, payment.Sign(ours, webhookSecret, time.Now())); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.sim.Intent(in.ID); !got.Canceled() {
		t.Fatalf("orphan authorization after its webhook: %s, want canceled", got.Status)
	}
	if s := e.status(t, b.ID); s != booking.StatusHeld {
		t.Fatalf("booking = %s, want HELD: the fan may still pay", s)
	}
}
