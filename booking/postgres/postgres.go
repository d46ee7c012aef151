// Package postgres is booking's ledger in PostgreSQL (pgx/v5): the catalog, booking rows, the per-seat fences and
// the sold seats keyed by (show, seat), plus idempotency records. Driver errors are translated to booking's
// errors here, at the boundary: a unique violation on sold_seats is booking.ErrSeatsUnavailable.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/migrate"
)

// Store implements booking.Store.
type Store struct {
	pool    *pgxpool.Pool
	replica *Replica // serves the reads that accept lag (ReadFrom); nil: none
}

// New returns a store on pool, a database Open migrated.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool is the store's pool, for packages that add tables beside booking's (payments) and join its transactions.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Open connects to url, through the pooler DATABASE_POOLER names (driver.PostgresConfig), and applies the
// migrations.
func Open(ctx context.Context, url, pooler string) (*pgxpool.Pool, error) {
	// pgx defaults to max(4, CPUs) connections, too few for a flash crowd; pool_max_conns in the URL overrides 32.
	cfg, err := driver.PostgresConfig(url, pooler, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate.Up(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// isUnique reports a unique violation, optionally on a given constraint.
func isUnique(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}

// isFK reports a foreign key violation.
func isFK(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

func notFound(what, id string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s %s: %w", what, id, booking.ErrNotFound)
	}
	return fmt.Errorf("postgres: %s %s: %w", what, id, err)
}

var _ booking.Store = (*Store)(nil)
