// Package megashow is the load test's million-fan scenario (issue #35, "A million fans for one show"): one show's
// queue, partitioned, bot protection on, a crowd of synthetic fans of whom a share holds the queue page's position
// stream through the edges, and the figures that say what a fan costs: joins per second, the edge's memory per
// stream and Redis's per fan, the heartbeats' Redis CPU per streaming fan and minute, and how long an admission
// takes to reach its fan. No booking is played: the queue is the subject.
//
// How a run goes (Run):
//  1. a show whose sale is open, its queue paused, split over Partitions lines, bot protection on at Difficulty;
//  2. the streaming fans join through the edges (POST /queue/{show}/join with a user token, solving the proof of
//     work the refusal carries) and each opens its event stream, in Parts parts (child processes in a full run:
//     a process may hold only so many descriptors);
//  3. the other fans join through the waiting room's own Go API (a waitroom.Service of this process on the
//     platform's Redis and PostgreSQL, its Join: the scripts an edge's join runs, ticket ceilings recorded as an
//     edge records them, without HTTP and without the proof, which the waiting room's own joins skip), after
//     the streaming fans, so that they stand behind them;
//  4. a quiet window with every stream open and admission paused: Redis's CPU over it is the heartbeats' cost;
//  5. admission resumed at AdmitPerSecond for AdmitFor, then paused again: every admitted event's arrival is
//     set against its token's iat;
//  6. the parts stop and hand back their fans; Report.Check judges them.
package megashow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/shared/admission"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// Config is a run.
type Config struct {
	Admin *client.Client // the operator API, on the first edge
	Bases []string       // the edges; part i streams through Bases[i % len]
	// Fans is the whole crowd; Streams of them join through the edges and stream, the rest join through the Go API.
	Fans, Streams int
	Partitions    int
	Difficulty    int64 // the show's botProtection.baseDifficulty
	// AdmitPerSecond and AdmitFor: the admission window after the quiet one (Quiet).
	AdmitPerSecond  float64
	AdmitFor, Quiet time.Duration
	// AuthSecret is booking's and the edge's user-token secret: the fans' tokens are minted with it.
	AuthSecret string
	Redis      goredis.UniversalClient // the platform's Redis: the Go API's joins and INFO
	// DatabaseURL is the platform's PostgreSQL: the Go API's joins record ticket ceilings there, as an edge's do.
	DatabaseURL string
	EdgeRSS     func() (int64, error) // the edges' resident memory in bytes, summed
	Parts       int                   // parts the streaming fans are played in
	Sources     int                   // loopback source addresses per part
	JoinWorkers int                   // joins in flight per part; the Go-API joins run four times as many
	Timeout     time.Duration         // per join request
	// Start starts a part (Children: a child process); nil plays the parts in this process.
	Start func(ctx context.Context, spec PartSpec) (*Part, error)
	Log   *slog.Logger
}

// Part is a playing part: Stop ends its streams, Wait returns its record.
type Part struct {
	mu   sync.Mutex
	last Progress
	Stop func()
	Wait func() (PartResult, error)
}

// Tell records a part's latest progress.
func (p *Part) Tell(pr Progress) { p.mu.Lock(); p.last = pr; p.mu.Unlock() }

func (p *Part) progress() Progress { p.mu.Lock(); defer p.mu.Unlock(); return p.last }

// inProcess plays a part in a goroutine of this process.
func inProcess(ctx context.Context, spec PartSpec) (*Part, error) {
	ctx, stop := context.WithCancel(ctx)
	p := &Part{Stop: stop}
	var res PartResult
	var err error
	done := make(chan struct{})
	go func() { defer close(done); res, err = Play(ctx, spec, p.Tell) }()
	p.Wait = func() (PartResult, error) { <-done; return res, err }
	return p, nil
}

