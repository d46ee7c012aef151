package admission

import (
	"context"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// PhaseRecorder records the phases admission ticks find (admission/postgres.Record).
type PhaseRecorder interface {
	RecordPhase(ctx context.Context, c PhaseChange) (bool, error)
}

// PhaseRecheck is how long a replica trusts that the record already holds the phase it last saw for a show. An
// operator's switch off and on between two of its ticks leaves the record at PhaseUnknown while the phase this
// replica sees has not changed; the recheck announces it all the same.
const PhaseRecheck = 10 * time.Second

// PhaseWatch records a show's queue phase in the record when this replica's admission tick sees it change
// (queue.opened, queue.paused, queue.sold_out, queue.closed; the record writes the event to its queue outbox in
// the same transaction, and a relay appends it to the stream). The record keeps one phase per show, so a change
// every replica sees is recorded, and announced, once; a replica that dies after seeing it leaves it to the next
// tick of any replica.
type PhaseWatch struct {
	rec   PhaseRecorder
	log   *slog.Logger
	nudge func() // wakes the relay after a change was recorded
	// Recheck is PhaseRecheck unless a test says otherwise.
	Recheck time.Duration

	mu sync.Mutex
	// The phase this replica last saw per show, and when it last told the record: a bounded LRU, so a replica
	// ticking very many shows forgets the least recently ticked one (costing it a round trip), never all at once.
	last *lru.Cache[string, seenPhase]
}

const maxSeenPhases = 100_000

type seenPhase struct {
	phase string
	told  time.Time
}

// NewPhaseWatch returns a watch recording into rec, calling nudge (may be nil) after each recorded change.
func NewPhaseWatch(rec PhaseRecorder, nudge func(), log *slog.Logger) *PhaseWatch {
	last, _ := lru.New[string, seenPhase](maxSeenPhases) // a positive size never fails
	if log == nil {
		log = slog.Default()
	}
	return &PhaseWatch{rec: rec, nudge: nudge, log: log, Recheck: PhaseRecheck, last: last}
}

// Observe is told of every admission tick of this replica: c is the phase it found. It costs a PostgreSQL round
// trip only when this replica sees a show's phase change, or once per recheck.
func (w *PhaseWatch) Observe(c PhaseChange) {
	if c.Show == "" {
		return
	}
	now := time.Now()
	w.mu.Lock()
	prev, seen := w.last.Get(c.Show)
	fresh := seen && prev.phase == c.Phase && now.Sub(prev.told) < w.Recheck
	if !fresh {
		w.last.Add(c.Show, seenPhase{phase: c.Phase, told: now})
	}
	w.mu.Unlock()
	if fresh {
		return
	}
	if c.At.IsZero() {
		c.At = now
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	changed, err := w.rec.RecordPhase(ctx, c)
	switch {
	case err != nil:
		w.log.Warn("queue event: record phase", "show", c.Show, "phase", c.Phase, "err", err)
		w.mu.Lock()
		w.last.Remove(c.Show) // try again at the next tick
		w.mu.Unlock()
	case changed && w.nudge != nil:
		w.nudge()
	}
}
