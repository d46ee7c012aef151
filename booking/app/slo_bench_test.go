package app_test

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHoldSLO finds, for booking and for the row-lock baseline, the highest constant arrival rate of holds
// on the hot show of BenchmarkHotShow whose p99 stays at or under 50 ms (the flash-sale target) with fewer than
// 0.1% errors, and reports both and their ratio, x-slo. Beside them it searches the same way against the floor of
// BenchmarkHotShow, a server that answers every hold 409 without doing any work: slo-rate-floor is the highest
// rate this machine, the generator and fasthttp sustain at the target in this run, and x-slo-floor (floor over
// row-lock) the largest x-slo the run allowed at all.
//
// The load is open loop, in the manner of wrk2: request i of a step is due at start + i/rate whether or not the
// earlier ones have been answered, and its latency runs from that due time, not from when it was sent, so a stall
// of the server (or of the generator) shows in the percentiles instead of silently lowering the rate offered
// (coordinated omission). A pool of workers, each with its own keep-alive connection and user token, claims the
// due requests in order; request bodies are made before the clock starts. A step whose pool was ever fully busy,
// or whose requests went out late, says so in its line: then the generator, not the server, set the pace.
//
// The search steps the rate up from 250/s, doubling, until a step misses the target, then bisects (geometric
// midpoints) until the passing and failing rates are within 5%. The designs and the floor take their steps in
// turn, under the same rules, so all see the same drift of this shared machine. Run it once:
//
//	go test -run '^$' -bench HoldSLO -benchtime 1x ./booking/app/
//
// One search's ratio moves by a search step or two between runs on a shared machine (another process stalling
// the servers for 100 ms fails a step that would pass), so BENCH_SLO_SEARCHES (default 1) runs that many whole
// searches, each a same-run comparison, and reports the median of each figure; every search's figures are logged.
//
// BENCH_SLO_STEP (default 3s) is the length of one step, BENCH_WARMUP (default 1s) the unmeasured step each
// design gets first, BENCH_SLO_WORKERS (default 2000) the generator's pool per design, and BENCH_SLO_OUT a
// directory to write slo.md (a table of every step) and slo.html (the curves) into: those of the search whose
// x-slo is the median.
func BenchmarkHoldSLO(b *testing.B) {
	rig := newHotShowRig(b, envInt("BENCH_SLO_WORKERS", 2000))
	job := sloJob{URLs: []string{rig.booking, rig.rowlock, startFloor(b)}, Show: rig.show, Tokens: rig.tokens,
		Step: envDuration("BENCH_SLO_STEP", 3*time.Second), Warmup: envDuration("BENCH_WARMUP", time.Second),
		Start: 250, SLO: 50 * time.Millisecond, MaxErrors: 0.001}
	b.ResetTimer()
	searches := make([]sloSearch, envInt("BENCH_SLO_SEARCHES", 1))
	for i := range searches {
		runChild(b, "TestSLOLoadHelper", job, &searches[i].steps)
		searches[i].summarize()
	}
	b.StopTimer()
	// Each search's figures first: go test keeps only the first lines of a benchmark's log unless run with -v.
	for i, s := range searches {
		b.Logf("search %d: booking %.0f/s, row-lock %.0f/s, floor %.0f/s: x-slo %.2f, x-slo-floor %.2f", i+1,
			s.best[0], s.best[1], s.best[2], s.x, s.xFloor)
	}
	for i, s := range searches {
		for _, st := range s.steps {
			b.Logf("search %d: %-7s %s", i+1, sloDesigns[st.Design], st)
		}
	}

	median := func(f func(sloSearch) float64) float64 {
		v := make([]float64, len(searches))
		for i, s := range searches {
			v[i] = f(s)
		}
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	b.ReportMetric(median(func(s sloSearch) float64 { return s.best[0] }), "slo-rate-booking")
	b.ReportMetric(median(func(s sloSearch) float64 { return s.best[1] }), "slo-rate-rowlock")
	b.ReportMetric(median(func(s sloSearch) float64 { return s.best[2] }), "slo-rate-floor")
	b.ReportMetric(median(func(s sloSearch) float64 { return s.x }), "x-slo")
	b.ReportMetric(median(func(s sloSearch) float64 { return s.xFloor }), "x-slo-floor")
	if dir := os.Getenv("BENCH_SLO_OUT"); dir != "" {
		// The report shows one search whole, the one at the median x-slo (the lower of the two middle ones).
		byX := slices.Clone(searches)
		slices.SortStableFunc(byX, func(a, b sloSearch) int { return cmp.Compare(a.x, b.x) })
		mid := byX[(len(byX)-1)/2]
		if err := writeSLOReport(dir, job, mid.steps, mid.best); err != nil {
			b.Error(err)
		}
	}
}

// sloSearch is one whole search over every design: its steps, each design's highest passing rate, and the ratios.
type sloSearch struct {
	steps     []sloStep
	best      []float64 // by design, in sloDesigns' order
	x, xFloor float64   // booking and the floor over the row-lock baseline (0 when the baseline passed nothing)
}

func (s *sloSearch) summarize() {
	s.best = make([]float64, len(sloDesigns))
	for _, st := range s.steps {
		if st.Pass {
			s.best[st.Design] = max(s.best[st.Design], st.Rate)
		}
	}
	if s.best[1] > 0 {
		s.x, s.xFloor = s.best[0]/s.best[1], s.best[2]/s.best[1]
	}
}

// sloDesigns names the job's URLs, in order.
var sloDesigns = []string{"booking", "rowlock", "floor"}

type sloJob struct {
	URLs         []string
	Show         string
	Tokens       []string // one per worker
	Step, Warmup time.Duration
	Start        float64       // the first rate tried, requests per second
	SLO          time.Duration // the p99 a passing step stays at or under
	MaxErrors    float64       // the share of errors a passing step stays under
}

// sloStep is one rate tried on one design.
type sloStep struct {
	Design            int
	Rate              float64 // offered, requests per second
	Sent, Decisions   int     // requests due in the step; of them, answered 201, 409 or 422
	Unsent            int     // given up unsent, at least a second late: in the percentiles at that lateness
	Errors            int
	Elapsed           time.Duration // from the first due time to the last answer
	P50, P99, Max     time.Duration // from each request's due time to its answer, over decisions and the unsent
	LateP99           time.Duration // p99 of how late requests were sent after their due time
	MaxInFlight       int           // the pool's high-water mark; equal to Workers means it was exhausted
	Workers           int
	GeneratorCPU      float64 // the load process's CPU seconds per second during the step
	Pass              bool
	GeneratorLimiting bool // requests went out late while workers were free: the generator could not keep up
	SecondTry         bool // the rate's second try, after it failed once
}

func (s sloStep) String() string {
	verdict := "pass"
	if !s.Pass {
		verdict = "FAIL"
	}
	return fmt.Sprintf("%6.0f/s offered: p50 %v, p99 %v, max %v; %d of %d decided, %d errors, %.0f/s answered; "+
		"sent late p99 %v, in flight max %d, generator %.0f%% CPU%s: %s", s.Rate, ms(s.P50), ms(s.P99), ms(s.Max),
		s.Decisions, s.Sent, s.Errors, float64(s.Decisions)/s.Elapsed.Seconds(), ms(s.LateP99), s.MaxInFlight,
		s.GeneratorCPU*100, s.notes(), verdict)
}

// notes names what else marks the step, for its line and its row of slo.md alike: every worker busy (the pool
// exhausted), a generator running late, a second try, requests given up unsent.
func (s sloStep) notes() string {
	note := ""
	if s.MaxInFlight >= s.Workers {
		note += ", pool exhausted"
	}
	if s.GeneratorLimiting {
		note += ", generator late"
	}
	if s.SecondTry {
		note += ", second try"
	}
	if s.Unsent > 0 {
		note += fmt.Sprintf(", %d given up unsent", s.Unsent)
	}
	return note
}

func ms(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

// rateSearch is one design's search for its highest passing rate. A rate fails only when two tries miss the
// target: on this shared machine another process can stall the servers for 100 ms or more, which alone puts
// more than 1% of a 3 s step over 50 ms at any rate. The second try comes on the design's next turn, after the
// others' steps, and every design (and the floor) is searched under the same rule.
type rateSearch struct {
	lo, hi float64 // highest passing and lowest failing rate so far (0: none yet)
	again  float64 // a rate that failed once, to try again
	steps  int
}

const (
	sloMaxSteps  = 24   // per design: 9 doublings from 250/s reach 128,000/s, bisections, second tries
	sloPrecision = 1.05 // the search ends when the failing rate is within 5% of the passing one
	sloMinRate   = 10   // below this a design is declared unable to meet the target at all
)

func (s *rateSearch) done() bool {
	return (s.again == 0 && s.steps >= sloMaxSteps) || (s.lo > 0 && s.hi > 0 && s.hi/s.lo <= sloPrecision) || (s.lo == 0 && s.hi > 0 && s.hi <= sloMinRate)
}

func (s *rateSearch) next(start float64) float64 {
	switch {
	case s.again > 0:
		return s.again
	case s.lo == 0 && s.hi == 0:
		return start
	case s.hi == 0:
		return s.lo * 2
	case s.lo == 0:
		return math.Round(s.hi / 2)
	}
	r := math.Sqrt(s.lo * s.hi)
	if r > 100 {
		r = math.Round(r/10) * 10
	}
	return math.Round(r)
}

// record notes a step's outcome and reports whether it was the second try of its rate.
func (s *rateSearch) record(rate float64, pass bool) (second bool) {
	s.steps++
	second, s.again = s.again > 0, 0
	if !pass && !second {
		s.again = rate
		return false
	}
	if pass {
		s.lo = rate
	} else {
		s.hi = rate
	}
	return second
}

// TestSLOLoadHelper is the load process of BenchmarkHoldSLO; it does nothing in a normal test run.
func TestSLOLoadHelper(t *testing.T) {
	var job sloJob
	if !childJob(t, &job) {
		t.Skip("the benchmark's load process")
	}
	fleets := make([]*fleet, len(job.URLs))
	for i, url := range job.URLs {
		fleets[i] = newFleet(t, url, job.Show, job.Tokens)
		defer fleets[i].close()
		for _, c := range fleets[i].clients {
			// A stuck request ends as an error after 5 s rather than holding the step open; idle connections
			// stay open across the steps (fasthttp closes them after 10 s by default), so no step pays for
			// new ones.
			c.hc.ReadTimeout, c.hc.WriteTimeout = 5*time.Second, 5*time.Second
			c.hc.MaxIdleConnDuration = time.Hour
		}
		fleets[i].openLoop(job.Start, job.Warmup, job)
	}
	searches := make([]rateSearch, len(fleets))
	var steps []sloStep
	for {
		ran := false
		for i, f := range fleets {
			s := &searches[i]
			if s.done() {
				continue
			}
			rate := s.next(job.Start)
			st := f.openLoop(rate, job.Step, job)
			st.Design = i
			st.SecondTry = s.record(rate, st.Pass)
			steps = append(steps, st)
			ran = true
		}
		if !ran {
			break
		}
	}
	childReport(t, steps)
}

// openLoop offers rate holds a second for dur and waits for every answer.
func (f *fleet) openLoop(rate float64, dur time.Duration, job sloJob) sloStep {
	n := max(1, int(rate*dur.Seconds()))
	lat := make([]time.Duration, n) // -1: an error, -2: given up unsent
	late := make([]time.Duration, n)
	period := 1e9 / rate
	var next, inFlight, maxInFlight atomic.Int64
	cpu0 := processCPU()
	start := time.Now().Add(20 * time.Millisecond) // every worker is waiting on its first due time by then
	// Past its capacity a server would take ever longer to work through a step's backlog; a step sends nothing
	// after this, and what it has not sent by then counts as late as it was then (a lower bound): the step
	// has failed either way, and the search goes on in bounded time.
	giveUp := start.Add(dur + time.Second)
	var unsent atomic.Int64
	var wg sync.WaitGroup
	for _, c := range f.clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				due := start.Add(time.Duration(float64(i) * period))
				if time.Now().After(giveUp) {
					late[i], lat[i] = giveUp.Sub(due), -2
					unsent.Add(1)
					continue
				}
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				late[i] = time.Since(due)
				if k := inFlight.Add(1); k > maxInFlight.Load() {
					for m := maxInFlight.Load(); k > m && !maxInFlight.CompareAndSwap(m, k); m = maxInFlight.Load() {
					}
				}
				c.req.SetBodyRaw(c.pick())
				err := c.hc.Do(c.req, c.resp)
				lat[i] = time.Since(due)
				inFlight.Add(-1)
				switch {
				case err != nil:
					if c.err++; c.err == 1 {
						f.t.Logf("request error: %v", err)
					}
					lat[i] = -1
				case c.resp.StatusCode() == 201, c.resp.StatusCode() == 409,
					c.resp.StatusCode() == 422: // 422: this fan is at their cap
				default:
					if c.err++; c.err == 1 {
						f.t.Logf("unexpected status %d: %s", c.resp.StatusCode(), c.resp.Body())
					}
					lat[i] = -1
				}
			}
		})
	}
	wg.Wait()
	st := sloStep{Rate: rate, Sent: n, Elapsed: time.Since(start), MaxInFlight: int(maxInFlight.Load()),
		Workers: len(f.clients)}
	st.GeneratorCPU = (processCPU() - cpu0).Seconds() / st.Elapsed.Seconds()
	ok := make([]time.Duration, 0, n)
	st.Unsent = int(unsent.Load())
	for i, d := range lat {
		switch {
		case d == -2:
			ok = append(ok, late[i])
		case d < 0:
			st.Errors++
		default:
			ok = append(ok, d)
		}
	}
	st.Decisions = len(ok) - st.Unsent
	slices.Sort(ok)
	slices.Sort(late)
	if len(ok) > 0 {
		st.P50, st.P99, st.Max = ok[len(ok)/2], ok[(len(ok)-1)*99/100], ok[len(ok)-1]
	}
	st.LateP99 = late[(n-1)*99/100]
	st.GeneratorLimiting = st.LateP99 > job.SLO/5 && st.MaxInFlight < st.Workers
	st.Pass = len(ok) > 0 && st.P99 <= job.SLO && float64(st.Errors) < job.MaxErrors*float64(n)
	return st
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
