// Package app wires the edge: configuration, Redis, the admission keys, the fiber server with its policies, the
// waiting room's routes and the proxy to booking. Run serves until its context is cancelled; main and end-to-end
// tests both call it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/edge"
	edgehttp "github.com/flashseat/flashseat/edge/http"
	"github.com/flashseat/flashseat/edge/ratelimit"
	"github.com/flashseat/flashseat/shared/admission"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/listener"
	"github.com/flashseat/flashseat/shared/infra/migrate"
	"github.com/flashseat/flashseat/shared/infra/ops"
	"github.com/flashseat/flashseat/shared/infra/pgshard"
	"github.com/flashseat/flashseat/shared/shard"
	"github.com/flashseat/flashseat/shared/store"
	"github.com/flashseat/flashseat/shared/token"
)

// Edge is what the edge hands the waiting room when it mounts its routes (edge/app/waitroom.go).
type Edge struct {
	// Router serves the waiting room's routes behind the edge's request ids, rate limits (class queue for
	// /queue/... and the JWKS) and gate, and before the catch-all proxy to booking.
	Router fiber.Router
	Redis  redis.UniversalClient
	// Postgres holds the records: queue settings and admissions (Queues), the waiting room's own, the audit log.
	// DBs places each show's rows of them on its shard of DATABASE_SHARDS (Postgres alone when there are none).
	Postgres *pgxpool.Pool
	DBs      *pgshard.Pools
	// Queues keeps every show's queue settings and admissions: PostgreSQL the record, Redis the cache.
	Queues *admission.Keeper
	Audit  *audit.Log
	// Issuer signs admission tokens with the configured key; its JWKS is current plus previous keys.
	Issuer *token.Issuer
	// Gate is the admission gate the edge enforces; Forget a show on a settings change.
	Gate *admission.Gate
	// Users verifies user tokens (Bearer, or ?access_token= for EventSource).
	Users    *token.UserVerifier
	Registry *prometheus.Registry
	Log      *slog.Logger
	Config   Config
	// Work is cancelled once the server has drained; long-running workers stop on it and are waited for
	// (Workers) before Redis is closed.
	Work    context.Context
	Workers *sync.WaitGroup
}

