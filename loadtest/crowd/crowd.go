// Package crowd plays a scenario against a running platform through its public HTTP contract: it sets up the show
// through the operator API, releases the fans (or the hold-storm clients) on schedule, samples the operator's
// counters while they run, and hands back the raw record for the report and the checker.
package crowd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
)

// Config is one run.
type Config struct {
	Client   *client.Client
	Scenario loadtest.Scenario
	ShowID   string // play against this existing show instead of creating one
	Seed     uint64 // fans' random choices; 0 picks one
	Sample   time.Duration
	Log      *slog.Logger

	// Baseline, when set, is the row-lock design, stormed after the platform in the same run. Transport is the
	// run's shared transport, for the baseline's client.
	Baseline  Baseline
	Transport http.RoundTripper

	// Split, when set, hands a queued crowd to players elsewhere after the setup (other processes: one process
	// cannot hold a stadium's streams under its open-file limit) and merges what they recorded; this process
	// only samples the operator's counters.
	Split *Split
}

// Split plays a crowd in Parts shares, each by Play (PlayShare in another process), all at once.
type Split struct {
	Parts int
	Play  func(ctx context.Context, s Share) (*loadtest.Part, error)
}

// Share is the part of a crowd one player plays: fans First..First+Count-1 of the scenario's Fans. They are the
// very fans a single process would play with the same seed (same choices, same arrival times from Release), and
// they record on the run's clock (Start), so that the parts merge into one run and one fairness check.
type Share struct {
	ShowID  string    `json:"showId"`
	First   int       `json:"first"`
	Count   int       `json:"count"`
	Seed    uint64    `json:"seed"`
	Start   time.Time `json:"start"`   // the run's clock: every offset is measured from it
	Release time.Time `json:"release"` // fan 0 arrives then, the last fan Ramp later
}

// Holder is what a hold-storm hammers: the platform's hold API, or the row-lock baseline's.
type Holder interface {
	Hold(ctx context.Context, user, showID string, seatIDs []string) (bookingID string, res client.Result, err error)
	Release(ctx context.Context, user, showID, bookingID string) (client.Result, error)
}

// Crowd is one run in progress.
type Crowd struct {
	c      *client.Client
	sc     loadtest.Scenario
	showID string
	rec    *loadtest.Recorder
	runCtx context.Context
	log    *slog.Logger

	noRelease      bool // the holder cannot cancel: storm clients keep their holds
	streamFailures atomic.Int64
	stormWindow    [2]time.Duration
	noSeatsOnce    sync.Once
	noSeatsAt      atomic.Int64         // offset in ns at which a fan first found no seat AVAILABLE
	hall           atomic.Pointer[Hall] // the hall as the first seat map showed it (hallOf)
}

func (cr *Crowd) noSeats(t time.Time) {
	cr.noSeatsOnce.Do(func() { cr.noSeatsAt.Store(int64(cr.rec.Since(t))) })
}

