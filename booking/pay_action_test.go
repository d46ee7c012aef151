package booking_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
)

// newWebhookedEnv is a payEnv whose simulator sends its webhooks to the Checkout under test.
func newWebhookedEnv(t *testing.T, scfg sim.Config, pcfg booking.CheckoutConfig) *payEnv {
	t.Helper()
	var e *payEnv
	var ready sync.WaitGroup
	ready.Add(1)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ready.Wait()
		body, _ := io.ReadAll(r.Body)
		if err := e.pay.Webhook(r.Context(), body, r.Header.Get(payment.SignatureHeader)); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(hooks.Close)
	scfg.WebhookURL, scfg.WebhookSecret = hooks.URL, webhookSecret
	e = newPayEnv(t, booking.Config{}, scfg, pcfg)
	ready.Done()
	return e
}

// runWorker runs the recovery worker until the test ends.
func runWorker(t *testing.T, p *booking.Checkout) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

const returnTo = "http://shop.example/bookings/bk?from=pay"

func (e *payEnv) pay3DS(t *testing.T, b booking.Booking, key string) booking.PayResult {
	t.Helper()
	res, err := e.pay.Pay(context.Background(), booking.PayRequest{BookingID: b.ID, UserID: b.UserID,
		PaymentMethod: sim.Card3DS, IdempotencyKey: key, ReturnURL: returnTo})
	if err != nil || !res.Pending || res.NextActionURL == "" || res.AttemptID == "" {
		t.Fatalf("3-D Secure card: %+v, %v; want pending with a next action", res, err)
	}
	return res
}

// answer passes or fails the challenge as the fan's browser does, and checks the browser is sent back.
func answer(t *testing.T, challengeURL, result string) {
	t.Helper()
	u, err := url.Parse(challengeURL)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(u.Scheme+"://"+u.Host+u.Path, url.Values{"challenge": {u.Query().Get("challenge")},
		"result": {result}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc.Host != "shop.example" || loc.Query().Get("from") != "pay" {
		t.Fatalf("challenge answer: %d to %q, want a redirect to the return URL", resp.StatusCode, loc)
	}
}

func (e *payEnv) waitStatus(t *testing.T, id string, want booking.Status, recover bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got := e.status(t, id); got == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("booking %s is %s, want %s", id, got, want)
		}
		if recover {
			e.pay.Recover(context.Background())
		}
	}
}

// TestPay3DSPassedByWebhook: a card that requires 3-D Secure is not a decline. The booking waits PAYMENT_PENDING
// with its hold extended, a replay of the key sends the fan to the same challenge, and once the fan passes it the
// webhook gets the booking confirmed and captured.
func TestPay3DSPassedByWebhook(t *testing.T) {
	t.Parallel()
	// A long retry: only the webhook can settle the attempt within the test's wait.
	e := newWebhookedEnv(t, sim.Config{}, booking.CheckoutConfig{ActionRetry: time.Hour, ActionWindow: 3 * time.Minute})
	runWorker(t, e.pay)
	b := e.hold(t, "u1", "D3", "D4")
	res := e.pay3DS(t, b, "k1")
	if res.Booking.Status != booking.StatusPaymentPending || e.status(t, b.ID) != booking.StatusPaymentPending {
		t.Fatalf("booking %s, want PAYMENT_PENDING", res.Booking.Status)
	}
	if left := time.Until(res.Booking.ExpiresAt); left < 2*time.Minute {
		t.Fatalf("hold expires in %s, want it extended for the challenge", left)
	}
	held, _, err := e.Locks.Status(context.Background(), b.ShowID, b.SeatIDs)
	if err != nil || !held["D3"] || !held["D4"] {
		t.Fatalf("seats while the challenge is pending: held %v, %v", held, err)
	}
	again, err := e.payWith(b, sim.Card3DS, "k1")
	if err != nil || !again.Replayed || !again.Pending || again.NextActionURL != res.NextActionURL {
		t.Fatalf("replay = %+v, %v; want the same challenge", again, err)
	}
	if v, err := e.pay.BookingView(context.Background(), b.ID, "u1"); err != nil || v.NextActionURL != res.NextActionURL {
		t.Fatalf("booking while the challenge waits: %q, %v; want its challenge URL for a fan who left the page", v.NextActionURL, err)
	}
	if st := e.sim.Stats(); st.Authorizations != 0 || st.Declines != 0 {
		t.Fatalf("before the challenge: %+v, want nothing authorized or declined", st)
	}
	answer(t, res.NextActionURL, "complete")
	e.waitStatus(t, b.ID, booking.StatusConfirmed, false)
	view, err := e.pay.BookingView(context.Background(), b.ID, "u1")
	if err != nil || len(view.Tickets) != 2 || view.NextActionURL != "" {
		t.Fatalf("confirmed booking = %+v, %v; want 2 tickets", view, err)
	}
	done, err := e.payWith(b, sim.Card3DS, "k1")
	if err != nil || done.Pending || done.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("replay after the challenge = %+v, %v; want CONFIRMED", done, err)
	}
	e.settle(t, e.pay)
	if st := e.sim.Stats(); st.Authorizations != 1 || st.Captures != 1 {
		t.Fatalf("gateway = %+v, want one authorization captured", st)
	}
}