// Run plays the scenario and returns its report, whose Violations say what did not hold; nil with the error when
// the run could not be played to its end (its progress is in the log).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Streams > cfg.Fans || cfg.Streams < 1 || cfg.Fans > loadtest.MaxFans || cfg.Parts < 1 || len(cfg.Bases) == 0 {
		return nil, fmt.Errorf("megashow: want 1 <= streams <= fans <= %d, parts >= 1 and an edge", loadtest.MaxFans)
	}
	if cfg.Start == nil {
		cfg.Start = inProcess
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	began := time.Now()
	runID := strconv.FormatInt(began.UnixNano(), 36)
	r := &Report{Fans: cfg.Fans, Streams: cfg.Streams, Partitions: cfg.Partitions, Difficulty: cfg.Difficulty,
		Edges: len(cfg.Bases), Parts: cfg.Parts, AdmitPerSecond: cfg.AdmitPerSecond, AdmitFor: cfg.AdmitFor.Seconds(),
		Quiet: cfg.Quiet.Seconds(), APIJoins: cfg.Fans - cfg.Streams}

	show, err := setup(ctx, cfg, runID)
	if err != nil {
		return nil, err
	}
	r.Show = show
	before, err := redisInfo(ctx, cfg.Redis)
	if err != nil {
		return nil, err
	}
	r.Masters = before.masters
	rss0, err := cfg.EdgeRSS()
	if err != nil {
		return nil, err
	}

	// 2. The streaming fans, through the edges.
	parts := make([]*Part, cfg.Parts)
	for i := range parts {
		first, count := share(cfg.Streams, cfg.Parts, i)
		spec := PartSpec{Index: i, Base: cfg.Bases[i%len(cfg.Bases)], Show: show, RunID: runID,
			AuthSecret: cfg.AuthSecret, First: first, Count: count, Workers: cfg.JoinWorkers, Timeout: cfg.Timeout}
		for _, ip := range client.Loopbacks(i, max(1, cfg.Sources)) {
			spec.Sources = append(spec.Sources, ip.String())
		}
		if parts[i], err = cfg.Start(ctx, spec); err != nil {
			stopAll(parts[:i])
			return nil, err
		}
	}
	defer stopAll(parts)
	streamsAt, err := await(ctx, parts, cfg.Streams, log)
	if err != nil {
		return nil, err
	}
	r.StreamsReadyAfter = streamsAt.Sub(began).Seconds()
	rss1, err := cfg.EdgeRSS()
	if err != nil {
		return nil, err
	}
	r.EdgeRSSDeltaMB = float64(rss1-rss0) / (1 << 20)
	r.EdgeBytesPerStream = float64(rss1-rss0) / float64(cfg.Streams)

	// 3. The rest, through the Go API, behind them.
	took, failed, err := bulkJoin(ctx, cfg, show, runID)
	if err != nil {
		return nil, err
	}
	r.APIJoinFailures = failed
	if r.APIJoins > 0 {
		r.APIJoinsPerSecond = float64(r.APIJoins-failed) / took.Seconds()
	}
	q, err := cfg.Admin.Queue(ctx, show)
	if err != nil {
		return nil, err
	}
	r.WaitingAfterJoins = q.Waiting
	mid, err := redisInfo(ctx, cfg.Redis)
	if err != nil {
		return nil, err
	}
	r.RedisUsedDeltaMB = float64(mid.used-before.used) / (1 << 20)
	r.RedisBytesPerFan = float64(mid.used-before.used) / float64(cfg.Fans)

	// 4. Quiet: every stream open, nobody joining, nobody admitted.
	log.Info("megashow: quiet window", "seconds", cfg.Quiet.Seconds())
	if err := sleep(ctx, cfg.Quiet); err != nil {
		return nil, err
	}
	after, err := redisInfo(ctx, cfg.Redis)
	if err != nil {
		return nil, err
	}
	r.RedisCPUQuiet = after.cpu - mid.cpu
	r.RedisCPUQuietBusiestShare = after.busiestShare(mid)
	r.HeartbeatCPUMicrosPerFanMinute = r.RedisCPUQuiet * 1e6 / float64(cfg.Streams) / (cfg.Quiet.Minutes())

	// 5. Admission for AdmitFor, then paused again; the streams get a moment to deliver.
	if err := cfg.Admin.Pause(ctx, show, false); err != nil {
		return nil, err
	}
	r.resumedMs = time.Now().UnixMilli()
	log.Info("megashow: admitting", "rate", cfg.AdmitPerSecond, "for", cfg.AdmitFor)
	if err := sleep(ctx, cfg.AdmitFor); err != nil {
		return nil, err
	}
	if err := cfg.Admin.Pause(ctx, show, true); err != nil {
		return nil, err
	}
	// An edge reads the pause within a second (its settings cache); events lag the ticks on a busy machine by
	// seconds, and by tens of seconds with 100,000 streams on two loaded cores: wait until the streams have heard
	// of every admission the waiting room counts, for as long as they keep hearing of more (a stream still missing
	// once the others have gone 20 s without news, or after 3 minutes, is a violation).
	if err := sleep(ctx, 1500*time.Millisecond); err != nil {
		return nil, err
	}
	for deadline, last, lastAt := time.Now().Add(3*time.Minute), -1, time.Now(); ; {
		if q, err = cfg.Admin.Queue(ctx, show); err != nil {
			return nil, err
		}
		r.AdmittedTotal, r.SkippedTotal = q.AdmittedTotal, q.SkippedTotal
		told := 0
		for _, p := range parts {
			told += p.progress().Admitted
		}
		if told > last {
			last, lastAt = told, time.Now()
		}
		if told >= min(r.AdmittedTotal, cfg.Streams) || time.Since(lastAt) > 20*time.Second || time.Now().After(deadline) {
			break
		}
		if err := sleep(ctx, 600*time.Millisecond); err != nil {
			return nil, err
		}
	}

	// 6. Stop and gather.
	stopAll(parts)
	var fans []FanRecord
	statuses := map[string]int{}
	for _, p := range parts {
		res, err := p.Wait()
		if err != nil {
			return nil, err
		}
		fans = append(fans, res.Fans...)
		r.SolveHashes += res.Hashes
		r.SolveSeconds += float64(res.SolveMs) / 1000
		r.Solved += res.Solved
		for k, v := range res.JoinStatus {
			statuses[k] += v
		}
	}
	r.JoinStatus = statuses
	r.fans = fans
	r.summarize()
	r.Took = time.Since(began).Seconds()
	return r, nil
}

