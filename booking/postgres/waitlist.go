package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// JoinWaitlist implements booking.WaitlistStore. The upsert keeps an existing entry's id, so a fan joining again
// keeps the place. Joins of one show take a transaction-scoped advisory lock first: without it two concurrent
// joins each count the entries committed before them, miss each other, and answer the same position.
func (s *Store) JoinWaitlist(ctx context.Context, showID, userID string, seats int, now time.Time) (booking.WaitlistEntry, error) {
	e := booking.WaitlistEntry{ShowID: showID, UserID: userID}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('waitlist:' || $1, 0))", showID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			WITH me AS (
				INSERT INTO waitlist (show_id, user_id, seats, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
				ON CONFLICT (show_id, user_id) DO UPDATE SET seats = EXCLUDED.seats, updated_at = EXCLUDED.updated_at
				RETURNING id, seats, created_at)
			SELECT me.seats, me.created_at,
				(SELECT count(*) FROM waitlist w WHERE w.show_id = $1 AND w.id < me.id) + 1
			FROM me`, showID, userID, seats, now).Scan(&e.Seats, &e.JoinedAt, &e.Position)
	})
	if err != nil {
		return booking.WaitlistEntry{}, fmt.Errorf("postgres: join waitlist: %w", err)
	}
	return e, nil
}
