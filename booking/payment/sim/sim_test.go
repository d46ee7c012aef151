package sim_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/booking/payment/stripe"
)

const secret = "whsec_simtest"

// receiver collects the webhooks the simulator sends, refusing any with a bad signature.
type receiver struct {
	mu     sync.Mutex
	events []payment.Event
	bad    int
	srv    *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := payment.VerifySignature(body, r.Header.Get(payment.SignatureHeader), secret, 0, time.Now()); err != nil {
			rc.mu.Lock()
			rc.bad++
			rc.mu.Unlock()
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ev, err := payment.ParseEvent(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.events = append(rc.events, ev)
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// waitFor polls until the receiver has an event of typ for intent, or fails the test.
func (rc *receiver) waitFor(t *testing.T, typ, intent string) payment.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		for _, ev := range rc.events {
			if ev.Type == typ && ev.IntentID == intent {
				rc.mu.Unlock()
				return ev
			}
		}
		rc.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s webhook for %s", typ, intent)
	return payment.Event{}
}

// noTimeout is the client timeout of the tests that are not about timeouts: far above any answer's time on a
// busy machine (twenty concurrent calls at 20 ms each took over a second under a load of 40), so that only the
// tests meant to see a timeout see one.
const noTimeout = 30 * time.Second

// newSim starts a simulator behind httptest and a stripe client pointed at it.
func newSim(t *testing.T, cfg sim.Config, timeout time.Duration) (*sim.Server, *stripe.Client) {
	t.Helper()
	s := sim.New(cfg, nil)
	srv := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); srv.Close() })
	c, err := stripe.New(stripe.Config{BaseURL: srv.URL, SecretKey: "sk_test_sim", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func params(pm, attempt string) payment.AuthorizeParams {
	return payment.AuthorizeParams{Amount: 45000, Currency: "INR", PaymentMethod: pm, BookingID: "bk1", AttemptID: attempt}
}

func TestAuthorizeByPaymentMethod(t *testing.T) {
	_, c := newSim(t, sim.Config{SlowDelay: time.Second}, 200*time.Millisecond)
	tests := []struct {
		pm         string
		wantErr    error
		wantStatus payment.Status
	}{
		{sim.CardOK, nil, payment.StatusRequiresCapture},
		{"pm_card_visa", nil, payment.StatusRequiresCapture},
		{sim.CardDeclined, payment.ErrDeclined, payment.StatusRequiresPaymentMethod},
		{sim.CardError, payment.ErrUnavailable, ""},
		{sim.CardSlow, payment.ErrTimeout, ""},
		{"pm_card_unknown", payment.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.pm, func(t *testing.T) {
			in, err := c.Authorize(context.Background(), params(tt.pm, "a-"+tt.pm))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Authorize error = %v, want %v", err, tt.wantErr)
			}
			if in.Status != tt.wantStatus {
				t.Fatalf("status = %q, want %q", in.Status, tt.wantStatus)
			}
			if tt.wantStatus != "" && (in.ID == "" || in.Metadata[payment.MetaBooking] != "bk1" || in.Amount != 45000) {
				t.Fatalf("intent = %+v, want id, amount 45000 and booking metadata", in)
			}
			if tt.wantStatus == payment.StatusRequiresCapture && in.AmountCapturable != 45000 {
				t.Fatalf("amount capturable = %d, want 45000", in.AmountCapturable)
			}
		})
	}
}

// TestSlowCardResolvesByKey is the recovery path after a gateway timeout: the same idempotency key reports "in
// progress" while the slow authorization runs, then returns its result, and only one authorization exists.
func TestSlowCardResolvesByKey(t *testing.T) {
	rc := newReceiver(t)
	s, c := newSim(t, sim.Config{SlowDelay: time.Second, WebhookURL: rc.srv.URL, WebhookSecret: secret}, 100*time.Millisecond)
	ctx := context.Background()
	p := params(sim.CardSlow, "a1")
	if _, err := c.Authorize(ctx, p); !errors.Is(err, payment.ErrTimeout) {
		t.Fatalf("first call: %v, want ErrTimeout", err)
	}
	if _, err := c.Authorize(ctx, p); !errors.Is(err, payment.ErrInProgress) {
		t.Fatalf("retry while running: %v, want ErrInProgress", err)
	}
	intents := s.Intents()
	if len(intents) != 1 || intents[0].Status != payment.StatusProcessing {
		t.Fatalf("intents while running = %+v, want one processing", intents)
	}
	var in payment.Intent
	var err error
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if in, err = c.Authorize(ctx, p); !errors.Is(err, payment.ErrInProgress) {
			break
		}
	}
	if err != nil || !in.Authorized() || in.ID != intents[0].ID {
		t.Fatalf("retry after delay = %+v, %v; want intent %s authorized", in, err, intents[0].ID)
	}
	if got, _ := c.Retrieve(ctx, in.ID); !got.Authorized() {
		t.Fatalf("retrieve = %+v, want authorized", got)
	}
	if st := s.Stats(); st.Authorizations != 1 || st.Replays < 1 {
		t.Fatalf("stats = %+v, want 1 authorization and a replay", st)
	}
	rc.waitFor(t, payment.EventAuthorized, in.ID)
}

