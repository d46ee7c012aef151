package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

var _ booking.PaymentStore = (*Store)(nil)

const attemptColumns = `id, booking_id, user_id, idempotency_key, request_hash, payment_method, amount, currency,
	state, COALESCE(outcome, ''), detail, COALESCE(intent_id, ''), return_url, next_action, lease_until, tries, created_at`

func scanAttempt(row pgx.Row) (booking.Attempt, error) {
	var a booking.Attempt
	err := row.Scan(&a.ID, &a.BookingID, &a.UserID, &a.IdempotencyKey, &a.RequestHash, &a.PaymentMethod, &a.Amount,
		&a.Currency, &a.State, &a.Outcome, &a.Detail, &a.IntentID, &a.ReturnURL, &a.NextActionURL, &a.LeaseUntil, &a.Tries, &a.CreatedAt)
	return a, err
}

func collectAttempts(rows pgx.Rows, err error) ([]booking.Attempt, error) {
	if err != nil {
		return nil, fmt.Errorf("postgres: attempts: %w", err)
	}
	as, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Attempt, error) { return scanAttempt(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: attempts: %w", err)
	}
	return as, nil
}

// StartAttempt implements booking.PaymentStore. The (user, key) unique constraint makes concurrent requests with
// one key race on the insert: exactly one inserts and runs, the others read its row.
func (s *Store) StartAttempt(ctx context.Context, a booking.Attempt) (booking.Attempt, bool, error) {
	_, err := s.pool.Exec(ctx, `INSERT INTO payment_attempts (id, booking_id, user_id, idempotency_key, request_hash,
		payment_method, amount, currency, state, lease_until, return_url)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'STARTED', $9, $10)`,
		a.ID, a.BookingID, a.UserID, a.IdempotencyKey, a.RequestHash, a.PaymentMethod, a.Amount, a.Currency, a.LeaseUntil,
		a.ReturnURL)
	switch {
	case err == nil:
		a.State = booking.AttemptStarted
		return a, true, nil
	case isUnique(err, "payment_attempts_user_id_idempotency_key_key"):
		prev, err := scanAttempt(s.pool.QueryRow(ctx, `SELECT `+attemptColumns+` FROM payment_attempts
			WHERE user_id = $1 AND idempotency_key = $2`, a.UserID, a.IdempotencyKey))
		if err != nil {
			return booking.Attempt{}, false, fmt.Errorf("postgres: attempt by key: %w", err)
		}
		return prev, false, nil
	case isUnique(err, "payment_attempts_one_live"):
		return booking.Attempt{}, false, fmt.Errorf("booking %s has a payment in flight: %w", a.BookingID, booking.ErrInProgress)
	}
	return booking.Attempt{}, false, fmt.Errorf("postgres: start attempt: %w", err)
}

// Attempt implements booking.PaymentStore.
func (s *Store) Attempt(ctx context.Context, id string) (booking.Attempt, error) {
	a, err := scanAttempt(s.pool.QueryRow(ctx, `SELECT `+attemptColumns+` FROM payment_attempts WHERE id = $1`, id))
	if err != nil {
		return booking.Attempt{}, notFound("payment attempt", id, err)
	}
	return a, nil
}

// AttemptByKey implements booking.PaymentStore.
func (s *Store) AttemptByKey(ctx context.Context, userID, key string) (booking.Attempt, error) {
	a, err := scanAttempt(s.pool.QueryRow(ctx, `SELECT `+attemptColumns+` FROM payment_attempts
		WHERE user_id = $1 AND idempotency_key = $2`, userID, key))
	if err != nil {
		return booking.Attempt{}, notFound("payment attempt with key", key, err)
	}
	return a, nil
}

// AttemptsOf implements booking.PaymentStore.
func (s *Store) AttemptsOf(ctx context.Context, bookingID string) ([]booking.Attempt, error) {
	return collectAttempts(s.pool.Query(ctx, `SELECT `+attemptColumns+` FROM payment_attempts WHERE booking_id = $1
		ORDER BY created_at, id`, bookingID))
}