// Run serves the edge on cfg.Addr until ctx is cancelled, then drains in-flight requests for at most
// cfg.ShutdownTimeout, stops workers and closes Redis last. ready, if not nil, receives the bound address
// (useful with ":0").
func Run(ctx context.Context, cfg Config, log *slog.Logger, ready func(addr string)) error {
	if cfg.AdmissionKeyGenerated {
		log.Warn("ADMISSION_SIGNING_KEY not set: generated an admission key for this process only; " +
			"replicas will not accept each other's tokens")
	}
	if cfg.AuthSecretGenerated {
		log.Warn("AUTH_SECRET not set: generated one for this process only; user tokens from booking will not verify")
	}
	rdb, err := driver.OpenRedis(cfg.RedisURL, cfg.RedisClusterAddrs, cfg.RedisPoolSize)
	if err != nil {
		return err
	}
	defer rdb.Close()
	pool, err := openPostgres(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	dbs, shardChecks, closeShards, err := openShards(ctx, cfg, pool)
	if err != nil {
		return err
	}
	defer closeShards()
	dbs = dbs.WithLog(log)
	queues := admission.NewKeeper(admpostgres.NewSharded(dbs), admredis.New(rdb), log)
	if err := queues.SetDefaultMode(cfg.Waitroom.Mode); err != nil {
		return err
	}
	auditLog := audit.NewSharded(dbs)

	issuer := token.NewIssuer(cfg.AdmissionKey, cfg.AdmissionPrevious...).WithPrevious(cfg.AdmissionPreviousSigning...)
	keys := token.NewStaticKeys(issuer.Keys()...)
	gate := admission.NewGate(queues, keys, cfg.TokenLeeway)
	users := token.NewUserVerifier(cfg.AuthSecret, cfg.AuthExternal, cfg.TokenLeeway)
	limits := map[edge.Class]edgehttp.Limits{}
	for class, lc := range cfg.Limits {
		limits[class] = edgehttp.Limits{
			PerIP:   ratelimit.New(lc.PerIP, lc.PerIPBurst, cfg.RateMaxKeys),
			PerUser: ratelimit.New(lc.PerUser, lc.PerUserBurst, cfg.RateMaxKeys),
		}
	}

	reg := prometheus.NewRegistry()
	stores := []store.Check{
		{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		{Name: "postgres", Ping: func(ctx context.Context) error { return pool.Ping(ctx) }},
	}
	// A shard is a store the metric reports but not a readiness check: with one shard down the edge still
	// admits every other shard's shows, so it stays in service.
	reg.MustRegister(ops.StoreUp("edge_store_up", append(slices.Clone(stores), shardChecks...)), ops.RedisPool("edge", rdb))
	srv := edgehttp.New(edgehttp.Config{
		Proxy: edgehttp.ProxyConfig{
			Target:          cfg.BookingURL,
			DialTimeout:     cfg.DialTimeout,
			HeaderTimeout:   cfg.HeaderTimeout,
			Timeout:         cfg.UpstreamTimeout,
			IdleConnTimeout: cfg.IdleConnTimeout,
			MaxIdleConns:    cfg.MaxIdleConns,
			StreamHeartbeat: cfg.StreamHeartbeat,
		},
		Trusted:           cfg.TrustedProxies,
		Registry:          reg,
		Log:               log,
		BodyLimit:         cfg.BodyLimit,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		Ready:             stores,
		Users:             users,
		Gate:              gate,
		Admission:         gate.Verifier(), // the pay route checks tokens against the gate's cache of verified ones
		Limits:            limits,
		RateExempt:        cfg.RateExempt,
	})

	work, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var workers sync.WaitGroup
	e := &Edge{Router: srv.App, Redis: rdb, Postgres: pool, DBs: dbs, Queues: queues, Audit: auditLog, Issuer: issuer,
		Gate: gate, Users: users, Registry: reg, Log: log, Config: cfg, Work: work, Workers: &workers}
	workers.Add(2)
	go func() { defer workers.Done(); forgetOnChange(work, admredis.New(rdb), gate) }()
	// The cache is rebuilt from the record when Redis lost it: checked every 2 s, every show re-checked a minute.
	go func() { defer workers.Done(); queues.Run(work, 2*time.Second, time.Minute) }()

	// The waiting room mounts its routes here, behind the middleware and before the catch-all proxy.
	if err := mountWaitroom(ctx, e); err != nil {
		stopWork()
		workers.Wait()
		return fmt.Errorf("edge: %w", err)
	}

	srv.Forward()

	waitOps, err := ops.Start(work, ops.Config{Addr: cfg.OpsAddr, Gatherer: reg, Log: log, Bound: cfg.OpsBound,
		Ready: func(ctx context.Context) error {
			_, err := store.Probe(ctx, append(stores, store.Check{Name: "booking", Ping: srv.Proxy().Healthy}))
			return err
		}})
	if err != nil {
		stopWork()
		workers.Wait()
		return fmt.Errorf("edge: OPS_ADDR: %w", err)
	}
	defer waitOps()

	// Every held waiting-room stream is a descriptor: a crowd reaching the open-file limit pauses accepting
	// instead of ending the edge and every stream it holds (package listener).
	ln, err := listener.Listen(cfg.Addr, log)
	if err != nil {
		stopWork()
		workers.Wait()
		return fmt.Errorf("edge: listen %s: %w", cfg.Addr, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("edge listening", "addr", ln.Addr().String(), "upstream", cfg.BookingURL.String(),
		"admissionKid", cfg.AdmissionKey.ID)
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err = <-served:
		err = fmt.Errorf("edge: serve: %w", err)
	case <-ctx.Done():
		log.Info("edge shutting down", "drain", cfg.ShutdownTimeout.String())
		drain, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		err = srv.Shutdown(drain)
		cancel()
		// fasthttp closes only the listeners its Serve has registered. A stop that comes before the Serve
		// goroutine has run found none, and Serve would then accept for ever: closing ln makes it return.
		ln.Close()
		if serr := <-served; serr != nil && !errors.Is(serr, net.ErrClosed) {
			err = errors.Join(err, serr)
		}
	}
	stopWork()
	workers.Wait()
	return err
}

// forgetOnChange drops a show's cached queue state as soon as an operator changes it, so this replica gates by
// the new setting at once rather than within the cache's second.
func forgetOnChange(ctx context.Context, cache *admredis.Cache, gate *admission.Gate) {
	for show := range cache.Changes(ctx) {
		gate.Forget(show)
	}
}

// openPostgres connects to DATABASE_URL and creates the records' tables if needed (idempotent; booking creates
// the same ones, whichever starts first).
func openPostgres(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	return openDatabase(ctx, "DATABASE_URL", cfg.DatabaseURL, cfg.DatabasePooler)
}

// openShards opens and migrates every shard of DATABASE_SHARDS and places shows on them; with none, main keeps
// everything. A shard that cannot be reached at start-up fails the start, as booking's does: the ring must be
// whole. checks are the shards' probes for edge_store_up ("postgres_shard_NAME").
func openShards(ctx context.Context, cfg Config, main *pgxpool.Pool) (dbs *pgshard.Pools, checks []store.Check, closeAll func(), err error) {
	var pools []*pgxpool.Pool
	closeAll = func() {
		for _, p := range pools {
			p.Close()
		}
	}
	if len(cfg.DatabaseShards) == 0 {
		return pgshard.Single(main), nil, closeAll, nil
	}
	ring, err := shard.New(shard.Names(cfg.DatabaseShards))
	if err != nil {
		return nil, nil, closeAll, err
	}
	for _, sh := range cfg.DatabaseShards {
		p, err := openDatabase(ctx, "DATABASE_SHARDS shard "+sh.Name, sh.URL, cfg.DatabasePooler)
		if err != nil {
			closeAll()
			return nil, nil, func() {}, err
		}
		pools = append(pools, p)
		checks = append(checks, store.Check{Name: "postgres_shard_" + sh.Name, Ping: p.Ping})
	}
	dbs, err = pgshard.New(main, ring, pools)
	return dbs, checks, closeAll, err
}

func openDatabase(ctx context.Context, what, url, pooler string) (*pgxpool.Pool, error) {
	// 8 connections: the edge's hot paths never touch PostgreSQL (operators, restores, one write per tick).
	pcfg, err := driver.PostgresConfig(url, pooler, 8)
	if err != nil {
		return nil, fmt.Errorf("edge: %s: %w", what, err)
	}
	start, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(start, pcfg)
	if err != nil {
		return nil, fmt.Errorf("edge: postgres: %w", err)
	}
	// Every table, the edge's and booking's: whichever service starts first creates them.
	if err := migrate.Up(start, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("edge: postgres: %w", err)
	}
	return pool, nil
}