func TestIdempotency(t *testing.T) {
	s, c := newSim(t, sim.Config{Latency: 20 * time.Millisecond}, noTimeout)
	ctx := context.Background()
	p := params(sim.CardOK, "same")

	// The first call answers before the others start, so every later one is a replay; concurrent duplicates of a
	// running call get ErrInProgress instead, which the race below allows.
	first, err := c.Authorize(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			in, err := c.Authorize(ctx, p)
			if err == nil && in.ID != first.ID {
				err = errors.New("replay returned another intent " + in.ID)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Authorizations != 1 || st.Replays != 20 {
		t.Fatalf("stats = %+v, want 1 authorization, 20 replays", st)
	}

	// Concurrent first uses of one key: exactly one executes.
	q := params(sim.CardOK, "race")
	var mu sync.Mutex
	ids := map[string]int{}
	inProgress := 0
	for range 20 {
		wg.Go(func() {
			in, err := c.Authorize(ctx, q)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ids[in.ID]++
			case errors.Is(err, payment.ErrInProgress):
				inProgress++
			default:
				t.Errorf("concurrent first use: %v", err)
			}
		})
	}
	wg.Wait()
	if len(ids) != 1 || s.Stats().Authorizations != 2 {
		t.Fatalf("concurrent first use produced intents %v (%d in progress), stats %+v; want exactly one", ids, inProgress, s.Stats())
	}

	other := p
	other.Amount = 1
	if _, err := c.Authorize(ctx, other); !errors.Is(err, payment.ErrIdempotencyMismatch) {
		t.Fatalf("same key, other amount: %v, want ErrIdempotencyMismatch", err)
	}
}

func TestLifecycle(t *testing.T) {
	rc := newReceiver(t)
	s, c := newSim(t, sim.Config{WebhookURL: rc.srv.URL, WebhookSecret: secret}, noTimeout)
	ctx := context.Background()

	in, err := c.Authorize(ctx, params(sim.CardOK, "capture"))
	if err != nil {
		t.Fatal(err)
	}
	rc.waitFor(t, payment.EventAuthorized, in.ID)
	steps := []struct {
		name    string
		call    func() (any, error)
		wantErr error
	}{
		{"capture", func() (any, error) { return c.Capture(ctx, in.ID, "cap-1") }, nil},
		{"capture again under another key is a no-op success", func() (any, error) { return c.Capture(ctx, in.ID, "cap-2") }, nil},
		{"void after capture", func() (any, error) { return c.Void(ctx, in.ID, "void-1") }, payment.ErrState},
		{"partial refund", func() (any, error) {
			return c.Refund(ctx, payment.RefundParams{IntentID: in.ID, Amount: 15000, IdempotencyKey: "ref-1"})
		}, nil},
		{"refund replayed by key", func() (any, error) {
			return c.Refund(ctx, payment.RefundParams{IntentID: in.ID, Amount: 15000, IdempotencyKey: "ref-1"})
		}, nil},
		{"refund more than left", func() (any, error) {
			return c.Refund(ctx, payment.RefundParams{IntentID: in.ID, Amount: 40000, IdempotencyKey: "ref-2"})
		}, payment.ErrInvalid},
		{"refund the rest", func() (any, error) {
			return c.Refund(ctx, payment.RefundParams{IntentID: in.ID, IdempotencyKey: "ref-3"})
		}, nil},
		{"refund when nothing is left", func() (any, error) {
			return c.Refund(ctx, payment.RefundParams{IntentID: in.ID, IdempotencyKey: "ref-4"})
		}, payment.ErrState},
		{"capture unknown intent", func() (any, error) { return c.Capture(ctx, "pi_nope", "cap-x") }, payment.ErrNotFound},
		{"intent id that would change the path", func() (any, error) { return c.Retrieve(ctx, "../v1/refunds") }, payment.ErrInvalid},
	}
	for _, st := range steps {
		if _, err := st.call(); !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: %v, want %v", st.name, err, st.wantErr)
		}
	}
	if got := s.Refunded(in.ID); got != 45000 {
		t.Fatalf("refunded = %d, want 45000", got)
	}
	rc.waitFor(t, payment.EventSucceeded, in.ID)
	if ev := rc.waitFor(t, payment.EventRefunded, in.ID); ev.Metadata[payment.MetaBooking] != "bk1" {
		t.Fatalf("refund event metadata = %v", ev.Metadata)
	}

	v, err := c.Authorize(ctx, params(sim.CardOK, "void"))
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"void-a", "void-b"} { // the second void finds it canceled already: success
		if got, err := c.Void(ctx, v.ID, key); err != nil || !got.Canceled() {
			t.Fatalf("void %d = %+v, %v", i, got, err)
		}
	}
	if _, err := c.Capture(ctx, v.ID, "cap-v"); !errors.Is(err, payment.ErrState) {
		t.Fatalf("capture after void: %v, want ErrState", err)
	}
	if _, err := c.Refund(ctx, payment.RefundParams{IntentID: v.ID, IdempotencyKey: "ref-v"}); !errors.Is(err, payment.ErrState) {
		t.Fatalf("refund of a voided intent: %v, want ErrState", err)
	}
	rc.waitFor(t, payment.EventCanceled, v.ID)

	d, err := c.Authorize(ctx, params(sim.CardDeclined, "declined"))
	if !errors.Is(err, payment.ErrDeclined) || d.ID == "" {
		t.Fatalf("declined = %+v, %v", d, err)
	}
	rc.waitFor(t, payment.EventFailed, d.ID)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.bad != 0 {
		t.Fatalf("%d webhooks had bad signatures", rc.bad)
	}
}

