// Package autotune proves, through the real edge and booking, that autotune follows booking when booking slows
// down: a steady crowd of fans buys a queued show while booking's Redis, and only booking's, runs behind a proxy
// that delays every round trip. With booking fast the admission rate stays at its maximum; once the delay puts the
// hold p99 over the target, autotune lowers the rate until the p99 is back under the target or the rate is at its
// floor, and never raises it while the holds it reads are slow; once the delay is gone it raises the rate again.
// The audit log gives the slow holds as the reason, no fan meets a 500, and the store checker finds nothing. The
// hold latency it steers by is also the machine's: when the machine alone keeps booking's holds over the line
// (no delay, yet no calm), the test says so and skips what it cannot judge.
// AUTOTUNE_CURVE=path also writes the sampled curves as CSV.
package autotune

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/pulse"
	pulseredis "github.com/flashseat/flashseat/shared/pulse/redis"
)

// The run: autotune every 500 ms between 2 and 30 fans a second against a 1 s hold p99, starting at 30; fans
// arriving at 5 a second throughout; booking's Redis round trips 400 ms slower in the middle. The target leaves
// room for what a loaded 2-core machine running the race detector does to holds on its own (a p99 of tens of ms
// when it is quiet, over half a second when other tests crowd it); the delay is past it even for a hold that waits
// on nobody (three to four round trips).
const (
	minRate, maxRate = 2.0, 30.0
	targetP99        = 1000 // ms
	calmP99          = 0.7 * targetP99
	every            = 500 * time.Millisecond
	storeDelay       = 400 * time.Millisecond
	arrivals         = 5 // fans a second
	sampleEvery      = 250 * time.Millisecond
	// The phases. Warm-up, autotune off at the maximum rate, lasts until booking's hold p99 is calm (the first
	// holds of a freshly started platform are slow, and booking's window remembers them for 5 s). Then autotune is
	// switched on: fast for fastFor and until the rate is at the maximum; slow for slowFor and until autotune has
	// answered for two seconds (at most slowMax): the first slowed holds take seconds to end and be reported, and
	// autotune halves the rate at most each round; fast again until the crowd has all arrived, at least againFor:
	// long enough for the slow holds to leave booking's 5 s window and autotune to climb back (by a quarter, at
	// least one fan a second, each round). A warm-up past warmUpMax, or a fast phase past fastMax, is the
	// machine's load: the test skips.
	warmUpMax, fastFor, fastMax = 15 * time.Second, 5 * time.Second, 15 * time.Second
	slowFor, slowMax, againFor  = 8 * time.Second, 15 * time.Second, 12 * time.Second
)

// point is one sample of the curves.
type point struct {
	at      time.Duration // since the crowd started
	phase   string
	delay   time.Duration
	rate    float64 // the show's admitPerSecond, as the operator reads it
	p99     float64 // booking's hold p99 (ms) in its latest pulse report, what autotune reads
	holds   int64   // holds in that report's window
	waiting int
	reason  string
}

// The phases' names.
const (
	warmUp    = "warm-up"
	fast      = "fast"
	slow      = "slow"
	fastAgain = "fast again"
)

