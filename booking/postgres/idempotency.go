package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// BeginIdempotent claims an idempotency key. The insert either creates the pending record (claimed) or, when a
// concurrent request holds it, waits for that transaction and conflicts: exactly one request per key runs.
func (s *Store) BeginIdempotent(ctx context.Context, userID, scope, key, hash string) (booking.IdempotencyRecord, bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (user_id, scope, key, request_hash)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, userID, scope, key, hash)
	if err != nil {
		return booking.IdempotencyRecord{}, false, fmt.Errorf("postgres: idempotency: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return booking.IdempotencyRecord{RequestHash: hash}, true, nil
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
