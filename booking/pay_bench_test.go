package booking_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
)

// steps collects the duration of each step of the checkout, for percentiles.
type steps struct {
	mu sync.Mutex
	d  map[string][]time.Duration
}

func (s *steps) add(step string, d time.Duration) {
	s.mu.Lock()
	s.d[step] = append(s.d[step], d)
	s.mu.Unlock()
}

func (s *steps) report(b *testing.B) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for step, ds := range s.d {
		slices.Sort(ds)
		for _, q := range []float64{0.50, 0.99} {
			i := min(len(ds)-1, int(math.Ceil(q*float64(len(ds))))-1)
			b.ReportMetric(float64(ds[max(i, 0)].Microseconds())/1000, fmt.Sprintf("%s-p%02.0f-ms", step, q*100))
		}
	}
}

// timedGateway and timedStore time the saga's inner steps: authorize, the confirmation transaction, capture.
type timedGateway struct {
	payment.Gateway
	s *steps
}

func (g timedGateway) Authorize(ctx context.Context, p payment.AuthorizeParams) (payment.Intent, error) {
	start := time.Now()
	defer func() { g.s.add("authorize", time.Since(start)) }()
	return g.Gateway.Authorize(ctx, p)
}

func (g timedGateway) Capture(ctx context.Context, id, key string) (payment.Intent, error) {
	start := time.Now()
	defer func() { g.s.add("capture", time.Since(start)) }()
	return g.Gateway.Capture(ctx, id, key)
}

type timedStore struct {
	booking.PaymentStore
	s *steps
}

func (st timedStore) ConfirmSale(ctx context.Context, sale booking.Sale) (booking.Booking, error) {
	start := time.Now()
	defer func() { st.s.add("confirm-tx", time.Since(start)) }()
	return st.PaymentStore.ConfirmSale(ctx, sale)
}

// BenchmarkCheckout is the fan's whole purchase, hold -> pay (authorize, confirm, capture), on the real stores and
// the simulator over HTTP, with 32 fans at once spread over several shows (so unrelated shows' confirmations run
// side by side). It reports throughput and p50/p99 per step; the 200ms case shows what a slow gateway costs.
//
//	go test -run '^$' -bench BenchmarkCheckout -benchtime 200x ./booking/
func BenchmarkCheckout(b *testing.B) {
	var baseline float64 // checkouts/s at zero gateway latency, measured first in the same run
	for _, latency := range []time.Duration{0, 200 * time.Millisecond} {
		b.Run(fmt.Sprintf("gateway=%s", latency), func(b *testing.B) {
			e := newPayEnv(b, booking.Config{}, sim.Config{Latency: latency}, booking.CheckoutConfig{})
			s := &steps{d: map[string][]time.Duration{}}
			p := booking.NewCheckout(e.Svc, timedStore{e.Store, s}, timedGateway{e.gw, s}, e.signer, e.verifier, e.cfg)
			defer p.Close()
			ctx := context.Background()
			nShows := max(4, (b.N+199)/200)
			shows := []string{e.Show.ID}
			for len(shows) < nShows {
				shows = append(shows, e.NewShow(b).ID)
			}
			var next atomic.Int64
			var failed atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1) - 1)
					show, n := shows[i%nShows], i/nShows
					seat := booking.SeatID(string(rune('A'+n/20)), n%20+1)
					user := fmt.Sprintf("fan%d", i)
					t0 := time.Now()
					bk, _, err := e.Svc.Hold(ctx, booking.HoldRequest{UserID: user, ShowID: show, SeatIDs: []string{seat}})
					if err != nil {
						failed.Add(1)
						continue
					}
					t1 := time.Now()
					_, err = p.Pay(ctx, booking.PayRequest{BookingID: bk.ID, UserID: user, PaymentMethod: sim.CardOK,
						IdempotencyKey: "k" + bk.ID})
					if err != nil {
						failed.Add(1)
						continue
					}
					s.add("hold", t1.Sub(t0))
					s.add("pay", time.Since(t1))
					s.add("checkout", time.Since(t0))
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			if failed.Load() > 0 {
				b.Fatalf("%d of %d checkouts failed", failed.Load(), b.N)
			}
			rate := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "checkouts/s")
			if latency == 0 {
				baseline = rate
			} else if baseline > 0 {
				b.ReportMetric(rate/baseline, "x-zero-latency-rate")
			}
			s.report(b)
		})
	}
}
