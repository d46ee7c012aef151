package crowd

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
)

func fakeClient(t *testing.T) *client.Client {
	t.Helper()
	srv := httptest.NewServer(newFake().handler())
	t.Cleanup(srv.Close)
	tr := client.NewTransport(256, 1)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(srv.URL, tr, client.Options{AdminToken: "adm"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestQueueScenarioAgainstTheFake(t *testing.T) {
	sc := loadtest.Presets["smoke"]
	sc.Fans, sc.Seats = 150, 40
	sc.SaleDelay, sc.Ramp, sc.Duration, sc.Patience = 300*time.Millisecond, 200*time.Millisecond, 20*time.Second, 15*time.Second
	sc.AdmitPerSecond, sc.ProbeShare = 100, 0.2
	sc.Pay = loadtest.PayMix{OK: 1, DeclinedThenOK: 1, Slow: 1, Error: 1, Abandon: 1}

	r, err := Play(context.Background(), Config{Client: fakeClient(t), Scenario: sc, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	s := loadtest.Summarize(r, 200*time.Millisecond)
	if v := loadtest.CrowdViolations(s); len(v) != 0 {
		t.Errorf("got violations %v, want none", v)
	}
	if s.Confirmed == 0 || s.FanOutcomes[loadtest.OutcomeSoldOut] == 0 {
		t.Errorf("got outcomes %v, want some confirmed and some sold out", s.FanOutcomes)
	}
	for _, o := range []string{loadtest.OutcomeError, loadtest.OutcomeRefused, loadtest.OutcomeCutOff} {
		if s.FanOutcomes[o] > 0 {
			t.Errorf("got %d fans with outcome %s: %v", s.FanOutcomes[o], o, details(r, o))
		}
	}
	if s.Tokens.Probes == 0 || s.Fairness.Tickets == 0 {
		t.Errorf("got %d probes and %d fans checked by ticket, want some of each", s.Tokens.Probes, s.Fairness.Tickets)
	}
	if s.SoldOutAfter <= 0 {
		t.Errorf("got no sell-out time, want one")
	}
}

func details(r *loadtest.Run, outcome string) []string {
	var out []string
	for _, f := range r.Fans {
		if f.Outcome == outcome && len(out) < 5 {
			out = append(out, f.Detail)
		}
	}
	return out
}

func TestHoldStormAgainstTheFake(t *testing.T) {
	sc := loadtest.Presets["hold-storm"]
	sc.Fans, sc.StormDuration, sc.Duration = 20, 500*time.Millisecond, 10*time.Second
	c := fakeClient(t)
	r, err := Play(context.Background(), Config{Client: c, Scenario: sc, Seed: 7, Baseline: fakeBaseline{c, sc}})
	if err != nil {
		t.Fatal(err)
	}
	s := loadtest.Summarize(r, time.Second)
	if s.Storm == nil || s.Storm.Decisions == 0 || s.Storm.Baseline == nil || s.Storm.Baseline.Decisions == 0 {
		t.Fatalf("got storm %+v, want decisions on both sides", s.Storm)
	}
	if s.Storm.Errors != 0 {
		t.Errorf("got %d answers other than 201/409, want none", s.Storm.Errors)
	}
}

// fakeBaseline plays the baseline's part with another show of the fake.
type fakeBaseline struct {
	c  *client.Client
	sc loadtest.Scenario
}

func (b fakeBaseline) NewShow(ctx context.Context, _ []client.Seat) (string, error) {
	id, _, err := Setup(ctx, b.c, b.sc, "baseline")
	return id, err
}

func (b fakeBaseline) URL() string { return b.c.Base() }

func TestPlayAgainstAnExistingShow(t *testing.T) {
	c := fakeClient(t)
	sc := loadtest.Presets["smoke"]
	sc.Fans, sc.Seats, sc.Ramp, sc.SaleDelay, sc.Duration = 30, 20, 100*time.Millisecond, 200*time.Millisecond, 10*time.Second
	show, _, err := Setup(context.Background(), c, sc, "existing")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Play(context.Background(), Config{Client: c, Scenario: sc, ShowID: show, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.ShowID != show || r.SaleOpens <= 0 {
		t.Fatalf("got show %s opening at +%s, want %s opening after the start", r.ShowID, r.SaleOpens, show)
	}
	if s := loadtest.Summarize(r, time.Second); s.Admitted != sc.Fans {
		t.Errorf("got %d admitted, want all %d", s.Admitted, sc.Fans)
	}
}
