package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// Confirm runs ConfirmTx in a transaction of its own.
func (s *Store) Confirm(ctx context.Context, id string) (booking.Booking, error) {
	var b booking.Booking
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if b, err = ConfirmTx(ctx, tx, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, withBookingEvent(`SELECT * FROM bookings WHERE id = $1`, booking.EventConfirmed), id)
		return err
	})
	return b, err
}

// ConfirmTx is the ledger's confirmation step inside the caller's transaction, so the pay saga can commit the
// sale together with its payment, tickets and outbox rows. It moves a HELD or PAYMENT_PENDING booking to
// CONFIRMED and inserts its seats into sold_seats, after checking the fencing token:
//
//   - the booking row is locked (FOR UPDATE), so cancel, expiry and a second confirmation wait and then see it
//     is no longer HELD;
//   - every seat's recorded fence must not be newer than the booking's: a newer one means the hold's locks lapsed
//     and another hold claimed the seat, so this one is stale (booking.ErrStale);
//   - the (show, seat) primary key of sold_seats refuses a seat sold already, whatever Redis forgot
//     (booking.ErrSeatsUnavailable). The caller must roll back on any error.
func ConfirmTx(ctx context.Context, tx pgx.Tx, id string) (booking.Booking, error) {
	b, err := scanBooking(tx.QueryRow(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return booking.Booking{}, notFound("booking", id, err)
	}
	switch b.Status {
	case booking.StatusHeld, booking.StatusPaymentPending:
	case booking.StatusExpired:
		return b, fmt.Errorf("booking %s: %w", id, booking.ErrHoldExpired)
	default:
		return b, fmt.Errorf("booking %s is %s: %w", id, b.Status, booking.ErrNotHeld)
	}
	var newer int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM seat_fences WHERE show_id = $1 AND seat_id = ANY($2)
		AND fence > $3`, b.ShowID, b.SeatIDs, b.Fence).Scan(&newer); err != nil {
		return booking.Booking{}, fmt.Errorf("postgres: confirm %s: %w", id, err)
	}
	if newer > 0 {
		return b, fmt.Errorf("booking %s: %w", id, booking.ErrStale)
	}
	// A hold of a listed seat takes the seat from its seller first (the exchange, resale.go).
	if err := resellTx(ctx, tx, b); err != nil {
		return b, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sold_seats (show_id, seat_id, booking_id, fence)
		SELECT $1, unnest($2::text[]), $3, $4`, b.ShowID, b.SeatIDs, b.ID, b.Fence); err != nil {
		if isUnique(err, "sold_seats_pkey") {
			return b, fmt.Errorf("booking %s: a seat is sold already: %w", id, booking.ErrSeatsUnavailable)
		}
		return booking.Booking{}, fmt.Errorf("postgres: confirm %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE bookings SET status = 'CONFIRMED', updated_at = now() WHERE id = $1`,
		id); err != nil {
		return booking.Booking{}, fmt.Errorf("postgres: confirm %s: %w", id, err)
	}
	b.Status = booking.StatusConfirmed
	return b, nil
}
