// Package postgres is the waiting room's record in PostgreSQL (pgx/v5): per show, the fairness seed and draw,
// the admission cursor and the ceiling of tickets ever handed out, so that a Redis that lost its data is rebuilt
// with the same commitment and with fans' receipted tickets still ahead of every later joiner. The operator's
// settings and the admissions are shared/admission's record; the sale's opening is booking's catalog (read here).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/pgshard"
	"github.com/flashseat/flashseat/waitroom"
)

// Record implements waitroom.Record.
type Record struct {
	dbs *pgshard.Pools
}

// New returns the record on pool, whose table shared/infra/migrate creates (waitroom_queues).
func New(pool *pgxpool.Pool) *Record { return NewSharded(pgshard.Single(pool)) }

// NewSharded returns the record with each show's rows (its queue's and its bypass codes') on the database dbs
// places the show on (DATABASE_SHARDS); the sale's opening is read from the catalog, the main database.
func NewSharded(dbs *pgshard.Pools) *Record { return &Record{dbs: dbs} }

var _ waitroom.Record = (*Record)(nil)

// Queue implements waitroom.Record. The opening comes from booking's catalog when the show is there.
func (r *Record) Queue(ctx context.Context, show string) (waitroom.Durable, error) {
	var d waitroom.Durable
	err := r.dbs.For(show).QueryRow(ctx, `SELECT seed, drawn, draw_count, draw_digest, cursor, seq_ceiling
		FROM waitroom_queues WHERE show_id = $1`, show).
		Scan(&d.Seed, &d.Drawn, &d.DrawCount, &d.DrawDigest, &d.Cursor, &d.Ceiling)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return d, fmt.Errorf("waitroom/postgres: queue %s: %w", show, err)
	}
	var opens time.Time
	err = r.dbs.Main().QueryRow(ctx, `SELECT sale_starts_at FROM shows WHERE id = $1`, show).Scan(&opens)
	switch {
	case err == nil:
		d.SaleStartsAt = opens
	case errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err):
		// A show booking does not know (or a database without booking's catalog): no known opening.
	default:
		return d, fmt.Errorf("waitroom/postgres: opening of %s: %w", show, err)
	}
	return d, nil
}

// isUndefinedTable reports SQLSTATE 42P01 (relation does not exist) or an invalid text representation (a show
// id that is not a catalog id).
func isUndefinedTable(err error) bool {
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		return pe.SQLState() == "42P01" || pe.SQLState() == "22P02"
	}
	return false
}

// SaveSeed implements waitroom.Record: the first seed saved is the only one.
func (r *Record) SaveSeed(ctx context.Context, show, seed string) (string, error) {
	var got string
	err := r.dbs.For(show).QueryRow(ctx, `INSERT INTO waitroom_queues (show_id, seed) VALUES ($1, $2)
		ON CONFLICT (show_id) DO UPDATE SET seed = CASE WHEN waitroom_queues.seed = '' THEN EXCLUDED.seed
		ELSE waitroom_queues.seed END
		RETURNING seed`, show, seed).Scan(&got)
	if err != nil {
		return "", fmt.Errorf("waitroom/postgres: seed %s: %w", show, err)
	}
	return got, nil
}

// SaveDraw implements waitroom.Record: the first draw recorded stays.
func (r *Record) SaveDraw(ctx context.Context, show string, count int64, digest string) error {
	if _, err := r.dbs.For(show).Exec(ctx, `INSERT INTO waitroom_queues (show_id, drawn, draw_count, draw_digest)
		VALUES ($1, true, $2, $3)
		ON CONFLICT (show_id) DO UPDATE SET drawn = true, draw_count = EXCLUDED.draw_count,
		draw_digest = EXCLUDED.draw_digest, updated_at = now() WHERE NOT waitroom_queues.drawn`,
		show, count, digest); err != nil {
		return fmt.Errorf("waitroom/postgres: draw %s: %w", show, err)
	}
	return nil
}

// SaveCursor implements waitroom.Record; the cursor only grows.
func (r *Record) SaveCursor(ctx context.Context, show string, cursor int64) error {
	if _, err := r.dbs.For(show).Exec(ctx, `INSERT INTO waitroom_queues (show_id, cursor) VALUES ($1, $2)
		ON CONFLICT (show_id) DO UPDATE SET cursor = GREATEST(waitroom_queues.cursor, EXCLUDED.cursor),
		updated_at = now()`, show, cursor); err != nil {
		return fmt.Errorf("waitroom/postgres: cursor %s: %w", show, err)
	}
	return nil
}

// Reserve implements waitroom.Record.
func (r *Record) Reserve(ctx context.Context, show string, atLeast, grow int64) (int64, error) {
	var c int64
	err := r.dbs.For(show).QueryRow(ctx, `INSERT INTO waitroom_queues (show_id, seq_ceiling) VALUES ($1, GREATEST($2::bigint, $3::bigint))
		ON CONFLICT (show_id) DO UPDATE SET seq_ceiling = GREATEST(waitroom_queues.seq_ceiling + $3::bigint, $2::bigint),
		updated_at = now()
		RETURNING seq_ceiling`, show, atLeast, grow).Scan(&c)
	if err != nil {
		return 0, fmt.Errorf("waitroom/postgres: reserve %s: %w", show, err)
	}
	return c, nil
}
