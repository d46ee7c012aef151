package redis_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/rankcorr"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// configureLines switches the show's queue on over k partitions, as an operator would.
func configureLines(t testing.TB, rdb goredis.UniversalClient, show string, k int, rate float64, maxActive int, paused ...bool) {
	t.Helper()
	kp := admissiontest.Keeper(t, database(t), rdb)
	if _, _, err := kp.Update(context.Background(), show, func(admission.Settings) (admission.Settings, error) {
		st := admission.DefaultSettings()
		st.Enabled, st.Mode, st.AdmitPerSecond, st.MaxActive, st.TokenTTLSeconds = true, admission.ModeAlways, rate, maxActive, 600
		st.Partitions, st.Paused = k, len(paused) > 0 && paused[0]
		return st, nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, line := range rediskey.Lines(show, k)[1:] {
			rdb.Del(context.Background(), wrredis.Keys(line)...)
		}
	})
}

// joined is a fan's join as the client saw it.
type joined struct {
	user       string
	start, end time.Time
}

// joinTimed joins fans from workers goroutines, spread over spread, and returns each join's times.
func joinTimed(t *testing.T, svc *waitroom.Service, show string, fans []string, workers int, spread time.Duration) []joined {
	t.Helper()
	out := make([]joined, len(fans))
	var wg sync.WaitGroup
	gap := spread / time.Duration(max(len(fans)/workers, 1))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(fans); i += workers {
				start := time.Now()
				if _, err := svc.Join(context.Background(), show, fans[i]); err != nil {
					t.Errorf("join %s: %v", fans[i], err)
					return
				}
				out[i] = joined{fans[i], start, time.Now()}
				time.Sleep(gap)
			}
		}()
	}
	wg.Wait()
	return out
}

