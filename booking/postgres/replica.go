package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/infra/driver"
)

// Replica is a streaming replica of a Store's database (DATABASE_READ_URL) that serves the reads whose context
// accepts lag (booking.MayLag), while it is fresh: Watch checks, several times per bound, that it has replayed
// everything the primary had written MaxLag ago. A replica that is behind, or that cannot be asked, is not fresh,
// and those reads go to the primary until it is again; a read the replica fails as unreachable is asked of the
// primary at once. So a replica's outage or lag costs the primary some reads, never a fan's page.
type Replica struct {
	pool    *pgxpool.Pool
	primary *pgxpool.Pool
	maxLag  time.Duration
	log     *slog.Logger
	fresh   atomic.Bool
	seen    []lsnAt // the primary's positions over the last maxLag less every(), oldest first (Check's)
}

// DefaultMaxLag is how far behind the primary a replica may be and still serve reads (DATABASE_READ_MAX_LAG).
const DefaultMaxLag = time.Second

// OpenReplica makes a pool on url, through pooler, without connecting or migrating (a replica is read-only, and
// its outage at start-up only sends reads to the primary). A URL without connect_timeout gets one of a second: a
// replica that does not answer must not hold a fan's page for the system's default of minutes.
func OpenReplica(url, pooler string) (*pgxpool.Pool, error) {
	cfg, err := driver.PostgresConfig(url, pooler, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres: DATABASE_READ_URL: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = time.Second
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: DATABASE_READ_URL: %w", err)
	}
	return pool, nil
}

// NewReplica serves lagging reads from pool, a replica of primary, while it is within maxLag of it. It is not
// fresh until Watch has seen it so. log hears when it goes stale and fresh again (nil: discarded).
func NewReplica(pool, primary *pgxpool.Pool, maxLag time.Duration, log *slog.Logger) *Replica {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Replica{pool: pool, primary: primary, maxLag: maxLag, log: log}
}

// Fresh reports whether the replica was within its bound at Watch's last check.
func (r *Replica) Fresh() bool { return r.fresh.Load() }

// Ping reaches the replica (booking_store_up's "postgres_replica").
func (r *Replica) Ping(ctx context.Context) error { return r.pool.Ping(ctx) }

// lsnAt is the primary's WAL position at a moment.
type lsnAt struct {
	at  time.Time
	lsn int64
}

// Watch checks the replica's lag every quarter of the bound (at most a second apart) until ctx ends (Check).
func (r *Replica) Watch(ctx context.Context) {
	tick := time.NewTicker(r.every())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.fresh.Store(false)
			return
		case <-tick.C:
			r.Check(ctx)
		}
	}
}

// every is how often Watch checks: a quarter of the bound, and at least each second, so that a replica back from
// an outage is in use again within a second or so whatever its bound.
func (r *Replica) every() time.Duration {
	return min(max(r.maxLag/4, 10*time.Millisecond), time.Second)
}

// Check decides now whether the replica is fresh. It reads the primary's flushed WAL position (what a replica
// can have at most) (remembered with
// its time) and then the replica's replayed position. The replica is fresh when it has replayed a position the
// primary had no more than the bound less Watch's interval ago: its lag is then under the bound until the next
// check. Lag measured so needs no clock shared with the replica and is not fooled by an idle primary,
// whose last transaction's time says nothing of the replica. Watch calls it; a caller may once before Watch runs
// (booking does at start-up, so its first pages know where to read), never while it runs.
func (r *Replica) Check(ctx context.Context) {
	fresh, err := r.check(ctx)
	r.set(fresh, err)
}

func (r *Replica) check(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, max(r.every(), 250*time.Millisecond))
	defer cancel()
	now := time.Now()
	for len(r.seen) > 0 && r.seen[0].at.Before(now.Add(-(r.maxLag - r.every()))) {
		r.seen = r.seen[1:]
	}
	var lsn int64
	if err := r.primary.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn`).Scan(&lsn); err != nil {
		return false, fmt.Errorf("primary's position: %w", err)
	}
	r.seen = append(r.seen, lsnAt{at: now, lsn: lsn})
	var replayed *int64
	if err := r.pool.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() - '0/0'::pg_lsn`).Scan(&replayed); err != nil {
		return false, fmt.Errorf("replica's position: %w", err)
	}
	if replayed == nil {
		return false, errors.New("DATABASE_READ_URL is not a standby (pg_last_wal_replay_lsn is null)")
	}
	return *replayed >= r.seen[0].lsn, nil
}

// set records a check's outcome, logging a change.
func (r *Replica) set(fresh bool, err error) {
	was := r.fresh.Swap(fresh)
	switch {
	case fresh && !was:
		r.log.Info("read replica in use", "max_lag", r.maxLag)
	case !fresh && was && err != nil:
		r.log.Warn("read replica not used: reads go to the primary", "err", err)
	case !fresh && was:
		r.log.Warn("read replica not used: behind the primary by more than its bound", "max_lag", r.maxLag)
	}
}

// querier is what a read needs of a pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ReadFrom has s serve the reads that accept lag from r (nil: the primary serves every read). It returns s.
func (s *Store) ReadFrom(r *Replica) *Store {
	s.replica = r
	return s
}

// lagging runs read against the replica when ctx accepts lag and the replica is fresh, and against the primary
// otherwise. A read the replica fails as unreachable is run again on the primary, and the replica is out of use
// until Watch sees it fresh again; so is one that replay cancelled (a hot standby's "conflict with recovery").
// A read that fails on the replica for another reason fails: the primary would refuse it alike.
func (s *Store) lagging(ctx context.Context, read func(querier) error) error {
	r := s.replica
	if r == nil || !booking.LagAccepted(ctx) || !r.Fresh() {
		return read(s.pool)
	}
	err := read(r.pool)
	switch {
	case err == nil, ctx.Err() != nil:
		return err
	case driver.Unavailable(err):
		r.set(false, err)
	case !conflictWithRecovery(err):
		return err
	}
	return read(s.pool)
}

// collectLagging is a query of rows that accepts lag (lagging), each read with scan; what names it in errors.
func collectLagging[T any](ctx context.Context, s *Store, what string, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	var out []T
	err := s.lagging(ctx, func(db querier) error {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scan)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return out, nil
}

// conflictWithRecovery reports the error of a query a hot standby cancelled because replay needed what it read
// (SQLSTATE 40001, which the replica's reads, never serializable, get for no other reason).
func conflictWithRecovery(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}