// TestAutotuneFollowsSlowBooking: see the package comment.
func TestAutotuneFollowsSlowBooking(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 s sale")
	}
	ctx := context.Background()
	redisURL := os.Getenv("REDIS_URL")
	if redisURL == "" {
		redisURL = redistest.DefaultURL
	}
	ru, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	// Booking alone reaches Redis through the proxy: the edge's waiting room, gate and autotune stay fast, so only
	// booking is slow. Started before the platform, so that it closes after the platform has stopped.
	proxy := storetest.StartDelayProxy(t, ru.Host)
	proxied := *ru
	proxied.Host = proxy.Addr
	// A pulse namespace of the test's own: autotune merges every booking replica reporting in it, and other tests'
	// platforms share this Redis.
	ns := "pulse-autotune-" + uuid.NewString()
	p := platformtest.Start(t, platformtest.Options{
		HoldTTL: time.Minute, MaxConns: 8, RedisURL: redisURL,
		Booking: map[string]string{"REDIS_URL": proxied.String(), "PULSE_NAMESPACE": ns},
		Edge:    map[string]string{"PULSE_NAMESPACE": ns, "AUTOTUNE_EVERY": every.String(), "QUEUE_TICK": "100ms"},
		// The fans' requests go to the edge directly: checking every answer against openapi.yaml took a fifth of
		// the process's CPU, and the hold latency this test steers by is the machine's to give.
		NoContractCheck: true,
	})
	rdb, err := driver.OpenRedis(redisURL, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.Del(context.Background(), ns+":replicas") // the reports themselves expire within seconds
		rdb.Close()
	})
	tr := client.NewTransport(256)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(p.BaseURL, tr, client.Options{AdminToken: p.AdminToken, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	sc := loadtest.Presets["smoke"]
	sc.Name = "autotune"
	// Fans arrive until the end of the last phase when the warm-up, the wait for the maximum and the slow phase's
	// wait for autotune take 12 s together (4 to 8 on a quiet machine): the slow phase always has fans to hold
	// seats, and so does most of the last.
	sc.Ramp = 12*time.Second + fastFor + slowFor + againFor
	sc.Fans = int(sc.Ramp.Seconds()) * arrivals
	// Enough seats that the seats-left rule (at most a tenth of them a second) stays above the maximum rate
	// however many fans buy: one seat each.
	sc.Seats, sc.GroupMin, sc.GroupMax, sc.HotShare = sc.Fans+int(10*maxRate)+200, 1, 1, 0
	sc.AdmitPerSecond, sc.MaxActive, sc.TokenTTL = maxRate, sc.Fans, 2*time.Minute
	// Proof of work stays on at the smoke preset's base difficulty (each fan hashes about half of it to join).
	sc.BotDifficulty = 10_000
	sc.SaleDelay, sc.Patience, sc.Duration = 0, 90*time.Second, 2*time.Minute
	// Every fan pays (some after a decline, a 402): a gateway error would be a 5xx in booking's report, and
	// autotune would halve for that rather than for the slow holds this test is about.
	sc.Pay, sc.ProbeShare = loadtest.PayMix{OK: 90, DeclinedThenOK: 10}, 0
	show, _, err := crowd.Setup(ctx, c, sc, fmt.Sprint("autotune-", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("show %s: %d seats, %d fans over %s, proof of work on at base difficulty %d; autotune every %s in "+
		"[%g, %g] fans/s against a %d ms hold p99; booking's Redis round trips %s slower for at least %s",
		show, sc.Seats, sc.Fans, sc.Ramp, sc.BotDifficulty, every, minRate, maxRate, targetP99, storeDelay, slowFor)

	started := time.Now()
	playCtx, stopPlaying := context.WithCancel(ctx)
	defer stopPlaying()
	played := make(chan *loadtest.Run, 1)
	go func() {
		run, err := crowd.Play(playCtx, crowd.Config{Client: c, Scenario: sc, ShowID: show, Seed: 41})
		if err != nil && playCtx.Err() == nil {
			t.Errorf("crowd: %v", err)
		}
		played <- run
	}()

	var curve []point
	var fastFrom, slowFrom, againFrom time.Time
	phase, overloaded := warmUp, ""
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for now := range tick.C {
		switch {
		case phase == warmUp && now.Sub(started) >= warmUpMax:
			overloaded = fmt.Sprintf("with booking fast and autotune off, booking's hold p99 stayed over %.0f ms for "+
				"%s", calmP99, warmUpMax)
		case phase == warmUp && calm(curve):
			on := &admission.Autotune{Enabled: true, MinAdmitPerSecond: minRate, MaxAdmitPerSecond: maxRate,
				TargetHoldP99Ms: targetP99}
			q, err := c.PutQueue(ctx, show, client.QueueSettings{Enabled: true, AdmitPerSecond: maxRate,
				MaxActive: sc.MaxActive, TokenTTLSeconds: int(sc.TokenTTL / time.Second), Autotune: on})
			if err != nil {
				t.Fatal(err)
			}
			if q.Autotune == nil || *q.Autotune != *on || q.BotProtection == nil || !q.BotProtection.On() ||
				q.BotProtection.BaseDifficulty != sc.BotDifficulty {
				t.Fatalf("the show's queue answered autotune %+v, bot protection %+v", q.Autotune, q.BotProtection)
			}
			phase, fastFrom = fast, time.Now()
		case phase == fast && now.Sub(fastFrom) >= fastMax && !atMax(curve):
			overloaded = fmt.Sprintf("with booking fast and autotune on, the rate was not back at the maximum %s "+
				"after a hold p99 over the target", fastMax)
		case phase == fast && now.Sub(fastFrom) >= fastFor && atMax(curve):
			proxy.SetDelay(storeDelay)
			phase, slowFrom = slow, time.Now()
		case phase == slow && now.Sub(slowFrom) >= slowFor && (settled(curve) || now.Sub(slowFrom) >= slowMax):
			proxy.SetDelay(0)
			phase, againFrom = fastAgain, time.Now()
		}
		if overloaded != "" {
			break
		}
		if phase == fastAgain && now.Sub(againFrom) >= againFor && now.Sub(started) >= sc.Ramp {
			break // the crowd has all arrived: the fans still in line are served whatever the rate
		}
		curve = append(curve, sample(ctx, t, c, rdb, ns, show, now.Sub(started), phase, proxy.Delay()))
	}
	if overloaded != "" {
		// The machine, not the delay, makes holds slow: autotune's answer to the delay cannot be told apart.
		stopPlaying()
		<-played
		logTable(t, curve, nil)
		t.Skipf("the machine is too loaded for this test: %s", overloaded)
	}
	run := <-played
	if run == nil {
		t.Fatal("the crowd did not play")
	}
	writeCurve(t, curve)
	logTable(t, curve, crowdHoldP99(run))
	t.Logf("autotune on %s after the crowd started; the delay from %s to %s",
		fastFrom.Sub(started).Round(time.Millisecond), slowFrom.Sub(started).Round(time.Millisecond),
		againFrom.Sub(started).Round(time.Millisecond))

	unjudged := judgeCurves(t, curve)
	judgeAudit(ctx, t, c, show, slowFrom, againFrom, unjudged == "")
	judgeCrowd(t, run)
	judgeStores(ctx, t, p, show)
	if unjudged != "" {
		t.Skipf("the machine is too loaded for this test to judge the climb back: %s", unjudged)
	}
}

// atMax reports whether the last sample had the rate at the maximum: the delay begins from there, so that the
// fall is autotune's answer to it, not to the machine's own hiccups.
func atMax(curve []point) bool {
	return len(curve) > 0 && curve[len(curve)-1].rate == maxRate
}

// settled reports whether autotune has answered the slow holds for the last two seconds: the rate at its floor, or
// the p99 back under the target.
func settled(curve []point) bool {
	n := int(2 * time.Second / sampleEvery)
	if len(curve) < n {
		return false
	}
	return !slices.ContainsFunc(curve[len(curve)-n:], func(pt point) bool {
		return pt.phase != slow || (pt.rate > minRate && !(pt.p99 <= targetP99))
	})
}

// calm reports whether booking's last two reports had holds, at a p99 autotune would raise the rate at.
func calm(curve []point) bool {
	if len(curve) < 2 {
		return false
	}
	for _, pt := range curve[len(curve)-2:] {
		if !(pt.holds > 0 && pt.p99 < calmP99) {
			return false
		}
	}
	return true
}

// sample reads the show's rate as the operator sees it and booking's latest pulse, as autotune reads it. A failed
// read leaves its figure NaN: the sampler observes, it does not end the run.
func sample(ctx context.Context, t *testing.T, c *client.Client, rdb goredis.UniversalClient, ns, show string,
	at time.Duration, phase string, delay time.Duration) point {
	pt := point{at: at, phase: phase, delay: delay, rate: math.NaN(), p99: math.NaN()}
	if q, err := c.Queue(ctx, show); err == nil {
		pt.rate, pt.waiting, pt.reason = q.AdmitPerSecond, q.Waiting, q.AutotuneReason
	} else {
		t.Logf("%s: the queue's settings: %v", at, err)
	}
	if rs, err := pulseredis.Read(ctx, rdb, ns, time.Now()); err == nil {
		r := pulse.Merge(rs)
		pt.p99, pt.holds = r.HoldP99Ms, r.Holds
	} else {
		t.Logf("%s: booking's pulse: %v", at, err)
	}
	return pt
}

// judgeCurves checks the direction of the curves: over the target, then lowered (to the floor or until the p99 is
// back under the target) and never raised on slow holds while slow; raised again once fast, as soon as booking's
// holds are calm. It returns why the climb back could not be judged ("": it was): holds never calm once fast again,
// which is the machine's doing.
func judgeCurves(t *testing.T, curve []point) (unjudged string) {
	t.Helper()
	by := map[string][]point{}
	for _, pt := range curve {
		if !math.IsNaN(pt.rate) && !math.IsNaN(pt.p99) {
			by[pt.phase] = append(by[pt.phase], pt)
		}
	}
	fast, slow, again := by[fast], by[slow], by[fastAgain]
	if len(fast) == 0 || len(slow) == 0 || len(again) == 0 {
		t.Fatalf("samples: %d fast, %d slow, %d fast again", len(fast), len(slow), len(again))
	}
	before := fast[len(fast)-1].rate
	worst := slices.MaxFunc(slow, func(a, b point) int { return cmp.Compare(a.p99, b.p99) })
	if worst.p99 <= targetP99 {
		t.Fatalf("with booking's Redis %s slower the hold p99 reached only %.0f ms, not over the %d ms target: "+
			"the delay did not slow the holds", storeDelay, worst.p99, targetP99)
	}
	low := slices.MinFunc(slow, func(a, b point) int { return cmp.Compare(a.rate, b.rate) })
	recovered := slices.ContainsFunc(slow, func(pt point) bool { return pt.rate < before && pt.p99 <= targetP99 })
	switch {
	case low.rate >= before:
		t.Errorf("with the hold p99 at %.0f ms over the %d ms target the rate never fell below %g fans/s",
			worst.p99, targetP99, before)
	case low.rate > minRate && !recovered:
		t.Errorf("while slow the rate fell only to %g fans/s, not to the minimum %g, and the hold p99 never came "+
			"back under the target", low.rate, minRate)
	}
	// Raised between two samples that both read slow holds: autotune raised on a p99 over the target (booking
	// reports once a second, so the report autotune read lies between the two).
	for i := 1; i < len(slow); i++ {
		prev, pt := slow[i-1], slow[i]
		if pt.rate > prev.rate && prev.p99 > targetP99 && pt.p99 > targetP99 {
			t.Errorf("at %s, with the hold p99 at %.0f ms and %.0f ms, autotune raised the rate from %g to %g fans/s (%s)",
				pt.at, prev.p99, pt.p99, prev.rate, pt.rate, pt.reason)
		}
	}
	high := slices.MaxFunc(again, func(a, b point) int { return cmp.Compare(a.rate, b.rate) })
	t.Logf("rate: %g fans/s when the delay began, %g at the lowest while slow (hold p99 up to %.0f ms), %g at "+
		"the highest once fast again", before, low.rate, worst.p99, high.rate)
	if high.rate >= 4*minRate && high.rate > low.rate {
		return ""
	}
	// Calm for two autotune rounds and a report, and the rate still where it was: autotune did not raise it.
	for i := range again {
		j := i + int((2*every+time.Second)/sampleEvery)
		if j < len(again) && !slices.ContainsFunc(again[i:j+1], func(pt point) bool { return !(pt.holds > 0 && pt.p99 < calmP99) }) {
			t.Errorf("with booking fast again and its hold p99 under %.0f ms from %s to %s, the rate rose only to %g "+
				"fans/s from %g", calmP99, again[i].at, again[j].at, high.rate, low.rate)
			return ""
		}
	}
	return fmt.Sprintf("booking's hold p99 never stayed under %.0f ms once the delay was gone", calmP99)
}

// judgeAudit checks that autotune's changes while booking was slow are on the audit log, made by autotune, for
// the slow holds, and when the rate climbed back, that its raises are too.
func judgeAudit(ctx context.Context, t *testing.T, c *client.Client, show string, slowFrom, againFrom time.Time,
	climbed bool) {
	t.Helper()
	entries, err := c.Audit(ctx, show, slowFrom.Add(-time.Second), "queue.autotune")
	if err != nil {
		t.Fatal(err)
	}
	var slowHolds, raised int
	for _, e := range entries {
		var now struct {
			AdmitPerSecond float64 `json:"admitPerSecond"`
			AutotuneReason string  `json:"autotuneReason"`
		}
		if err := json.Unmarshal(e.New, &now); err != nil || e.Actor != "autotune" {
			t.Errorf("audit entry %d by %q: %s (%v)", e.ID, e.Actor, e.New, err)
			continue
		}
		switch {
		case e.At.After(slowFrom) && e.At.Before(againFrom) && strings.Contains(now.AutotuneReason, "hold p99") &&
			strings.Contains(now.AutotuneReason, "lowering"):
			slowHolds++
		case e.At.After(againFrom) && strings.Contains(now.AutotuneReason, "raising"):
			raised++
		}
	}
	if slowHolds == 0 {
		t.Errorf("no autotune change on the audit log while booking was slow gives the hold p99 as its reason: %d entries", len(entries))
	}
	if raised == 0 && climbed {
		t.Errorf("no autotune change on the audit log raised the rate once booking was fast again")
	}
	t.Logf("audit: %d autotune changes since the delay began: %d lowering for slow holds while slow, %d raising after",
		len(entries), slowHolds, raised)
}

// judgeCrowd checks what the fans met: no 500, no fan ended in error, cut off or unpaid, and the crowd's own
// checks (queue order, tokens). A 503 or 504 is the platform's answer to a store or an upstream too slow for a
// request's deadline, which a loaded machine meets with the delay on; the fans wait and ask again, so it is only
// counted.
func judgeCrowd(t *testing.T, run *loadtest.Run) {
	t.Helper()
	sum := loadtest.Summarize(run, time.Second)
	t.Logf("fans: %v; admitted %d, confirmed %d", sum.FanOutcomes, sum.Admitted, sum.Confirmed)
	for step, samples := range run.Steps {
		fives := map[string]int{}
		for _, s := range samples {
			if strings.HasPrefix(s.Outcome, "5") {
				fives[s.Outcome]++
			}
		}
		switch {
		case fives["500"] > 0:
			t.Errorf("%s: fans were answered %v", step, fives)
		case len(fives) > 0:
			t.Logf("%s: fans were answered %v (and asked again)", step, fives)
		}
	}
	for _, o := range []string{loadtest.OutcomeError, loadtest.OutcomeCutOff, loadtest.OutcomePending,
		loadtest.OutcomeRefused} {
		if n := sum.FanOutcomes[o]; n > 0 {
			t.Errorf("%d fans ended %s: %v", n, o, sum.Reasons)
		}
	}
	for _, v := range loadtest.CrowdViolations(sum) {
		t.Errorf("crowd: %s: %s", v.Invariant, v.Detail)
	}
}

// judgeStores runs the store checker over the show.
func judgeStores(ctx context.Context, t *testing.T, p *platformtest.Platform, show string) {
	t.Helper()
	res, err := check.Run(ctx, check.Config{DatabaseURL: p.DatabaseURL, RedisURL: p.RedisURL, ShowIDs: []string{show},
		ReconcileInterval: p.Options.ReconcileInterval})
	if err != nil {
		t.Fatalf("store checker: %v", err)
	}
	for _, v := range res.Violations {
		t.Errorf("store checker: %s: %s", v.Invariant, v.Detail)
	}
}

// crowdHoldP99 is the p99 of the holds the fans saw end in each second of the run (ms), through the edge.
func crowdHoldP99(run *loadtest.Run) map[int]float64 {
	by := map[int][]time.Duration{}
	for _, s := range run.Steps[loadtest.StepHold] {
		sec := int(s.At / time.Second)
		by[sec] = append(by[sec], s.Latency)
	}
	out := map[int]float64{}
	for sec, ds := range by {
		slices.Sort(ds)
		out[sec] = float64(ds[(len(ds)*99-1)/100]) / float64(time.Millisecond)
	}
	return out
}

// logTable logs the curves, one row a second (the last sample of each second), as a Markdown table.
func logTable(t *testing.T, curve []point, crowdP99 map[int]float64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("\n| t (s) | phase | Redis delay | rate (fans/s) | booking hold p99 (ms) | fans' hold p99 that second (ms) | waiting |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|\n")
	for i, pt := range curve {
		sec := int(pt.at / time.Second)
		if i+1 < len(curve) && int(curve[i+1].at/time.Second) == sec {
			continue
		}
		fans := "–"
		if v, ok := crowdP99[sec]; ok {
			fans = fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %g | %.0f | %s | %d |\n", sec+1, pt.phase, pt.delay, pt.rate, pt.p99, fans, pt.waiting)
	}
	t.Log(b.String())
}

// writeCurve writes every sample as CSV to AUTOTUNE_CURVE's path, when set.
func writeCurve(t *testing.T, curve []point) {
	t.Helper()
	path := os.Getenv("AUTOTUNE_CURVE")
	if path == "" {
		return
	}
	var b strings.Builder
	b.WriteString("seconds,phase,delay_ms,admit_per_second,hold_p99_ms,holds_in_window,waiting,reason\n")
	for _, pt := range curve {
		fmt.Fprintf(&b, "%.2f,%s,%d,%g,%.1f,%d,%d,%q\n", pt.at.Seconds(), pt.phase, pt.delay.Milliseconds(), pt.rate,
			pt.p99, pt.holds, pt.waiting, pt.reason)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("AUTOTUNE_CURVE: %v", err)
	}
}