// admitAll ticks until every fan is admitted, and returns the tick each was admitted in.
func admitAll(t *testing.T, svc *waitroom.Service, show string, n int, pause time.Duration) map[string]int {
	t.Helper()
	at := map[string]int{}
	for tick, deadline := 0, time.Now().Add(2*time.Minute); len(at) < n; tick++ {
		if time.Now().After(deadline) {
			t.Fatalf("admitted %d of %d", len(at), n)
		}
		snap, err := svc.Tick(context.Background(), show, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range snap.Grants {
			if _, dup := at[g.UserID]; dup {
				t.Fatalf("%s admitted twice", g.UserID)
			}
			at[g.UserID] = tick
		}
		time.Sleep(pause)
	}
	return at
}

// orderBound is the stated bound of first come, first served across partitions: a fan may be admitted ahead of a
// fan who joined earlier only if they joined within MarkEvery of them (plus the clocks' skew, none here, and a
// margin for the client's own timing).
const orderBound = waitroom.MarkEvery*time.Millisecond + 20*time.Millisecond

// After opening, a partitioned queue admits in join order across its partitions: rank correlation at least 0.98
// on 10,000 fans, and no fan admitted in an earlier tick than a fan whose join ended more than the bound before
// theirs began.
func TestLinesFollowJoinOrder(t *testing.T) {
	t.Parallel()
	rdb := client(t)
	show := newShow(t, rdb)
	// At most 100 fans a line per round, however slow the machine: the order is read tick by tick. Nobody
	// heartbeats in this test, so the grace outlasts it.
	svc := newService(t, rdb, issuer(t), waitroom.Options{MaxScan: 100, Grace: 10 * time.Minute})
	configureLines(t, rdb, show, 3, 5000, 100000)
	openSale(t, rdb, show)
	fans := users("f", 10000)
	js := joinTimed(t, svc, show, fans, 16, 4*time.Second)
	perLine := make([]int, 3)
	for _, u := range fans {
		perLine[rediskey.PartitionOf(u, 3)]++
	}
	at := admitAll(t, svc, show, len(fans), 2*time.Millisecond)

	byEnd := append([]joined(nil), js...)
	sort.Slice(byEnd, func(a, b int) bool { return byEnd[a].end.Before(byEnd[b].end) })
	x, y := make([]float64, len(byEnd)), make([]float64, len(byEnd))
	for i, j := range byEnd {
		x[i], y[i] = float64(i), float64(at[j.user])
	}
	rho := rankcorr.Spearman(x, y)
	t.Logf("10,000 fans over 3 partitions %v: Spearman %.4f over %d ticks", perLine, rho, at[byEnd[len(byEnd)-1].user])
	if rho < 0.98 {
		t.Errorf("Spearman %.4f < 0.98", rho)
	}
	// Every inversion within the bound: walking fans by join start, the latest join end seen so far more than
	// the bound before a fan's start must belong to someone admitted no later than that fan.
	byStart := append([]joined(nil), js...)
	sort.Slice(byStart, func(a, b int) bool { return byStart[a].start.Before(byStart[b].start) })
	inversions, worst := 0, time.Duration(0)
	for i, b := range byStart {
		for _, a := range byStart[max(0, i-400):i] {
			if gap := b.start.Sub(a.end); gap > 0 && at[b.user] < at[a.user] {
				inversions++
				worst = max(worst, gap)
			}
		}
	}
	t.Logf("inversions between joins that did not overlap: %d, the widest %v (bound %v)", inversions, worst, orderBound)
	if worst > orderBound {
		t.Errorf("a fan was admitted ahead of one who had joined %v before them (bound %v)", worst, orderBound)
	}
}

// The pre-sale draw is one lottery over all partitions: each partition's fans are spread evenly over the drawn
// order (a chi-square test of partition against tenth of the order), and admission follows the drawn order to
// within a group of places (waitroom.DrawGroup).
func TestLinesDrawIsUniform(t *testing.T) {
	t.Parallel()
	rdb := client(t)
	show := newShow(t, rdb)
	svc := newService(t, rdb, issuer(t), waitroom.Options{MaxScan: 100, Grace: 10 * time.Minute})
	configureLines(t, rdb, show, 3, 5000, 100000)
	showInfo(t, rdb, show, map[string]any{rediskey.InfoAvailable: 10, rediskey.InfoHeld: 0,
		rediskey.InfoSaleStartsAt: ms(time.Now().Add(time.Hour))})
	fans := users("d", 3000)
	joinTimed(t, svc, show, fans, 16, 0)
	showInfo(t, rdb, show, map[string]any{rediskey.InfoSaleStartsAt: ms(time.Now())}) // the sale opens
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		snap, err := svc.Tick(context.Background(), show, false)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Phase == waitroom.PhaseOpen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the draw was not written: %s", snap.Phase)
		}
	}
	f, err := svc.Fairness(context.Background(), show)
	if err != nil {
		t.Fatal(err)
	}
	if f.Participants != int64(len(fans)) {
		t.Fatalf("the draw says %d participants, want %d", f.Participants, len(fans))
	}
	pool := append([]string(nil), fans...)
	drawn, err := waitroom.Order(f.Seed, pool)
	if err != nil {
		t.Fatal(err)
	}
	at := admitAll(t, svc, show, len(fans), 2*time.Millisecond)
	x, y := make([]float64, len(drawn)), make([]float64, len(drawn))
	table := make([][]float64, 3)
	for p := range table {
		table[p] = make([]float64, 10)
	}
	for i, u := range drawn {
		x[i], y[i] = float64(i), float64(at[u])
		table[rediskey.PartitionOf(u, 3)][i*10/len(drawn)]++
	}
	t.Logf("Spearman of the drawn order against the admission tick: %.4f", rankcorr.Spearman(x, y))
	// Admission follows the published draw exactly, within a group of it: no fan admitted in a later tick than one drawn a group or more after.
	latest := map[int]int{} // tick -> the latest place admitted in it
	for i, u := range drawn {
		latest[at[u]] = max(latest[at[u]], i)
	}
	var before int
	for tick := 0; tick <= len(latest)+len(drawn); tick++ {
		if _, ok := latest[tick]; !ok {
			continue
		}
		for i, u := range drawn {
			if at[u] == tick && i < before-waitroom.DrawGroup {
				t.Fatalf("place %d admitted at tick %d, after place %d", i, tick, before)
			}
		}
		before = max(before, latest[tick])
	}
	chi := 0.0
	for p := range table {
		var row float64
		for _, c := range table[p] {
			row += c
		}
		for d := range table[p] {
			e := row / 10
			chi += (table[p][d] - e) * (table[p][d] - e) / e
		}
	}
	// 99.9th percentile of chi-square with 3 x 9 = 27 degrees of freedom (each partition's ten tenths).
	t.Logf("chi-square of partition against tenth of the draw: %.1f (limit 55.5)", chi)
	if chi > 55.5 {
		t.Errorf("the draw's places are not uniform across partitions: chi-square %.1f", chi)
	}
}

// A fan of a partitioned queue is told the fans ahead of them across all partitions: within max(3, 1%) of the
// number admitted before them.
func TestLinesPositionsAreHonest(t *testing.T) {
	t.Parallel()
	rdb := client(t)
	show := newShow(t, rdb)
	// Nobody heartbeats here: the grace outlasts the test, or on a loaded machine the fans joined first count
	// as gone (30 s) before their turn, and are never admitted.
	svc := newService(t, rdb, issuer(t), waitroom.Options{Grace: 10 * time.Minute})
	configureLines(t, rdb, show, 3, 20000, 100000, true) // paused: ticks only read the lines
	openSale(t, rdb, show)
	fans := users("h", 1500)
	joinTimed(t, svc, show, fans, 8, 1500*time.Millisecond)
	time.Sleep(2 * waitroom.MarkEvery * time.Millisecond) // the last marks are in
	told := map[string]int64{}
	for i := 0; i < len(fans); i += 7 {
		if _, err := svc.Tick(context.Background(), show, false); err != nil { // this replica's view of the lines
			t.Fatal(err)
		}
		p, err := svc.Status(context.Background(), show, fans[i])
		if err != nil {
			t.Fatal(err)
		}
		told[fans[i]] = p.Position
	}
	// Admitted one tick at a time, a fan's true count ahead is those admitted in earlier ticks (plus, at most,
	// their own tick's others).
	configureLines(t, rdb, show, 3, 300, 100000)
	time.Sleep(1100 * time.Millisecond) // every replica's copy of the settings
	at := admitAll(t, svc, show, len(fans), 3*time.Millisecond)
	checkPositions(t, told, at, func(string) string { return "" })
}