// AttemptByIntent implements booking.PaymentStore.
func (s *Store) AttemptByIntent(ctx context.Context, intentID string) (booking.Attempt, error) {
	a, err := scanAttempt(s.pool.QueryRow(ctx, `SELECT `+attemptColumns+` FROM payment_attempts WHERE intent_id = $1`,
		intentID))
	if err != nil {
		return booking.Attempt{}, notFound("payment intent", intentID, err)
	}
	return a, nil
}

// UpdateAttempt implements booking.PaymentStore. The state condition makes every transition a compare-and-set,
// so the saga and the worker (or two workers) cannot both move one attempt.
func (s *Store) UpdateAttempt(ctx context.Context, id string, u booking.AttemptUpdate) (bool, error) {
	from := make([]string, len(u.From))
	for i, st := range u.From {
		from[i] = string(st)
	}
	var lease *time.Time
	if !u.Lease.IsZero() {
		lease = &u.Lease
	}
	var n int
	err := s.pool.QueryRow(ctx, `WITH prev AS (
			SELECT id, state FROM payment_attempts WHERE id = $1 AND state = ANY($2) FOR UPDATE
		), u AS (UPDATE payment_attempts p SET state = $3,
			outcome = COALESCE(NULLIF($4, ''), outcome), detail = CASE WHEN $5 = '' THEN detail ELSE $5 END,
			intent_id = COALESCE(NULLIF($6, ''), intent_id), lease_until = COALESCE($7, lease_until),
			next_action = CASE WHEN $8 <> '' THEN $8 WHEN $3 = 'PENDING' THEN next_action ELSE '' END, updated_at = now()
			FROM prev WHERE p.id = prev.id
			RETURNING p.*, prev.state AS was
		), o AS (`+attemptEvent+`)
		SELECT count(*) FROM u`, id, from, string(u.To), string(u.Outcome), u.Detail, u.IntentID, lease,
		u.NextActionURL).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("postgres: update attempt %s: %w", id, err)
	}
	return n == 1, nil
}

