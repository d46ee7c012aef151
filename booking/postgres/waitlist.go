package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

var _ booking.WaitlistStore = (*Store)(nil)

// waitlistColumns reads an entry of the table aliased w, with its position among the entries in line.
const waitlistColumns = `w.id, w.show_id, w.user_id, w.seats, w.category, w.language, w.status, w.passed_over,
	w.created_at, COALESCE(w.booking_id, ''), COALESCE(w.offer_seats, '{}'), w.offer_expires_at,
	CASE WHEN w.status IN ('WAITING', 'OFFERED') THEN (SELECT count(*) FROM waitlist o
		WHERE o.show_id = w.show_id AND o.id < w.id AND o.status IN ('WAITING', 'OFFERED')) + 1 ELSE 0 END`

func scanWaitlist(row pgx.Row) (booking.WaitlistEntry, error) {
	var e booking.WaitlistEntry
	var bookingID string
	var seats []string
	var expires *time.Time
	err := row.Scan(&e.ID, &e.ShowID, &e.UserID, &e.Seats, &e.Category, &e.Language, &e.Status, &e.PassedOver,
		&e.JoinedAt, &bookingID, &seats, &expires, &e.Position)
	if err != nil {
		return booking.WaitlistEntry{}, err
	}
	e.JoinedAt = e.JoinedAt.UTC()
	if bookingID != "" {
		e.Offer = &booking.WaitlistOffer{BookingID: bookingID, SeatIDs: seats}
		if expires != nil {
			e.Offer.ExpiresAt = expires.UTC()
		}
	}
	return e, nil
}

func collectWaitlist(rows pgx.Rows, err error) ([]booking.WaitlistEntry, error) {
	if err != nil {
		return nil, fmt.Errorf("postgres: waitlist: %w", err)
	}
	es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.WaitlistEntry, error) { return scanWaitlist(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: waitlist: %w", err)
	}
	return es, nil
}

