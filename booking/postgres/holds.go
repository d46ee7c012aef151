package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// BumpEpoch starts a new fencing epoch for the show. UPDATE ... RETURNING serialises concurrent bumps on the row,
// so two replicas that both found Redis empty get two distinct, increasing epochs.
func (s *Store) BumpEpoch(ctx context.Context, showID string) (int64, error) {
	var epoch int64
	err := s.pool.QueryRow(ctx, `UPDATE shows SET fence_epoch = fence_epoch + 1 WHERE id = $1 RETURNING fence_epoch`,
		showID).Scan(&epoch)
	if err != nil {
		return 0, notFound("show", showID, err)
	}
	return epoch, nil
}

// createHold is one statement, so a hold costs one round trip to Postgres: the booking row, and the seats'
// fences moved forward to this hold's. A seat whose fence on record is not below ours is not returned, which
// tells a fence that went backwards (Redis's counter lost in a failover within one epoch).
//
// The same statement writes the booking.held event to the outbox.
var createHold = `WITH b AS (
	INSERT INTO bookings (id, user_id, show_id, status, seat_ids, total_amount, currency, fence, expires_at,
		admission_jti, admission_exp, created_at, updated_at, language)
	VALUES ($1, $2, $3, 'HELD', $4, $5, $6, $7, $8, NULLIF($9, ''), $10, $11, $11, $12)
	RETURNING *
), o AS (INSERT INTO outbox (aggregate_id, type, payload) SELECT id, '` + booking.EventHeld + `', ` + bookingPayload + ` FROM b)
INSERT INTO seat_fences (show_id, seat_id, fence)
SELECT $3, unnest($4::text[]), $7
ON CONFLICT (show_id, seat_id) DO UPDATE SET fence = EXCLUDED.fence WHERE seat_fences.fence < EXCLUDED.fence
RETURNING seat_id`

// CreateHold records a HELD booking.
func (s *Store) CreateHold(ctx context.Context, b *booking.Booking) error {
	var admExp *time.Time
	if b.AdmissionJTI != "" {
		admExp = &b.AdmissionExp
	}
	rows, err := s.pool.Query(ctx, createHold, b.ID, b.UserID, b.ShowID, b.SeatIDs, b.TotalAmount, b.Currency,
		b.Fence, b.ExpiresAt, b.AdmissionJTI, admExp, b.CreatedAt, b.Language)
	if err != nil {
		return fmt.Errorf("postgres: create hold: %w", err)
	}
	advanced, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("postgres: create hold: %w", err)
	}
	if len(advanced) != len(b.SeatIDs) {
		// The row went in; mark it dead so nobody can confirm it.
		if _, err := s.pool.Exec(ctx, withBookingEvent(`UPDATE bookings SET status = 'EXPIRED', updated_at = now()
			WHERE id = $1 RETURNING *`, booking.EventExpired), b.ID); err != nil {
			return fmt.Errorf("postgres: create hold: %w", err)
		}
		return fmt.Errorf("hold %s fence %d: %w", b.ID, b.Fence, booking.ErrStale)
	}
	return nil
}

const bookingColumns = `id, user_id, show_id, status, seat_ids, total_amount, currency, fence, expires_at,
	COALESCE(admission_jti, ''), admission_exp, COALESCE(payment_id, ''), created_at`

func scanBooking(row pgx.Row) (booking.Booking, error) {
	var b booking.Booking
	var admExp *time.Time
	err := row.Scan(&b.ID, &b.UserID, &b.ShowID, &b.Status, &b.SeatIDs, &b.TotalAmount, &b.Currency, &b.Fence,
		&b.ExpiresAt, &b.AdmissionJTI, &admExp, &b.PaymentID, &b.CreatedAt)
	if err != nil {
		return booking.Booking{}, err
	}
	if admExp != nil {
		b.AdmissionExp = admExp.UTC()
	}
	b.ExpiresAt, b.CreatedAt = b.ExpiresAt.UTC(), b.CreatedAt.UTC()
	return b, nil
}

