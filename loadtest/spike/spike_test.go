package spike

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// The show's queue: threshold mode engaging at 50 live admissions (never on arrivals: 0, so that the minute of
// arrivals the spike leaves behind does not hold the queue engaged after it), disengaging after 2 s under; while
// engaged it admits 50 fans a second in ticks of 100 ms, so one tick's worth is 5 admissions.
const (
	threshold      = 50
	admitPerSecond = 50.0
	tick           = 100 * time.Millisecond
	cooldown       = 2 * time.Second
	// dwell is how long an admitted fan looks at the seat map before holding a seat. It keeps each admission
	// live for over a second, so that 400 fans in 5 s (80 a second) reach the threshold as 2,000 do, rather than
	// pass through because each leaves before the next arrives.
	dwell = time.Second
	// pollEvery is how often the operator's view is read on each edge replica.
	pollEvery = 50 * time.Millisecond
	// engageWithin and disengageMargin are the claims' bounds: engaged within a second of the threshold; engaged
	// no more once the line has been empty and the figures under for the cooldown, give or take a tick and the
	// margin a loaded 2-core machine needs to run the ticks and the polls.
	engageWithin    = time.Second
	disengageMargin = 3 * time.Second
)

// tickWorth is how far above the threshold the live admissions may go: one tick's admissions at the show's rate,
// rounded up.
var tickWorth = int64(math.Ceil(admitPerSecond * tick.Seconds()))

// size is the crowd.
type size struct {
	fans int
	ramp time.Duration
	// difficulty is the show's bot protection base difficulty, set through the operator API: each fan hashes
	// about half of it to join. The generator's fans share the machine's two cores (under the race detector,
	// a few thousand hashes a second a fan when all solve at once), where real fans each have a device: at 10,000
	// a join of 400 fans took 5.8 s at the median and the spike was a trickle, so the crowds run far below the
	// platform's default, and the full one lower still.
	difficulty int64
}

// fan is what one fan met.
type fan struct {
	i                      int
	edge                   int
	user                   string
	joinSent, joinAnswered time.Time
	atOnce                 bool // admitted in the join's own answer, with a token
	waited                 bool // told to wait in line
	admitted, confirmed    time.Time
	outcome                string // "confirmed", or what went wrong
}

// sample is one read of the operator's view of the queue on one edge replica.
type sample struct {
	edge     int
	answered time.Time
	engaged  bool
	active   int64
	waiting  int
}

// statuses counts the answers of every request by step and status ("join 200"), fans' and the operator poll's.
type statuses struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *statuses) add(step string, res client.Result, err error) {
	k := step + " " + client.Outcome(res, err)
	if shed(res) && res.Status >= 500 {
		k += " store-unavailable"
	}
	s.mu.Lock()
	s.n[k]++
	s.mu.Unlock()
}

// shedCount is how many answers were the load shedding's 503.
func (s *statuses) shedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.n {
		if strings.HasSuffix(k, "store-unavailable") {
			n += c
		}
	}
	return n
}

// fiveXX lists the counts of 5xx answers other than the load shedding's (shed), counted apart.
func (s *statuses) fiveXX() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, n := range s.n {
		if _, st, _ := strings.Cut(k, " "); strings.HasPrefix(st, "5") && !strings.HasSuffix(k, "store-unavailable") {
			out = append(out, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	sort.Strings(out)
	return out
}

func (s *statuses) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.n))
	for k := range s.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, s.n[k])
	}
	return strings.Join(parts, ", ")
}

// seatList is the hall's seats as the first admitted fan to look found them: every fan then holds a seat of its
// own (fan i the i-th), so that the crowd measures the queue, not contention, and no fan needs half a megabyte
// of seat map of its own.
type seatList struct {
	mu  sync.Mutex
	ids []string
}

