package chaos_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// TestFailoverDuringCrowd: a flash crowd buys a queued sale from the platform on a six-node Redis Cluster, and
// mid-sale the master serving the show's keys (seat locks, fencing counter, the queue) is killed; its replica takes
// over. Replication is asynchronous, so the new master may lack the old one's last writes: the fencing epoch and
// PostgreSQL's constraints must still keep every seat sold once. Afterwards the store checker finds nothing, every
// fan who paid holds a live ticket per seat, the crowd's own checks (queue order, tokens) pass, and the sale sells
// out. The edge runs with QUEUE_JOIN_REPLICAS=1, so no join a fan was answered is lost with the master: not one fan
// may be let in after a fan behind it. CHAOS=full plays a larger crowd.
func TestFailoverDuringCrowd(t *testing.T) {
	t.Parallel()
	fans, seats, conns := 120, 60, 8
	if os.Getenv("CHAOS") == "full" {
		fans, seats, conns = 1000, 300, 16
	}
	ctx := context.Background()
	cluster := storetest.StartCluster(t, 3, 1)
	// Joins wait for the show's replica (one per master here): a join is answered once the replica that the
	// cluster will promote holds it. A second's timeout, not the default 200 ms, on a machine whose two cores the
	// crowd, six Redis and both services share.
	p, c := failoverPlatform(t, platformtest.Options{RedisClusterAddrs: cluster.Addrs, MaxConns: conns,
		Edge: map[string]string{"QUEUE_JOIN_REPLICAS": "1", "QUEUE_JOIN_REPLICA_TIMEOUT": "1s"}})
	sc := failoverSale("failover", fans, seats)
	show, opens, err := crowd.Setup(ctx, c, sc, fmt.Sprint("failover-", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	played := play(t, ctx, crowd.Config{Client: c, Scenario: sc, ShowID: show, Seed: 29})

	// Mid-sale: admissions, holds and payments are under way when the show's master dies.
	time.Sleep(time.Until(opens.Add(time.Second)))
	master := cluster.MasterOf(t, rediskey.Seat(show, "A1"))
	killed := time.Now()
	master.Kill()
	cluster.WaitHealthy(t, 30*time.Second)
	t.Logf("the show's master %s was killed; its replica served every slot %s later", master.Addr,
		time.Since(killed).Round(10*time.Millisecond))
	now := cluster.MasterOf(t, rediskey.Seat(show, "A1"))
	if now == master {
		t.Fatalf("the show's keys are still on the killed master %s", master.Addr)
	}
	// The promoted replica has no replica of its own, so joins wait in vain (503) until the killed node is back
	// as its replica, as an orchestrator restarting the dead node would bring it.
	cluster.Rejoin(t, master, now, 30*time.Second)
	t.Logf("the killed node is back as the new master's replica %s after the kill",
		time.Since(killed).Round(10*time.Millisecond))

	run := <-played
	if run == nil {
		t.Fatal("the crowd did not play")
	}
	sum := loadtest.Summarize(run, time.Second)
	t.Logf("outcomes %v; confirmed %d; admitted %d; sold out %s after opening, the master killed %s after",
		sum.FanOutcomes, sum.Confirmed, sum.Admitted, sum.SoldOutAfter, killed.Sub(opens).Round(time.Millisecond))
	if sum.SoldOutAfter > 0 && opens.Add(sum.SoldOutAfter).Before(killed) {
		t.Errorf("the sale sold out %s after opening, before the master was killed: the failover met no sale",
			sum.SoldOutAfter)
	}
	// Every join was answered only once the replica held it (QUEUE_JOIN_REPLICAS), so the promoted replica forgot
	// no fan's place and handed no ticket out twice: any fan let in after one behind it fails, each inversion
	// reported (whether the fan had to join again, forgotten, is in its line).
	t.Logf("queue order: %d admitted fans with a known ticket, %d inversions", sum.Fairness.Tickets,
		len(sum.Fairness.Inversions))
	for _, v := range loadtest.CrowdViolations(sum) {
		t.Errorf("crowd: %s: %s", v.Invariant, v.Detail)
	}
	for _, o := range []string{loadtest.OutcomeError, loadtest.OutcomeCutOff, loadtest.OutcomePending} {
		if n := sum.FanOutcomes[o]; n > 0 {
			t.Errorf("%d fans ended %s", n, o)
		}
	}
	if len(sum.Reasons) > 0 {
		t.Logf("why fans ended without seats: %v; pay answered %v", sum.Reasons, sum.Steps[loadtest.StepPay].Outcomes)
	}

	pool, err := pgxpool.New(ctx, p.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	settle(t, pool)
	res, err := check.Run(ctx, check.Config{DatabaseURL: p.DatabaseURL, RedisClusterAddrs: cluster.Addrs,
		ShowIDs: []string{show}, ReconcileInterval: time.Second})
	if err != nil {
		t.Fatalf("store checker: %v", err)
	}
	for _, v := range res.Violations {
		t.Errorf("store checker: %s: %s", v.Invariant, v.Detail)
	}
	if !strings.Contains(strings.Join(res.Checked, ","), loadtest.InvLocks) {
		t.Errorf("the checker did not read the cluster's seat locks: checked %v", res.Checked)
	}

	// No seat sold twice (the checker says so too; this is the claim itself, straight from the ledger).
	var twice int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT seat_id FROM sold_seats WHERE show_id = $1
		GROUP BY seat_id HAVING count(*) > 1) d`, show).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice > 0 {
		t.Errorf("%d seats were sold twice", twice)
	}
	// Every fan who paid holds a live ticket for each seat of a CONFIRMED booking.
	for _, f := range run.Fans {
		if f.Outcome != loadtest.OutcomeConfirmed {
			continue
		}
		var status string
		var tickets int
		if err := pool.QueryRow(ctx, `SELECT b.status, (SELECT count(*) FROM tickets t WHERE t.booking_id = b.id
			AND t.status <> 'VOID') FROM bookings b WHERE b.id = $1`, f.BookingID).Scan(&status, &tickets); err != nil {
			t.Errorf("fan %d paid for booking %s: %v", f.ID, f.BookingID, err)
			continue
		}
		if status != "CONFIRMED" || tickets != len(f.SeatIDs) {
			t.Errorf("fan %d paid for %v: booking %s is %s with %d live tickets", f.ID, f.SeatIDs, f.BookingID,
				status, tickets)
		}
	}
	// The sale completed: no booking left half-way, and every seat sold unless a fan lost its hold (a lock the
	// failover lost) and handed seats back after the others had gone.
	var sold, open int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sold_seats WHERE show_id = $1),
		(SELECT count(*) FROM bookings WHERE show_id = $1 AND status IN ('HELD', 'PAYMENT_PENDING'))`,
		show).Scan(&sold, &open); err != nil {
		t.Fatal(err)
	}
	if open > 0 {
		t.Errorf("%d bookings still held or pending when the crowd was done", open)
	}
	if sold != seats && sum.FanOutcomes[loadtest.OutcomeExpired] == 0 {
		t.Errorf("%d of %d seats sold when the crowd was done, want a sell-out", sold, seats)
	}
}

// failoverPlatform starts the platform for a crowd that a store's failover meets, over opts' stores: holds that
// outlast the failover, a sweep every second, a 2 s gateway timeout with a 3 s slow card (a 202 the recovery
// worker settles every 300 ms), and a payment breaker that the failover's errors do not open.
func failoverPlatform(t *testing.T, opts platformtest.Options) (*platformtest.Platform, *client.Client) {
	t.Helper()
	opts.HoldTTL, opts.ReconcileInterval = time.Minute, time.Second
	opts.PaymentTimeout, opts.SlowDelay = 2*time.Second, 3*time.Second
	opts.Booking = map[string]string{"PAYMENT_RECOVER_INTERVAL": "300ms", "PAYMENT_BREAKER_MIN_CALLS": "1000"}
	p := platformtest.Start(t, opts)
	tr := client.NewTransport(256)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(p.BaseURL, tr, client.Options{AdminToken: p.AdminToken, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// failoverSale is the queued sale a failover meets.
func failoverSale(name string, fans, seats int) loadtest.Scenario {
	sc := loadtest.Presets["smoke"]
	sc.Name, sc.Fans, sc.Seats, sc.AdmitPerSecond, sc.MaxActive = name, fans, seats, 15, fans
	// Small groups and a paced queue: the seats go to many fans over several seconds, so the store fails while
	// the sale is in full swing, not after it.
	sc.GroupMin, sc.GroupMax = 1, 2
	sc.SaleDelay, sc.Ramp, sc.Patience, sc.Duration = 2*time.Second, time.Second, 50*time.Second, 70*time.Second
	// Every fan who gets seats pays in the end, so the sale ends sold out rather than waiting out abandoned holds
	// or handing back seats after the crowd has gone.
	sc.Pay = loadtest.PayMix{OK: 85, DeclinedThenOK: 10, Slow: 5}
	return sc
}

// play runs the crowd in the background and hands over its run when it is done (nil if it could not play).
func play(t *testing.T, ctx context.Context, cfg crowd.Config) <-chan *loadtest.Run {
	played := make(chan *loadtest.Run, 1)
	go func() {
		r, err := crowd.Play(ctx, cfg)
		if err != nil {
			t.Errorf("crowd: %v", err)
		}
		played <- r
	}()
	return played
}
