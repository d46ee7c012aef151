package flood_test

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/shared/pow"
)

// A script from one address takes a place in a show's queue the only way there is: it mints a guest identity and
// joins with it, again and again. Bot protection is what stops it taking the line: a place needs a proof of work
// whose difficulty doubles with each recent challenge of the address.

// maxFirstMinute is the most places the script may take in its first minute solving with every core.
const maxFirstMinute = 30

// TestFloodWithoutProof: a script that does not solve a join's challenge gets no place. Every join, with no proof
// or with a made-up one, is a 4xx problem that carries no place and no admission; the operator's figures count no
// place (waiting, active and admitted all 0) and every refusal; and the script's identities are not in the queue
// and cannot pass the gate to the seat map. (It does solve the edge's challenge for an identity past the free
// ones: without an identity it could not even ask.)
func TestFloodWithoutProof(t *testing.T) {
	ctx := t.Context()
	_, admin, tr, _ := start(t)
	show, st := queuedShow(ctx, t, admin, defaults())
	t.Logf("bot protection: %s", describe(st.BotProtection))
	bot, err := client.New(admin.Base(), tr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const attempts = 40
	slugs := map[string]int{}
	for i := range attempts {
		user, _, err := guest(ctx, bot)
		if err != nil {
			t.Fatal(err)
		}
		q, res, err := bot.JoinOnce(ctx, user, show, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			// A made-up proof of the refusal's own challenge: a number out of its range, so never the answer.
			ch, ok := res.Challenge()
			if !ok {
				t.Fatalf("attempt %d: a refusal without a challenge: status %d %s", i, res.Status, res.ProblemSlug())
			}
			q, res, err = bot.JoinOnce(ctx, user, show, "", pow.Encode(ch, ch.MaxNumber+1, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
		}
		if res.Status < 400 || res.Status > 499 || res.Problem == nil {
			t.Fatalf("attempt %d: got status %d (problem %v), want a 4xx problem", i, res.Status, res.Problem != nil)
		}
		if q.Status != "" || q.AdmissionToken != "" || q.Receipt != "" {
			t.Fatalf("attempt %d: a refusal carried a place: %+v", i, q)
		}
		slugs[strconv.Itoa(res.Status)+" "+res.ProblemSlug()]++
		if _, res, err := bot.QueueStatus(ctx, user, show); err != nil || res.Status != http.StatusNotFound {
			t.Fatalf("attempt %d: status of the refused identity: %d %v, want 404 (not in the queue)", i, res.Status, err)
		}
		if _, res, err := bot.Seats(ctx, user, "", show); err != nil || res.Status/100 == 2 {
			t.Fatalf("attempt %d: the seat map without admission: %d %v, want refused", i, res.Status, err)
		}
	}
	q, err := admin.Queue(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	if q.Waiting != 0 || q.Active != 0 || q.AdmittedTotal != 0 {
		t.Errorf("queue after %d joins without a proof: waiting %d, active %d, admitted %d; want 0, 0, 0",
			attempts, q.Waiting, q.Active, q.AdmittedTotal)
	}
	f, err := admin.Bots(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	var refused int64
	for _, n := range f.Refused {
		refused += n
	}
	if f.Solved != 0 || refused != attempts+attempts/2 {
		t.Errorf("bot figures: %d solved, %d refused (%v); want 0 and %d", f.Solved, refused, f.Refused,
			attempts+attempts/2)
	}
	t.Logf("%d attempts without solving: answers %v; the operator's figures: refused %v", attempts, slugs, f.Refused)
}

// place is one place the script took: when (since it started), the hashes it tried for its identity and for its
// place, and its time solving both.
type place struct {
	at                  time.Duration
	guestHashes, hashes int64
	solve               time.Duration
}

// full is the place's hashes at full size: the join's times scale (its show's difficulties were divided by it),
// the identity's as they are (the guest limit is the deployment's, never scaled).
func (p place) full(scale int64) int64 { return p.hashes*scale + p.guestHashes }

// flood plays the script solving every challenge with every core of the machine (pow.Solve with NumCPU
// workers, the fastest a script can do here): mint a guest identity (solving the edge's challenge once the
// address has minted a few), join, solve the refusal's challenge, join with the proof; again, until done says
// stop. It returns the places taken.
func flood(ctx context.Context, tb testing.TB, bot *client.Client, show string, done func([]place) bool) []place {
	tb.Helper()
	var out []place
	start := time.Now()
	for !done(out) {
		h0, t0, _ := bot.Work.Snapshot()
		user, _, err := guest(ctx, bot)
		if err != nil {
			tb.Fatal(err)
		}
		h1, _, _ := bot.Work.Snapshot()
		if _, _, err := join(ctx, bot, user, show); err != nil {
			tb.Fatalf("place %d: %v", len(out)+1, err)
		}
		h2, t2, _ := bot.Work.Snapshot()
		out = append(out, place{at: time.Since(start), guestHashes: h1 - h0, hashes: h2 - h1, solve: t2 - t0})
	}
	return out
}

// TestFloodSolving: a script solving with every core takes at most maxFirstMinute places in its first minute,
// and fewer in each of the next two. Scaled, to stay short under the race detector: the show's default schedule
// with both difficulties divided by scale (base 100, max 100,000). The script's clock counts hashes, not
// seconds: a minute is the hashes NumCPU cores do in a minute at coreRate, and each place costs its join's
// hashes times scale plus its identity's (the guest limit is not scaled). Time spent on requests is not counted
// against the script: at the defaults it is milliseconds a place against seconds of hashing. The prefix's count
// of challenges decays over the real 600 s half-life, not a scaled one: within the first minute that changes
// nothing, as the difficulty reaches its cap after 13 challenges.
func TestFloodSolving(t *testing.T) {
	ctx := t.Context()
	_, admin, tr, prefix := start(t)
	show, st := queuedShow(ctx, t, admin, scaled())
	workers := runtime.NumCPU()
	bot, err := client.New(admin.Base(), tr, client.Options{SolveWorkers: workers})
	if err != nil {
		t.Fatal(err)
	}
	minute := int64(60 * float64(workers) * coreRate)
	const minutes = 3
	got := flood(ctx, t, bot, show, func(ps []place) bool {
		var h int64
		for _, p := range ps {
			h += p.full(scale)
		}
		return h >= minutes*minute || len(ps) >= st.BotProtection.PrefixPlaces
	})
	var perMinute [minutes]int
	var h int64
	for _, p := range got {
		h += p.full(scale)
		if m := int((h - 1) / minute); m < minutes {
			perMinute[m]++
		}
	}
	t.Logf("bot protection: %s (the defaults' difficulties / %d)", describe(st.BotProtection), scale)
	t.Logf("a minute of %d cores at %.1f Mhash/s each: %.0f M full-size hashes; places in minutes 1-3: %v", workers,
		coreRate/1e6, float64(minute)/1e6, perMinute)
	if perMinute[0] > maxFirstMinute {
		t.Errorf("the script took %d places in its first minute, want at most %d", perMinute[0], maxFirstMinute)
	}
	for m := 1; m < minutes; m++ {
		if perMinute[m] >= perMinute[0] {
			t.Errorf("the script took %d places in minute %d and %d in the first, want fewer later", perMinute[m],
				m+1, perMinute[0])
		}
	}
	q, err := admin.Queue(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	f, err := admin.Bots(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	if places(q) != len(got) || f.Solved != int64(len(got)) {
		t.Errorf("the queue holds %d places and counts %d solved, want the script's %d", places(q), f.Solved, len(got))
	}
	countedAs(t, f, prefix)
}

// BenchmarkFlood plays the script for real: the defaults (admission.DefaultBotProtection), every core of this
// machine solving (NumCPU workers), FLOOD_MINUTES minutes of wall-clock time (default 3). It reports the places
// taken in each minute (place/min-1, -2, ...), the CPU seconds each place cost the process (cpu-s/place: the
// script's hashing, the platform serving it in the same process, and anything else the process did), the
// cores' seconds spent solving each (solve-core-s/place: solving time × workers) and the script's hash rate.
//
//	go test -run '^$' -bench Flood -benchtime 1x -timeout 30m ./loadtest/flood/
func BenchmarkFlood(b *testing.B) {
	minutes := 3
	if v, err := strconv.Atoi(os.Getenv("FLOOD_MINUTES")); err == nil && v > 0 {
		minutes = v
	}
	ctx := context.Background()
	_, admin, tr, _ := start(b)
	workers := runtime.NumCPU()
	for range b.N {
		show, st := queuedShow(ctx, b, admin, defaults())
		bot, err := client.New(admin.Base(), tr, client.Options{SolveWorkers: workers})
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime()
		got := flood(ctx, b, bot, show, func(ps []place) bool {
			return len(ps) > 0 && ps[len(ps)-1].at >= time.Duration(minutes)*time.Minute
		})
		cpu := cpuTime() - cpu0
		perMinute := make([]int, minutes)
		var hashes int64
		var solve time.Duration
		for _, p := range got {
			if m := int(p.at / time.Minute); m < minutes {
				perMinute[m]++
			}
			hashes += p.full(1)
			solve += p.solve
		}
		b.Logf("bot protection: %s; %d workers; places in minutes 1-%d: %v", describe(st.BotProtection), workers,
			minutes, perMinute)
		for m, n := range perMinute {
			b.ReportMetric(float64(n), "place/min-"+strconv.Itoa(m+1))
		}
		// Every place of the run, the one finished past the last minute included, shares the CPU of the run.
		b.ReportMetric(cpu.Seconds()/float64(len(got)), "cpu-s/place")
		b.ReportMetric(solve.Seconds()*float64(workers)/float64(len(got)), "solve-core-s/place")
		b.ReportMetric(float64(hashes)/solve.Seconds()/1e6, "Mhash/s")
	}
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
