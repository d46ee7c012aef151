package crowd

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// TestSaleBehindPgBouncer plays a queued sale, every payment behaviour in the mix, with booking and the edge
// reaching PostgreSQL only through a PgBouncer in transaction pooling mode that the test starts
// (DATABASE_POOLER=pgbouncer). PgBouncer hands each transaction whichever of its few server connections is free,
// so a statement that pgx prepared on one is unknown to the next, and a session-level advisory lock taken on one
// is unlocked on another: either would fail the sale or leave seats and money in the wrong state. The crowd's
// checks and the store checker must find nothing, and PgBouncer's own counters must show that the sale's
// transactions went through it on fewer server connections than booking's pool opened.
func TestSaleBehindPgBouncer(t *testing.T) {
	t.Parallel()
	const serverConns = 4
	c, p := startWith(t, platformtest.Options{MaxConns: 16, PgBouncer: serverConns})
	ctx := context.Background()
	u, _ := url.Parse(p.DatabaseURL)
	database := strings.TrimPrefix(u.Path, "/")
	before, err := p.Bouncer.Stats(ctx, database)
	if err != nil {
		t.Fatalf("pgbouncer stats: %v", err)
	}

	sc := queueScenario(60, 30)
	sc.HotShare, sc.GroupMin, sc.GroupMax = 0.5, 1, 3
	r, err := Play(ctx, Config{Client: c, Scenario: sc, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	s := loadtest.Summarize(r, time.Second)
	t.Logf("outcomes %v; holds %v; pay %v", s.FanOutcomes, s.Steps[loadtest.StepHold].Outcomes,
		s.Steps[loadtest.StepPay].Outcomes)
	if v := loadtest.CrowdViolations(s); len(v) != 0 {
		t.Errorf("got violations %v, want none", v)
	}
	for _, o := range []string{loadtest.OutcomeError, loadtest.OutcomeCutOff, loadtest.OutcomePending} {
		if s.FanOutcomes[o] > 0 {
			t.Errorf("got %d fans with outcome %s: %v", s.FanOutcomes[o], o, details(r, o))
		}
	}
	// Some confirmed; the rest were told sold out or gave up waiting (their patience), which is what a loaded
	// machine's slower sale gives (at load 10, 39 of 60 gave up before the 30 seats were gone): either is an
	// answer, and errors are refused above.
	if s.Confirmed == 0 || s.FanOutcomes[loadtest.OutcomeSoldOut]+s.FanOutcomes[loadtest.OutcomePatience] == 0 {
		t.Errorf("got outcomes %v, want some confirmed and the rest sold out or out of patience", s.FanOutcomes)
	}
	for step, st := range s.Steps {
		for outcome, n := range st.Outcomes {
			if strings.HasPrefix(outcome, "5") && outcome != "503" {
				t.Errorf("%s answered %s %d times", step, outcome, n)
			}
		}
	}

	res, err := check.Run(ctx, check.Config{DatabaseURL: p.DatabaseURL, RedisURL: p.RedisURL,
		ShowIDs: []string{r.ShowID}, ReconcileInterval: 2 * time.Second})
	if err != nil {
		t.Fatalf("store checker: %v", err)
	}
	for _, v := range res.Violations {
		t.Errorf("store checker: %s: %s", v.Invariant, v.Detail)
	}

	after, err := p.Bouncer.Stats(ctx, database)
	if err != nil {
		t.Fatalf("pgbouncer stats: %v", err)
	}
	t.Logf("through pgbouncer: %d transactions, %d queries, on %d server connections",
		after.Transactions-before.Transactions, after.Queries-before.Queries, after.ServerConns)
	if after.Transactions-before.Transactions < int64(s.Confirmed) {
		t.Errorf("pgbouncer passed on %d transactions during a sale of %d confirmations: the services went around it",
			after.Transactions-before.Transactions, s.Confirmed)
	}
	if after.ServerConns > serverConns {
		t.Errorf("pgbouncer holds %d server connections, want at most its pool of %d", after.ServerConns, serverConns)
	}
}
