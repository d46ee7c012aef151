package admission_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkGateCheck measures the Redis round trips a gated check costs on a show whose queue is on: one
// goroutine (the baseline: one revocation read per check) against a crowd of goroutines checking their own
// tokens on the same show at once, as an edge's requests in a flash sale do. Reported as roundtrips/check.
func BenchmarkGateCheck(b *testing.B) {
	for _, par := range []int{0, 32} {
		name := "serial"
		if par > 0 {
			name = fmt.Sprintf("crowd-%dxGOMAXPROCS", par)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			g := newGated(b, "", 0)
			const users = 256
			raws := g.crowd(b, users, func(int) bool { return false })
			for i := range users { // every token verified once
				if _, err := g.gate.Check(ctx, g.show, fmt.Sprint("u", i), raws[i]); err != nil {
					b.Fatal(err)
				}
			}
			g.rt.reset()
			check := func(i int) {
				if _, err := g.gate.Check(ctx, g.show, fmt.Sprint("u", i), raws[i]); err != nil {
					b.Error(err)
				}
			}
			b.ResetTimer()
			if par == 0 {
				for i := range b.N {
					check(i % users)
				}
			} else {
				var next atomic.Int64
				b.SetParallelism(par)
				b.RunParallel(func(pb *testing.PB) {
					i := int(next.Add(1)) % users
					for pb.Next() {
						check(i)
					}
				})
			}
			b.StopTimer()
			g.rt.mu.Lock()
			trips := len(g.rt.trips)
			g.rt.mu.Unlock()
			b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/check")
		})
	}
}