// DeleteAttempt implements booking.PaymentStore.
func (s *Store) DeleteAttempt(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM payment_attempts WHERE id = $1 AND state = 'STARTED'`, id); err != nil {
		return fmt.Errorf("postgres: delete attempt %s: %w", id, err)
	}
	return nil
}

// ClaimAttempts implements booking.PaymentStore. SKIP LOCKED lets several replicas' workers share the queue.
func (s *Store) ClaimAttempts(ctx context.Context, lease time.Duration, limit int) ([]booking.Attempt, error) {
	return collectAttempts(s.pool.Query(ctx, `UPDATE payment_attempts SET lease_until = now() + make_interval(secs => $1),
			tries = tries + 1, updated_at = now()
		WHERE id IN (SELECT id FROM payment_attempts
			WHERE state IN ('STARTED', 'PENDING', 'AUTHORIZED', 'VOIDING', 'REFUNDING') AND lease_until < now()
			ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING `+attemptColumns, lease.Seconds(), limit))
}

// SetStatus implements booking.PaymentStore.
func (s *Store) SetStatus(ctx context.Context, id string, from []booking.Status, to booking.Status) (booking.Booking, error) {
	fs := make([]string, len(from))
	for i, st := range from {
		fs[i] = string(st)
	}
	q := `UPDATE bookings SET status = $3, updated_at = now() WHERE id = $1 AND status = ANY($2) RETURNING `
	if ev := eventOfStatus(to); ev != "" {
		q = withBookingEvent(q+"*", ev)
	} else {
		q += bookingColumns
	}
	b, err := scanBooking(s.pool.QueryRow(ctx, q, id, fs, string(to)))
	if errors.Is(err, pgx.ErrNoRows) {
		return booking.Booking{}, fmt.Errorf("booking %s not in %v: %w", id, from, booking.ErrNotHeld)
	}
	if err != nil {
		return booking.Booking{}, fmt.Errorf("postgres: set status %s: %w", id, err)
	}
	return b, nil
}

// ConfirmSale implements booking.PaymentStore. The booking's row lock (taken by ConfirmTx) and the per-seat
// ledger rows are the only contended rows, so sales of unrelated shows do not wait on each other.
func (s *Store) ConfirmSale(ctx context.Context, sale booking.Sale) (booking.Booking, error) {
	var b booking.Booking
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if b, err = ConfirmTx(ctx, tx, sale.BookingID); err != nil {
			return err
		}
		// The rest goes in one round trip: the row lock taken by ConfirmTx is held until commit, so the shorter
		// the transaction the less a second pay or a cancel of this booking waits.
		batch := &pgx.Batch{}
		batch.Queue(`INSERT INTO payments (id, booking_id, attempt_id, intent_id, amount, currency, status)
			VALUES ($1, $2, $3, $4, $5, $6, 'AUTHORIZED')`, sale.PaymentID, sale.BookingID, sale.AttemptID, sale.IntentID,
			sale.Amount, sale.Currency)
		for _, t := range sale.Tickets {
			batch.Queue(`INSERT INTO tickets (id, booking_id, user_id, show_id, seat_id, code, status)
				VALUES ($1, $2, $3, $4, $5, $6, 'VALID')`, t.ID, b.ID, b.UserID, b.ShowID, t.SeatID, t.Code)
		}
		batch.Queue(`UPDATE bookings SET payment_id = $2 WHERE id = $1`, b.ID, sale.PaymentID)
		batch.Queue(`UPDATE payment_attempts SET state = 'CONFIRMED', outcome = 'CONFIRMED', updated_at = now()
			WHERE id = $1 AND state = 'AUTHORIZED'`, sale.AttemptID)
		payload, _ := json.Marshal(map[string]any{"bookingId": b.ID, "showId": b.ShowID, "userId": b.UserID,
			"seatIds": b.SeatIDs, "paymentId": sale.PaymentID, "amount": sale.Amount, "currency": sale.Currency})
		batch.Queue(`INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, 'booking.confirmed', $2)`, b.ID, payload)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("postgres: sale: %w", err)
		}
		return nil
	})
	if err != nil {
		return b, err
	}
	b.PaymentID = sale.PaymentID
	b.Tickets = sale.Tickets
	return b, nil
}

const paymentColumns = `id, booking_id, attempt_id, intent_id, amount, currency, status, captured_amount, refunded_amount`

func scanPayment(row pgx.Row) (booking.Payment, error) {
	var p booking.Payment
	err := row.Scan(&p.ID, &p.BookingID, &p.AttemptID, &p.IntentID, &p.Amount, &p.Currency, &p.Status,
		&p.CapturedAmount, &p.RefundedAmount)
	return p, err
}

// PaymentOf implements booking.PaymentStore.
func (s *Store) PaymentOf(ctx context.Context, bookingID string) (booking.Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE booking_id = $1`, bookingID))
	if err != nil {
		return booking.Payment{}, notFound("payment of booking", bookingID, err)
	}
	return p, nil
}

// MarkCaptured implements booking.PaymentStore.
func (s *Store) MarkCaptured(ctx context.Context, paymentID string, amount int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE payments SET captured_amount = $2, captured_at = now(), updated_at = now(),
		status = CASE WHEN status = 'AUTHORIZED' THEN 'CAPTURED' ELSE status END
		WHERE id = $1 AND captured_at IS NULL`, paymentID, amount)
	if err != nil {
		return fmt.Errorf("postgres: captured %s: %w", paymentID, err)
	}
	return nil
}

// UncapturedPayments implements booking.PaymentStore.
func (s *Store) UncapturedPayments(ctx context.Context, olderThan time.Time, limit int) ([]booking.Payment, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+paymentColumns+` FROM payments
		WHERE status = 'AUTHORIZED' AND updated_at < $1 ORDER BY updated_at LIMIT $2`, olderThan, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: uncaptured: %w", err)
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Payment, error) { return scanPayment(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: uncaptured: %w", err)
	}
	return ps, nil
}

// SeenEvent implements booking.PaymentStore.
func (s *Store) SeenEvent(ctx context.Context, id, typ, intentID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO webhook_events (id, type, intent_id) VALUES ($1, $2, NULLIF($3, ''))
		ON CONFLICT DO NOTHING`, id, typ, intentID)
	if err != nil {
		return false, fmt.Errorf("postgres: webhook event: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
