package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/shard"
)

// TestShardedSale sells shows on two shards at once, with the catalog on a third database: s1 a test database on
// the machine's PostgreSQL, s2 a private server the test stops. While s2 is down its shows answer 503 with
// Retry-After and s1's keep confirming; once s2 is back every confirmation is still there, its shows sell again,
// and the store checker finds nothing wrong on either shard.
func TestShardedSale(t *testing.T) {
	t.Parallel()
	s1Pool, s1URL := pgtest.NewWithURL(t)
	s2 := storetest.StartPostgres(t)
	s2Pool := connect(t, s2.URL)
	// The private server's defaults favour speed (synchronous_commit off); a confirmation told to a fan must
	// survive the kill below, as it does on a real server.
	if _, err := s2Pool.Exec(context.Background(), `ALTER SYSTEM SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	if _, err := s2Pool.Exec(context.Background(), `SELECT pg_reload_conf()`); err != nil {
		t.Fatal(err)
	}
	st := newStack(t, "DATABASE_SHARDS", "s1="+s1URL+"&pool_max_conns=8 s2="+s2.URL+"&pool_max_conns=8",
		"PAYMENT_BREAKER_MIN_CALLS", "1000")
	ring, _ := shard.New([]string{"s1", "s2"})
	pools := []*pgxpool.Pool{s1Pool, s2Pool}

	// Two shows on each shard.
	on := [2][]string{}
	for len(on[0]) < 2 || len(on[1]) < 2 {
		show := st.show()
		on[ring.Of(show)] = append(on[ring.Of(show)], show)
	}
	for i, shows := range on {
		for _, show := range shows {
			var n int
			if err := pools[i].QueryRow(context.Background(), `SELECT count(*) FROM shows WHERE id = $1`, show).Scan(&n); err != nil || n != 1 {
				t.Fatalf("show %s not copied to its shard s%d: %d %v", show, i+1, n, err)
			}
		}
	}

	// Every show sells at once: ten fans a show, a seat each.
	type sale struct{ tok, booking string }
	var mu sync.Mutex
	sold := map[string][]sale{}
	sell := func(show string, seats []string, want int) {
		var wg sync.WaitGroup
		for i, seat := range seats {
			wg.Go(func() {
				tok := st.guest()
				h := st.do("POST", "/api/v1/bookings/hold", tok, map[string]any{"showId": show, "seatIds": []string{seat}})
				if h.status != want {
					t.Errorf("show %s seat %s: hold %d %s, want %d", show, seat, h.status, h.body, want)
					return
				}
				if want != 201 {
					checkUnavailable(t, h)
					return
				}
				b := h.json(t)["bookingId"].(string)
				p := st.pay(tok, b, sim.CardOK, fmt.Sprint("k", i))
				// A saga slower than the pay call's wait (a loaded machine) answers 202 and confirms in the
				// background: the fan's page then follows the booking, and so does this.
				for deadline := time.Now().Add(30 * time.Second); p.status == 202 && p.json(t)["status"] == "PAYMENT_PENDING" &&
					time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
					if g := st.do("GET", "/api/v1/bookings/"+b, tok, nil); g.status == 200 && g.json(t)["status"] != "PAYMENT_PENDING" {
						p = g
					}
				}
				if p.status != 200 || p.json(t)["status"] != "CONFIRMED" {
					t.Errorf("show %s: pay %d %s", show, p.status, p.body)
					return
				}
				mu.Lock()
				sold[show] = append(sold[show], sale{tok, b})
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	seats := func(from, n int) []string {
		var out []string
		for i := from; i < from+n; i++ {
			out = append(out, fmt.Sprintf("A%d", i))
		}
		return out
	}
	var all sync.WaitGroup
	for _, shows := range on {
		for _, show := range shows {
			all.Go(func() { sell(show, seats(1, 10), 201) })
		}
	}
	all.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// s2 stops: its shows answer 503 with Retry-After, s1's keep confirming; so does the rest of the API.
	s2.Stop("immediate")
	for _, show := range on[1] {
		sell(show, seats(11, 2), 503)
	}
	for _, show := range on[0] {
		sell(show, seats(11, 5), 201)
	}
	if a := st.do("GET", "/api/v1/shows/"+on[0][0]+"/seats", "", nil); a.status != 200 {
		t.Errorf("s1 show's seat map with s2 down: %d", a.status)
	}
	mine := st.do("GET", "/api/v1/bookings", sold[on[0][0]][0].tok, nil)
	if mine.status != 503 {
		t.Errorf("a fan's bookings across shards with s2 down: %d %s, want 503", mine.status, mine.body)
	} else {
		checkUnavailable(t, mine)
	}

	// s2 comes back: nothing it confirmed is lost, and its shows sell again.
	s2.Start()
	for _, show := range on[1] {
		waitUntil(t, func() bool {
			return st.do("GET", "/api/v1/bookings/"+sold[show][0].booking, sold[show][0].tok, nil).status == 200
		})
		sell(show, seats(11, 5), 201)
	}
	for i, shows := range on {
		for _, show := range shows {
			if len(sold[show]) != 15 {
				t.Errorf("show %s on s%d: %d sales, want 15", show, i+1, len(sold[show]))
			}
			for _, s := range sold[show] {
				if b := st.do("GET", "/api/v1/bookings/"+s.booking, s.tok, nil); b.status != 200 || b.json(t)["status"] != "CONFIRMED" {
					t.Errorf("booking %s of show %s: %d %s", s.booking, show, b.status, b.body)
				}
			}
		}
	}
	s2Pool = connect(t, s2.URL) // the first pool's connections died with the server
	pools[1] = s2Pool
	// A sale's capture runs after the fan's answer; one whose record s2's stop cut off is the recovery worker's
	// to finish once its lease has passed. The ledger is checked once no money is still in motion.
	for _, p := range pools {
		waitUntil(t, func() bool {
			var n int
			err := p.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE status = 'AUTHORIZED'`).Scan(&n)
			return err == nil && n == 0
		})
	}
	for i, p := range pools {
		var n int
		// The loop above may have put more than two shows on a shard; each sold 15 seats.
		if err := p.QueryRow(context.Background(), `SELECT count(*) FROM sold_seats`).Scan(&n); err != nil || n != 15*len(on[i]) {
			t.Errorf("shard s%d: %d seats sold, want %d (%v)", i+1, n, 15*len(on[i]), err)
		}
		vs, err := invariant.Check(context.Background(), p, invariant.Options{})
		if err != nil || len(vs) > 0 {
			t.Errorf("shard s%d: store check: %v %v", i+1, vs, err)
		}
	}
	var n int
	if err := st.pool.QueryRow(context.Background(), `SELECT count(*) FROM bookings`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the catalog database has %d bookings (%v), want none", n, err)
	}
}

func connect(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func checkUnavailable(t *testing.T, a answer) {
	t.Helper()
	p := a.problem(t, 503)
	if !strings.HasSuffix(p.Type, "/"+problem.StoreUnavailable) || a.header.Get("Retry-After") == "" {
		t.Errorf("503 of type %s, Retry-After %q", p.Type, a.header.Get("Retry-After"))
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
