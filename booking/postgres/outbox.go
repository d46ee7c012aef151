package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/eventstream"
)

// Lifecycle events go into the outbox in the statement (or transaction) that makes them true, so an event exists
// exactly when its change committed; eventstream.Relay publishes them
// (Outbox). These helpers build that SQL.

// utcText renders a timestamptz column as RFC 3339 UTC with milliseconds, as the API writes times.
func utcText(col string) string {
	return `to_char(` + col + ` AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
}

// bookingPayload is the JSON of a booking event, from a row of bookings (docs/EVENTS.md).
var bookingPayload = `jsonb_build_object('bookingId', id, 'showId', show_id, 'userId', user_id,
	'seatIds', to_jsonb(seat_ids), 'status', status, 'totalAmount', total_amount, 'currency', currency,
	'expiresAt', ` + utcText("expires_at") + `)`

// withBookingEvent wraps stmt, an INSERT or UPDATE of bookings ending in RETURNING *, so that every row it
// returns also writes an outbox event of type typ; the whole statement returns bookingColumns.
func withBookingEvent(stmt, typ string) string {
	return `WITH b AS (` + stmt + `), o AS (INSERT INTO outbox (aggregate_id, type, payload)
		SELECT id, '` + typ + `', ` + bookingPayload + ` FROM b)
	SELECT ` + bookingColumns + ` FROM b`
}

// eventOfStatus is the event a booking's move to status writes, if any.
func eventOfStatus(status booking.Status) string {
	switch status {
	case booking.StatusExpired:
		return booking.EventExpired
	case booking.StatusCancelled:
		return booking.EventCancelled
	}
	return ""
}

// attemptEvent writes payment.authorized or payment.declined for an attempt that has just moved into AUTHORIZED
// or DECLINED (from the CTE u of UpdateAttempt, whose rows carry their previous state as was): a repeated move
// into the same state writes nothing.
var attemptEvent = `INSERT INTO outbox (aggregate_id, type, payload)
	SELECT u.booking_id, CASE u.state WHEN 'AUTHORIZED' THEN '` + booking.EventPaymentAuthorized + `'
		ELSE '` + booking.EventPaymentDeclined + `' END,
		jsonb_build_object('bookingId', u.booking_id, 'showId', b.show_id, 'userId', u.user_id, 'attemptId', u.id,
			'amount', u.amount, 'currency', u.currency, 'intentId', u.intent_id, 'detail', u.detail)
	FROM u JOIN bookings b ON b.id = u.booking_id
	WHERE u.state IN ('AUTHORIZED', 'DECLINED') AND u.was <> u.state`

// checkInEvent writes ticket.checked_in for the ticket just checked in (the CTE t of CheckIn).
var checkInEvent = `INSERT INTO outbox (aggregate_id, type, payload)
	SELECT id, '` + booking.EventCheckedIn + `', jsonb_build_object('ticketId', id, 'bookingId', booking_id,
		'showId', show_id, 'seatId', seat_id, 'userId', user_id, 'checkedInAt', ` + utcText("checked_in_at") + `,
		'by', checked_in_by)
	FROM t`

// Outbox is booking's outbox as the relay reads it.
func (s *Store) Outbox() eventstream.Source { return outboxSource{s} }

type outboxSource struct{ s *Store }

func (o outboxSource) Relay(ctx context.Context, limit int, publish func(eventstream.Event) error) (int, error) {
	return o.s.RelayOutbox(ctx, limit, func(e booking.OutboxEvent) error {
		return publish(eventstream.Event(e.Lifecycle()))
	})
}

func (o outboxSource) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	return o.s.PruneOutbox(ctx, before, limit)
}

// PruneOutbox deletes up to limit outbox rows published before before.
func (s *Store) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox
		WHERE published_at IS NOT NULL AND published_at < $1 LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune outbox: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// RelayOutbox implements booking.PaymentStore.
func (s *Store) RelayOutbox(ctx context.Context, limit int, publish func(booking.OutboxEvent) error) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, aggregate_id, type, payload, created_at FROM outbox
			WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.OutboxEvent, error) {
			var e booking.OutboxEvent
			err := r.Scan(&e.ID, &e.AggregateID, &e.Type, &e.Payload, &e.CreatedAt)
			return e, err
		})
		if err != nil {
			return err
		}
		var done []int64
		for _, e := range evs {
			if err := publish(e); err != nil {
				break // keep order: the rest waits for the next pass
			}
			done = append(done, e.ID)
		}
		if len(done) == 0 {
			return nil
		}
		n = len(done)
		_, err = tx.Exec(ctx, `UPDATE outbox SET published_at = now() WHERE id = ANY($1)`, done)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: outbox: %w", err)
	}
	return n, nil
}
