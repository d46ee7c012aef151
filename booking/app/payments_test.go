package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/problem"
)

const (
	adminToken = "adm_0123456789abcdef0123"
	staffToken = "stf_0123456789abcdef0123"
	whSecret   = "whsec_apptest"
)

// stack is booking (app.Run) and the payment simulator (sim.Run) on real ports, wired to each other as under
// `make run`: booking calls the simulator through the Stripe adapter, the simulator sends signed webhooks back.
type stack struct {
	t        testing.TB
	base     string
	env      map[string]string
	booking  *platformtest.Service
	pool     *pgxpool.Pool // the test's own connections to booking's database
	bookAddr string
}

// freeAddr is a loopback address free to bind: booking's, known before it starts (the simulator's webhooks).
func freeAddr(t testing.TB) string { return storetest.FreeAddr(t) }

func newStack(t testing.TB, extra ...string) *stack {
	t.Helper()
	pool, dbURL := pgtest.NewWithURL(t)
	st := &stack{t: t, pool: pool, bookAddr: freeAddr(t)}
	simURL := platformtest.Serve(t, "paysim", func(ctx context.Context, ready func(string)) error {
		return sim.Run(ctx, sim.Config{Addr: "127.0.0.1:0", WebhookURL: "http://" + st.bookAddr + "/webhooks/payments",
			WebhookSecret: whSecret, SlowDelay: 1500 * time.Millisecond}, nil, ready)
	})
	st.env = map[string]string{
		"BOOKING_ADDR": st.bookAddr, "DATABASE_URL": dbURL, "ADMIN_TOKEN": adminToken, "STAFF_TOKEN": staffToken,
		"AUTH_SECRET": strings.Repeat("s", 40), "PAYMENT_GATEWAY_URL": simURL,
		"PAYMENT_WEBHOOK_SECRET": whSecret, "PAYMENT_TIMEOUT": "1s", "PAYMENT_RECOVER_INTERVAL": "100ms",
		"PAYMENT_BREAKER_MIN_CALLS": "2", "PAYMENT_BREAKER_COOLDOWN": "30s", "ADMISSION_JWKS_URL": "http://127.0.0.1:1/jwks",
		"EVENTS_STREAM": testEventStream(t),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		st.env[extra[i]] = extra[i+1]
	}
	platformtest.DeleteShowsAfter(t, dbURL, st.env)
	st.start()
	return st
}

// start launches booking on its address; it stops at the end of the test unless killed before.
func (st *stack) start() {
	st.t.Helper()
	cfg, err := app.LoadConfig(func(k string) string { return st.env[k] })
	if err != nil {
		st.t.Fatal(err)
	}
	st.booking = platformtest.Launch(st.t, "booking", func(ctx context.Context, ready func(string)) error {
		return app.Run(ctx, cfg, nil, ready)
	})
	st.base = st.booking.URL
}

// kill stops booking the way a deploy does (context cancelled); sagas in flight are cut where they stand.
func (st *stack) kill() { st.booking.Stop() }

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("body %q: %v", a.body, err)
	}
	return m
}

// problem checks the answer is an RFC 9457 problem with the status and returns it.
func (a answer) problem(t testing.TB, status int) problem.Problem {
	t.Helper()
	if a.status != status || a.header.Get("Content-Type") != problem.ContentType {
		t.Fatalf("answer %d %s %s, want %d problem+json", a.status, a.header.Get("Content-Type"), a.body, status)
	}
	var p problem.Problem
	if err := json.Unmarshal(a.body, &p); err != nil || p.Status != status || p.Type == "" {
		t.Fatalf("problem %s (%v)", a.body, err)
	}
	return p
}

