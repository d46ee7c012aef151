package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/shared/problem"
)

// TestPayWhilePostgresConnectionsDie reproduces the 500s measured during a PostgreSQL restart: fans pay while
// every connection booking holds to its database is terminated again and again (pg_terminate_backend, what a
// restart does to a client). Each pay answers a final outcome or 503 store-unavailable with Retry-After, never a
// 500; the same key retried once the database is back settles it; the money invariants hold throughout.
func TestPayWhilePostgresConnectionsDie(t *testing.T) {
	t.Parallel()
	st := newStack(t, "PAYMENT_BREAKER_MIN_CALLS", "1000")
	// Booking's connections carry a name the killer picks them by; the test's own pool is spared.
	st.kill()
	st.env["DATABASE_URL"] += "&application_name=booking_under_fire"
	if !strings.Contains(st.env["DATABASE_URL"], "?") {
		st.env["DATABASE_URL"] = strings.Replace(st.env["DATABASE_URL"], "&", "?", 1)
	}
	st.start()
	show := st.show()

	const fans = 12
	type order struct{ tok, booking, key string }
	orders := make([]order, fans)
	for i := range orders {
		tok := st.guest()
		orders[i] = order{tok, st.hold(tok, show, fmt.Sprintf("A%d", i+1)), fmt.Sprintf("pay-%d", i)}
	}

	ctx, stopKilling := context.WithCancel(context.Background())
	killed := make(chan int, 1)
	go func() {
		n := 0
		defer func() { killed <- n }()
		for ctx.Err() == nil {
			var k int
			if err := st.pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = 'booking_under_fire' AND pid <> pg_backend_pid()`).Scan(&k); err == nil {
				n += k
			}
			time.Sleep(25 * time.Millisecond)
		}
	}()

	var mu sync.Mutex
	statuses := map[int]int{}
	retry := map[int]bool{}
	var wg sync.WaitGroup
	for i, o := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				a := st.do("POST", "/api/v1/bookings/"+o.booking+"/pay", o.tok, map[string]string{"paymentMethod": sim.CardOK},
					"Idempotency-Key", o.key)
				mu.Lock()
				statuses[a.status]++
				mu.Unlock()
				switch {
				case a.status == 503:
					p := a.problem(t, 503)
					if !strings.HasSuffix(p.Type, "/"+problem.StoreUnavailable) && !strings.HasSuffix(p.Type, "/"+problem.ServiceUnavailable) {
						t.Errorf("fan %d: 503 of type %s", i, p.Type)
					}
					if a.header.Get("Retry-After") == "" {
						t.Errorf("fan %d: 503 without Retry-After: %s", i, a.body)
					}
					mu.Lock()
					retry[i] = true
					mu.Unlock()
					continue
				case a.status >= 500:
					t.Errorf("fan %d: pay answered %d %s while connections died", i, a.status, a.body)
				}
				mu.Lock()
				delete(retry, i)
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
	stopKilling()
	t.Logf("pay answers while connections died: %v; backends terminated: %d", statuses, <-killed)

	// The database is back: every fan's retry with the same key settles, and nobody paid twice.
	after := map[int]int{}
	for i, o := range orders {
		var a answer
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			a = st.pay(o.tok, o.booking, sim.CardOK, o.key)
			if a.status != 503 {
				break
			}
		}
		after[a.status]++
		if a.status != 200 && a.status != 202 && a.status != 409 && a.status != 410 {
			t.Errorf("fan %d after the outage: %d %s", i, a.status, a.body)
		}
	}
	t.Logf("the same keys once the database is back: %v", after)
	st.checkInvariants()
}
