package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// RecordRefund implements booking.RefundStore. Deleting the refund's sold rows in its own transaction is what
// puts the seats on sale at the moment the refund is on record, and never before. The booking row is locked
// first and the seats' tickets next, the order a check-in (tickets only) and a transfer claim (booking, then
// ticket) also take, so that of a refund and a check-in or a claim of the same ticket exactly one wins.
func (s *Store) RecordRefund(ctx context.Context, r booking.Refund) (booking.Booking, error) {
	var b booking.Booking
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		b, err = scanBooking(tx.QueryRow(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE id = $1 FOR UPDATE`, r.BookingID))
		if err != nil {
			return notFound("booking", r.BookingID, err)
		}
		if b.UserID != r.UserID {
			return fmt.Errorf("booking %s: %w", r.BookingID, booking.ErrNotFound)
		}
		if b.Status == booking.StatusRefunded {
			return fmt.Errorf("booking %s is refunded: %w", r.BookingID, booking.ErrSeatNotPaid)
		}
		if b.Status != booking.StatusConfirmed {
			return fmt.Errorf("booking %s is %s: %w", r.BookingID, b.Status, booking.ErrNotConfirmed)
		}
		var sold []string
		rows, _ := tx.Query(ctx, `SELECT seat_id FROM sold_seats WHERE booking_id = $1`, r.BookingID)
		if sold, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return fmt.Errorf("postgres: refund %s: %w", r.BookingID, err)
		}
		for _, seat := range r.SeatIDs {
			if !slices.Contains(sold, seat) {
				return fmt.Errorf("booking %s seat %s: %w", r.BookingID, seat, booking.ErrSeatNotPaid)
			}
		}
		if err := refundableTickets(ctx, tx, b, r.SeatIDs); err != nil {
			return err
		}
		p, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE booking_id = $1 FOR UPDATE`, r.BookingID))
		if err != nil {
			return fmt.Errorf("postgres: payment of %s: %w", r.BookingID, err)
		}
		last := len(sold) == len(r.SeatIDs)
		payload, _ := json.Marshal(map[string]any{"bookingId": b.ID, "showId": b.ShowID, "userId": b.UserID,
			"seatIds": r.SeatIDs, "paymentId": p.ID, "refundId": r.ID, "amount": r.AmountDue, "currency": p.Currency,
			"percent": r.Percent, "partial": !last})
		batch := &pgx.Batch{}
		batch.Queue(`DELETE FROM sold_seats WHERE booking_id = $1 AND seat_id = ANY($2)`, r.BookingID, r.SeatIDs)
		batch.Queue(`UPDATE tickets SET status = 'VOID' WHERE booking_id = $1 AND seat_id = ANY($2) AND status = 'VALID'`,
			r.BookingID, r.SeatIDs)
		if last {
			batch.Queue(`UPDATE bookings SET status = 'REFUNDED', updated_at = now() WHERE id = $1`, r.BookingID)
			batch.Queue(`UPDATE payments SET status = 'REFUNDING', updated_at = now() WHERE id = $1`, p.ID)
		} else {
			batch.Queue(`UPDATE bookings SET updated_at = now() WHERE id = $1`, r.BookingID)
		}
		batch.Queue(`INSERT INTO refunds (id, booking_id, show_id, payment_id, status, seat_ids, seats_amount, percent,
			fee, amount_due) VALUES ($1, $2, $3, $4, 'PENDING', $5, $6, $7, $8, $9)`,
			r.ID, r.BookingID, b.ShowID, p.ID, r.SeatIDs, r.SeatsAmount, r.Percent, r.Fee, r.AmountDue)
		batch.Queue(`INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, 'booking.refunded', $2)`, b.ID, payload)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("postgres: refund %s: %w", r.BookingID, err)
		}
		if last {
			b.Status = booking.StatusRefunded
		}
		return nil
	})
	return b, err
}

