package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// Tickets implements booking.PaymentStore: the tickets the booking's own fan was issued, live or not (the ones
// reissued to another fan by a transfer are theirs, not the booking's).
func (s *Store) Tickets(ctx context.Context, bookingID string) ([]booking.Ticket, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.id, t.seat_id, t.code, t.status FROM tickets t
		JOIN bookings b ON b.id = t.booking_id WHERE t.booking_id = $1 AND t.user_id = b.user_id
		ORDER BY t.seat_id, t.created_at`, bookingID)
	if err != nil {
		return nil, fmt.Errorf("postgres: tickets: %w", err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Ticket, error) {
		var t booking.Ticket
		err := r.Scan(&t.ID, &t.SeatID, &t.Code, &t.Status)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: tickets: %w", err)
	}
	return ts, nil
}

const ticketColumns = `id, seat_id, code, booking_id, user_id, show_id, status, checked_in_at`

func scanTicket(row pgx.Row) (booking.TicketInfo, error) {
	var t booking.TicketInfo
	var at *time.Time
	err := row.Scan(&t.ID, &t.SeatID, &t.Code, &t.BookingID, &t.UserID, &t.ShowID, &t.Status, &at)
	if at != nil {
		t.CheckedInAt = at.UTC()
	}
	return t, err
}

// TicketByID implements booking.PaymentStore.
func (s *Store) TicketByID(ctx context.Context, id string) (booking.TicketInfo, error) {
	t, err := scanTicket(s.pool.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets WHERE id = $1`, id))
	if err != nil {
		return booking.TicketInfo{}, notFound("ticket", id, err)
	}
	return t, nil
}

// CheckIn implements booking.PaymentStore. One conditional UPDATE is the whole protocol: of any number of
// concurrent scans exactly one finds the ticket VALID; the rest find it CHECKED_IN.
func (s *Store) CheckIn(ctx context.Context, ticketID, showID, seatID, by string, at time.Time) (booking.TicketInfo, error) {
	t, err := scanTicket(s.pool.QueryRow(ctx, `WITH t AS (UPDATE tickets SET status = 'CHECKED_IN', checked_in_at = $4,
			checked_in_by = $5 WHERE id = $1 AND show_id = $2 AND seat_id = $3 AND status = 'VALID' RETURNING *
		), o AS (`+checkInEvent+`)
		SELECT `+ticketColumns+` FROM t`, ticketID, showID, seatID, at, by))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return booking.TicketInfo{}, fmt.Errorf("postgres: check in %s: %w", ticketID, err)
	}
	t, err = s.TicketByID(ctx, ticketID)
	switch {
	case err != nil:
		return booking.TicketInfo{}, err
	case t.ShowID != showID || t.SeatID != seatID:
		return booking.TicketInfo{}, fmt.Errorf("ticket %s: %w", ticketID, booking.ErrNotFound)
	case t.Status == booking.TicketValid:
		// VALID when read back but not when updated: moved on and back between the two (a listing withdrawn).
		return t, fmt.Errorf("ticket %s changed while scanned, scan again: %w", ticketID, booking.ErrInProgress)
	}
	return t, booking.TicketRefusal(ticketID, t.Status)
}