// JoinWaitlist implements booking.WaitlistStore. The upsert keeps an entry in line where it is (its id orders the
// line); an entry out of line gets a fresh id from the sequence, which puts it at the back, and starts WAITING
// again. Joins of one show take a transaction-scoped advisory lock first: without it two concurrent joins each
// count the entries committed before them, miss each other, and answer the same position.
func (s *Store) JoinWaitlist(ctx context.Context, j booking.WaitlistJoin, now time.Time) (booking.WaitlistEntry, error) {
	var e booking.WaitlistEntry
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('waitlist:' || $1, 0))", j.ShowID); err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, `
			INSERT INTO waitlist AS w (show_id, user_id, seats, category, language, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (show_id, user_id) DO UPDATE SET
				id = CASE WHEN w.status = 'WAITING' OR w.status = 'OFFERED' THEN w.id ELSE nextval('waitlist_id_seq') END,
				seats = CASE WHEN w.status = 'OFFERED' THEN w.seats ELSE EXCLUDED.seats END,
				category = CASE WHEN w.status = 'OFFERED' THEN w.category ELSE EXCLUDED.category END,
				language = CASE WHEN EXCLUDED.language = '' THEN w.language ELSE EXCLUDED.language END,
				created_at = CASE WHEN w.status IN ('WAITING', 'OFFERED') THEN w.created_at ELSE EXCLUDED.created_at END,
				passed_over = CASE WHEN w.status IN ('WAITING', 'OFFERED') THEN w.passed_over ELSE 0 END,
				booking_id = CASE WHEN w.status IN ('WAITING', 'OFFERED') THEN w.booking_id END,
				offer_seats = CASE WHEN w.status IN ('WAITING', 'OFFERED') THEN w.offer_seats END,
				offer_expires_at = CASE WHEN w.status IN ('WAITING', 'OFFERED') THEN w.offer_expires_at END,
				status = CASE WHEN w.status IN ('WAITING', 'OFFERED') THEN w.status ELSE 'WAITING' END,
				updated_at = EXCLUDED.updated_at
			RETURNING id`, j.ShowID, j.UserID, j.Seats, j.Category, j.Language, now).Scan(&id); err != nil {
			return err
		}
		var err error
		e, err = scanWaitlist(tx.QueryRow(ctx, `SELECT `+waitlistColumns+` FROM waitlist w WHERE w.id = $1`, id))
		return err
	})
	if err != nil {
		return booking.WaitlistEntry{}, fmt.Errorf("postgres: join waitlist: %w", err)
	}
	return e, nil
}

// WaitlistEntry implements booking.WaitlistStore.
func (s *Store) WaitlistEntry(ctx context.Context, showID, userID string) (booking.WaitlistEntry, error) {
	e, err := scanWaitlist(s.pool.QueryRow(ctx, `SELECT `+waitlistColumns+` FROM waitlist w
		WHERE w.show_id = $1 AND w.user_id = $2`, showID, userID))
	if err != nil {
		return booking.WaitlistEntry{}, notFound("waitlist entry of show", showID, err)
	}
	return e, nil
}

// LeaveWaitlist implements booking.WaitlistStore. An ACCEPTED entry stays as it is: its fan has the tickets.
func (s *Store) LeaveWaitlist(ctx context.Context, showID, userID string) (booking.WaitlistEntry, error) {
	var e booking.WaitlistEntry
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		e, err = scanWaitlist(tx.QueryRow(ctx, `SELECT `+waitlistColumns+` FROM waitlist w
			WHERE w.show_id = $1 AND w.user_id = $2 FOR UPDATE`, showID, userID))
		if err != nil {
			return notFound("waitlist entry of show", showID, err)
		}
		_, err = tx.Exec(ctx, `UPDATE waitlist SET status = 'LEFT', updated_at = now()
			WHERE id = $1 AND status <> 'ACCEPTED'`, e.ID)
		return err
	})
	if err != nil {
		return booking.WaitlistEntry{}, err
	}
	return e, nil
}

// Waitlist implements booking.WaitlistStore.
func (s *Store) Waitlist(ctx context.Context, showID string) ([]booking.WaitlistEntry, error) {
	return collectWaitlist(s.pool.Query(ctx, `SELECT `+waitlistColumns+` FROM waitlist w WHERE w.show_id = $1
		ORDER BY w.id LIMIT 10000`, showID))
}

// LockOffers implements booking.WaitlistStore with a transaction-scoped advisory lock in a transaction of its own,
// held while the offer's hold is claimed in Redis and released by its end. A transaction, not a session lock:
// behind PgBouncer in transaction pooling mode (DATABASE_POOLER) only a transaction keeps its server connection,
// so an unlock could reach another one and leave the lock held. The transaction writes nothing and, in READ
// COMMITTED, holds no snapshot between statements, so keeping it open costs no vacuum.
func (s *Store) LockOffers(ctx context.Context, showID string) (func(), error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: offer lock: %w", err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('waitlist-offer:' || $1, 0))",
		showID); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("postgres: offer lock: %w", err)
	}
	// Rolling back ends the transaction and its lock; when even that fails, pgx closes the connection, which
	// ends them too.
	return func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }, nil
}

// InLine implements booking.WaitlistStore.
func (s *Store) InLine(ctx context.Context, showID string) ([]booking.WaitlistEntry, error) {
	return collectWaitlist(s.pool.Query(ctx, `SELECT `+waitlistColumns+` FROM waitlist w
		WHERE w.show_id = $1 AND w.status = 'WAITING' ORDER BY w.id LIMIT 1000`, showID))
}

// waitlistPayload is the JSON of a waitlist event, from a row of waitlist (docs/EVENTS.md).
var waitlistPayload = `jsonb_build_object('entryId', id, 'showId', show_id, 'userId', user_id, 'seats', seats,
	'category', category, 'language', language, 'bookingId', booking_id, 'seatIds', to_jsonb(offer_seats),
	'expiresAt', ` + utcText("offer_expires_at") + `, 'passedOver', passed_over)`

// RecordOffer implements booking.WaitlistStore.
func (s *Store) RecordOffer(ctx context.Context, entryID int64, b booking.Booking, passed []int64) (bool, error) {
	ok := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `WITH w AS (UPDATE waitlist SET status = 'OFFERED', booking_id = $2, offer_seats = $3,
				offer_expires_at = $4, updated_at = now() WHERE id = $1 AND status = 'WAITING' RETURNING *)
			INSERT INTO outbox (aggregate_id, type, payload)
			SELECT booking_id, '`+booking.EventWaitlistOffered+`', `+waitlistPayload+` FROM w`,
			entryID, b.ID, b.SeatIDs, b.ExpiresAt)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		ok = true
		if len(passed) > 0 {
			_, err = tx.Exec(ctx, `UPDATE waitlist SET passed_over = passed_over + 1, updated_at = now()
				WHERE id = ANY($1) AND status = 'WAITING'`, passed)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: record offer: %w", err)
	}
	return ok, nil
}

// EndOffer implements booking.WaitlistStore.
func (s *Store) EndOffer(ctx context.Context, bookingID string, to booking.WaitlistStatus) (booking.WaitlistEntry, bool, error) {
	typ := booking.EventWaitlistLapsed
	if to == booking.WaitlistAccepted {
		typ = booking.EventWaitlistAccepted
	}
	e, err := scanWaitlist(s.pool.QueryRow(ctx, `WITH w AS (UPDATE waitlist SET status = $2, updated_at = now()
			WHERE booking_id = $1 AND status = 'OFFERED' RETURNING *
		), o AS (INSERT INTO outbox (aggregate_id, type, payload) SELECT booking_id, '`+typ+`', `+waitlistPayload+` FROM w)
		SELECT `+waitlistColumns+` FROM w`, bookingID, string(to)))
	if errors.Is(err, pgx.ErrNoRows) {
		return booking.WaitlistEntry{}, false, nil
	}
	if err != nil {
		return booking.WaitlistEntry{}, false, fmt.Errorf("postgres: end offer: %w", err)
	}
	e.Position = 0 // computed before the update
	return e, true, nil
}

// IsOffer implements booking.WaitlistStore.
func (s *Store) IsOffer(ctx context.Context, bookingID string) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM waitlist WHERE booking_id = $1)`, bookingID).Scan(&ok); err != nil {
		return false, fmt.Errorf("postgres: is offer: %w", err)
	}
	return ok, nil
}

// StaleOffers implements booking.WaitlistStore.
func (s *Store) StaleOffers(ctx context.Context, limit int) ([]booking.WaitlistEntry, error) {
	return collectWaitlist(s.pool.Query(ctx, `SELECT `+waitlistColumns+` FROM waitlist w
		JOIN bookings b ON b.id = w.booking_id
		WHERE w.status = 'OFFERED' AND b.status NOT IN ('HELD', 'PAYMENT_PENDING')
		ORDER BY w.id LIMIT $1`, limit))
}

// ShowsInLine implements booking.WaitlistStore.
func (s *Store) ShowsInLine(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT show_id FROM waitlist WHERE status = 'WAITING'`)
	if err != nil {
		return nil, fmt.Errorf("postgres: shows in line: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: shows in line: %w", err)
	}
	return ids, nil
}
