package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	bookingapp "github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/booking/postgres/pgtest"
	edgeapp "github.com/flashseat/flashseat/edge/app"
	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/shared/token"
)

// service runs one app's Run in the background and stops it when the test ends.
func service(t *testing.T, name string, run func(ctx context.Context, ready func(string)) error) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(a string) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("%s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30s", name)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("%s: %v", name, err)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start within 60s", name)
	}
	return ""
}

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// platform starts the payment simulator, booking and the edge in this process on free loopback ports, against a
// fresh database and the shared Redis (every key of the run is under its own new shows), and returns the edge's
// base URL, the admin token and the database URL.
func platform(t *testing.T, holdTTL time.Duration) (base, admin, dbURL string) {
	t.Helper()
	_, dbURL = pgtest.NewWithURL(t)
	redisURL := os.Getenv("REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	admin = "adm_smoke_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secret := "smoke-test-user-token-secret-0123456789abcdef"
	key, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}

	// The booking service verifies admission tokens with the edge's key handed over directly: with :0 ports the
	// edge's JWKS URL is not known before booking starts.
	payAddr := service(t, "paysim", func(ctx context.Context, ready func(string)) error {
		return sim.Run(ctx, sim.Config{Addr: "127.0.0.1:0", SlowDelay: 6 * time.Second}, log, ready)
	})
	env := map[string]string{
		"BOOKING_ADDR": "127.0.0.1:0", "DATABASE_URL": dbURL, "REDIS_URL": redisURL, "ADMIN_TOKEN": admin,
		"AUTH_SECRET": secret, "HOLD_TTL": holdTTL.String(), "RECONCILE_INTERVAL": "2s",
		"PAYMENT_GATEWAY_URL": "http://" + payAddr, "PAYMENT_WEBHOOK_SECRET": "whsec_smoke_0123456789",
		"TICKET_SIGNING_KEY": base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"LOG_LEVEL":          "warn",
	}
	bcfg, err := bookingapp.LoadConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	bcfg.AdmissionKeys = token.NewStaticKeys(key.Public())
	bookingAddr := service(t, "booking", func(ctx context.Context, ready func(string)) error {
		return bookingapp.Run(ctx, bcfg, log, ready)
	})

	ecfg, err := edgeapp.LoadConfig(getenv(map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "BOOKING_URL": "http://" + bookingAddr, "REDIS_URL": redisURL,
		"AUTH_SECRET": secret, "ADMIN_TOKEN": admin, "ADMISSION_SIGNING_KEY": token.EncodeSeed(key),
		"ADMISSION_KEY_ID": key.ID,
	}))
	if err != nil {
		t.Fatal(err)
	}
	edgeAddr := service(t, "edge", func(ctx context.Context, ready func(string)) error {
		return edgeapp.Run(ctx, ecfg, log, ready)
	})
	return "http://" + loopback(edgeAddr), admin, dbURL
}

// loopback turns a bound address such as [::]:port into one a client can dial.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "::" || host == "0.0.0.0" {
		return "127.0.0.1:" + port
	}
	return addr
}

var runMu sync.Mutex // run publishes lastOutcome; one run at a time

// TestSmokeAgainstTheRealPlatform plays the smoke scenario through the real edge, waiting room, booking and
// payment simulator, then checks every invariant from the stores: zero violations. Under -short the crowd is
// smaller so that `make test` stays quick on a 2-core machine shared with every other package's tests (under the
// race detector the platform runs several times slower); the command-line preset is the full 1,000 fans.
func TestSmokeAgainstTheRealPlatform(t *testing.T) {
	fans, seats := "300", "80"
	if testing.Short() {
		fans, seats = "200", "50"
	}
	base, admin, dbURL := platform(t, 20*time.Second)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	runMu.Lock()
	defer runMu.Unlock()
	err := run(context.Background(), []string{
		"-scenario", "smoke", "-base", base, "-admin-token", admin, "-database-url", dbURL,
		"-fans", fans, "-seats", seats, "-sale-delay", "2s", "-ramp", "2s", "-duration", "100s", "-patience", "90s",
		"-reconcile-interval", "2s", "-out", out, "-seed", "42",
	}, &stdout, &stderr)
	t.Logf("loadtest output:\n%s\n%s", stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	o := lastOutcome
	if len(o.Violations) != 0 {
		t.Fatalf("got %d violations, want none", len(o.Violations))
	}
	s := o.Summary
	if s.Admitted == 0 || s.Steps[loadtest.StepHold].Outcomes["201"] == 0 {
		t.Fatalf("got %d admitted and holds %v, want fans admitted and holding", s.Admitted, s.Steps[loadtest.StepHold].Outcomes)
	}
	if s.SoldOutAfter <= 0 {
		t.Errorf("the show never sold out (no seat AVAILABLE); want the crowd to take every seat")
	}
	pay := s.Steps[loadtest.StepPay]
	if pay.Count > 0 && pay.Outcomes["404"] == pay.Count {
		// Booking does not serve payments yet: every pay is an unknown route. The rest of the run still counts;
		// once payments are served this branch no longer applies and the full assertions below do.
		t.Logf("booking answered 404 to every pay: payments are not served yet")
		return
	}
	if s.Confirmed == 0 {
		t.Errorf("got no confirmed booking, want some; fans: %v", s.FanOutcomes)
	}
	for _, bad := range []string{loadtest.OutcomeError, loadtest.OutcomeRefused, loadtest.OutcomeCutOff} {
		if n := s.FanOutcomes[bad]; n > 0 {
			t.Errorf("got %d fans ending %s, want none; fans: %v", n, bad, s.FanOutcomes)
		}
	}
	// Each payment behaviour ends where the contract says it must (an abandoned hold simply stays held).
	want := map[loadtest.PayBehaviour]string{loadtest.PayOK: loadtest.OutcomeConfirmed,
		loadtest.PayDeclinedThenOK: loadtest.OutcomeConfirmed, loadtest.PaySlow: loadtest.OutcomeConfirmed,
		loadtest.PayError: loadtest.OutcomeCancelled, loadtest.PayAbandon: loadtest.OutcomeAbandoned}
	for b, outcomes := range s.PayOutcomes {
		for o, n := range outcomes {
			if o != want[b] {
				t.Errorf("%d fans paying %s ended %s, want %s", n, b, o, want[b])
			}
		}
	}
	for _, name := range []string{"report.json", "report.html", "report.md"} {
		if _, err := os.Stat(o.Dir + "/" + name); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}