// TestPay3DSFailedThenPaidAgain: a failed challenge leaves the booking HELD (the webhook says so), its key answers
// 402 from then on, and the fan pays again with another card.
func TestPay3DSFailedThenPaidAgain(t *testing.T) {
	t.Parallel()
	e := newWebhookedEnv(t, sim.Config{}, booking.CheckoutConfig{ActionRetry: time.Hour})
	runWorker(t, e.pay)
	b := e.hold(t, "u1", "E3")
	res := e.pay3DS(t, b, "k1")
	answer(t, res.NextActionURL, "fail")
	e.waitStatus(t, b.ID, booking.StatusHeld, false)
	if _, err := e.payWith(b, sim.Card3DS, "k1"); !errors.Is(err, booking.ErrPaymentDeclined) {
		t.Fatalf("replay after a failed challenge: %v, want ErrPaymentDeclined", err)
	}
	ok, err := e.payWith(b, sim.CardOK, "k2")
	if err != nil || ok.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("paying again: %+v, %v", ok, err)
	}
	e.settle(t, e.pay)
}

// TestPay3DSSettledByWorker: with no webhook at all, the recovery worker reads the intent and settles the attempt.
func TestPay3DSSettledByWorker(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{ActionRetry: 50 * time.Millisecond})
	b := e.hold(t, "u1", "F3")
	res := e.pay3DS(t, b, "k1")
	e.pay.Recover(context.Background()) // still waiting: nothing changes
	if st := e.status(t, b.ID); st != booking.StatusPaymentPending {
		t.Fatalf("after a pass while waiting: %s", st)
	}
	answer(t, res.NextActionURL, "complete")
	e.waitStatus(t, b.ID, booking.StatusConfirmed, true)
	e.settle(t, e.pay)
}

// TestPay3DSAbandoned: a challenge left unanswered past the ActionWindow is cancelled at the gateway, so a late
// answer takes no money, and the booking is HELD again for another card.
func TestPay3DSAbandoned(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{ActionRetry: 50 * time.Millisecond,
		ActionWindow: 300 * time.Millisecond})
	b := e.hold(t, "u1", "G3")
	res := e.pay3DS(t, b, "k1")
	e.waitStatus(t, b.ID, booking.StatusHeld, true)
	if st := e.sim.Stats(); st.Voids != 1 {
		t.Fatalf("gateway = %+v, want the intent cancelled", st)
	}
	u, _ := url.Parse(res.NextActionURL)
	late, err := http.PostForm(u.Scheme+"://"+u.Host+u.Path, url.Values{"challenge": {u.Query().Get("challenge")},
		"result": {"complete"}})
	if err != nil {
		t.Fatal(err)
	}
	late.Body.Close()
	if late.StatusCode != http.StatusConflict || e.sim.Stats().Authorizations != 0 {
		t.Fatalf("late answer: %d, gateway %+v; want refused, nothing authorized", late.StatusCode, e.sim.Stats())
	}
	if ok, err := e.payWith(b, sim.CardOK, "k2"); err != nil || ok.Booking.Status != booking.StatusConfirmed {
		t.Fatalf("paying again: %+v, %v", ok, err)
	}
	e.settle(t, e.pay)
}

// TestPayRefusesCardNumbers: a card number sent as the payment method is refused before anything is stored or
// sent to the gateway, and the answer does not repeat it.
func TestPayRefusesCardNumbers(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	b := e.hold(t, "u1", "H3")
	for _, pan := range []string{"4242424242424242", "4242 4242 4242 4242", "4000-0000-0000-3220"} {
		_, err := e.payWith(b, pan, "k-"+pan)
		if !errors.Is(err, booking.ErrValidation) || strings.Contains(err.Error(), "4242") || strings.Contains(err.Error(), "3220") {
			t.Fatalf("pay with %q: %v, want a validation error that does not repeat it", pan, err)
		}
	}
	var n int
	if err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM payment_attempts`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("attempts stored: %d (%v), want none", n, err)
	}
	if st := e.sim.Stats(); st.Requests != 0 {
		t.Fatalf("gateway saw %d requests, want none", st.Requests)
	}
}
