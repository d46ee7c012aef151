package app_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHoldInFlight measures whether booking's hold throughput holds up as the requests in flight grow, as
// they do in a flash crowd and behind any stall: the hot show of BenchmarkHotShow, closed loop (each client sends
// its next hold as soon as it has its answer, so the clients are the requests in flight), with 250 and with 2,000
// clients; and the floor of BenchmarkHotShow (a server that answers 409 doing no work) under the same two loads.
// The four take short rounds in turn, in one load process, so all see the same drift of this shared machine.
//
// It reports decisions per second of each, the ratio of 2,000 to 250 clients (below 1: throughput falls with
// concurrency), and the servers' process's CPU per decision, which depends much less than the rate on what else
// the machine runs. Where the floor falls as much as booking, the fall is the machine's (sockets, scheduler,
// caches, and the load generator's own 2,000 goroutines), not booking's. BENCH_DURATION (default 6s) is the
// measured time per load, BENCH_ROUNDS (default 3) the rounds it is cut into; run it once:
//
//	go test -run '^$' -bench HoldInFlight -benchtime 1x ./booking/app/
func BenchmarkHoldInFlight(b *testing.B) {
	const few, many = 250, 2000
	dur := envDuration("BENCH_DURATION", 6*time.Second)
	rounds := envInt("BENCH_ROUNDS", 3)
	rig := newHotShowRig(b, many)
	floor := startFloor(b)
	// The servers' goroutines, sampled: with 2,000 clients booking has a goroutine per connection, parked on
	// the network or in its in-flight limiter.
	var most atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for t := time.NewTicker(100 * time.Millisecond); ; {
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
				most.Store(max(most.Load(), int64(runtime.NumGoroutine())))
			}
		}
	}()
	b.ResetTimer()
	res := runLoadProcess(b, loadJob{URLs: []string{rig.booking, rig.booking, floor, floor},
		Clients: []int{few, many, few, many}, Show: rig.show, Tokens: rig.tokens,
		Round: dur / time.Duration(rounds), Rounds: rounds, Warmup: envDuration("BENCH_WARMUP", time.Second)})
	b.StopTimer()

	names := []string{"booking-250", "booking-2000", "floor-250", "floor-2000"}
	for i, r := range res {
		b.ReportMetric(r.rate, names[i]+"-decisions/s")
		b.ReportMetric(perDecision(r.serverCPU, r), names[i]+"-server-µs/decision")
		b.Logf("%-12s %s; server CPU %.1f µs, load CPU %.1f µs a decision", names[i], r,
			perDecision(r.serverCPU, r), perDecision(r.loadCPU, r))
	}
	b.Logf("servers' process: at most %d goroutines", most.Load())
	b.ReportMetric(res[1].rate/res[0].rate, "booking-x-2000/250")
	b.ReportMetric(res[3].rate/res[2].rate, "floor-x-2000/250")
}

func perDecision(cpu time.Duration, r loadResult) float64 {
	if r.decisions == 0 {
		return 0
	}
	return float64(cpu) / float64(time.Microsecond) / float64(r.decisions)
}
