// Package check is the load test's independent invariant checker. When a run ends it reads Postgres and Redis
// directly, never through the services it judges, and lists every broken invariant with the rows involved. The
// crowd-side invariants (queue order, tokens) are judged in package loadtest from what the fans saw; the payment
// invariants are booking/invariant's, called from here rather than written twice.
//
// Invariants of the stores: no seat sold twice; the ledger's seats are exactly those of CONFIRMED bookings; no
// HELD booking outlives its expiry by more than a reconcile interval; every Redis seat lock names a live booking
// holding that seat; and booking/invariant's money checks.
package check

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// Config says where the stores are and which shows to judge.
type Config struct {
	DatabaseURL string
	RedisURL    string // empty (and no RedisClusterAddrs): skip the Redis checks
	// RedisClusterAddrs are a Redis Cluster's nodes (REDIS_CLUSTER_ADDRS); when set they replace RedisURL.
	RedisClusterAddrs []string
	ShowIDs           []string
	// ReconcileInterval is booking's RECONCILE_INTERVAL: a HELD booking is stale once it is this long past its
	// expiry (plus Grace), because the reconciler must have run by then.
	ReconcileInterval time.Duration
	Grace             time.Duration // default 5s: one sweep's own run time and clock skew
	// OrphanGrace is how old booking lets a seat lock of a booking it does not know grow before its reconciler
	// releases it (a hold whose claim ran in Redis but whose answer was lost). Default 30s, booking's own.
	OrphanGrace time.Duration
	// PaymentGrace leaves alone bookings whose payment rows changed this recently: money still in motion (a
	// capture the recovery worker is about to retry) when the load stops.
	PaymentGrace time.Duration
}

// Result is the checker's verdict.
type Result struct {
	Violations []loadtest.Violation
	Checked    []string
}

func (r *Result) add(inv, format string, args ...any) {
	r.Violations = append(r.Violations, loadtest.Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)})
}

