package main

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

var runMu sync.Mutex // run publishes lastOutcome; one run at a time

// playClean runs the smoke scenario with args against p, checking every invariant from its stores, and fails the
// test unless the run went through with zero violations.
func playClean(t *testing.T, p *platformtest.Platform, args ...string) Outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	runMu.Lock()
	defer runMu.Unlock()
	err := run(context.Background(), append([]string{
		"-scenario", "smoke", "-admin-token", p.AdminToken, "-database-url", p.DatabaseURL, "-redis-url", p.RedisURL,
		"-ramp", "2s", "-duration", "100s", "-patience", "90s",
		"-reconcile-interval", p.Options.ReconcileInterval.String(), "-out", t.TempDir(),
	}, args...), &stdout, &stderr)
	t.Logf("loadtest output:\n%s\n%s", stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(lastOutcome.Violations) != 0 {
		t.Fatalf("got %d violations, want none", len(lastOutcome.Violations))
	}
	return lastOutcome
}

// TestSmokeAgainstTheRealPlatform plays the smoke scenario through the real edge, waiting room, booking and
// payment simulator, then checks every invariant from the stores: zero violations. Under -short the crowd is
// smaller so that `make test` stays quick on a 2-core machine shared with every other package's tests (under the
// race detector the platform runs several times slower); the command-line preset is the full 1,000 fans.
func TestSmokeAgainstTheRealPlatform(t *testing.T) {
	fans, seats := "300", "80"
	if testing.Short() {
		fans, seats = "200", "50"
	}
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 20 * time.Second, ReconcileInterval: 2 * time.Second})
	o := playClean(t, p, "-base", p.BaseURL, "-fans", fans, "-seats", seats, "-sale-delay", "2s", "-seed", "42")
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
