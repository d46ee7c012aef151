package booking

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"
)

// Lifecycle event types. Each is written in the transaction that made it true (the outbox) and relayed at least
// once to the event stream; docs/EVENTS.md documents each one's fields. Consumers drop duplicates by LifecycleEvent.ID.
const (
	EventHeld              = "booking.held"
	EventExpired           = "booking.expired"
	EventCancelled         = "booking.cancelled"
	EventConfirmed         = "booking.confirmed"
	EventRefunded          = "booking.refunded"
	EventPaymentAuthorized = "payment.authorized"
	EventPaymentDeclined   = "payment.declined"
	EventCheckedIn         = "ticket.checked_in"
	EventWaitlistOffered   = "waitlist.offered"
	EventWaitlistAccepted  = "waitlist.accepted"
	EventWaitlistLapsed    = "waitlist.lapsed"
	EventQueueOpened       = "queue.opened"
	EventQueuePaused       = "queue.paused"
	EventQueueSoldOut      = "queue.sold_out"
	EventQueueClosed       = "queue.closed"
)

const (
	outboxEventIDPrefix     = "ob_"
	defaultRelayEvery       = 100 * time.Millisecond
	defaultRelayBatch       = 500
	relayErrorLogSuppressed = 30 * time.Second
)

// LifecycleEvent is one lifecycle event as the stream carries it.
type LifecycleEvent struct {
	// ID is the event's dedupe id, the same on every delivery of the event: "ob_<outbox id>" for events from the
	// outbox. A consumer that has seen an ID may drop the event.
	ID      string
	Type    string
	ShowID  string
	Subject string // what the event is about: a booking id, a ticket id, a waitlist entry
	At      time.Time
	Data    json.RawMessage // the type's fields (docs/EVENTS.md), always a JSON object with showId
}

// Lifecycle turns an outbox row into the stream's event. The show comes from the payload, which every event type
// carries, so the outbox table needs no column of its own for it.
func (e OutboxEvent) Lifecycle() LifecycleEvent {
	var p struct {
		ShowID string `json:"showId"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	return LifecycleEvent{ID: outboxEventIDPrefix + strconv.FormatInt(e.ID, 10), Type: e.Type, ShowID: p.ShowID,
		Subject: e.AggregateID, At: e.CreatedAt.UTC(), Data: json.RawMessage(e.Payload)}
}

// EventPublisher appends events to the durable stream (booking/redis.Stream). An error means it may not have.
type EventPublisher interface {
	Publish(ctx context.Context, e LifecycleEvent) error
}

// OutboxStore hands unpublished outbox rows to a relay; booking/postgres implements it (RelayOutbox is the same
// method PaymentStore names).
type OutboxStore interface {
	RelayOutbox(ctx context.Context, limit int, publish func(OutboxEvent) error) (int, error)
	// PruneOutbox deletes up to limit rows published before before, and returns how many it deleted.
	PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error)
}

// Relay moves the outbox into the event stream: each row is published, and only then marked published, in a
// transaction that other replicas' relays skip (FOR UPDATE SKIP LOCKED). An event is therefore published at
// least once and in outbox order per relay; a crash between the publish and the commit publishes it again with
// the same ID, which consumers drop.
//
// Published rows are kept for Keep (default 72h: the stream holds the events; the rows are for looking back) and
// then deleted, an hour's worth of passes apart, so the table does not grow with every hold ever made.
type Relay struct {
	store OutboxStore
	pub   EventPublisher
	every time.Duration
	log   *slog.Logger
	kick  chan struct{}
	// Keep is how long published rows stay in the outbox; set before Run.
	Keep time.Duration
	// OnRelayed is told how many events each pass published (metrics); nil is fine. Set before Run.
	OnRelayed func(n int)
}

// NewRelay returns a relay polling every every (default 100ms).
func NewRelay(store OutboxStore, pub EventPublisher, every time.Duration, log *slog.Logger) *Relay {
	if every <= 0 {
		every = defaultRelayEvery
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{store: store, pub: pub, every: every, log: log, kick: make(chan struct{}, 1), Keep: 72 * time.Hour}
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
		if n == defaultRelayBatch {
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
		n, err := r.store.PruneOutbox(ctx, before, 5000)
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
	n, err := r.store.RelayOutbox(ctx, defaultRelayBatch, func(e OutboxEvent) error {
		pubErr = r.pub.Publish(ctx, e.Lifecycle())
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