// Run opens the stores, checks every invariant of cfg's shows and closes them.
func Run(ctx context.Context, cfg Config) (Result, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return Result{}, fmt.Errorf("postgres: %w", err)
	}
	// The checks run one query at a time; a small pool leaves the server's connections to the platform.
	pc.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return Result{}, fmt.Errorf("postgres: %w", err)
	}
	defer pool.Close()
	// A server at its connection limit right after a load is common; wait for a slot rather than give no verdict.
	for try := 0; ; try++ {
		err := pool.Ping(ctx)
		if err == nil {
			break
		}
		if try == 20 || ctx.Err() != nil {
			return Result{}, fmt.Errorf("postgres: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var rdb redis.UniversalClient
	if cfg.RedisURL != "" || len(cfg.RedisClusterAddrs) > 0 {
		rdb, err = driver.OpenRedis(cfg.RedisURL, cfg.RedisClusterAddrs, 2)
		if err != nil {
			return Result{}, fmt.Errorf("redis: %w", err)
		}
		defer rdb.Close()
	}
	return Check(ctx, pool, rdb, cfg)
}

// Check judges cfg's shows in the given stores; rdb may be nil.
func Check(ctx context.Context, pool *pgxpool.Pool, rdb redis.UniversalClient, cfg Config) (Result, error) {
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	var r Result
	checks := []struct {
		name string
		fn   func(context.Context, *pgxpool.Pool, string, Config, *Result) error
	}{
		{loadtest.InvSeatSoldTwice, soldTwice},
		{loadtest.InvSoldMatchesLedger, soldMatchesConfirmed},
		{loadtest.InvStaleHold, staleHolds},
	}
	for _, c := range checks {
		for _, show := range cfg.ShowIDs {
			if err := c.fn(ctx, pool, show, cfg, &r); err != nil {
				return r, fmt.Errorf("%s: %w", c.name, err)
			}
		}
		r.Checked = append(r.Checked, c.name)
	}
	if err := payments(ctx, pool, cfg, &r); err != nil {
		return r, fmt.Errorf("%s: %w", loadtest.InvPayments, err)
	}
	if rdb != nil {
		if err := lockedForNobody(ctx, pool, rdb, cfg, &r); err != nil {
			return r, fmt.Errorf("%s: %w", loadtest.InvLocks, err)
		}
		r.Checked = append(r.Checked, loadtest.InvLocks)
	}
	return r, nil
}

// lockedForNobody checks every show's seat locks (locks). A lock the load left for nobody in its last moments (a
// claim whose answer was lost, a release that timed out) is booking's reconciler's to release, within OrphanGrace
// and one sweep; so a first finding is looked at again once that has passed, and only locks still wrong then
// are violations: a seat off sale for nobody beyond that bound.
func lockedForNobody(ctx context.Context, pool *pgxpool.Pool, rdb redis.UniversalClient, cfg Config, r *Result) error {
	var first Result
	for _, show := range cfg.ShowIDs {
		if err := locks(ctx, pool, rdb, show, &first); err != nil {
			return err
		}
	}
	if len(first.Violations) == 0 {
		return nil
	}
	grace := cfg.OrphanGrace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(grace + cfg.ReconcileInterval + cfg.Grace):
	}
	for _, show := range cfg.ShowIDs {
		if err := locks(ctx, pool, rdb, show, r); err != nil {
			return err
		}
	}
	return nil
}

// stillPaid holds for a seat s of a CONFIRMED booking b that no refund of b has taken back: a partial refund
// leaves the booking CONFIRMED and its seat list whole, and the refunded seat may be sold to someone else.
const stillPaid = `NOT EXISTS (SELECT 1 FROM refunds rf WHERE rf.booking_id = b.id AND s = ANY(rf.seat_ids))`

// soldTwice: a seat is in the ledger at most once, and in at most one CONFIRMED booking. The ledger's primary key
// makes the first impossible today; checking it anyway keeps the checker independent of that schema decision.
func soldTwice(ctx context.Context, pool *pgxpool.Pool, show string, _ Config, r *Result) error {
	rows, err := pool.Query(ctx, `
		SELECT seat_id, count(*), string_agg(booking_id, ',' ORDER BY booking_id)
		FROM sold_seats WHERE show_id = $1 GROUP BY seat_id HAVING count(*) > 1 ORDER BY seat_id`, show)
	if err != nil {
		return err
	}
	for rows.Next() {
		var seat, ids string
		var n int
		if err := rows.Scan(&seat, &n, &ids); err != nil {
			return err
		}
		r.add(loadtest.InvSeatSoldTwice, "show %s seat %s is in the ledger %d times (bookings %s)", show, seat, n, ids)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = pool.Query(ctx, `
		SELECT s, string_agg(b.id, ',' ORDER BY b.id)
		FROM bookings b, unnest(b.seat_ids) AS s
		WHERE b.show_id = $1 AND b.status = 'CONFIRMED' AND `+stillPaid+`
		GROUP BY s HAVING count(*) > 1 ORDER BY s`, show)
	if err != nil {
		return err
	}
	for rows.Next() {
		var seat, ids string
		if err := rows.Scan(&seat, &ids); err != nil {
			return err
		}
		r.add(loadtest.InvSeatSoldTwice, "show %s seat %s is in several CONFIRMED bookings: %s", show, seat, ids)
	}
	return rows.Err()
}

// soldMatchesConfirmed: the ledger's seats are exactly the seats of CONFIRMED bookings, each row naming the
// booking that bought it.
func soldMatchesConfirmed(ctx context.Context, pool *pgxpool.Pool, show string, _ Config, r *Result) error {
	rows, err := pool.Query(ctx, `
		SELECT ss.seat_id, ss.booking_id, coalesce(b.status, 'MISSING'), coalesce(ss.seat_id = ANY(b.seat_ids), false)
		FROM sold_seats ss LEFT JOIN bookings b ON b.id = ss.booking_id AND b.show_id = ss.show_id
		WHERE ss.show_id = $1 AND (b.id IS NULL OR b.status <> 'CONFIRMED' OR NOT ss.seat_id = ANY(b.seat_ids))
		ORDER BY ss.seat_id`, show)
	if err != nil {
		return err
	}
	for rows.Next() {
		var seat, booking, status string
		var listed bool
		if err := rows.Scan(&seat, &booking, &status, &listed); err != nil {
			return err
		}
		if !listed && status != "MISSING" {
			r.add(loadtest.InvSoldMatchesLedger, "show %s seat %s is sold to booking %s (%s), which does not list it", show, seat, booking, status)
			continue
		}
		r.add(loadtest.InvSoldMatchesLedger, "show %s seat %s is sold to booking %s, which is %s, not CONFIRMED", show, seat, booking, status)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = pool.Query(ctx, `
		SELECT b.id, s FROM bookings b, unnest(b.seat_ids) AS s
		WHERE b.show_id = $1 AND b.status = 'CONFIRMED' AND `+stillPaid+` AND NOT EXISTS (
			SELECT 1 FROM sold_seats ss WHERE ss.show_id = b.show_id AND ss.seat_id = s AND ss.booking_id = b.id)
		ORDER BY b.id, s`, show)
	if err != nil {
		return err
	}
	for rows.Next() {
		var booking, seat string
		if err := rows.Scan(&booking, &seat); err != nil {
			return err
		}
		r.add(loadtest.InvSoldMatchesLedger, "show %s booking %s is CONFIRMED but its seat %s is not in the ledger under it", show, booking, seat)
	}
	return rows.Err()
}

// staleHolds: the reconciler ends every HELD booking within one interval of its expiry. Ages are measured by the
// database's clock, the one that wrote expires_at.
func staleHolds(ctx context.Context, pool *pgxpool.Pool, show string, cfg Config, r *Result) error {
	rows, err := pool.Query(ctx, `
		SELECT id, expires_at, extract(epoch FROM now() - expires_at)::float8
		FROM bookings WHERE show_id = $1 AND status = 'HELD' AND expires_at < now() - make_interval(secs => $2)
		ORDER BY expires_at`, show, (cfg.ReconcileInterval + cfg.Grace).Seconds())
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var exp time.Time
		var late float64
		if err := rows.Scan(&id, &exp, &late); err != nil {
			return err
		}
		r.add(loadtest.InvStaleHold, "show %s booking %s is still HELD %.0fs after it expired at %s (reconcile interval %s)",
			show, id, late, exp.UTC().Format(time.RFC3339), cfg.ReconcileInterval)
	}
	return rows.Err()
}

// locks: every seat lock left in Redis names a booking of that show that lists the seat and is still live (HELD or
// PAYMENT_PENDING), or the CONFIRMED booking that bought it. A lock naming anything else keeps a seat off sale for
// nobody, and a lock on a seat sold to someone else means the seat could be held again.
func locks(ctx context.Context, pool *pgxpool.Pool, rdb redis.UniversalClient, show string, r *Result) error {
	prefix := rediskey.Seat(show, "")
	keys, err := scan(ctx, rdb, escapeGlob(prefix)+"*")
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	vals, err := rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return err
	}
	type lock struct{ seat, booking string }
	var ls []lock
	ids := map[string]bool{}
	for i, k := range keys {
		v, ok := vals[i].(string)
		if !ok {
			continue // expired between SCAN and MGET
		}
		booking, _, _ := strings.Cut(v, "|")
		ls = append(ls, lock{strings.TrimPrefix(k, prefix), booking})
		ids[booking] = true
	}
	list := make([]string, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	type row struct {
		show, status string
		seats        []string
	}
	known := map[string]row{}
	rows, err := pool.Query(ctx, `SELECT id, show_id, status, seat_ids FROM bookings WHERE id = ANY($1)`, list)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var b row
		if err := rows.Scan(&id, &b.show, &b.status, &b.seats); err != nil {
			return err
		}
		known[id] = b
	}
	if err := rows.Err(); err != nil {
		return err
	}
	sold := map[string]string{}
	rows, err = pool.Query(ctx, `SELECT seat_id, booking_id FROM sold_seats WHERE show_id = $1`, show)
	if err != nil {
		return err
	}
	for rows.Next() {
		var seat, booking string
		if err := rows.Scan(&seat, &booking); err != nil {
			return err
		}
		sold[seat] = booking
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, l := range ls {
		b, ok := known[l.booking]
		switch {
		case !ok:
			r.add(loadtest.InvLocks, "show %s seat %s is locked by booking %q, which Postgres does not know", show, l.seat, l.booking)
		case b.show != show || !contains(b.seats, l.seat):
			r.add(loadtest.InvLocks, "show %s seat %s is locked by booking %s, which does not hold that seat", show, l.seat, l.booking)
		case sold[l.seat] != "" && sold[l.seat] != l.booking:
			r.add(loadtest.InvLocks, "show %s seat %s is sold to booking %s but locked by booking %s", show, l.seat, sold[l.seat], l.booking)
		case b.status != "HELD" && b.status != "PAYMENT_PENDING" && b.status != "CONFIRMED":
			r.add(loadtest.InvLocks, "show %s seat %s is still locked by booking %s, which is %s", show, l.seat, l.booking, b.status)
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// escapeGlob quotes the characters SCAN MATCH treats as a pattern ({show:ID} has none today, an id might).
func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// scan lists the keys matching pattern: on a Redis Cluster, on every master (a show's seat locks share one slot,
// so one master holds them all, but which one is the cluster's business). Every key matched shares the show's hash
// tag, so one MGET reads them on either kind of Redis.
func scan(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	each := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 500).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	if c, ok := rdb.(*redis.ClusterClient); ok {
		err := c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return each(ctx, c) })
		return keys, err
	}
	return keys, each(ctx, rdb)
}
