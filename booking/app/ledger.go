package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/notify"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/booking/webhook"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/pgshard"
	"github.com/flashseat/flashseat/shared/shard"
	"github.com/flashseat/flashseat/shared/store"
)

// ledger is booking's PostgreSQL as the wiring hands it out: one database (postgres.Store) or the catalog and
// the shards of DATABASE_SHARDS (postgres.Shards), which answer alike.
type ledger interface {
	booking.Store
	booking.PaymentStore
	booking.WaitlistStore
	booking.ContactStore
	webhook.Store
	notify.Store
	Outbox() eventstream.Source
	// RecordBreakerOpening records that this replica's payment breaker opened, for the after-sale report.
	RecordBreakerOpening(ctx context.Context, at time.Time) error
}

// shardPools are the open shards of DATABASE_SHARDS, in the ring's order.
type shardPools struct {
	ring  *shard.Ring
	pools []*pgxpool.Pool
}

// openShards opens and migrates every shard of DATABASE_SHARDS; none configured is a zero shardPools. A shard
// that cannot be reached at start-up fails the start: the ring must be whole, and a booking replica that starts
// during one shard's outage waits for it like for DATABASE_URL.
func openShards(ctx context.Context, shards []shard.Shard, pooler string) (shardPools, error) {
	if len(shards) == 0 {
		return shardPools{}, nil
	}
	ring, err := shard.New(shard.Names(shards))
	if err != nil {
		return shardPools{}, err
	}
	sp := shardPools{ring: ring}
	for _, s := range shards {
		p, err := postgres.Open(ctx, s.URL, pooler)
		if err != nil {
			sp.close()
			return shardPools{}, err
		}
		sp.pools = append(sp.pools, p)
	}
	return sp, nil
}

func (sp shardPools) close() {
	for _, p := range sp.pools {
		p.Close()
	}
}

// ledger is the store over catalog and these shards. replica, if not nil, serves the catalog database's reads
// that may lag; the shards have none.
func (sp shardPools) ledger(catalog *pgxpool.Pool, replica *postgres.Replica, log *slog.Logger) (ledger, error) {
	if sp.ring == nil {
		return postgres.New(catalog).ReadFrom(replica), nil
	}
	sh, err := postgres.NewShards(catalog, sp.ring, sp.pools, log)
	if err != nil {
		return nil, err
	}
	sh.Catalog().ReadFrom(replica)
	return sh, nil
}

// openReplica opens DATABASE_READ_URL, a replica of primary, and decides once whether it is fresh enough to
// read from (a replica down at start-up only sends the reads to the primary). None configured: nil.
func openReplica(ctx context.Context, cfg Config, primary *pgxpool.Pool, log *slog.Logger) (*postgres.Replica, func(), error) {
	if cfg.DatabaseReadURL == "" {
		return nil, func() {}, nil
	}
	pool, err := postgres.OpenReplica(cfg.DatabaseReadURL, cfg.DatabasePooler)
	if err != nil {
		return nil, nil, err
	}
	r := postgres.NewReplica(pool, primary, cfg.DatabaseReadMaxLag, log)
	r.Check(ctx)
	return r, pool.Close, nil
}

// records places the queue's record and the audit log like the ledger: each show's rows on its shard.
func (sp shardPools) records(catalog *pgxpool.Pool) (*pgshard.Pools, error) {
	return pgshard.New(catalog, sp.ring, sp.pools)
}

// checks are the shards' probes for booking_store_up ("postgres_shard_NAME"). They are not readiness checks: a
// replica with one shard down still sells every other shard's shows, so it stays in service.
func (sp shardPools) checks() []store.Check {
	var out []store.Check
	if sp.ring == nil {
		return nil
	}
	for i, name := range sp.ring.Names() {
		out = append(out, store.Check{Name: "postgres_shard_" + name, Ping: sp.pools[i].Ping})
	}
	return out
}

// replicaChecks is the replica's probe for booking_store_up ("postgres_replica"), not a readiness check: its
// outage sends reads to the primary.
func replicaChecks(r *postgres.Replica) []store.Check {
	if r == nil {
		return nil
	}
	return []store.Check{{Name: "postgres_replica", Ping: r.Ping}}
}

// replicaFresh is booking_read_replica_fresh: 1 while the replica serves the reads that may lag, 0 while they go
// to the primary (the replica behind its bound or unreachable).
func replicaFresh(r *postgres.Replica) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "booking_read_replica_fresh",
		Help: "1 while DATABASE_READ_URL serves the reads that may lag, 0 while they go to the primary."},
		func() float64 {
			if r.Fresh() {
				return 1
			}
			return 0
		})
}
