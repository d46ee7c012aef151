package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/waitroom"
)

// events reads the lifecycle event stream's settings (EVENTS_STREAM, EVENTS_MAXLEN, EVENTS_MAX_AGE) and the
// queue outbox relay's (EVENTS_RELAY_INTERVAL, EVENTS_OUTBOX_KEEP): the same variables booking reads, since both
// relay their outboxes into one stream.
func (l *loader) events(cfg *Config) {
	cfg.Events = eventstream.Config{Key: l.str("EVENTS_STREAM", eventstream.DefaultKey),
		MaxLen: int64(l.integer("EVENTS_MAXLEN", 100_000)), MaxAge: l.duration("EVENTS_MAX_AGE", 0)}
	if cfg.Events.MaxLen < 100 {
		l.fail("EVENTS_MAXLEN must be at least 100")
	}
	cfg.EventsRelayEvery = l.duration("EVENTS_RELAY_INTERVAL", 100*time.Millisecond)
	cfg.EventsOutboxKeep = l.duration("EVENTS_OUTBOX_KEEP", 72*time.Hour)
	if cfg.EventsRelayEvery < time.Millisecond || cfg.EventsOutboxKeep < time.Minute {
		l.fail("EVENTS_RELAY_INTERVAL must be at least 1ms and EVENTS_OUTBOX_KEEP at least 1m")
	}
}

// phaseRecord records the phases admission ticks find (admission/postgres.Record).
type phaseRecord interface {
	RecordPhase(ctx context.Context, c admission.PhaseChange) (bool, error)
}

// phaseRecheck is how long a replica trusts that the record already holds the phase it last saw for a show. An
// operator's switch off and on between two of its ticks leaves the record at "unknown" while the phase this
// replica sees has not changed; the recheck announces it all the same.
const phaseRecheck = 10 * time.Second

// queueEvents records a show's queue phase in the admission record when this replica's admission tick sees it
// change (queue.opened, queue.paused, queue.sold_out, queue.closed; the record writes the event to its queue
// outbox in the same transaction, and the edge's relay appends it to the stream). The record keeps one phase per
// show, so a change every replica sees is recorded, and announced, once; a replica that dies after seeing it
// leaves it to the next tick of any replica.
type queueEvents struct {
	rec     phaseRecord
	log     *slog.Logger
	nudge   func() // wakes the relay after a change was recorded
	recheck time.Duration

	mu   sync.Mutex
	last map[string]seenPhase // the phase this replica last saw per show, and when it last told the record
}

type seenPhase struct {
	phase waitroom.Phase
	told  time.Time
}

func newQueueEvents(rec phaseRecord, nudge func(), log *slog.Logger) *queueEvents {
	return &queueEvents{rec: rec, nudge: nudge, log: log, recheck: phaseRecheck, last: map[string]seenPhase{}}
}

// observe is told of every admission tick of this replica (waitroom.Options.Observe); it costs a PostgreSQL round
// trip only when this replica sees a show's phase change, or once per recheck.
func (q *queueEvents) observe(snap waitroom.Snapshot, _ time.Duration, err error) {
	if err != nil || snap.Show == "" {
		return
	}
	now := time.Now()
	q.mu.Lock()
	prev, seen := q.last[snap.Show]
	if len(q.last) > 100_000 { // bound memory; forgetting only costs a round trip
		q.last = map[string]seenPhase{}
	}
	fresh := seen && prev.phase == snap.Phase && now.Sub(prev.told) < q.recheck
	if !fresh {
		q.last[snap.Show] = seenPhase{phase: snap.Phase, told: now}
	}
	q.mu.Unlock()
	if fresh {
		return
	}
	at := snap.At
	if at.IsZero() {
		at = now
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	changed, err := q.rec.RecordPhase(ctx, admission.PhaseChange{Show: snap.Show, Phase: string(snap.Phase), At: at,
		Waiting: snap.Waiting, Active: snap.Active, AdmittedTotal: snap.AdmittedTotal})
	switch {
	case err != nil:
		q.log.Warn("queue event: record phase", "show", snap.Show, "phase", snap.Phase, "err", err)
		q.mu.Lock()
		delete(q.last, snap.Show) // try again at the next tick
		q.mu.Unlock()
	case changed && q.nudge != nil:
		q.nudge()
	}
}

// observeBoth calls every non-nil observer of a tick.
func observeBoth(fs ...func(waitroom.Snapshot, time.Duration, error)) func(waitroom.Snapshot, time.Duration, error) {
	return func(s waitroom.Snapshot, d time.Duration, err error) {
		for _, f := range fs {
			if f != nil {
				f(s, d, err)
			}
		}
	}
}
