package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// events reads the lifecycle event stream's settings (EVENTS_STREAM, EVENTS_MAXLEN, EVENTS_MAX_AGE), the same
// variables booking reads: both append to one stream.
func (l *loader) events(cfg *Config) {
	cfg.Events = eventstream.Config{Key: l.String("EVENTS_STREAM", eventstream.DefaultKey),
		MaxLen: int64(l.Int("EVENTS_MAXLEN", 100_000)), MaxAge: l.Duration("EVENTS_MAX_AGE", 0)}
	if cfg.Events.MaxLen < 100 {
		l.Fail("EVENTS_MAXLEN must be at least 100")
	}
}

// queueEvents appends a queue event to the stream when a show's queue changes phase: queue.opened (admitting),
// queue.paused (the operator paused admission; fans keep their places), queue.sold_out (no seat free or held:
// admission stops), queue.closed (the operator switched the queue off). The
// waiting room has no outbox; a transition is announced by the one replica that records it first in Redis
// (SET ... GET on a key of the show), with the dedupe id q_<show>_<type>_<tick time in ms>. A replica that dies
// between recording and appending loses that event: at most once, unlike booking's events.
type queueEvents struct {
	rdb redis.UniversalClient
	cfg eventstream.Config
	log *slog.Logger

	mu   sync.Mutex
	last map[string]waitroom.Phase // the phase this replica last saw per show
}

func newQueueEvents(rdb redis.UniversalClient, cfg eventstream.Config, log *slog.Logger) *queueEvents {
	return &queueEvents{rdb: rdb, cfg: cfg, log: log, last: map[string]waitroom.Phase{}}
}

// queueEventTypes maps a phase to its event; phases before the opening have none.
var queueEventTypes = map[waitroom.Phase]string{
	waitroom.PhaseOpen:    "queue.opened",
	waitroom.PhasePaused:  "queue.paused",
	waitroom.PhaseSoldOut: "queue.sold_out",
	waitroom.PhaseClosed:  "queue.closed",
}

// observe is told of every admission tick of this replica (waitroom.Options.Observe); it costs a Redis round trip
// only when this replica sees a show's phase change.
func (q *queueEvents) observe(snap waitroom.Snapshot, _ time.Duration, err error) {
	if err != nil || snap.Show == "" {
		return
	}
	q.mu.Lock()
	prev, seen := q.last[snap.Show]
	if len(q.last) > 100_000 { // bound memory; forgetting only costs a round trip
		q.last = map[string]waitroom.Phase{}
	}
	q.last[snap.Show] = snap.Phase
	q.mu.Unlock()
	typ, ok := queueEventTypes[snap.Phase]
	if (seen && prev == snap.Phase) || !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	old, err := q.rdb.SetArgs(ctx, rediskey.Tag(snap.Show)+":queue:announced-phase", string(snap.Phase),
		redis.SetArgs{Get: true, TTL: 30 * 24 * time.Hour}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		q.log.Warn("queue event: record phase", "show", snap.Show, "err", err)
		return
	}
	if old == string(snap.Phase) {
		return // another replica announced it
	}
	at := snap.At
	if at.IsZero() {
		at = time.Now()
	}
	data, _ := json.Marshal(map[string]any{"showId": snap.Show, "phase": snap.Phase, "previous": old,
		"waiting": snap.Waiting, "active": snap.Active, "admittedTotal": snap.AdmittedTotal})
	e := eventstream.Event{ID: "q_" + snap.Show + "_" + typ + "_" + strconv.FormatInt(at.UnixMilli(), 10), Type: typ,
		ShowID: snap.Show, Subject: snap.Show, At: at, Data: data}
	if err := eventstream.Append(ctx, q.rdb, q.cfg, e, time.Now()); err != nil {
		q.log.Warn("queue event", "show", snap.Show, "type", typ, "err", err)
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
