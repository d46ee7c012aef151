package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// BeginIdempotent claims an idempotency key. The insert either creates the pending record (claimed) or, when a
// concurrent request holds it, waits for that transaction and conflicts: exactly one request per key runs. A
// record still pending staleAfter (above 0) after it was claimed, for the same request, is taken over in one
// conditional update, so that of the retries finding it stale exactly one claims it.
func (s *Store) BeginIdempotent(ctx context.Context, userID, scope, key, hash string, staleAfter time.Duration) (booking.IdempotencyRecord, bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (user_id, scope, key, request_hash)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, userID, scope, key, hash)
	if err != nil {
		return booking.IdempotencyRecord{}, false, fmt.Errorf("postgres: idempotency: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return booking.IdempotencyRecord{RequestHash: hash}, true, nil
	}
	if staleAfter > 0 {
		var age float64
		// The staleness is the updated row's own (a second updater waiting on the row lock re-checks it against
		// the first's new created_at and updates nothing); the age returned is the record's before the update.
		err := s.pool.QueryRow(ctx, `WITH old AS (SELECT created_at FROM idempotency_keys
				WHERE user_id = $1 AND scope = $2 AND key = $3)
			UPDATE idempotency_keys k SET created_at = now() FROM old
			WHERE k.user_id = $1 AND k.scope = $2 AND k.key = $3 AND k.request_hash = $4 AND k.response IS NULL
				AND k.created_at < now() - make_interval(secs => $5)
			RETURNING extract(epoch FROM now() - old.created_at)::float8`,
			userID, scope, key, hash, staleAfter.Seconds()).Scan(&age)
		switch {
		case err == nil:
			return booking.IdempotencyRecord{RequestHash: hash, TakenOver: true,
				Age: time.Duration(age * float64(time.Second))}, true, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return booking.IdempotencyRecord{}, false, fmt.Errorf("postgres: idempotency: %w", err)
		}
	}
	var rec booking.IdempotencyRecord
	var result *string
	err = s.pool.QueryRow(ctx, `SELECT request_hash, response ->> 'id' FROM idempotency_keys
		WHERE user_id = $1 AND scope = $2 AND key = $3`, userID, scope, key).Scan(&rec.RequestHash, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		// Given up between our insert and this read: report it pending, the caller polls again.
		return booking.IdempotencyRecord{RequestHash: hash}, false, nil
	}
	if err != nil {
		return booking.IdempotencyRecord{}, false, fmt.Errorf("postgres: idempotency: %w", err)
	}
	if result != nil {
		rec.ResultID = *result
	}
	return rec, false, nil
}

// FinishIdempotent records the result of the request that claimed the key.
func (s *Store) FinishIdempotent(ctx context.Context, userID, scope, key, resultID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET status_code = 200, response = jsonb_build_object('id', $4::text)
		WHERE user_id = $1 AND scope = $2 AND key = $3`, userID, scope, key, resultID)
	if err != nil {
		return fmt.Errorf("postgres: idempotency: %w", err)
	}
	return nil
}

// AbortIdempotent gives a pending key up after its request failed, so a retry runs afresh.
func (s *Store) AbortIdempotent(ctx context.Context, userID, scope, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND scope = $2 AND key = $3
		AND response IS NULL`, userID, scope, key)
	if err != nil {
		return fmt.Errorf("postgres: idempotency: %w", err)
	}
	return nil
}
