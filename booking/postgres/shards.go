package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/shard"
)

// Shards is booking's ledger split by show over several databases (DATABASE_SHARDS): the catalog (venues, halls,
// events, the shows' directory), contacts, notifications, webhooks and the gateway's webhook ids stay on one
// database; everything of a show (holds, bookings, fences, the sold-seat ledger, payment attempts, payments,
// tickets, refunds, the waitlist, hold idempotency records, the outbox) lives on the shard the ring places the
// show on, beside a copy of the show's catalog rows that its foreign keys and joins need (copied by CreateShow).
//
// Every call is routed: by show id, or by an id that carries its show's key (shard.ID), so a booking's pay or a
// ticket's check-in touches its shard and no other. Reads across shows (a fan's bookings, the operator's figures)
// ask every shard at once under FanOutTimeout and fail whole if one shard cannot answer; the workers' sweeps
// (expiry, recovery, refunds, the outbox, offers) take what the shards that answer have, so a shard's outage
// stops only its own shows. It implements the same interfaces as Store.
type Shards struct {
	catalog *Store
	shards  []*Store
	ring    *shard.Ring
	log     *slog.Logger
}

// FanOutTimeout bounds a read across every shard: a shard that has not answered by then fails the read rather
// than hold it up.
const FanOutTimeout = 3 * time.Second

// NewShards routes over catalog and the shards, one pool per name of ring in its order. log hears of a shard a
// sweep could not reach (nil: discarded).
func NewShards(catalog *pgxpool.Pool, ring *shard.Ring, shards []*pgxpool.Pool, log *slog.Logger) (*Shards, error) {
	if ring.Len() != len(shards) {
		return nil, fmt.Errorf("postgres: %d shard pools for a ring of %d", len(shards), ring.Len())
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Shards{catalog: New(catalog), ring: ring, log: log}
	for _, p := range shards {
		s.shards = append(s.shards, New(p))
	}
	return s, nil
}

// Catalog is the catalog database's store.
func (s *Shards) Catalog() *Store { return s.catalog }

// Shard is the store of the shard at index i of the ring.
func (s *Shards) Shard(i int) *Store { return s.shards[i] }

// At is the store of the shard that keeps showID.
func (s *Shards) At(showID string) *Store { return s.shards[s.ring.Of(showID)] }

// byID is the store of the shard that keeps the row with id, an id made by shard.ID. An id that carries no show
// key names nothing any shard keeps: booking.ErrNotFound.
func (s *Shards) byID(what, id string) (*Store, error) {
	k, err := shard.KeyOfID(id)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, id, booking.ErrNotFound)
	}
	return s.shards[s.ring.Locate(k)], nil
}

// each runs fn on every shard at once, under FanOutTimeout, and returns every shard's answer in ring order and
// every failure, each naming its shard.
func each[T any](ctx context.Context, s *Shards, fn func(context.Context, *Store) (T, error)) ([]T, []error) {
	ctx, cancel := context.WithTimeout(ctx, FanOutTimeout)
	defer cancel()
	out := make([]T, len(s.shards))
	errs := make([]error, len(s.shards))
	var wg sync.WaitGroup
	for i, st := range s.shards {
		wg.Go(func() {
			v, err := fn(ctx, st)
			out[i] = v
			if err != nil {
				errs[i] = fmt.Errorf("shard %s: %w", s.ring.Names()[i], err)
			}
		})
	}
	wg.Wait()
	return out, errs
}

// all is a read across shows: every shard's answer, or an error if any shard failed.
func all[T any](ctx context.Context, s *Shards, fn func(context.Context, *Store) ([]T, error)) ([]T, error) {
	parts, errs := each(ctx, s, fn)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// sweep is a worker's pass over every shard: what the shards that answered have, the others logged. It fails only
// when no shard answered, so the worker backs off as it would on one database.
func sweep[T any](ctx context.Context, s *Shards, what string, fn func(context.Context, *Store) ([]T, error)) ([]T, error) {
	parts, errs := each(ctx, s, fn)
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			s.log.WarnContext(ctx, "shard skipped", "sweep", what, "err", err)
		}
	}
	if failed == len(s.shards) {
		return nil, errors.Join(errs...)
	}
	return slices.Concat(parts...), nil
}

// first asks every shard for a row found by something other than its id (a gateway's intent id, a user's
// Idempotency-Key) and returns the first found. A shard that fails is passed over when another has the row, and
// when every other shard answered that it has none: the row then is on the failed shard or nowhere, and a caller
// about to create one writes to the booking's own shard, which fails if that is the one down.
func first[T any](ctx context.Context, s *Shards, fn func(context.Context, *Store) (T, error)) (T, error) {
	parts, errs := each(ctx, s, fn)
	var missing error
	for i, err := range errs {
		switch {
		case err == nil:
			return parts[i], nil
		case errors.Is(err, booking.ErrNotFound):
			missing = err
		}
	}
	var zero T
	if missing != nil {
		return zero, missing
	}
	return zero, errors.Join(errs...)
}
