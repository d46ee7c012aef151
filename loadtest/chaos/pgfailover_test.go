package chaos_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// bookAfterFailoverWithin is how soon after the primary's death a new fan must have booked and paid, with the
// formation tuned as docs/SCALING.md says (pg_auto_failover's defaults take about 36 s).
const bookAfterFailoverWithin = 20 * time.Second

// TestPostgresFailoverDuringCrowd: a flash crowd buys a queued sale from the platform on a pg_auto_failover
// formation (a monitor, a primary, a synchronous standby: deploy/dev/pgha.sh, tuned for a sale), through its
// multi-host DATABASE_URL; mid-sale the primary's keeper and Postgres are killed with SIGKILL and the monitor
// promotes the standby. Then: no invariant violated (the store checker on the new primary, the crowd's own
// checks), no answer a 500 (nor a 502: booking never died), every confirmation a fan was told about still there
// on the new primary with its tickets, and a new fan who arrives at the kill books and pays within 20 s of it.
// CHAOS=full plays an 800-fan crowd.
func TestPostgresFailoverDuringCrowd(t *testing.T) {
	// Not in make test: its 20 s bound is measured against a formation's failure detection, and on CI's two cores
	// beside every other package's tests the kill-to-booking time ran 20.6 s on a run that kept every confirmation.
	// CHAOS=short plays the 120-fan crowd alone.
	if testing.Short() || os.Getenv("CHAOS") == "" {
		t.Skip("the PostgreSQL failover test runs under make chaos (CHAOS=full) or CHAOS=short: it starts a formation and plays a crowd")
	}
	t.Parallel()
	fans, seats, conns := 120, 60, 8
	if os.Getenv("CHAOS") == "full" {
		fans, seats, conns = 800, 300, 16
	}
	ctx := context.Background()
	f := storetest.StartFormation(t)
	t.Logf("formation: %s", strings.ReplaceAll(f.State(), "\n", "; "))
	p, c := failoverPlatform(t, platformtest.Options{DatabaseServer: f.URL, MaxConns: conns})
	sc := failoverSale("pg-failover", fans, seats)
	sc.Patience, sc.Duration = 60*time.Second, 80*time.Second
	runID := fmt.Sprint("pgfailover-", time.Now().UnixNano())
	show, opens, err := crowd.Setup(ctx, c, sc, runID)
	if err != nil {
		t.Fatal(err)
	}
	// The new fan's show, its own so that the crowd cannot have sold it out.
	late := sc
	late.Seats, late.AdmitPerSecond, late.MaxActive, late.SaleDelay = 20, 200, 100, time.Second
	lateShow, _, err := crowd.Setup(ctx, c, late, runID+"-late")
	if err != nil {
		t.Fatal(err)
	}
	played := play(t, ctx, crowd.Config{Client: c, Scenario: sc, ShowID: show, Seed: 31})

	time.Sleep(time.Until(opens.Add(2 * time.Second)))
	killed := time.Now()
	dead := f.KillPrimary()
	writable := firstWrite(ctx, p.DatabaseURL)
	// The new fan arrives at the kill, before anything is known to have recovered.
	newFan := bookEndToEnd(ctx, c, lateShow)
	promoted := f.WaitPrimary(dead, time.Minute)
	t.Logf("primary %s killed at +%s after opening; %s promoted, writable %s after the kill; formation: %s", dead,
		killed.Sub(opens).Round(time.Millisecond), promoted, (<-writable).Sub(killed).Round(100*time.Millisecond),
		strings.ReplaceAll(f.State(), "\n", "; "))
	switch {
	case newFan.err != nil:
		t.Errorf("the fan arriving at the primary's death could not book: %v", newFan.err)
	case newFan.confirmed.Sub(killed) > bookAfterFailoverWithin:
		t.Errorf("the fan arriving at the primary's death booked %s after it, want within %s",
			newFan.confirmed.Sub(killed).Round(time.Millisecond), bookAfterFailoverWithin)
	default:
		t.Logf("FIGURE kill to next confirmed booking: %s", newFan.confirmed.Sub(killed).Round(100*time.Millisecond))
	}

	run := <-played
	if run == nil {
		t.Fatal("the crowd did not play")
	}
	sum := loadtest.Summarize(run, time.Second)
	t.Logf("outcomes %v; confirmed %d; admitted %d; sold out %s after opening", sum.FanOutcomes, sum.Confirmed,
		sum.Admitted, sum.SoldOutAfter)
	if sum.SoldOutAfter > 0 && opens.Add(sum.SoldOutAfter).Before(killed) {
		t.Errorf("the sale sold out %s after opening, before the primary was killed: the failover met no sale",
			sum.SoldOutAfter)
	}
	for _, v := range loadtest.CrowdViolations(sum) {
		t.Errorf("crowd: %s: %s", v.Invariant, v.Detail)
	}
	for _, o := range []string{loadtest.OutcomeError, loadtest.OutcomeCutOff, loadtest.OutcomePending} {
		if n := sum.FanOutcomes[o]; n > 0 {
			t.Errorf("%d fans ended %s", n, o)
		}
	}
	// Answers: a store that is failing over is a 503 with Retry-After, never a 500; booking never died, so no 502.
	byStatus := map[string]int{}
	var forbidden []string
	for step, samples := range run.Steps {
		for _, s := range samples {
			if strings.HasPrefix(s.Outcome, "5") {
				byStatus[s.Outcome]++
				if s.Outcome != "503" && s.Outcome != "504" {
					forbidden = append(forbidden, fmt.Sprintf("%s answered %s at +%s", step, s.Outcome,
						run.StartedAt.Add(s.At).Sub(killed).Round(time.Millisecond)))
				}
			}
		}
	}
	t.Logf("5xx answers during the run: %v", byStatus)
	if len(forbidden) > 0 {
		t.Errorf("%d answers the contract forbids, among them: %s", len(forbidden),
			strings.Join(first(forbidden, 10), "; "))
	}

	pool, err := pgxpool.New(ctx, p.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var onWritable bool
	if err := pool.QueryRow(ctx, "SELECT NOT pg_is_in_recovery()").Scan(&onWritable); err != nil || !onWritable {
		t.Fatalf("the checker's pool is not on the new primary (%v)", err)
	}
	settle(t, pool)
	res, err := check.Run(ctx, check.Config{DatabaseURL: p.DatabaseURL, RedisURL: p.RedisURL,
		ShowIDs: []string{show, lateShow}, ReconcileInterval: time.Second})
	if err != nil {
		t.Fatalf("store checker: %v", err)
	}
	for _, v := range res.Violations {
		t.Errorf("store checker: %s: %s", v.Invariant, v.Detail)
	}
	// No lost confirmation: every booking a fan was told is CONFIRMED is so on the new primary, a live ticket
	// for each of its seats.
	told, kept := 0, 0
	confirmed := map[string]int{}
	for _, fan := range run.Fans {
		if fan.Outcome == loadtest.OutcomeConfirmed {
			confirmed[fan.BookingID] = len(fan.SeatIDs)
		}
	}
	if newFan.err == nil {
		confirmed[newFan.booking] = 1
	}
	for id, nseats := range confirmed {
		told++
		var status string
		var tickets int
		if err := pool.QueryRow(ctx, `SELECT b.status, (SELECT count(*) FROM tickets t WHERE t.booking_id = b.id
			AND t.status <> 'VOID') FROM bookings b WHERE b.id = $1`, id).Scan(&status, &tickets); err != nil {
			t.Errorf("booking %s, confirmed to its fan: %v", id, err)
			continue
		}
		if status != "CONFIRMED" || tickets != nseats {
			t.Errorf("booking %s, confirmed to its fan for %d seats, is %s with %d live tickets", id, nseats,
				status, tickets)
			continue
		}
		kept++
	}
	t.Logf("FIGURE confirmations kept on the new primary: %d of %d", kept, told)
	var twice int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT show_id, seat_id FROM sold_seats
		GROUP BY show_id, seat_id HAVING count(*) > 1) d`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice > 0 {
		t.Errorf("%d seats were sold twice", twice)
	}
}

// firstWrite reports when a new connection to url (the formation's multi-host URL) first commits a write, trying
// every 200 ms for a minute: the database's own recovery, apart from the platform's.
func firstWrite(ctx context.Context, url string) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		defer close(out)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			conn, err := pgx.Connect(cctx, url)
			if err == nil {
				_, err = conn.Exec(cctx, "CREATE TEMP TABLE probe (x int); INSERT INTO probe VALUES (1)")
				_ = conn.Close(cctx)
			}
			cancel()
			if err == nil {
				out <- time.Now()
				return
			}
		}
	}()
	return out
}
