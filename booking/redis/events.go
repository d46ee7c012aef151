package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/eventstream"
)

// DefaultEventStream is the one stream of lifecycle events (shared/eventstream's key).
const DefaultEventStream = eventstream.DefaultKey

// StreamConfig names the event stream and bounds it (see eventstream.Config).
type StreamConfig = eventstream.Config

// Stream appends lifecycle events to the Redis stream with bounded retention (the pay saga's recovery publishes
// through it; the outbox relays use eventstream.Relay).
type Stream struct {
	rdb redis.UniversalClient
	cfg StreamConfig
	now func() time.Time
}

// NewStream returns the stream of cfg on rdb.
func NewStream(rdb redis.UniversalClient, cfg StreamConfig) *Stream {
	if cfg.Key == "" {
		cfg.Key = DefaultEventStream
	}
	return &Stream{rdb: rdb, cfg: cfg, now: time.Now}
}

// Key is the stream's key.
func (s *Stream) Key() string { return s.cfg.Key }

// Publish appends e (XADD), trimming the stream as configured in the same command.
func (s *Stream) Publish(ctx context.Context, e booking.LifecycleEvent) error {
	return eventstream.Append(ctx, s.rdb, s.cfg, eventstream.Event(e), s.now())
}

// ConsumerConfig is one consumer of a consumer group.
type ConsumerConfig struct {
	Stream string // default DefaultEventStream
	Group  string // the group: each group sees every event; its consumers share them
	Name   string // this consumer, unique within the group (a process id)
	// MinIdle: entries delivered to a consumer and not acknowledged for this long are taken over (XAUTOCLAIM) by
	// whichever consumer of the group looks next: the redelivery after a consumer died, or after a handler
	// failed. Default 30s.
	MinIdle time.Duration
	Block   time.Duration // how long one XREADGROUP waits for new entries; default 2s
	Count   int64         // entries per read; default 100
	// MaxDeliveries: an entry taken over after this many deliveries (its handler failed every time, or every
	// consumer holding it died) is moved to the dead-letter stream and acknowledged instead of handled again, so
	// one poison event cannot hold a group's pending list forever. Default 20 (with MinIdle 30s, about ten
	// minutes of failures).
	MaxDeliveries int64
	// DeadLetter is the dead-letter stream's key; default Stream + ":dead-letter" (the same hash tag, so the
	// same Redis Cluster slot when Stream has one).
	DeadLetter string
	// OnDeadLetter is told of every entry moved to the dead-letter stream (metrics); nil is fine.
	OnDeadLetter func(d DeadLetter)
	Logger       *slog.Logger
}

// Consumer reads the event stream through a consumer group: every event at least once, an event acknowledged
// (XACK) only after its handler succeeded.
type Consumer struct {
	rdb redis.UniversalClient
	cfg ConsumerConfig
	log *slog.Logger
}

// NewConsumer returns a consumer; Run starts it.
func NewConsumer(rdb redis.UniversalClient, cfg ConsumerConfig) *Consumer {
	if cfg.Stream == "" {
		cfg.Stream = DefaultEventStream
	}
	if cfg.MinIdle <= 0 {
		cfg.MinIdle = 30 * time.Second
	}
	if cfg.Block <= 0 {
		cfg.Block = 2 * time.Second
	}
	if cfg.Count <= 0 {
		cfg.Count = 100
	}
	if cfg.MaxDeliveries <= 0 {
		cfg.MaxDeliveries = 20
	}
	if cfg.DeadLetter == "" {
		cfg.DeadLetter = cfg.Stream + ":dead-letter"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Consumer{rdb: rdb, cfg: cfg, log: cfg.Logger.With("group", cfg.Group, "consumer", cfg.Name)}
}

// Handler handles one event. An error leaves the event unacknowledged: it comes back after MinIdle.
type Handler func(ctx context.Context, e booking.LifecycleEvent) error

// EnsureGroup creates the group at the start of the stream (and the stream if need be), so a group made after
// events were published still reads them: nothing published with no consumer running is lost, retention aside.
func (c *Consumer) EnsureGroup(ctx context.Context) error {
	err := c.rdb.XGroupCreateMkStream(ctx, c.cfg.Stream, c.cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("redis: create group %s: %w", c.cfg.Group, err)
	}
	return nil
}

// Run consumes until ctx ends: each round first takes over entries idle too long (another consumer's, or its
// own failures'), then reads new ones. Redis errors are retried after a pause (a lost group is recreated).
func (c *Consumer) Run(ctx context.Context, h Handler) {
	var logged time.Time
	for ctx.Err() == nil {
		err := c.EnsureGroup(ctx)
		if err == nil {
			err = c.Round(ctx, h)
		}
		if err != nil && ctx.Err() == nil {
			if time.Since(logged) > 30*time.Second { // an outage fails every round: say so now and then
				c.log.WarnContext(ctx, "event consumer", "err", err)
				logged = time.Now()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// Round does one claim-then-read pass. Exposed for tests that want to step a consumer.
func (c *Consumer) Round(ctx context.Context, h Handler) error {
	if err := c.claim(ctx, h); err != nil {
		return err
	}
	res, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: c.cfg.Group, Consumer: c.cfg.Name,
		Streams: []string{c.cfg.Stream, ">"}, Count: c.cfg.Count, Block: c.cfg.Block}).Result()
	if errors.Is(err, redis.Nil) || ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("redis: xreadgroup: %w", err)
	}
	for _, s := range res {
		c.handle(ctx, h, s.Messages)
	}
	return nil
}

// claim takes over every entry pending longer than MinIdle, a page at a time.
func (c *Consumer) claim(ctx context.Context, h Handler) error {
	start := "0-0"
	for range 100 { // bounded: a round must also get to new entries
		msgs, next, err := c.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: c.cfg.Stream, Group: c.cfg.Group,
			Consumer: c.cfg.Name, MinIdle: c.cfg.MinIdle, Start: start, Count: c.cfg.Count}).Result()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("redis: xautoclaim: %w", err)
		}
		c.handle(ctx, h, c.sift(ctx, msgs))
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
	return nil
}

func (c *Consumer) handle(ctx context.Context, h Handler, msgs []redis.XMessage) {
	var done []string
	for _, m := range msgs {
		if ctx.Err() != nil {
			break
		}
		ev, err := eventstream.Decode(m)
		e := booking.LifecycleEvent(ev)
		if err != nil {
			// Never handleable: set aside rather than redelivered forever (acknowledged by deadLetter).
			c.deadLetter(ctx, m, reasonUndecodable, 1)
			continue
		}
		if err := h(ctx, e); err != nil {
			if ctx.Err() == nil {
				c.log.WarnContext(ctx, "event handler failed; redelivered later", "event", e.ID, "type", e.Type, "err", err)
			}
			continue
		}
		done = append(done, m.ID)
	}
	if len(done) == 0 {
		return
	}
	// Acknowledged even when ctx just ended: the work is done, and a redelivery would only repeat it.
	if err := c.rdb.XAck(context.WithoutCancel(ctx), c.cfg.Stream, c.cfg.Group, done...).Err(); err != nil {
		c.log.WarnContext(ctx, "xack", "err", err)
	}
}
