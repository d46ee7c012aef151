package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/notify"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/booking/webhook"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/env"
)

// EventsConfig is the lifecycle event stream's part of Config.
type EventsConfig struct {
	// Stream is the Redis stream key (EVENTS_STREAM, default redis.DefaultEventStream).
	Stream string
	// MaxLen bounds the stream to about this many entries (EVENTS_MAXLEN, default 100000); MaxAge, when set,
	// bounds it by age instead (EVENTS_MAX_AGE, e.g. 72h). A consumer group further behind loses what was trimmed.
	MaxLen int64
	MaxAge time.Duration
	// RelayInterval is how often the outbox is polled for unpublished events (EVENTS_RELAY_INTERVAL, default
	// 100ms); a commit in this process also wakes the relay at once.
	RelayInterval time.Duration
	// ClaimIdle is how long an event may stay unacknowledged by a consumer before another consumer of its group
	// takes it over (EVENTS_CLAIM_IDLE, default 30s): the redelivery after a replica died mid-event.
	ClaimIdle time.Duration
	// OutboxKeep is how long published outbox rows are kept before they are deleted (EVENTS_OUTBOX_KEEP, default
	// 72h).
	OutboxKeep time.Duration
	// MaxDeliveries is how many times a consumer group tries an event before moving it to the dead-letter stream
	// (EVENTS_MAX_DELIVERIES, default 20: with EVENTS_CLAIM_IDLE 30s, about ten minutes of failures).
	MaxDeliveries int64
}

func loadEventsConfig(r *env.Reader) EventsConfig {
	c := EventsConfig{
		Stream:        r.String("EVENTS_STREAM", redis.DefaultEventStream),
		MaxLen:        int64(r.IntIn("EVENTS_MAXLEN", 100_000, 100, 1<<40)),
		RelayInterval: r.PositiveDuration("EVENTS_RELAY_INTERVAL", 100*time.Millisecond),
		ClaimIdle:     r.PositiveDuration("EVENTS_CLAIM_IDLE", 30*time.Second),
		OutboxKeep:    r.PositiveDuration("EVENTS_OUTBOX_KEEP", 72*time.Hour),
		// Zero, as in the edge, which appends to the same stream: no age limit.
		MaxAge:        r.Duration("EVENTS_MAX_AGE", 0),
		MaxDeliveries: int64(r.IntIn("EVENTS_MAX_DELIVERIES", 20, 1, 1000)),
	}
	if c.MaxAge > 0 && c.MaxAge < time.Minute {
		r.Fail("EVENTS_MAX_AGE: want at least 1m, got %s", c.MaxAge)
	}
	return c
}

// streamConfig is the event stream of cfg.
func streamConfig(cfg Config) eventstream.Config {
	return eventstream.Config{Key: cfg.Events.Stream, MaxLen: cfg.Events.MaxLen, MaxAge: cfg.Events.MaxAge}
}

// consumerName names this process within consumer groups: host and pid, so a restarted process is a new
// consumer and its predecessor's unacknowledged events are taken over after ClaimIdle.
func consumerName() string {
	host, _ := os.Hostname()
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + booking.NewID("")[:6]
}

// newConsumer is a consumer of group on the configured stream; entries it gives up on go to the dead-letter
// stream and are counted.
func (e *eventing) newConsumer(group string) *redis.Consumer {
	return redis.NewConsumer(e.rdb, redis.ConsumerConfig{Stream: e.cfg.Events.Stream, Group: group,
		Name: consumerName(), MinIdle: e.cfg.Events.ClaimIdle, MaxDeliveries: e.cfg.Events.MaxDeliveries,
		Logger: e.log, OnDeadLetter: func(d redis.DeadLetter) { e.m.deadLettered.WithLabelValues(d.Group).Inc() }})
}

// eventing is everything fed by the event stream: the outbox relay that fills it and the consumer groups that
// read it (the waitlist's offers), with what the HTTP server needs of them.
type eventing struct {
	cfg          Config
	m            *eventMetrics
	rdb          goredis.UniversalClient
	log          *slog.Logger
	relay        *eventstream.Relay
	waitlist     *booking.Waitlist
	waitlistFeed *redis.Hub
	webhooks     *webhook.Service
	fans         *notify.Fans // nil: notifications off
	contacts     *booking.Contacts
	audit        *audit.Log // nil: transfers are not audited
}