// checkPositions fails unless every position told (user -> position) is, within max(3, 1%), how many fans of the
// same group (one queue, or one lane) were admitted before that user, admitted one tick at a time (at: user ->
// tick): the fans of earlier ticks, plus at most their own tick's others.
func checkPositions(t *testing.T, told map[string]int64, at map[string]int, group func(string) string) {
	t.Helper()
	perTick := map[string]map[int]int64{}
	for u, tick := range at {
		if perTick[group(u)] == nil {
			perTick[group(u)] = map[int]int64{}
		}
		perTick[group(u)][tick]++
	}
	var bad []string
	for u, pos := range told {
		var before int64
		for tick, n := range perTick[group(u)] {
			if tick < at[u] {
				before += n
			}
		}
		lo, hi := before, before+perTick[group(u)][at[u]]-1
		tol := max(3, int64(math.Ceil(float64(pos)/100)))
		if ahead := pos - 1; ahead < lo-tol || ahead > hi+tol {
			bad = append(bad, fmt.Sprintf("%s told %d ahead, true %d..%d", u, ahead, lo, hi))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d positions off by more than max(3, 1%%): %v", len(bad), len(told), bad[:min(len(bad), 10)])
	}
}

// A new show's first tick restores every line, however many: each line asks for its state once, and the tick's
// retries (five) bound repeats of one request, not the lines.
func TestLinesFirstTickRestoresEveryLine(t *testing.T) {
	t.Parallel()
	rdb := client(t)
	show := newShow(t, rdb)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	configureLines(t, rdb, show, 12, 100, 1000)
	openSale(t, rdb, show)
	snap, err := svc.Tick(context.Background(), show, false)
	if err != nil {
		t.Fatalf("the first tick of 12 lines: %v", err)
	}
	if len(snap.Lines) != 12 || snap.Phase != waitroom.PhaseOpen {
		t.Fatalf("tick: %d lines, phase %s; want 12, open", len(snap.Lines), snap.Phase)
	}
	if _, err := svc.Join(context.Background(), show, "f1"); err != nil {
		t.Fatal(err)
	}
}

// A line's absent fan does not let a later fan of that line pass an earlier fan of another: the merge chose the
// absent fan's ticket, and the line admits nobody behind what the merge chose (skipping the absent fan leaves the
// rest of the budget to the next round's merge). Without that bound the line popped on past the absent fan and
// admitted its next fan, who joined after the other line's.
func TestLinesAbsentFanLetsNobodyPass(t *testing.T) {
	t.Parallel()
	rdb := client(t)
	show := newShow(t, rdb)
	svc := newService(t, rdb, issuer(t), waitroom.Options{MaxScan: 100, Grace: 10 * time.Minute})
	configureLines(t, rdb, show, 3, 1, 1000)
	openSale(t, rdb, show)
	// absent and later share a line; earlier is on another.
	var absent, later, earlier string
	for i := 0; earlier == "" || later == ""; i++ {
		u := "x" + fmt.Sprint(i)
		switch p := rediskey.PartitionOf(u, 3); {
		case absent == "" && p == 0:
			absent = u
		case later == "" && p == 0 && u != absent:
			later = u
		case earlier == "" && p == 1:
			earlier = u
		}
	}
	if _, err := svc.Tick(context.Background(), show, false); err != nil { // the budget's clock starts
		t.Fatal(err)
	}
	began := time.Now()
	for _, j := range []struct {
		user  string
		after time.Duration
	}{{absent, 2 * waitroom.MarkEvery * time.Millisecond}, {earlier, 2 * waitroom.MarkEvery * time.Millisecond}, {later, 0}} {
		if _, err := svc.Join(context.Background(), show, j.user); err != nil {
			t.Fatal(err)
		}
		time.Sleep(j.after)
	}
	// The first fan in line leaves (no heartbeat at all), and a second of credit at 1 a second is one fan.
	if err := rdb.ZRem(context.Background(), wrredis.Heartbeat(rediskey.Line(show, 0, 3)), absent).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(began.Add(1050 * time.Millisecond)))
	snap, err := svc.Tick(context.Background(), show, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range snap.Grants {
		got = append(got, g.UserID)
	}
	if len(got) != 1 || got[0] != earlier {
		t.Fatalf("one fan's budget, the first in line absent: admitted %v, want [%s] (%s joined after them)", got, earlier, later)
	}
}