// refundableTickets locks the live tickets of the seats and refuses the refund when one of them was used at the
// door or belongs to another fan now (transferred).
func refundableTickets(ctx context.Context, tx pgx.Tx, b booking.Booking, seats []string) error {
	rows, _ := tx.Query(ctx, `SELECT seat_id, status, user_id FROM tickets
		WHERE booking_id = $1 AND seat_id = ANY($2) AND status <> 'VOID' ORDER BY id FOR UPDATE`, b.ID, seats)
	type live struct {
		seat, status, user string
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (live, error) {
		var l live
		err := r.Scan(&l.seat, &l.status, &l.user)
		return l, err
	})
	if err != nil {
		return fmt.Errorf("postgres: tickets of %s: %w", b.ID, err)
	}
	// A seat given away is the first thing to tell the fan, whatever its new holder did with it since.
	for _, t := range ts {
		if t.status == string(booking.TicketTransferred) || t.user != b.UserID {
			return fmt.Errorf("booking %s seat %s: %w", b.ID, t.seat, booking.ErrTransferred)
		}
	}
	for _, t := range ts {
		if err := booking.TicketRefusal(t.seat, booking.TicketStatus(t.status)); err != nil {
			return fmt.Errorf("booking %s seat %s: %w", b.ID, t.seat, err)
		}
	}
	return nil
}

const refundColumns = `r.id, r.booking_id, r.show_id, r.payment_id, r.seat_ids, r.seats_amount, r.percent, r.fee,
	r.amount_due, r.amount, p.currency, r.status = 'SUCCEEDED', r.created_at, coalesce(r.listing_id, '')`

const refundFrom = ` FROM refunds r JOIN payments p ON p.id = r.payment_id`

func scanRefund(row pgx.Row) (booking.Refund, error) {
	var r booking.Refund
	err := row.Scan(&r.ID, &r.BookingID, &r.ShowID, &r.PaymentID, &r.SeatIDs, &r.SeatsAmount, &r.Percent, &r.Fee,
		&r.AmountDue, &r.Amount, &r.Currency, &r.Succeeded, &r.At, &r.ListingID)
	r.At = r.At.UTC()
	return r, err
}

func collectRefunds(rows pgx.Rows, err error) ([]booking.Refund, error) {
	if err != nil {
		return nil, fmt.Errorf("postgres: refunds: %w", err)
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Refund, error) { return scanRefund(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: refunds: %w", err)
	}
	return rs, nil
}

// Refunds implements booking.RefundStore.
func (s *Store) Refunds(ctx context.Context, bookingID string) ([]booking.Refund, error) {
	return collectRefunds(s.pool.Query(ctx, `SELECT `+refundColumns+refundFrom+` WHERE r.booking_id = $1
		ORDER BY r.created_at, r.id`, bookingID))
}

// RefundSucceeded implements booking.RefundStore. The payment adds up what came back; it is REFUNDED once the
// booking's last refund (the one that made it REFUNDED) and every one before it have settled.
func (s *Store) RefundSucceeded(ctx context.Context, refundID string, amount int64, gatewayRefundID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The payment row is locked first: two refunds of one payment settling at once then add up in turn, and
		// the second sees the first settled when it decides whether the payment is REFUNDED.
		var paymentID string
		err := tx.QueryRow(ctx, `SELECT p.id FROM refunds r JOIN payments p ON p.id = r.payment_id
			WHERE r.id = $1 FOR UPDATE OF p`, refundID).Scan(&paymentID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("postgres: refund %s: %w", refundID, err)
		}
		err = tx.QueryRow(ctx, `UPDATE refunds SET status = 'SUCCEEDED', amount = $2, gateway_refund_id = NULLIF($3, ''),
			updated_at = now() WHERE id = $1 AND status = 'PENDING' RETURNING payment_id`, refundID, amount,
			gatewayRefundID).Scan(&paymentID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // settled already
		}
		if err != nil {
			return fmt.Errorf("postgres: refund %s: %w", refundID, err)
		}
		_, err = tx.Exec(ctx, `UPDATE payments SET refunded_amount = refunded_amount + $2, updated_at = now(),
			status = CASE WHEN status = 'REFUNDING' AND NOT EXISTS (SELECT 1 FROM refunds
				WHERE payment_id = $1 AND status = 'PENDING') THEN 'REFUNDED' ELSE status END
			WHERE id = $1`, paymentID, amount)
		return err
	})
}

// PendingRefunds implements booking.RefundStore.
func (s *Store) PendingRefunds(ctx context.Context, olderThan time.Time, limit int) ([]booking.Refund, error) {
	return collectRefunds(s.pool.Query(ctx, `SELECT `+refundColumns+refundFrom+` WHERE r.status = 'PENDING'
		AND r.updated_at < $1 ORDER BY r.created_at LIMIT $2`, olderThan, limit))
}