// setup creates the show (a one-row hall: no seat is sold), waits for its sale to open, and sets its queue: on,
// paused, partitioned, bot protection on at the difficulty; the answer must say so.
func setup(ctx context.Context, cfg Config, runID string) (string, error) {
	sc := loadtest.Scenario{Mode: loadtest.ModeHoldStorm, Seats: 20} // the queue is set below, not by Setup
	show, opens, err := crowd.Setup(ctx, cfg.Admin, sc, "megashow-"+runID)
	if err != nil {
		return "", err
	}
	// Joins before the opening would wait for the opening draw; the line in arrival order is the subject here.
	if err := sleep(ctx, time.Until(opens)+100*time.Millisecond); err != nil {
		return "", err
	}
	on := true
	got, err := cfg.Admin.PutQueue(ctx, show, client.QueueSettings{Enabled: true, Paused: true,
		AdmitPerSecond: cfg.AdmitPerSecond, MaxActive: cfg.Fans, TokenTTLSeconds: 600, Partitions: cfg.Partitions,
		BotProtection: &client.BotProtection{Enabled: &on, BaseDifficulty: cfg.Difficulty}})
	if err != nil {
		return "", err
	}
	if b := got.BotProtection; b == nil || !b.On() || b.BaseDifficulty != cfg.Difficulty || got.Partitions != cfg.Partitions || !got.Paused {
		return "", fmt.Errorf("megashow: the queue answered partitions %d, paused %v, bot protection %+v", got.Partitions, got.Paused, b)
	}
	return show, nil
}

// share is part i's contiguous share of n fans over parts.
func share(n, parts, i int) (first, count int) {
	first = n * i / parts
	return first, n*(i+1)/parts - first
}

// await waits until every part's streams have told a position (or every fan is accounted for), logging progress.
func await(ctx context.Context, parts []*Part, want int, log *slog.Logger) (time.Time, error) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastLog time.Time
	for {
		var sum Progress
		for _, p := range parts {
			pr := p.progress()
			sum.Joined, sum.Streaming, sum.Failed = sum.Joined+pr.Joined, sum.Streaming+pr.Streaming, sum.Failed+pr.Failed
		}
		if sum.Streaming+sum.Failed >= want {
			if sum.Failed > 0 {
				return time.Now(), fmt.Errorf("megashow: %d of %d streaming fans found no place", sum.Failed, want)
			}
			return time.Now(), nil
		}
		if time.Since(lastLog) >= 10*time.Second {
			log.Info("megashow: joining", "joined", sum.Joined, "streaming", sum.Streaming, "of", want)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-t.C:
		}
	}
}

// bulkJoin puts fans Streams..Fans-1 in the queue through the waiting room's store, as an edge's join does once its
// guard has let a fan through.
func bulkJoin(ctx context.Context, cfg Config, show, runID string) (time.Duration, int, error) {
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	key, err := token.GenerateKey() // signs the receipts these joins hand out, which nobody presents
	if err != nil {
		return 0, 0, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	svc := waitroom.New(wrredis.New(cfg.Redis), wrpostgres.New(pool),
		admission.NewKeeper(admpostgres.New(pool), admredis.New(cfg.Redis), log), token.NewIssuer(key),
		waitroom.Options{Logger: log})
	var next atomic.Int64
	next.Store(int64(cfg.Streams) - 1)
	var failed atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	// A Go-API join is one script's round trip, no proof and no HTTP: more of them in flight keep Redis busy.
	for range max(1, 4*cfg.JoinWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1)
				if i >= int64(cfg.Fans) {
					return
				}
				p, err := svc.Join(ctx, show, fmt.Sprintf("ms-%s-%d", runID, i))
				if err != nil || p.Status != waitroom.Waiting {
					failed.Add(1)
					once.Do(func() { firstErr = fmt.Errorf("megashow: Go-API join: %s %w", p.Status, err) })
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if err := ctx.Err(); err != nil {
		return took, int(failed.Load()), err
	}
	if firstErr != nil {
		log.Warn("megashow: Go-API joins failed", "failed", failed.Load(), "first", firstErr)
	}
	return took, int(failed.Load()), nil
}

func stopAll(parts []*Part) {
	for _, p := range parts {
		if p != nil {
			p.Stop()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

var errNoRedis = errors.New("megashow: no Redis")
