package app_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// BenchmarkShardedConfirm measures confirmations per second (hold a seat, pay, CONFIRMED) of booking with its
// ledger on one shard and on two, in the same run: each shard a private PostgreSQL server of its own, four shows
// a setup, BENCH_CLIENTS (default 32) fans at once. The setups alternate in BENCH_ROUNDS (default 4) rounds of
// BENCH_DURATION/BENCH_ROUNDS (default 8s in all per setup) so both see the same machine. It reports both rates
// and their ratio:
//
//	go test -run '^$' -bench ShardedConfirm -benchtime 1x ./booking/app/
func BenchmarkShardedConfirm(b *testing.B) {
	dur := envDuration("BENCH_DURATION", 8*time.Second)
	rounds := envInt("BENCH_ROUNDS", 4)
	clients := envInt("BENCH_CLIENTS", 32)
	one := newConfirmRig(b, 1, clients)
	two := newConfirmRig(b, 2, clients)
	b.ResetTimer()
	var n1, n2 int64
	var t1, t2 time.Duration
	for range rounds {
		n, d := one.run(dur / time.Duration(rounds))
		n1, t1 = n1+n, t1+d
		n, d = two.run(dur / time.Duration(rounds))
		n2, t2 = n2+n, t2+d
	}
	b.StopTimer()
	r1, r2 := float64(n1)/t1.Seconds(), float64(n2)/t2.Seconds()
	b.ReportMetric(r1, "one-shard-confirms/s")
	b.ReportMetric(r2, "two-shards-confirms/s")
	b.ReportMetric(r2/r1, "x-two-vs-one")
	b.Logf("one shard: %d confirmations in %v (%.0f/s, %d holds refused); two shards: %d in %v (%.0f/s, %d refused); ratio %.2f",
		n1, t1, r1, one.errs.Load(), n2, t2, r2, two.errs.Load(), r2/r1)
}

// confirmRig is booking (with the payment simulator) over a catalog database and n shard servers, four shows
// on sale with 500 seats each, and a guest token for each client.
type confirmRig struct {
	st     *stack
	shows  []string
	tokens []string
	next   atomic.Int64 // the next seat to sell, over all shows
	errs   atomic.Int64
}

func newConfirmRig(b *testing.B, shards, clients int) *confirmRig {
	b.Helper()
	list := ""
	for i := range shards {
		pg := storetest.StartPostgres(b)
		list += fmt.Sprintf("s%d=%s&pool_max_conns=16 ", i+1, pg.URL)
	}
	st := newStack(b, "DATABASE_SHARDS", list, "PAYMENT_BREAKER_MIN_CALLS", "100000", "BENCH_POOL", "16",
		"PAYMENT_TIMEOUT", "5s")
	r := &confirmRig{st: st}
	for range 4 {
		r.shows = append(r.shows, bigShow(st))
	}
	for range clients {
		r.tokens = append(r.tokens, st.guest())
	}
	return r
}

// run lets every client hold and pay one seat after another for d and returns the confirmations and the time.
func (r *confirmRig) run(d time.Duration) (int64, time.Duration) {
	var done atomic.Int64
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for i, tok := range r.tokens {
		wg.Go(func() {
			for k := 0; time.Now().Before(stop); k++ {
				n := r.next.Add(1)
				show := r.shows[int(n)%len(r.shows)]
				seat := fmt.Sprintf("%c%d", 'A'+rune(n/int64(len(r.shows))/50%10), n/int64(len(r.shows))%50+1)
				h := r.st.do("POST", "/api/v1/bookings/hold", tok, map[string]any{"showId": show, "seatIds": []string{seat}})
				if h.status != 201 {
					r.errs.Add(1)
					continue
				}
				p := r.st.pay(tok, h.json(r.st.t)["bookingId"].(string), sim.CardOK, fmt.Sprint("k", i, "-", n))
				if p.status == 200 {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return done.Load(), time.Since(start)
}

// bigShow creates a show of 500 seats (rows A to J of 50) through the operator API.
func bigShow(st *stack) string {
	rows := []any{}
	for r := 'A'; r <= 'J'; r++ {
		rows = append(rows, map[string]any{"row": string(r), "seats": 50, "category": "GOLD"})
	}
	v := st.do("POST", "/admin/v1/venues", adminToken, map[string]any{"name": "Arena", "city": "Pune",
		"halls": []any{map[string]any{"name": "Main", "rows": rows}}})
	if v.status != 201 {
		st.t.Fatalf("venue: %d %s", v.status, v.body)
	}
	hall := v.json(st.t)["halls"].([]any)[0].(map[string]any)["hallId"].(string)
	e := st.do("POST", "/admin/v1/events", adminToken, map[string]any{"title": "T", "kind": "concert", "durationMinutes": 100})
	s := st.do("POST", "/admin/v1/shows", adminToken, map[string]any{"eventId": e.json(st.t)["eventId"], "hallId": hall,
		"startsAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339), "saleStartsAt": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		"currency": "INR", "prices": map[string]int64{"GOLD": 45000}})
	if s.status != 201 {
		st.t.Fatalf("show: %d %s", s.status, s.body)
	}
	return s.json(st.t)["showId"].(string)
}