func (l *seatList) get(ctx context.Context, c *client.Client, st *statuses, user, adm, show string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for try := 0; l.ids == nil; try++ {
		m, res, err := c.Seats(ctx, user, adm, show)
		st.add("seats", res, err)
		if retry(res, err) && backoff(ctx, try, res) {
			continue
		}
		if res.Status == http.StatusOK {
			for _, s := range m.Seats {
				l.ids = append(l.ids, s.SeatID)
			}
			slices.Sort(l.ids)
		}
		break
	}
	return l.ids
}

// TestThresholdSpike: see the package comment.
func TestThresholdSpike(t *testing.T) {
	t.Parallel()
	// 300 fans in 5 s is 60 a second: with each admission live for over a second they reach the threshold in
	// under one, and the line behind it drains within `make test`'s patience on a loaded 2-core machine.
	sz := size{fans: 300, ramp: 5 * time.Second, difficulty: 500}
	bound := 4 * time.Minute
	if os.Getenv("CHAOS") == "full" {
		sz = size{fans: 2000, ramp: 5 * time.Second, difficulty: 100}
		bound = 10 * time.Minute
	}
	p := platformtest.Start(t, platformtest.Options{
		Edges: 2, MaxConns: 16,
		// RATE_EXEMPT keeps its default (loopback): every fan of the generator comes from 127.0.0.1 and is counted
		// on its own, as fans on their own addresses are; the flood tests cover the limits per address.
		Edge: map[string]string{"QUEUE_TICK": tick.String()},
		// The fans' requests go to the edges directly: checking every answer against openapi.yaml costs a share of
		// the 2-core machine's CPU, and other tests check the contract.
		NoContractCheck: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	tr := client.NewTransport(512)
	t.Cleanup(tr.CloseIdleConnections)
	edges := make([]*client.Client, len(p.EdgeURLs))
	for i, u := range p.EdgeURLs {
		c, err := client.New(u, tr, client.Options{AdminToken: p.AdminToken, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		edges[i] = c
	}

	sc := loadtest.Presets["smoke"]
	sc.Seats, sc.SaleDelay = sz.fans+1, 0 // a seat for every fan, and one for the fan after the crowd
	sc.AdmitPerSecond, sc.MaxActive, sc.TokenTTL, sc.BotDifficulty = admitPerSecond, 1000, 2*time.Minute, sz.difficulty
	show, opens, err := crowd.Setup(ctx, edges[0], sc, "spike-"+uuid.NewString()[:8])
	if err != nil {
		t.Fatal(err)
	}
	on := true
	q, err := edges[1].PutQueue(ctx, show, client.QueueSettings{Enabled: true, Mode: "threshold",
		ActiveUsersThreshold: threshold, NewUsersPerMinuteThreshold: 0, CooldownSeconds: int(cooldown / time.Second),
		AdmitPerSecond: admitPerSecond, MaxActive: sc.MaxActive, TokenTTLSeconds: int(sc.TokenTTL / time.Second),
		BotProtection: &client.BotProtection{Enabled: &on, BaseDifficulty: sz.difficulty}})
	if err != nil {
		t.Fatal(err)
	}
	if q.Mode != "threshold" || q.ActiveUsersThreshold != threshold || q.BotProtection == nil || !q.BotProtection.On() ||
		q.BotProtection.BaseDifficulty != sz.difficulty {
		t.Fatalf("the show's queue answered mode %q, threshold %d, bot protection %+v", q.Mode, q.ActiveUsersThreshold,
			q.BotProtection)
	}
	t.Logf("show %s: threshold mode at %d active users (arrivals never), cooldown %s, %g admissions/s in ticks of "+
		"%s (one tick's worth: %d); proof of work on at base difficulty %d; %d fans joining over %s through %d edges",
		show, threshold, cooldown, admitPerSecond, tick, tickWorth, sz.difficulty, sz.fans, sz.ramp, len(edges))

	st := &statuses{n: map[string]int{}}
	// The fans are on the show's page, signed in as guests, when the spike comes: the spike is their joins.
	fans := make([]*fan, sz.fans)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range fans {
		fans[i] = &fan{i: i, edge: i % len(edges)}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			g, res, err := edges[fans[i].edge].NewGuest(ctx)
			st.add("guest", res, err)
			fans[i].user = g.Token
		})
	}
	wg.Wait()
	for _, f := range fans {
		if f.user == "" {
			t.Fatalf("fan %d has no guest identity; statuses: %s", f.i, st)
		}
	}
	// Joins before the sale opens wait for its draw, in any mode: the spike comes once it is open.
	time.Sleep(time.Until(opens.Add(200 * time.Millisecond)))

	pollCtx, stopPolling := context.WithCancel(ctx)
	var samplesMu sync.Mutex
	var samples []sample
	var polls sync.WaitGroup
	for e, c := range edges {
		polls.Go(func() {
			tk := time.NewTicker(pollEvery)
			defer tk.Stop()
			for pollCtx.Err() == nil {
				v, res, err := c.QueueView(pollCtx, show)
				if pollCtx.Err() != nil {
					return
				}
				st.add("operator view", res, err)
				if err == nil && res.Status == http.StatusOK {
					samplesMu.Lock()
					samples = append(samples, sample{edge: e, answered: time.Now(), engaged: v.Engaged,
						active: v.ActiveUsers, waiting: v.Waiting})
					samplesMu.Unlock()
				}
				select {
				case <-pollCtx.Done():
				case <-tk.C:
				}
			}
		})
	}
	defer func() { stopPolling(); polls.Wait() }()

	seats := &seatList{}
	start := time.Now()
	for _, f := range fans {
		wg.Go(func() {
			at := start.Add(time.Duration(f.i) * sz.ramp / time.Duration(sz.fans))
			time.Sleep(time.Until(at))
			play(ctx, edges[f.edge], st, seats, show, f)
		})
	}
	wg.Wait()
	crowdTook := time.Since(start)

	// After the crowd: the line is empty and every admission ended with its booking; the queue must disengage.
	// The line counts as drained only once every fan has joined: a line a slow crowd emptied for a moment, with
	// more fans still to come, is not the end of the spike.
	var allIn time.Time
	for _, f := range fans {
		if f.joinSent.After(allIn) {
			allIn = f.joinSent
		}
	}
	var drained, disengaged time.Time
	for deadline := time.Now().Add(cooldown + 30*time.Second); time.Now().Before(deadline); time.Sleep(pollEvery) {
		samplesMu.Lock()
		drained, disengaged = settled(samples, len(edges), allIn)
		samplesMu.Unlock()
		if !disengaged.IsZero() {
			break
		}
	}
	late := &fan{i: sz.fans, edge: 1}
	if g, res, err := edges[late.edge].NewGuest(ctx); err != nil || res.Status != http.StatusCreated {
		t.Fatalf("the fan after the crowd: guest: %s", client.Outcome(res, err))
	} else {
		late.user = g.Token
	}
	play(ctx, edges[late.edge], st, seats, show, late)
	stopPolling()
	polls.Wait()

	// The figures.
	var atOnce, waited, confirmed []*fan
	outcomes := map[string]int{}
	for _, f := range fans {
		outcomes[f.outcome]++
		switch {
		case f.atOnce:
			atOnce = append(atOnce, f)
		case f.waited:
			waited = append(waited, f)
		}
		if f.outcome == "confirmed" {
			confirmed = append(confirmed, f)
		}
	}
	sort.Slice(atOnce, func(i, j int) bool { return atOnce[i].joinAnswered.Before(atOnce[j].joinAnswered) })
	var reached, firstWait time.Time // the join that reached the threshold; the first fan told to wait
	if len(atOnce) >= threshold {
		reached = atOnce[threshold-1].joinAnswered
	}
	for _, f := range waited {
		if firstWait.IsZero() || f.joinAnswered.Before(firstWait) {
			firstWait = f.joinAnswered
		}
	}
	engagedOn := make([]time.Time, len(edges)) // the first answer of each edge's view saying engaged
	var maxActive int64
	for _, s := range samples {
		maxActive = max(maxActive, s.active)
		if s.engaged && engagedOn[s.edge].IsZero() {
			engagedOn[s.edge] = s.answered
		}
	}
	since := func(t0, t1 time.Time) time.Duration {
		if t0.IsZero() || t1.IsZero() {
			return -1 // never: logged as -1ns
		}
		return max(0, t1.Sub(t0)).Round(time.Millisecond)
	}
	var atOnceJoin []time.Duration
	for _, f := range atOnce {
		atOnceJoin = append(atOnceJoin, f.joinAnswered.Sub(f.joinSent))
	}
	slices.Sort(atOnceJoin)
	t.Logf("crowd: %d fans played in %s; %d admitted at once in the join's answer (join p50 %s, max %s), %d queued, "+
		"%d confirmed; outcomes %v", sz.fans, crowdTook.Round(time.Millisecond), len(atOnce), pct(atOnceJoin, 50),
		pct(atOnceJoin, 100), len(waited), len(confirmed), outcomes)
	t.Logf("engage: threshold reached %s into the spike; first fan told to wait %s after; the operator's view engaged "+
		"on edge 1 %s after, on edge 2 %s after", since(start, reached), since(reached, firstWait),
		since(reached, engagedOn[0]), since(reached, engagedOn[1]))
	var inSystem []time.Duration
	for _, f := range confirmed {
		inSystem = append(inSystem, f.confirmed.Sub(f.admitted))
	}
	slices.Sort(inSystem)
	t.Logf("admission to confirmed booking (the %s look at the hall included): p50 %s, p99 %s", dwell,
		pct(inSystem, 50), pct(inSystem, 99))
	t.Logf("edge 1's view each second since the spike began (engaged active/waiting): %s", timeline(samples, start))
	t.Logf("live admissions: at most %d seen in %d reads of the operator's view (threshold %d, bound %d)",
		maxActive, len(samples), threshold, threshold+tickWorth)
	t.Logf("disengage: line drained (empty, under the threshold) %s after the spike began; engaged=false on every "+
		"edge %s after that (cooldown %s); the fan after the crowd: admitted at once %t, %s",
		since(start, drained), since(drained, disengaged), cooldown, late.atOnce, late.outcome)
	t.Logf("statuses: %s", st)
	hashes, took, solved := edges[0].Work.Snapshot()
	h1, t1, s1 := edges[1].Work.Snapshot()
	t.Logf("proof of work: %d challenges solved, %d hashes, %s of solving (difficulty %d)", solved+s1, hashes+h1,
		(took + t1).Round(time.Millisecond), sz.difficulty)

	// (a) The first fans passed at once: at least the threshold's worth were admitted in the join's answer, so the
	// queue did not engage before the threshold; (b) it engaged within a second of it, for fans and on both edges.
	if len(atOnce) < threshold {
		t.Errorf("%d fans admitted at once, want at least the first %d", len(atOnce), threshold)
	}
	if len(waited) == 0 {
		t.Errorf("no fan was told to wait: the spike never engaged the queue")
	} else if d := firstWait.Sub(reached); !reached.IsZero() && d > engageWithin {
		t.Errorf("the first fan was told to wait %s after the threshold was reached, want within %s", d, engageWithin)
	}
	for e, at := range engagedOn {
		switch {
		case at.IsZero():
			t.Errorf("edge %d's operator view never said engaged", e+1)
		case !reached.IsZero() && at.Sub(reached) > engageWithin:
			t.Errorf("edge %d's operator view said engaged %s after the threshold was reached, want within %s",
				e+1, at.Sub(reached), engageWithin)
		}
	}
	// (c) Live admissions never beyond the threshold by more than a tick's worth.
	if maxActive > threshold+tickWorth {
		t.Errorf("live admissions reached %d, want at most %d (threshold %d + one tick's worth %d)", maxActive,
			threshold+tickWorth, threshold, tickWorth)
	}
	// (d) No 5xx, anywhere; and every fan got its seat.
	if bad := st.fiveXX(); len(bad) > 0 {
		t.Errorf("5xx answers: %v", bad)
	}
	if n := st.shedCount(); n > 0 {
		t.Logf("%d answers were 503 store-unavailable (a store round trip past its deadline on a starved "+
			"machine), waited out and asked again", n)
	}
	if len(confirmed) != sz.fans {
		for _, f := range fans {
			if f.outcome != "confirmed" {
				t.Errorf("fan %d: %s", f.i, f.outcome)
				break
			}
		}
		t.Errorf("%d of %d fans confirmed a seat", len(confirmed), sz.fans)
	}
	// (e) After the crowd the queue disengaged within its cooldown and a margin, and a new fan passes at once.
	switch {
	case drained.IsZero():
		t.Errorf("the operator's view never showed the line drained")
	case disengaged.IsZero():
		t.Errorf("the queue was still engaged %s after the line drained", cooldown+30*time.Second)
	case disengaged.Sub(drained) > cooldown+disengageMargin:
		t.Errorf("the queue disengaged %s after the line drained, want within the cooldown %s + %s",
			disengaged.Sub(drained), cooldown, disengageMargin)
	}
	if !late.atOnce || late.outcome != "confirmed" {
		t.Errorf("the fan after the crowd: admitted at once %t, %s; want at once and confirmed", late.atOnce, late.outcome)
	}

	res, err := check.Run(ctx, check.Config{DatabaseURL: p.DatabaseURL, RedisURL: p.RedisURL,
		ShowIDs: []string{show}, ReconcileInterval: p.Options.ReconcileInterval})
	if err != nil {
		t.Fatalf("store checker: %v", err)
	}
	for _, v := range res.Violations {
		t.Errorf("store checker: %s: %s", v.Invariant, v.Detail)
	}
}

// settled reads the samples for the end of the spike: when the line was first seen drained after the queue had
// engaged and every fan had joined (at allIn: nobody waiting and the live admissions under the threshold, the
// cooldown's start), and when after that every edge's view first said disengaged (the latest of those firsts).
// Zero times: not yet.
func settled(samples []sample, edges int, allIn time.Time) (drained, disengaged time.Time) {
	engaged := false
	off := make([]time.Time, edges)
	for _, s := range samples {
		engaged = engaged || s.engaged
		if engaged && drained.IsZero() && s.answered.After(allIn) && s.waiting == 0 && s.active < threshold {
			drained = s.answered
		}
		if !drained.IsZero() && !s.engaged && off[s.edge].IsZero() && s.answered.After(drained) {
			off[s.edge] = s.answered
		}
	}
	for _, at := range off {
		if at.IsZero() {
			return drained, time.Time{}
		}
		if at.After(disengaged) {
			disengaged = at
		}
	}
	return drained, disengaged
}

// play is one fan from its join to its seat: join (solving the proof of work the show asks for), wait in line
// over the event stream when told to, look at the hall for dwell, hold a seat of its own and pay. A confirmed
// booking ends the fan's admission, which frees its place under the threshold.
func play(ctx context.Context, c *client.Client, st *statuses, seats *seatList, show string, f *fan) {
	var q client.QueueState
	var res client.Result
	var err error
	for try := 0; ; try++ {
		f.joinSent = time.Now()
		q, res, err = c.Join(ctx, f.user, show, "")
		f.joinAnswered = time.Now()
		st.add("join", res, err)
		if !retry(res, err) || !backoff(ctx, try, res) {
			break
		}
	}
	if res.Status != http.StatusOK {
		f.outcome = "join: " + client.Outcome(res, err) + " " + res.ProblemSlug()
		return
	}
	adm := ""
	switch {
	case q.Status == "admitted" && q.AdmissionToken != "":
		f.atOnce, adm = true, q.AdmissionToken
	case q.Status == "waiting":
		f.waited = true
		if adm = await(ctx, c, st, show, f, q.Receipt); adm == "" {
			f.outcome = "never admitted"
			return
		}
	default:
		f.outcome = fmt.Sprintf("join answered %q (token %t)", q.Status, q.AdmissionToken != "")
		return
	}
	f.admitted = time.Now()
	time.Sleep(dwell)
	ids := seats.get(ctx, c, st, f.user, adm, show)
	if f.i >= len(ids) {
		f.outcome = fmt.Sprintf("no seat %d in a map of %d", f.i, len(ids))
		return
	}
	key := uuid.NewString() // one key for every try: a retried hold is the same hold
	var b client.Booking
	for try := 0; ; try++ {
		b, res, err = c.Hold(ctx, f.user, adm, show, []string{ids[f.i]}, key)
		st.add("hold", res, err)
		if !retry(res, err) || !backoff(ctx, try, res) {
			break
		}
	}
	if res.Status != http.StatusCreated {
		f.outcome = "hold: " + client.Outcome(res, err) + " " + res.ProblemSlug()
		return
	}
	booking := b.BookingID
	key = uuid.NewString()
	for try := 0; ; try++ {
		b, res, err = c.Pay(ctx, f.user, adm, booking, "pm_card_ok", key)
		st.add("pay", res, err)
		if !retry(res, err) || !backoff(ctx, try, res) {
			break
		}
	}
	if res.Status != http.StatusOK || b.Status != "CONFIRMED" {
		f.outcome = "pay: " + client.Outcome(res, err) + " " + b.Status
		return
	}
	f.confirmed = time.Now()
	f.outcome = "confirmed"
}

// shed reports the platform's "not now": a 429, or a 503 store-unavailable, the answer of an edge or booking whose
// store round trip ran past its deadline (on a 2-core machine that other tests share, the race detector's
// processes starve each other for seconds). A fan waits and asks again, as the contract tells it to.
func shed(res client.Result) bool {
	return res.Status == http.StatusTooManyRequests ||
		res.Status == http.StatusServiceUnavailable && res.ProblemSlug() == "store-unavailable"
}

// retry reports an answer the fan asks again after: the load shedding's (shed), or none at all (a timeout on a
// starved machine). Every request retried is idempotent: a join finds the fan's place, a hold and a payment carry
// the same Idempotency-Key on every try.
func retry(res client.Result, err error) bool {
	return shed(res) || (res.Status == 0 && err != nil)
}

// backoff waits before the try-th retry: what the server asked for, else 200 ms doubling; false once ctx ends or
// after 8 tries.
func backoff(ctx context.Context, try int, res client.Result) bool {
	if try >= 8 {
		return false
	}
	d := max(res.RetryAfter, 200*time.Millisecond<<min(try, 4))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// await follows the fan's place over the event stream until it is admitted, and polls its status, as the
// contract's fallback, if the stream ends first. It returns the admission token, "" when ctx ended first.
func await(ctx context.Context, c *client.Client, st *statuses, show string, f *fan, receipt string) string {
	adm := ""
	err := c.Follow(ctx, f.user, show, receipt, func(ev client.QueueEvent) bool {
		if ev.Kind == "admitted" && ev.AdmissionToken != "" {
			adm = ev.AdmissionToken
			return false
		}
		return true
	})
	if err != nil && ctx.Err() == nil {
		st.add("events", client.Result{}, err) // a stream that failed; the fan polls instead
	}
	for adm == "" && ctx.Err() == nil {
		s, res, err := c.QueueStatus(ctx, f.user, show)
		st.add("status", res, err)
		if res.Status == http.StatusOK && s.Status == "admitted" && s.AdmissionToken != "" {
			return s.AdmissionToken
		}
		time.Sleep(max(time.Second, res.RetryAfter))
	}
	return adm
}

// timeline renders edge 1's view once a second: "+50/120" is engaged with 50 active and 120 waiting.
func timeline(samples []sample, start time.Time) string {
	var b strings.Builder
	next := start
	for _, s := range samples {
		if s.edge != 0 || s.answered.Before(next) {
			continue
		}
		mark := "-"
		if s.engaged {
			mark = "+"
		}
		fmt.Fprintf(&b, "%d:%s%d/%d ", int(s.answered.Sub(start).Seconds()), mark, s.active, s.waiting)
		next = s.answered.Add(time.Second)
	}
	return strings.TrimSpace(b.String())
}

// pct is the p-th percentile of sorted durations, rounded to the millisecond.
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)].Round(time.Millisecond)
}
