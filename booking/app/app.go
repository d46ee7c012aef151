package app

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/admission"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/ops"
	"github.com/flashseat/flashseat/shared/pulse"
	"github.com/flashseat/flashseat/shared/store"
	"github.com/flashseat/flashseat/shared/token"
)

// OpenRedis connects to the configured Redis: a cluster client when cluster addresses are given.
func OpenRedis(ctx context.Context, cfg Config) (goredis.UniversalClient, error) {
	rdb, err := driver.OpenRedis(cfg.RedisURL, cfg.RedisClusterAddrs, cfg.RedisPoolSize)
	if err != nil {
		return nil, err
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	return rdb, nil
}

// notifyCheckInterval is how often booking makes sure Redis still publishes key expiries (a restarted Redis
// forgets a CONFIG SET): the longest a restart leaves expired holds to the reconciler's slower sweep.
const notifyCheckInterval = 2 * time.Second

// Run serves booking until ctx is cancelled, then shuts down gracefully: it stops accepting, drains in-flight
// requests for up to ShutdownTimeout, stops the workers and closes the stores last. ready is called with the
// bound address once the server listens.
func Run(ctx context.Context, cfg Config, log *slog.Logger, ready func(addr string)) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = bookinghttp.WithRequestIDs(log)
	if cfg.GCPercent != 0 {
		debug.SetGCPercent(cfg.GCPercent)
	}
	if cfg.AdminTokenGenerated {
		log.Warn("ADMIN_TOKEN is not set: the operator API uses a random token nobody knows; set ADMIN_TOKEN")
	}
	if cfg.AuthSecretGenerated {
		log.Warn("AUTH_SECRET is not set: user tokens are signed with a random secret, valid only in this process")
	}
	startCtx, cancelStart := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStart()
	pool, err := postgres.Open(startCtx, cfg.DatabaseURL, cfg.DatabasePooler)
	if err != nil {
		return err
	}
	defer pool.Close()
	shards, err := openShards(startCtx, cfg.DatabaseShards, cfg.DatabasePooler)
	if err != nil {
		return err
	}
	defer shards.close()
	replica, closeReplica, err := openReplica(startCtx, cfg, pool, log)
	if err != nil {
		return err
	}
	defer closeReplica()
	rdb, err := OpenRedis(startCtx, cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()

	dbs, err := shards.records(pool)
	if err != nil {
		return err
	}
	dbs = dbs.WithLog(log)
	auditLog := audit.NewSharded(dbs)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := bookinghttp.NewMetrics(reg)
	checks := []store.Check{
		{Name: "postgres", Ping: pool.Ping},
		{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
	}
	storesUp := func(ctx context.Context) error { _, err := store.Probe(ctx, checks); return err }

	var keys token.KeySource = cfg.AdmissionKeys
	var remote *token.RemoteKeys // the edge's keys, fetched by a worker below
	if keys == nil {
		remote = token.NewRemoteKeys(cfg.AdmissionJWKSURL, nil)
		keys = remote
	}
	// Queue settings and admissions: PostgreSQL the record, Redis the cache (rebuilt by queues.Run when lost).
	queues := admission.NewKeeper(admpostgres.NewSharded(dbs), admredis.New(rdb), log)
	if err := queues.SetDefaultMode(cfg.QueueMode); err != nil {
		return err
	}
	gate := admission.NewGate(queues, keys, cfg.TokenLeeway)
	pg, err := shards.ledger(pool, replica, log)
	if err != nil {
		return err
	}
	locks := redis.New(rdb)
	svc := booking.New(pg, locks, gate, booking.Config{
		HoldTTL:        cfg.HoldTTL,
		MaxSeats:       cfg.MaxSeats,
		ReconcileEvery: cfg.ReconcileInterval,
		FanRetention:   cfg.ReportFanRetention,
		Logger:         log,
		OnHold:         metrics.Holds.Inc,
		OnConflict:     metrics.Conflicts.Inc,
		OnExpired:      func(n int) { metrics.Expired.Add(float64(n)) },
	})
	if cfg.SeedDemo {
		show, err := SeedDemo(startCtx, pool, svc)
		if err != nil {
			return fmt.Errorf("seed demo: %w", err)
		}
		log.Info("demo show ready", "show", show)
	}

	pays, err := newPayments(cfg, svc, pg, pg.RecordBreakerOpening, reg, log)
	if err != nil {
		return err
	}
	defer pays.Close() // after the workers below: sagas still in flight stop where they are, for the next start

	ev, err := newEventing(cfg, svc, pg, rdb, auditLog, reg, log)
	if err != nil {
		return err
	}

	var guests *token.UserIssuer
	if cfg.AuthGuest {
		if guests, err = token.NewUserIssuer(cfg.AuthSecret); err != nil {
			return err
		}
	}
	hub := redis.NewHub(rdb)
	defer hub.Close()
	window := pulse.NewWindow(5 * time.Second)
	passes, err := newPasses(cfg)
	if err != nil {
		return err
	}
	srv := bookinghttp.New(bookinghttp.Config{
		Service:       svc,
		Checkout:      pays,
		Passes:        passes,
		Gateway:       cfg.Payment.Public(),
		Audit:         auditLog,
		Waitlist:      ev.waitlist,
		Users:         token.NewUserVerifier(cfg.AuthSecret, cfg.AuthExternal, cfg.TokenLeeway),
		Guests:        guests,
		SecureCookies: cfg.CookieSecure,
		AdminToken:    cfg.AdminToken,
		StaffToken:    cfg.StaffToken,
		Feed:          hub,
		WaitlistFeed:  ev.waitlistFeed,
		Webhooks:      ev.webhooks,
		Contacts:      ev.contacts,
		Logger:        log,
		Metrics:       metrics,
		BodyLimit:     cfg.BodyLimit,
		SeatStreams:   bookinghttp.StreamCaps{PerPrefix: cfg.SeatStreamsPerPrefix},
		Ready:         checks,
		Pulse:         window,
	})
	reg.MustRegister(bookinghttp.NewShowCollector(svc),
		ops.StoreUp("booking_store_up", append(slices.Clip(checks), append(shards.checks(), replicaChecks(replica)...)...)),
		ops.RedisPool("booking", rdb))

	workers, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	// The operations server stops with the workers (the deferred stop below runs first).
	waitOps, err := ops.Start(workers, ops.Config{Addr: cfg.OpsAddr, Gatherer: reg, Ready: storesUp, Log: log,
		Bound: cfg.OpsBound})
	if err != nil {
		stopWorkers()
		return fmt.Errorf("booking: OPS_ADDR: %w", err)
	}
	defer waitOps()
	var wg sync.WaitGroup
	ev.start(workers, &wg)
	wg.Add(10)
	go func() { defer wg.Done(); publishPulse(workers, rdb, cfg.PulseNamespace, window, pays, log) }()
	go func() { defer wg.Done(); keepReports(workers, svc, cfg.ReportSweep, log) }()
	go func() { defer wg.Done(); svc.Run(workers) }()
	go func() { defer wg.Done(); queues.Run(workers, 2*time.Second, time.Minute) }()
	go func() {
		defer wg.Done()
		for show := range admredis.New(rdb).Changes(workers) {
			gate.Forget(show) // an operator's change applies here at once, not within the gate's second
		}
	}()
	// Expired holds are released as Redis reports them; a Redis that restarted has forgotten to report them.
	go func() { defer wg.Done(); redis.KeepNotifications(workers, rdb, notifyCheckInterval, log) }()
	go func() { defer wg.Done(); redis.WatchShows(workers, rdb, svc.ShowChanged) }()
	go func() { defer wg.Done(); redis.WatchSeatEvents(workers, rdb, svc.SeatChanged) }()
	go func() { defer wg.Done(); pays.Run(workers) }()
	if replica != nil {
		reg.MustRegister(replicaFresh(replica))
		wg.Go(func() { replica.Watch(workers) })
	}
	go func() {
		defer wg.Done()
		redis.WatchExpiries(workers, rdb, func(show, seat string) { svc.SeatExpired(workers, show, seat) })
	}()
	if remote != nil {
		// The edge's keys are fetched before the first admitted fan's hold needs them, not while it waits; and,
		// booking being up before the edge, tried again within a second of each failure until the edge answers,
		// so those holds are refused (503) for at most about a second once it does.
		wg.Go(func() { _ = remote.Prefetch(workers) })
	}
	defer func() { stopWorkers(); wg.Wait() }()

	served := make(chan error, 1)
	go func() {
		served <- srv.Listen(cfg.Addr, func(addr string) {
			log.Info("booking listening", "addr", addr)
			if ready != nil {
				ready(addr)
			}
		})
	}()
	select {
	case err := <-served:
		return fmt.Errorf("booking: serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("booking shutting down")
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Error("shutdown", "err", err)
	}
	if err := <-served; err != nil {
		return fmt.Errorf("booking: serve: %w", err)
	}
	return nil
}