func newEventing(cfg Config, svc *booking.Service, store ledger, rdb goredis.UniversalClient, auditLog *audit.Log,
	reg prometheus.Registerer, log *slog.Logger) (*eventing, error) {
	m := newEventMetrics()
	if reg != nil {
		if err := m.register(reg); err != nil {
			return nil, err
		}
	}
	fans, err := newFans(cfg, svc, store, log)
	if err != nil {
		return nil, err
	}
	if fans != nil {
		fans.OnSent = func(kind string, err error) { m.notifications.WithLabelValues(kind, outcome(err)).Inc() }
	}
	relay := eventstream.NewRelay(store.Outbox(), rdb, streamConfig(cfg), cfg.Events.RelayInterval, log)
	relay.Keep = cfg.Events.OutboxKeep
	relay.OnRelayed = func(n int) { m.relayed.Add(float64(n)) }
	var codes booking.CodeMailer // a nil *Fans is no mailer
	if fans != nil {
		codes = fans
	}
	return &eventing{cfg: cfg, m: m, rdb: rdb, log: log, fans: fans, contacts: booking.NewContacts(store, codes),
		relay: relay, audit: auditLog,
		waitlist: booking.NewWaitlist(svc, store, booking.WaitlistConfig{OfferTTL: cfg.Waitlist.OfferTTL,
			PassLimit: cfg.Waitlist.PassLimit, SweepEvery: cfg.Waitlist.SweepEvery,
			Signal: redis.NewWaitlistSignal(rdb), Logger: log,
			OnOffer:    func() { m.offers.WithLabelValues("OFFERED").Inc() },
			OnOfferEnd: func(s booking.WaitlistStatus) { m.offers.WithLabelValues(string(s)).Inc() }}),
		waitlistFeed: redis.NewWaitlistHub(rdb),
		webhooks: webhook.New(store, webhook.Config{Timeout: cfg.Webhooks.Timeout, MaxAttempts: cfg.Webhooks.MaxAttempts,
			RetryBase: cfg.Webhooks.RetryBase, AllowPrivate: cfg.Webhooks.AllowPrivate, Logger: log, OnAttempt: func(r webhook.Result) {
				switch {
				case r.OK:
					m.webhooks.WithLabelValues("delivered").Inc()
				case r.GiveUp:
					m.webhooks.WithLabelValues("failed").Inc()
				default:
					m.webhooks.WithLabelValues("retry").Inc()
				}
			}}),
	}, nil
}

// eventMetrics count what the event stream's workers do.
type eventMetrics struct {
	relayed       prometheus.Counter
	offers        *prometheus.CounterVec
	webhooks      *prometheus.CounterVec
	notifications *prometheus.CounterVec
	deadLettered  *prometheus.CounterVec
}

func newEventMetrics() *eventMetrics {
	return &eventMetrics{
		relayed: prometheus.NewCounter(prometheus.CounterOpts{Name: "booking_events_relayed_total",
			Help: "Outbox events appended to the event stream by this replica."}),
		offers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "booking_waitlist_offers_total",
			Help: "Waitlist offers by what happened: OFFERED (made), ACCEPTED, LAPSED."}, []string{"status"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "booking_webhook_attempts_total",
			Help: "Operator webhook delivery attempts by outcome: delivered, retry, failed (gave up)."}, []string{"outcome"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "booking_notifications_total",
			Help: "Fan notifications by kind and outcome: sent, unreachable (no notifier applies), error."},
			[]string{"kind", "outcome"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "booking_events_dead_lettered_total",
			Help: "Events a consumer group gave up on (EVENTS_MAX_DELIVERIES deliveries, or not an event) and moved to the dead-letter stream."},
			[]string{"group"}),
	}
}

func (m *eventMetrics) register(reg prometheus.Registerer) error {
	return errors.Join(reg.Register(m.relayed), reg.Register(m.offers), reg.Register(m.webhooks),
		reg.Register(m.notifications), reg.Register(m.deadLettered))
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "sent"
	case errors.Is(err, notify.ErrNoAddress):
		return "unreachable"
	}
	return "error"
}

// Consumer groups of the event stream.
const (
	groupWaitlist = "waitlist"
	groupWebhooks = "webhooks"
	groupNotify   = "notify"
	groupAudit    = "audit"
)

// start runs the workers until ctx ends; wg tells when they have.
func (e *eventing) start(ctx context.Context, wg *sync.WaitGroup) {
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	run(func() { e.relay.Run(ctx) })
	run(func() { e.waitlist.Run(ctx) })
	run(func() { e.newConsumer(groupWaitlist).Run(ctx, e.waitlist.HandleEvent) })
	run(func() { e.webhooks.Run(ctx) })
	run(func() { e.newConsumer(groupWebhooks).Run(ctx, e.webhooks.HandleEvent) })
	if e.audit != nil {
		run(func() { e.newConsumer(groupAudit).Run(ctx, recordTransfers(e.audit)) })
	}
	if e.fans != nil {
		run(func() { e.newConsumer(groupNotify).Run(ctx, e.fans.HandleEvent) })
	}
	run(func() { <-ctx.Done(); e.waitlistFeed.Close() })
}