func (st *stack) do(method, path, tok string, body any, header ...string) answer {
	st.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, st.base+path, r)
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// show creates a show starting in 72h through the operator API.
func (st *stack) show() string {
	t := st.t
	v := st.do("POST", "/admin/v1/venues", adminToken, map[string]any{"name": "Hall", "city": "Pune",
		"halls": []any{map[string]any{"name": "One", "rows": []any{map[string]any{"row": "A", "seats": 20, "category": "GOLD"}}}}})
	if v.status != 201 {
		t.Fatalf("venue: %d %s", v.status, v.body)
	}
	hall := v.json(t)["halls"].([]any)[0].(map[string]any)["hallId"].(string)
	e := st.do("POST", "/admin/v1/events", adminToken, map[string]any{"title": "T", "kind": "movie", "genre": "g",
		"language": "en", "durationMinutes": 100})
	if e.status != 201 {
		t.Fatalf("event: %d %s", e.status, e.body)
	}
	s := st.do("POST", "/admin/v1/shows", adminToken, map[string]any{"eventId": e.json(t)["eventId"], "hallId": hall,
		"startsAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339), "saleStartsAt": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		"currency": "INR", "prices": map[string]int64{"GOLD": 45000}})
	if s.status != 201 {
		t.Fatalf("show: %d %s", s.status, s.body)
	}
	return s.json(t)["showId"].(string) // newStack deletes its keys once booking has stopped
}

func (st *stack) guest() string {
	g := st.do("POST", "/api/v1/auth/guest", "", nil)
	if g.status != 201 {
		st.t.Fatalf("guest: %d %s", g.status, g.body)
	}
	return g.json(st.t)["token"].(string)
}

func (st *stack) hold(tok, show string, seats ...string) string {
	h := st.do("POST", "/api/v1/bookings/hold", tok, map[string]any{"showId": show, "seatIds": seats})
	if h.status != 201 {
		st.t.Fatalf("hold: %d %s", h.status, h.body)
	}
	return h.json(st.t)["bookingId"].(string)
}

func (st *stack) pay(tok, booking, method, key string) answer {
	return st.do("POST", "/api/v1/bookings/"+booking+"/pay", tok, map[string]string{"paymentMethod": method},
		"Idempotency-Key", key)
}

// waitStatus polls the booking until it has the status.
func (st *stack) waitStatus(tok, booking, status string) map[string]any {
	st.t.Helper()
	var last answer
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		last = st.do("GET", "/api/v1/bookings/"+booking, tok, nil)
		if last.status == 200 && last.json(st.t)["status"] == status {
			return last.json(st.t)
		}
	}
	st.t.Fatalf("booking %s never became %s: last %d %s", booking, status, last.status, last.body)
	return nil
}

func (st *stack) checkInvariants() {
	st.t.Helper()
	// Captures run off the fan's path and the worker settles the rest (a capture that timed out is retried after
	// the lease, 2×PAYMENT_TIMEOUT+5s): wait until no money is in motion.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var moving int
		if err := st.pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM payment_attempts WHERE state IN ('STARTED','PENDING','AUTHORIZED','VOIDING','REFUNDING'))
			+ (SELECT count(*) FROM payments WHERE status IN ('AUTHORIZED','REFUNDING'))`).Scan(&moving); err != nil {
			st.t.Fatal(err)
		}
		if moving == 0 {
			break
		}
	}
	vs, err := invariant.Check(context.Background(), st.pool, invariant.Options{})
	if err != nil {
		st.t.Fatal(err)
	}
	ledger, err := sim.FetchLedger(context.Background(), st.env["PAYMENT_GATEWAY_URL"], "sk_test_any")
	if err != nil {
		st.t.Fatal(err)
	}
	books := make([]invariant.Money, len(ledger))
	for i, m := range ledger {
		books[i] = invariant.Money{IntentID: m.IntentID, BookingID: m.BookingID, Capturable: m.Capturable,
			Received: m.Received, Refunded: m.Refunded}
	}
	gvs, err := invariant.CheckGateway(context.Background(), st.pool, books, invariant.Options{})
	if err != nil {
		st.t.Fatal(err)
	}
	for _, v := range append(vs, gvs...) {
		st.t.Error(v)
	}
}

func TestPaymentsOverHTTP(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show()
	fan := st.guest()

	// Lifecycle events are relayed to the stack's own event stream, read here through a consumer group.
	events := watchEvents(t, st.env["EVENTS_STREAM"])

	// Pay, replay, tickets, QR, check-in.
	b := st.hold(fan, show, "A1", "A2")
	paid := st.pay(fan, b, sim.CardOK, "k1")
	if paid.status != 200 {
		t.Fatalf("pay: %d %s", paid.status, paid.body)
	}
	body := paid.json(t)
	tickets := body["tickets"].([]any)
	if body["status"] != "CONFIRMED" || body["paymentId"] == nil || len(tickets) != 2 {
		t.Fatalf("pay answer %s", paid.body)
	}
	if again := st.pay(fan, b, sim.CardOK, "k1"); again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" ||
		!bytes.Equal(again.body, paid.body) {
		t.Fatalf("replay: %d %s", again.status, again.body)
	}
	events.wait(t, b, "booking.confirmed")
	view := st.waitStatus(fan, b, "CONFIRMED")
	if len(view["tickets"].([]any)) != 2 {
		t.Fatalf("booking view %v", view)
	}
	tk := tickets[0].(map[string]any)
	tid, code := tk["ticketId"].(string), tk["code"].(string)
	if got := st.do("GET", "/api/v1/tickets/"+tid, fan, nil); got.status != 200 || got.json(t)["code"] != code {
		t.Fatalf("ticket: %d %s", got.status, got.body)
	}
	if qr := st.do("GET", "/api/v1/tickets/"+tid+"/qr.png", fan, nil); qr.status != 200 ||
		qr.header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(qr.body, []byte("\x89PNG")) {
		t.Fatalf("qr: %d %s", qr.status, qr.header.Get("Content-Type"))
	}
	other := st.guest()
	st.do("GET", "/api/v1/tickets/"+tid, other, nil).problem(t, 404)
	if in := st.do("POST", "/api/v1/checkin", staffToken, map[string]string{"code": code}); in.status != 200 ||
		in.json(t)["status"] != "CHECKED_IN" {
		t.Fatalf("check-in: %d %s", in.status, in.body)
	}
	st.do("POST", "/api/v1/checkin", adminToken, map[string]string{"code": code}).problem(t, 409)
	st.do("POST", "/api/v1/checkin", fan, map[string]string{"code": code}).problem(t, 403)
	st.do("POST", "/api/v1/checkin", staffToken, map[string]string{"code": "forged.code"}).problem(t, 400)

	// Declined: 402, still HELD, then paid with another card.
	d := st.hold(fan, show, "A3")
	st.pay(fan, d, sim.CardDeclined, "k2").problem(t, 402)
	st.waitStatus(fan, d, "HELD")
	if ok := st.pay(fan, d, sim.CardOK, "k3"); ok.status != 200 {
		t.Fatalf("second card: %d %s", ok.status, ok.body)
	}

	// Slow gateway: 202 now, CONFIRMED once the simulator answers (webhook and worker).
	s := st.hold(fan, show, "A4")
	if p := st.pay(fan, s, sim.CardSlow, "k4"); p.status != 202 || p.json(t)["status"] != "PAYMENT_PENDING" {
		t.Fatalf("slow: %d %s", p.status, p.body)
	}
	st.waitStatus(fan, s, "CONFIRMED")

	// Refund: not once a ticket was used; otherwise the seats are on sale again.
	st.do("POST", "/api/v1/bookings/"+b+"/refund", fan, nil).problem(t, 409)
	r := st.do("POST", "/api/v1/bookings/"+d+"/refund", fan, nil)
	if r.status != 200 || r.json(t)["status"] != "REFUNDED" {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	st.hold(st.guest(), show, "A3")

	// Bad input: problem+json, never a 5xx.
	cases := []struct {
		name   string
		a      answer
		status int
	}{
		{"no key", st.do("POST", "/api/v1/bookings/"+d+"/pay", fan, map[string]string{"paymentMethod": "pm_card_ok"}), 400},
		{"bad json", st.do("POST", "/api/v1/bookings/"+d+"/pay", fan, "{", "Idempotency-Key", "x"), 400},
		{"no method", st.pay(fan, d, "", "k5"), 422},
		{"unknown booking", st.pay(fan, "bk_nope", sim.CardOK, "k6"), 404},
		{"someone else's booking", st.pay(other, s, sim.CardOK, "k7"), 404},
		{"no token", st.pay("", s, sim.CardOK, "k8"), 401},
		{"key reused", st.pay(fan, s, sim.CardDeclined, "k4"), 422},
		{"refund of a held booking", st.do("POST", "/api/v1/bookings/"+st.hold(fan, show, "A9")+"/refund", fan, nil), 409},
		{"qr size", st.do("GET", "/api/v1/tickets/"+tid+"/qr.png?size=9", fan, nil), 400},
		{"unsigned webhook", st.do("POST", "/webhooks/payments", "", `{"id":"evt_x"}`), 400},
		{"checkin without body", st.do("POST", "/api/v1/checkin", staffToken, nil), 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.a.problem(t, c.status) })
	}
	ev := []byte(`{"id":"evt_x","type":"payment_intent.succeeded","created":1,"data":{"object":{"id":"pi_x","object":"payment_intent"}}}`)
	if w := st.do("POST", "/webhooks/payments", "", string(ev), payment.SignatureHeader, payment.Sign(ev, whSecret, time.Now())); w.status != 200 {
		t.Fatalf("signed webhook for an unknown intent: %d %s", w.status, w.body)
	}

	// The gateway failing: 503 with Retry-After, the hold kept; then the breaker answers at once.
	e := st.hold(fan, show, "A10")
	for i := range 3 {
		a := st.pay(fan, e, sim.CardError, fmt.Sprintf("err-%d", i))
		a.problem(t, 503)
		if a.header.Get("Retry-After") == "" {
			t.Fatalf("503 without Retry-After: %v", a.header)
		}
	}
	st.waitStatus(fan, e, "HELD")
	st.checkInvariants()
}

// TestPayLostHoldOverHTTP: a hold that lapsed is 410 and EXPIRED; a cancelled one is 409; both problem+json.
func TestPayLostHoldOverHTTP(t *testing.T) {
	t.Parallel()
	st := newStack(t, "HOLD_TTL", "1s")
	show := st.show()
	fan := st.guest()
	late := st.hold(fan, show, "A1")
	time.Sleep(1200 * time.Millisecond)
	st.pay(fan, late, sim.CardOK, "k1").problem(t, 410)
	st.pay(fan, late, sim.CardOK, "k1").problem(t, 410) // the replay answers the same
	st.waitStatus(fan, late, "EXPIRED")
	c := st.hold(fan, show, "A3")
	if d := st.do("DELETE", "/api/v1/bookings/"+c, fan, nil); d.status != 200 {
		t.Fatalf("cancel: %d %s", d.status, d.body)
	}
	st.pay(fan, c, sim.CardOK, "k2").problem(t, 409)
	st.checkInvariants()
}

// TestPaymentSurvivesRestart: booking is stopped while a payment's outcome is unknown and started again; the new
// process's recovery worker confirms it, and the client's retry of its key gets the confirmation.
func TestPaymentSurvivesRestart(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show()
	fan := st.guest()
	b := st.hold(fan, show, "A5")
	if p := st.pay(fan, b, sim.CardSlow, "k1"); p.status != 202 {
		t.Fatalf("slow: %d %s", p.status, p.body)
	}
	st.kill()
	time.Sleep(1600 * time.Millisecond) // the simulator authorizes while booking is down
	st.start()
	st.waitStatus(fan, b, "CONFIRMED")
	if again := st.pay(fan, b, sim.CardSlow, "k1"); again.status != 200 || again.json(t)["status"] != "CONFIRMED" {
		t.Fatalf("retry after restart: %d %s", again.status, again.body)
	}
	st.kill()
	st.checkInvariants()
}

func TestPaymentConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr bool
	}{
		{"defaults", nil, false},
		{"all set", map[string]string{"PAYMENT_GATEWAY_URL": "https://api.stripe.com", "PAYMENT_API_KEY": "sk_live_x",
			"PAYMENT_TIMEOUT": "3s", "PAYMENT_BREAKER_MIN_CALLS": "7", "PAYMENT_BREAKER_COOLDOWN": "1m",
			"PAYMENT_BREAKER_WINDOW": "1m", "PAYMENT_BREAKER_FAILURE_RATIO": "0.8", "PAYMENT_BREAKER_PROBES": "2",
			"TICKET_SIGNING_KEY": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc"}, false},
		{"gateway not a URL", map[string]string{"PAYMENT_GATEWAY_URL": "stripe"}, true},
		{"timeout not a duration", map[string]string{"PAYMENT_TIMEOUT": "soon"}, true},
		{"min calls zero", map[string]string{"PAYMENT_BREAKER_MIN_CALLS": "0"}, true},
		{"ratio above one", map[string]string{"PAYMENT_BREAKER_FAILURE_RATIO": "1.5"}, true},
		{"probes not a number", map[string]string{"PAYMENT_BREAKER_PROBES": "some"}, true},
		{"ticket key too short", map[string]string{"TICKET_SIGNING_KEY": "abc"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := app.LoadConfig(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("LoadConfig = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			p := cfg.Payment
			if p.Timeout <= 0 || p.Breaker.MinCalls < 1 || p.Breaker.FailureRatio <= 0 || p.Breaker.Probes < 1 || p.GatewayURL == "" || len(p.TicketKey.ID) != 8 {
				t.Fatalf("payment config %+v", p)
			}
			if tt.env == nil && (!p.TicketKeyGenerated || p.GatewayURL != "http://127.0.0.1:8082" || p.WebhookSecret != "") {
				t.Fatalf("defaults %+v", p)
			}
		})
	}
}

// TestPaySameKeyOverHTTP: the same pay sent 20 times at once over HTTP gets one answer, byte for byte, and the card
// is authorized once.
func TestPaySameKeyOverHTTP(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show()
	fan := st.guest()
	b := st.hold(fan, show, "A7", "A8")
	answers := make([]answer, 20)
	done := make(chan struct{})
	for i := range answers {
		go func() {
			defer func() { done <- struct{}{} }()
			answers[i] = st.pay(fan, b, sim.CardOK, "same")
		}()
	}
	for range answers {
		<-done
	}
	for i, a := range answers {
		if a.status != 200 || !bytes.Equal(a.body, answers[0].body) {
			t.Fatalf("answer %d: %d %s; want the first 200 %s", i, a.status, a.body, answers[0].body)
		}
	}
	var intents int
	if err := st.pool.QueryRow(context.Background(), `SELECT count(DISTINCT intent_id) FROM payment_attempts`).Scan(&intents); err != nil || intents != 1 {
		t.Fatalf("%d intents (%v), want 1", intents, err)
	}
	st.checkInvariants()
}
