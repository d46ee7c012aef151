// Package pgshard is PostgreSQL as the records kept beside booking's ledger see it: the queue's record and its
// outbox (shared/admission/postgres), the waiting room's record and bypass codes (waitroom/postgres) and the
// audit log (shared/audit). With no DATABASE_SHARDS that is one database; with them, every show's rows live on the
// shard shared/shard's ring places the show on (the one booking's ledger uses for it), and what belongs to no show
// (the catalog, an audit entry of no show) stays on the main database.
package pgshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/shard"
)

// FanOutTimeout bounds a read across every shard, as booking's does: a shard that has not answered by then fails
// the read rather than hold it up.
const FanOutTimeout = 3 * time.Second

// Pools is the main database and, when sharded, the shards in the ring's order.
type Pools struct {
	main   *pgxpool.Pool
	ring   *shard.Ring
	shards []*pgxpool.Pool
	log    *slog.Logger // hears of a shard a sweep passed over
}

// Single is one database for everything: no DATABASE_SHARDS.
func Single(main *pgxpool.Pool) *Pools { return &Pools{main: main} }

// New places each show's rows on shards, one pool per name of ring in its order; a nil ring is Single(main).
func New(main *pgxpool.Pool, ring *shard.Ring, shards []*pgxpool.Pool) (*Pools, error) {
	if ring == nil {
		return Single(main), nil
	}
	if ring.Len() != len(shards) {
		return nil, fmt.Errorf("pgshard: %d shard pools for a ring of %d", len(shards), ring.Len())
	}
	return &Pools{main: main, ring: ring, shards: slices.Clone(shards)}, nil
}

// WithLog has sweeps report each shard they pass over to log (a sweep that succeeds elsewhere returns no error,
// so this is where a shard's failing outbox relay shows).
func (p *Pools) WithLog(log *slog.Logger) *Pools {
	q := *p
	q.log = log
	return &q
}

// Main is the main database: the catalog, and what belongs to no show.
func (p *Pools) Main() *pgxpool.Pool { return p.main }

// Sharded reports whether shows' rows live on shards.
func (p *Pools) Sharded() bool { return p.ring != nil }

// For is the database that keeps show's rows.
func (p *Pools) For(show string) *pgxpool.Pool {
	if p.ring == nil {
		return p.main
	}
	return p.shards[p.ring.Of(show)]
}

// part is one database of a fan-out, named for errors and logs.
type part struct {
	name string
	pool *pgxpool.Pool
}

// showParts are the databases that keep shows' rows: the shards, or the main database alone.
func (p *Pools) showParts() []part {
	if p.ring == nil {
		return []part{{"main", p.main}}
	}
	out := make([]part, len(p.shards))
	for i, name := range p.ring.Names() {
		out[i] = part{"shard " + name, p.shards[i]}
	}
	return out
}

// Each runs fn on every database that keeps shows' rows at once, under FanOutTimeout, with main too when
// withMain (a table that also keeps rows of no show); it returns every answer in order and every failure, each
// naming its database.
func Each[T any](ctx context.Context, p *Pools, withMain bool, fn func(context.Context, *pgxpool.Pool) (T, error)) ([]T, []error) {
	parts := p.showParts()
	if withMain && p.ring != nil {
		parts = append([]part{{"main", p.main}}, parts...)
	}
	ctx, cancel := context.WithTimeout(ctx, FanOutTimeout)
	defer cancel()
	out := make([]T, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, pt := range parts {
		wg.Go(func() {
			v, err := fn(ctx, pt.pool)
			out[i] = v
			if err != nil && p.ring != nil {
				err = fmt.Errorf("%s: %w", pt.name, err)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return out, errs
}

// All is a read across shows: every database's answer, or an error if any failed (an operator's view that
// silently missed a shard's shows would mislead).
func All[T any](ctx context.Context, p *Pools, withMain bool, fn func(context.Context, *pgxpool.Pool) ([]T, error)) ([]T, error) {
	parts, errs := Each(ctx, p, withMain, fn)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// Sweep is a worker's pass over every shard: the sum of what the shards that answered did, and their failures
// joined; it fails only when none answered, so a worker backs off as on one database while one shard's outage
// stops only that shard's part.
func Sweep(ctx context.Context, p *Pools, fn func(context.Context, *pgxpool.Pool) (int64, error)) (int64, error) {
	ns, errs := Each(ctx, p, false, fn)
	var sum int64
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if p.log != nil {
				p.log.WarnContext(ctx, "shard skipped", "err", err)
			}
			continue
		}
		sum += ns[i]
	}
	if failed == len(errs) {
		return 0, errors.Join(errs...)
	}
	return sum, nil
}

// Serial makes a publish function safe for relays of several shards running at once (Sweep): a relay's publish
// is written for one caller. Each show's events stay in order, a show's outbox being on one database.
func Serial[E any](publish func(E) error) func(E) error {
	var mu sync.Mutex
	return func(e E) error {
		mu.Lock()
		defer mu.Unlock()
		return publish(e)
	}
}

// Group splits items by the database that keeps their show, keeping their order within each.
func Group[T any](p *Pools, items []T, show func(T) string) map[*pgxpool.Pool][]T {
	out := map[*pgxpool.Pool][]T{}
	for _, it := range items {
		db := p.For(show(it))
		out[db] = append(out[db], it)
	}
	return out
}
