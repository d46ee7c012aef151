package eventstream

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Source is a transactional outbox: events written in the transaction that made them true, waiting to be
// appended to the stream. Booking's outbox and the admission record's queue outbox are the two.
type Source interface {
	// Relay hands up to limit unpublished events, oldest first, to publish, and marks published those for which
	// publish returned nil (stopping at the first failure, so order holds); rows another relay is handing out
	// at the same time are skipped (FOR UPDATE SKIP LOCKED). It returns how many it marked.
	Relay(ctx context.Context, limit int, publish func(Event) error) (int, error)
	// Prune deletes up to limit events published before before and returns how many it deleted.
	Prune(ctx context.Context, before time.Time, limit int) (int, error)
}

const (
	defaultRelayEvery       = 100 * time.Millisecond
	relayBatch              = 500
	relayErrorLogSuppressed = 30 * time.Second
)

// Relay moves an outbox into the stream: each event is appended, and only then marked published, in a
// transaction that other replicas' relays skip. An event is therefore appended at least once and in outbox order
// per relay; a crash between the append and the commit appends it again with the same ID, which consumers drop.
//
// Published rows are kept for Keep (default 72h: the stream holds the events; the rows are for looking back) and
// then deleted, an hour's worth of passes apart, so the table does not grow with every event ever made.
type Relay struct {
	src   Source
	rdb   redis.Cmdable
	cfg   Config
	every time.Duration
	log   *slog.Logger
	kick  chan struct{}
	// Keep is how long published rows stay in the outbox; set before Run.
	Keep time.Duration
	// OnRelayed is told how many events each pass published (metrics); nil is fine. Set before Run.
	OnRelayed func(n int)
}

// NewRelay returns a relay of src into the stream of cfg on rdb, polling every every (default 100ms).
func NewRelay(src Source, rdb redis.Cmdable, cfg Config, every time.Duration, log *slog.Logger) *Relay {
	if every <= 0 {
		every = defaultRelayEvery
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{src: src, rdb: rdb, cfg: cfg, every: every, log: log, kick: make(chan struct{}, 1),
		Keep: 72 * time.Hour}
}

// Nudge asks for a pass now (after a commit that wrote outbox rows), instead of at the next tick.
func (r *Relay) Nudge() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run relays until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	var lastErr time.Time
	for {
		n, err := r.Pass(ctx)
		if err != nil && ctx.Err() == nil && time.Since(lastErr) > relayErrorLogSuppressed {
			// A stream or database outage fails every pass: say so once in a while, not ten times a second.
			r.log.WarnContext(ctx, "relay outbox", "err", err)
			lastErr = time.Now()
		}
		if n == relayBatch {
			continue // more waiting
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		case <-prune.C:
			r.Prune(ctx)
		}
	}
}

// Prune deletes the rows published longer than Keep ago, a batch at a time.
func (r *Relay) Prune(ctx context.Context) {
	before := time.Now().Add(-r.Keep)
	for ctx.Err() == nil {
		n, err := r.src.Prune(ctx, before, 5000)
		if err != nil {
			r.log.WarnContext(ctx, "prune outbox", "err", err)
			return
		}
		if n < 5000 {
			return
		}
	}
}

// Pass relays one batch and returns how many events it published.
func (r *Relay) Pass(ctx context.Context) (int, error) {
	var pubErr error
	n, err := r.src.Relay(ctx, relayBatch, func(e Event) error {
		pubErr = Append(ctx, r.rdb, r.cfg, e, time.Now())
		return pubErr
	})
	if err == nil {
		err = pubErr
	}
	if n > 0 && r.OnRelayed != nil {
		r.OnRelayed(n)
	}
	return n, err
}