func TestFailureRateTripsBreaker(t *testing.T) {
	s, c := newSim(t, sim.Config{FailureRate: 1}, noTimeout)
	b := payment.NewBreaker(c, payment.BreakerConfig{MinCalls: 3, Cooldown: time.Minute})
	ctx := context.Background()
	for i := range 3 {
		if _, err := b.Authorize(ctx, params(sim.CardOK, "f")); !errors.Is(err, payment.ErrUnavailable) {
			t.Fatalf("call %d: %v, want ErrUnavailable", i, err)
		}
	}
	_, err := b.Authorize(ctx, params(sim.CardOK, "f"))
	var open *payment.OpenError
	if !errors.As(err, &open) {
		t.Fatalf("4th call: %v, want the breaker open", err)
	}
	if st := s.Stats(); st.InjectedErrors != 3 || st.Authorizations != 0 {
		t.Fatalf("stats = %+v, want 3 injected errors and no authorization", st)
	}
	// Injected failures are not remembered under the key: once the gateway heals, the same key authorizes.
	s.SetFailureRate(0)
	if in, err := c.Authorize(ctx, params(sim.CardOK, "f")); err != nil || !in.Authorized() {
		t.Fatalf("after healing: %+v, %v", in, err)
	}
}

func TestLatencyAndAuth(t *testing.T) {
	s, c := newSim(t, sim.Config{APIKey: "sk_test_sim"}, noTimeout)
	s.SetLatency(60 * time.Millisecond)
	start := time.Now()
	if _, err := c.Authorize(context.Background(), params(sim.CardOK, "lat")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Fatalf("call took %v, want at least the 60ms latency", d)
	}
	s.SetLatency(0)

	srv := httptest.NewServer(s)
	defer srv.Close()
	wrong, _ := stripe.New(stripe.Config{BaseURL: srv.URL, SecretKey: "sk_test_wrong"})
	if _, err := wrong.Retrieve(context.Background(), "pi_x"); !errors.Is(err, payment.ErrAuth) {
		t.Fatalf("wrong key: %v, want ErrAuth", err)
	}
	resp, err := http.Get(srv.URL + "/v1/unknown")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown path: %d, want 404", resp.StatusCode)
	}
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- sim.Run(ctx, sim.Config{Addr: "127.0.0.1:0"}, nil, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	c, _ := stripe.New(stripe.Config{BaseURL: "http://" + addr, SecretKey: "sk_test_run"})
	if in, err := c.Authorize(ctx, params(sim.CardOK, "run")); err != nil || !in.Authorized() {
		t.Fatalf("authorize through Run: %+v, %v", in, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	if err := sim.Run(context.Background(), sim.Config{Addr: "127.0.0.1:0", FailureRate: 2}, nil, nil); err == nil {
		t.Fatal("Run accepted a failure rate of 2")
	}
}

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    sim.Config
		wantErr bool
	}{
		{"defaults", nil, sim.Config{Addr: ":8082", WebhookURL: "http://127.0.0.1:8081/webhooks/payments"}, false},
		{"everything", map[string]string{"PAYSIM_ADDR": ":9", "PAYMENT_WEBHOOK_URL": "http://h/w", "PAYMENT_WEBHOOK_SECRET": "s",
			"PAYSIM_LATENCY": "200ms", "PAYSIM_FAILURE_RATE": "0.25", "PAYSIM_SLOW_DELAY": "3s", "PAYSIM_API_KEY": "sk"},
			sim.Config{Addr: ":9", WebhookURL: "http://h/w", WebhookSecret: "s", Latency: 200 * time.Millisecond,
				FailureRate: 0.25, SlowDelay: 3 * time.Second, APIKey: "sk"}, false},
		{"webhooks off", map[string]string{"PAYMENT_WEBHOOK_URL": "off"}, sim.Config{Addr: ":8082"}, false},
		{"bad latency", map[string]string{"PAYSIM_LATENCY": "fast"}, sim.Config{}, true},
		{"negative latency", map[string]string{"PAYSIM_LATENCY": "-1s"}, sim.Config{}, true},
		{"bad rate", map[string]string{"PAYSIM_FAILURE_RATE": "lots"}, sim.Config{}, true},
		{"rate above one", map[string]string{"PAYSIM_FAILURE_RATE": "1.5"}, sim.Config{}, true},
		{"bad webhook URL", map[string]string{"PAYMENT_WEBHOOK_URL": "ftp://x"}, sim.Config{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sim.ConfigFromEnv(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Fatalf("config = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFetchLedger(t *testing.T) {
	s := sim.New(sim.Config{APIKey: "sk_test_sim"}, nil)
	srv := httptest.NewServer(s)
	defer func() { s.Close(); srv.Close() }()
	c, _ := stripe.New(stripe.Config{BaseURL: srv.URL, SecretKey: "sk_test_sim"})
	ctx := context.Background()
	held, _ := c.Authorize(ctx, params(sim.CardOK, "held"))
	taken, _ := c.Authorize(ctx, params(sim.CardOK, "taken"))
	if _, err := c.Capture(ctx, taken.ID, "cap"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refund(ctx, payment.RefundParams{IntentID: taken.ID, Amount: 5000, IdempotencyKey: "ref"}); err != nil {
		t.Fatal(err)
	}
	got, err := sim.FetchLedger(ctx, srv.URL, "sk_test_sim")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sim.Entry{
		held.ID:  {IntentID: held.ID, BookingID: "bk1", Status: "requires_capture", Capturable: 45000},
		taken.ID: {IntentID: taken.ID, BookingID: "bk1", Status: "succeeded", Received: 45000, Refunded: 5000},
	}
	if len(got) != 2 || got[0] != want[got[0].IntentID] || got[1] != want[got[1].IntentID] {
		t.Fatalf("ledger = %+v, want %+v", got, want)
	}
	if _, err := sim.FetchLedger(ctx, srv.URL, "sk_test_other"); err == nil {
		t.Fatal("the ledger answered a wrong key")
	}
}
