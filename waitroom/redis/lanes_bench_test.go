package redis_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/waitroom"
)

// BenchmarkJoinLanes measures what lanes cost a join: joins per second from 16 joiners into a show of two lines
// without lanes (two partitions) and into one of two lanes of one partition each (two lines again, half the fans
// invited to the fan club), in the same run. A laned join reads the fan's lane (one pipelined round trip for the
// two hashes in lane.lua, which at a first join also holds them to it); lanes/plain is the ratio of the rates.
func BenchmarkJoinLanes(b *testing.B) {
	rdb := client(b)
	ctx := context.Background()
	rate := func(lanes admission.Lanes, k int) float64 {
		show := newShow(b, rdb)
		configureLanes(b, rdb, show, lanes, k, 100)
		openSale(b, rdb, show)
		svc := newService(b, rdb, issuer(b), waitroom.Options{})
		fans := users("f", max(b.N, 2000))
		if lanes.Count() > 1 {
			invite(b, rdb, show, "fanclub", fans[:len(fans)/2])
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < int64(len(fans)); i = next.Add(1) - 1 {
					if _, err := svc.Join(ctx, show, fans[i]); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(len(fans)) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	// Each twice, in the order plain, lanes, lanes, plain, so neither gains from going first or last.
	plain := rate(admission.Lanes{}, 2)
	laned := rate(fanClub, 1)
	laned = (laned + rate(fanClub, 1)) / 2
	plain = (plain + rate(admission.Lanes{}, 2)) / 2
	b.ReportMetric(plain, "plain-joins/s")
	b.ReportMetric(laned, "lanes-joins/s")
	b.ReportMetric(laned/plain, "lanes/plain")
}
