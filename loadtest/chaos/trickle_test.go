package chaos_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// TestTrickleWhileRedisDown: a queued show set to "trickle" when its store is down keeps admitting while the
// platform's Redis is killed: fans in a crowd that keeps asking are admitted a few a second, with tokens on
// record. Redis comes back empty; each fan the trickle admitted holds a seat and pays with that very token (no
// second trip through the line), and the store checker finds money and seats as they must be.
func TestTrickleWhileRedisDown(t *testing.T) {
	if testing.Short() {
		t.Skip("the trickle's chaos case runs the platform through a Redis outage")
	}
	t.Parallel()
	ctx := context.Background()
	rds := storetest.StartRedis(t)
	p, c := failoverPlatform(t, platformtest.Options{RedisURL: rds.URL, MaxConns: 8})
	sc := failoverSale("trickle", 40, 40)
	sc.SaleDelay = time.Second
	show, opens, err := crowd.Setup(ctx, c, sc, fmt.Sprint("trickle-", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	off := false
	const rate = 3.0
	if _, err := c.PutQueue(ctx, show, client.QueueSettings{Enabled: true, AdmitPerSecond: 0.01, MaxActive: 100,
		TokenTTLSeconds: 300, BotProtection: &client.BotProtection{Enabled: &off},
		WhenStoreDown: &admission.StoreDown{Policy: admission.StoreDownTrickle, AdmitPerSecond: rate}}); err != nil {
		t.Fatal(err)
	}
	fans := make([]client.Guest, 30) // guests are minted against Redis: before the outage
	for i := range fans {
		g, _, err := c.NewGuest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fans[i] = g
	}
	time.Sleep(time.Until(opens.Add(500 * time.Millisecond)))

	rds.Kill()
	down := time.Now()
	tokens := map[int]string{} // fan -> the trickle's admission token
	statuses := map[int]int{}
	// The trickle opens once the edge has found the show's store down (a probe, which a dead Redis takes a couple
	// of seconds to fail, longer on a loaded machine, where each join waits out the dead store until then), then
	// admits about rate a second: it is judged over the 4 s after its first admission.
	// At most 10 are kept: enough to judge the rate, and each holds a seat of row A afterwards.
	var opened time.Time
	judging := func() bool {
		return time.Since(down) < 30*time.Second && len(tokens) < 10 &&
			(opened.IsZero() || time.Since(opened) < 4*time.Second)
	}
	for judging() {
		for i, g := range fans {
			if !judging() {
				break
			}
			if tokens[i] != "" {
				continue
			}
			q, res, err := c.JoinOnce(ctx, g.Token, show, "", "")
			statuses[res.Status]++
			switch {
			case err == nil && res.Status == 200 && q.Status == "admitted" && q.AdmissionToken != "":
				tokens[i] = q.AdmissionToken
				if opened.IsZero() {
					opened = time.Now()
				}
			case res.Status >= 500 && res.Status != 503:
				t.Errorf("a join with Redis down: %s", client.Outcome(res, err))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the trickle admitted %d fans in the %s Redis was down, the first %s after it died; the joins' answers: %v",
		len(tokens), time.Since(down).Round(time.Millisecond), opened.Sub(down).Round(time.Millisecond), statuses)
	if len(tokens) < 2*rate {
		t.Fatalf("the trickle admitted %d fans with Redis down for %s at %v a second", len(tokens), time.Since(down), rate)
	}

	rds.Start()
	waitHealthy(ctx, []string{p.BaseURL + "/readyz", p.BookingURL + "/readyz"})
	bctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	seat := 0
	for i, adm := range tokens {
		g := fans[i]
		var b client.Booking
		var res client.Result
		for bctx.Err() == nil {
			seat++
			b, res, err = c.Hold(bctx, g.Token, adm, show, []string{fmt.Sprintf("A%d", seat)}, fmt.Sprint("trickle-", i, "-", seat))
			if res.Status == 201 || (res.Status != 409 && res.Status < 500 && res.Status != 0) {
				break
			}
			if res.Status != 409 {
				seat-- // the same seat again once the store answers
				time.Sleep(100 * time.Millisecond)
			}
		}
		if res.Status != 201 {
			t.Errorf("fan %d admitted by the trickle: hold %s %s", i, client.Outcome(res, err), res.ProblemSlug())
			continue
		}
		for bctx.Err() == nil {
			_, res, err = c.Pay(bctx, g.Token, adm, b.BookingID, sim.CardOK, "pay-"+b.BookingID)
			if res.Status == 200 || (res.Status < 500 && res.Status != 0) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if res.Status != 200 {
			t.Errorf("fan %d admitted by the trickle: pay %s %s", i, client.Outcome(res, err), res.ProblemSlug())
		}
	}

	pool, err := pgxpool.New(ctx, p.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	settle(t, pool)
	var sold int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM sold_seats WHERE show_id = $1`, show).Scan(&sold); err != nil {
		t.Fatal(err)
	}
	if sold != len(tokens) && !t.Failed() {
		t.Errorf("%d seats sold to the %d fans the trickle admitted", sold, len(tokens))
	}
	res, err := check.Run(ctx, check.Config{DatabaseURL: p.DatabaseURL, RedisURL: rds.URL, ShowIDs: []string{show},
		ReconcileInterval: time.Second})
	if err != nil {
		t.Fatalf("store checker: %v", err)
	}
	for _, v := range res.Violations {
		t.Errorf("store checker: %s: %s", v.Invariant, v.Detail)
	}
}