// Booking reads one booking.
func (s *Store) Booking(ctx context.Context, id string) (booking.Booking, error) {
	b, err := scanBooking(s.pool.QueryRow(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE id = $1`, id))
	if err != nil {
		return booking.Booking{}, notFound("booking", id, err)
	}
	return b, nil
}

// BookingsOf implements booking.Store (index bookings_user_created).
func (s *Store) BookingsOf(ctx context.Context, userID string, limit int) ([]booking.Booking, error) {
	return collectLagging(ctx, s, "bookings of user", scanBookingRow, `SELECT `+bookingColumns+` FROM bookings
		WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, userID, limit)
}

// LockOwners implements booking.ReconcileStore: one lookup by primary key for the owners of a show's locks, of
// only the columns a release of their locks needs.
func (s *Store) LockOwners(ctx context.Context, ids []string) ([]booking.Booking, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, user_id, show_id, status, seat_ids FROM bookings WHERE id = ANY($1)`, ids)
	return collect("lock owners", rows, err, func(r pgx.CollectableRow) (booking.Booking, error) {
		var b booking.Booking
		err := r.Scan(&b.ID, &b.UserID, &b.ShowID, &b.Status, &b.SeatIDs)
		return b, err
	})
}

// collectBookings reads the bookings a query of bookingColumns returns; what names the query in errors.
func collectBookings(what string, rows pgx.Rows, err error) ([]booking.Booking, error) {
	return collect(what, rows, err, scanBookingRow)
}

// scanBookingRow is scanBooking as pgx.CollectRows takes it.
func scanBookingRow(r pgx.CollectableRow) (booking.Booking, error) { return scanBooking(r) }

// collect reads the bookings a query returns with scan; what names the query in errors.
func collect(what string, rows pgx.Rows, err error, scan pgx.RowToFunc[booking.Booking]) ([]booking.Booking, error) {
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	bs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return bs, nil
}

// Cancel moves the user's HELD booking to CANCELLED. The status condition in the UPDATE makes cancel and expiry
// (and confirmation) mutually exclusive: whichever commits first wins, the other finds no HELD row.
func (s *Store) Cancel(ctx context.Context, id, userID string) (booking.Booking, error) {
	b, err := scanBooking(s.pool.QueryRow(ctx, withBookingEvent(`UPDATE bookings SET status = 'CANCELLED',
		updated_at = now() WHERE id = $1 AND user_id = $2 AND status = 'HELD' RETURNING *`, booking.EventCancelled),
		id, userID))
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return booking.Booking{}, fmt.Errorf("postgres: cancel: %w", err)
	}
	cur, err := s.Booking(ctx, id)
	switch {
	case err != nil:
		return booking.Booking{}, err
	case cur.UserID != userID:
		return booking.Booking{}, fmt.Errorf("booking %s: %w", id, booking.ErrNotFound)
	case cur.Status == booking.StatusExpired:
		return cur, fmt.Errorf("booking %s: %w", id, booking.ErrHoldExpired)
	}
	return cur, fmt.Errorf("booking %s is %s: %w", id, cur.Status, booking.ErrNotHeld)
}

// ExpireDue marks lapsed HELD bookings EXPIRED. SKIP LOCKED lets replicas sweep side by side without waiting on
// each other, and the status condition means a booking confirmed or cancelled meanwhile is left alone.
func (s *Store) ExpireDue(ctx context.Context, showID string, now time.Time, limit int) ([]booking.Booking, error) {
	rows, err := s.pool.Query(ctx, withBookingEvent(`UPDATE bookings SET status = 'EXPIRED', updated_at = now()
		WHERE id IN (SELECT id FROM bookings WHERE status = 'HELD' AND expires_at <= $1
			AND ($2 = '' OR show_id = $2) ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		AND status = 'HELD'
		RETURNING *`, booking.EventExpired), now, showID, limit)
	return collectBookings("expire", rows, err)
}

// Expire marks one HELD booking EXPIRED.
func (s *Store) Expire(ctx context.Context, id string) (booking.Booking, error) {
	b, err := scanBooking(s.pool.QueryRow(ctx, withBookingEvent(`UPDATE bookings SET status = 'EXPIRED',
		updated_at = now() WHERE id = $1 AND status = 'HELD' RETURNING *`, booking.EventExpired), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return booking.Booking{}, fmt.Errorf("booking %s: %w", id, booking.ErrNotHeld)
	}
	if err != nil {
		return booking.Booking{}, fmt.Errorf("postgres: expire: %w", err)
	}
	return b, nil
}

// Extend moves a HELD or PAYMENT_PENDING booking's expiry.
func (s *Store) Extend(ctx context.Context, id string, until time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE bookings SET expires_at = $2, updated_at = now()
		WHERE id = $1 AND status IN ('HELD', 'PAYMENT_PENDING')`, id, until)
	if err != nil {
		return fmt.Errorf("postgres: extend: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("booking %s: %w", id, booking.ErrNotHeld)
	}
	return nil
}