// Play runs cfg's scenario to its end or to its time bound, whichever comes first.
func Play(ctx context.Context, cfg Config) (*loadtest.Run, error) {
	sc := cfg.Scenario
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	if cfg.Sample <= 0 {
		cfg.Sample = 500 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, sc.Duration)
	defer cancel()

	start := time.Now()
	runID := fmt.Sprintf("%d", start.UnixNano())
	showID := cfg.ShowID
	var opens time.Time
	if showID == "" {
		var err error
		showID, opens, err = Setup(ctx, cfg.Client, sc, runID)
		if err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	} else {
		d, err := cfg.Client.Show(ctx, showID)
		if err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
		opens = d.SaleStartsAt
		if err := ConfigureQueue(ctx, cfg.Client, sc, showID); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	cfg.Log.Info("show ready", "show", showID, "saleOpens", opens.Format(time.RFC3339), "fans", sc.Fans)

	rec := loadtest.NewRecorder(start)
	cr := &Crowd{c: cfg.Client, sc: sc, showID: showID, rec: rec, runCtx: ctx, log: cfg.Log}
	cr.noSeatsAt.Store(-1)
	run := &loadtest.Run{Scenario: sc, Target: cfg.Client.Base(), ShowID: showID, StartedAt: start,
		SaleOpens: opens.Sub(start)}

	sampleCtx, stopSampling := context.WithCancel(ctx)
	samples := make(chan []loadtest.QueueSample, 1)
	go func() { samples <- cr.sample(sampleCtx, cfg.Sample) }()

	var seats []client.Seat
	var splitErr error
	switch {
	case sc.Mode == loadtest.ModeQueue && cfg.Split != nil:
		splitErr = cr.split(ctx, cfg, run)
	case sc.Mode == loadtest.ModeQueue:
		run.Fans = cr.queue(ctx, cfg.Seed, 0, sc.Fans, time.Now())
	case sc.Mode == loadtest.ModeHoldStorm:
		var err error
		if seats, err = cr.seatMap(ctx); err != nil {
			stopSampling()
			<-samples
			return nil, err
		}
		// Compared with a baseline that cannot cancel, the platform keeps its holds too: same work on both sides.
		cr.noRelease = cfg.Baseline != nil
		run.Fans = cr.storm(ctx, cfg.Seed, opens, platformHolder{cfg.Client, sc.StormIdempotency}, seats)
	}
	stopSampling()
	run.Timeline = <-samples
	run.Elapsed = time.Since(start)
	run.Add(cr.part(nil)) // this process's own requests (a split crowd's shares were added by split)
	run.StormFrom, run.StormTo = cr.stormWindow[0], cr.stormWindow[1]

	if sc.Mode == loadtest.ModeHoldStorm && cfg.Baseline != nil {
		b, err := playBaseline(ctx, cfg, seats)
		if err != nil {
			return run, fmt.Errorf("baseline: %w", err)
		}
		run.Baseline = b
	}
	return run, splitErr
}

// PlayShare plays one share of a split crowd (cfg.Scenario in queue mode, against the share's show, which the
// splitting process set up and samples) and returns what its fans recorded.
func PlayShare(ctx context.Context, cfg Config, s Share) (*loadtest.Part, error) {
	sc := cfg.Scenario
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if sc.Mode != loadtest.ModeQueue || s.ShowID == "" || s.First < 0 || s.Count < 1 || s.First+s.Count > sc.Fans {
		return nil, fmt.Errorf("share: fans %d..%d of %d of a queued show, want a valid range and show",
			s.First, s.First+s.Count-1, sc.Fans)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithDeadline(ctx, s.Start.Add(sc.Duration))
	defer cancel()
	cr := &Crowd{c: cfg.Client, sc: sc, showID: s.ShowID, rec: loadtest.NewRecorder(s.Start), runCtx: ctx, log: cfg.Log}
	cr.noSeatsAt.Store(-1)
	return cr.part(cr.queue(ctx, s.Seed, s.First, s.Count, s.Release)), nil
}

// part is what this process recorded, with fans.
func (cr *Crowd) part(fans []*loadtest.Fan) *loadtest.Part {
	p := &loadtest.Part{Fans: fans, Steps: cr.rec.Samples(), StreamFailures: int(cr.streamFailures.Load())}
	hashes, took, solved := cr.c.Work.Snapshot()
	p.Work = loadtest.Work{Solved: solved, Hashes: hashes, Time: took}
	if at := cr.noSeatsAt.Load(); at >= 0 {
		p.NoSeatsAt = time.Duration(at)
	}
	return p
}

// split hands the crowd to cfg.Split's players in shares as even as can be, all released now, and adds each
// share's record to run as it comes back. A share that failed is reported; the others still count.
func (cr *Crowd) split(ctx context.Context, cfg Config, run *loadtest.Run) error {
	n := min(cfg.Split.Parts, cr.sc.Fans)
	release := time.Now()
	type result struct {
		part *loadtest.Part
		err  error
	}
	results := make(chan result, n)
	first := 0
	for i := range n {
		count := cr.sc.Fans / n
		if i < cr.sc.Fans%n {
			count++
		}
		s := Share{ShowID: cr.showID, First: first, Count: count, Seed: cfg.Seed, Start: cr.rec.Start(), Release: release}
		first += count
		go func() {
			p, err := cfg.Split.Play(ctx, s)
			if err != nil {
				err = fmt.Errorf("fans %d..%d: %w", s.First, s.First+s.Count-1, err)
			}
			results <- result{p, err}
		}()
	}
	var errs []error
	for range n {
		r := <-results
		if r.part != nil {
			run.Add(r.part)
		}
		errs = append(errs, r.err)
	}
	sort.Slice(run.Fans, func(i, j int) bool { return run.Fans[i].ID < run.Fans[j].ID })
	return errors.Join(errs...)
}

// queue releases fans first..first+count-1 of the crowd, spread over the ramp from release, and waits for every
// one to finish.
func (cr *Crowd) queue(ctx context.Context, seed uint64, first, count int, release time.Time) []*loadtest.Fan {
	players := cr.fans(seed, first, count)
	fans := make([]*loadtest.Fan, len(players))
	var wg sync.WaitGroup
	for k, p := range players {
		fans[k] = p.f
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Not wait, which caps a delay at 5 s: a stadium's ramp is longer.
			if !sleepUntil(ctx, release.Add(cr.arrival(p.f.ID))) {
				p.end(loadtest.OutcomeCutOff, "run ended before arrival")
				return
			}
			p.f.Arrived = cr.rec.Since(time.Now())
			fctx, cancel := context.WithTimeout(ctx, cr.sc.Patience)
			defer cancel()
			p.play(fctx)
		}()
	}
	wg.Wait()
	return fans
}

// fans makes fans first..first+count-1 of the crowd as seed makes them. Fan i is the same fan whatever share it
// falls in (PlayShare in any -procs child, or the only process): the same choices and the same random stream for
// its later ones, because each fan's stream is the master stream's i-th pair of draws.
func (cr *Crowd) fans(seed uint64, first, count int) []*fan {
	sc := cr.sc
	out := make([]*fan, count)
	master := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for range first { // the fans of earlier shares: their seeds, so that fan i is fan i whoever plays it
		master.Uint64()
		master.Uint64()
	}
	for k := range out {
		f := &loadtest.Fan{ID: first + k}
		rng := rand.New(rand.NewPCG(master.Uint64(), master.Uint64()))
		p := &fan{cr: cr, f: f, rng: rng,
			hot:   rng.Float64() < sc.HotShare,
			size:  sc.GroupMin + rng.IntN(sc.GroupMax-sc.GroupMin+1),
			probe: rng.Float64() < sc.ProbeShare}
		f.Pay = sc.Pay.Pick(rng.Float64())
		out[k] = p
	}
	return out
}

// arrival is when fan i arrives after the release: the crowd spread evenly over the ramp.
func (cr *Crowd) arrival(i int) time.Duration {
	if cr.sc.Fans < 2 {
		return 0
	}
	return cr.sc.Ramp * time.Duration(i) / time.Duration(cr.sc.Fans-1)
}

// sample reads the operator's counters every interval until ctx ends. A failed read is skipped: the sampler
// observes, it must not end the run.
func (cr *Crowd) sample(ctx context.Context, every time.Duration) []loadtest.QueueSample {
	var out []loadtest.QueueSample
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if s, ok := cr.sampleOnce(ctx); ok {
			out = append(out, s)
		}
		select {
		case <-ctx.Done():
			// One last reading once the crowd is done, so the charts and the sell-out times see the final state.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if s, ok := cr.sampleOnce(fctx); ok {
				out = append(out, s)
			}
			return out
		case <-t.C:
		}
	}
}

func (cr *Crowd) sampleOnce(ctx context.Context) (loadtest.QueueSample, bool) {
	s := loadtest.QueueSample{At: cr.rec.Since(time.Now()), Waiting: -1, Active: -1, AdmittedTotal: -1}
	ok := false
	if cr.sc.Mode == loadtest.ModeQueue {
		if q, err := cr.c.Queue(ctx, cr.showID); err == nil {
			s.Waiting, s.Active, s.AdmittedTotal, ok = q.Waiting, q.Active, q.AdmittedTotal, true
		}
	}
	if st, err := cr.c.Stats(ctx, cr.showID); err == nil {
		s.Available, s.Held, s.Booked, ok = st.Available, st.Held, st.Booked, true
	} else {
		s.Available, s.Held, s.Booked = -1, -1, -1
	}
	return s, ok
}
