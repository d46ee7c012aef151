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

// RecordRefund implements booking.PaymentStore. Deleting the sold rows in the refund's own transaction is what
// puts the seats on sale at the moment the refund is on record, and never before.
func (s *Store) RecordRefund(ctx context.Context, bookingID, userID, refundID string) (booking.Booking, booking.Refund, error) {
	var b booking.Booking
	var r booking.Refund
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		b, err = scanBooking(tx.QueryRow(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE id = $1 FOR UPDATE`, bookingID))
		if err != nil {
			return notFound("booking", bookingID, err)
		}
		if b.UserID != userID {
			return fmt.Errorf("booking %s: %w", bookingID, booking.ErrNotFound)
		}
		if b.Status == booking.StatusRefunded {
			r, err = scanRefund(tx.QueryRow(ctx, `SELECT `+refundColumns+` FROM refunds WHERE booking_id = $1`, bookingID))
			return err
		}
		if b.Status != booking.StatusConfirmed {
			return fmt.Errorf("booking %s is %s: %w", bookingID, b.Status, booking.ErrNotConfirmed)
		}
		var used int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tickets WHERE booking_id = $1 AND status = 'CHECKED_IN'`,
			bookingID).Scan(&used); err != nil {
			return err
		}
		if used > 0 {
			return fmt.Errorf("booking %s has tickets checked in: %w", bookingID, booking.ErrAlreadyCheckedIn)
		}
		p, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE booking_id = $1 FOR UPDATE`, bookingID))
		if err != nil {
			return fmt.Errorf("postgres: payment of %s: %w", bookingID, err)
		}
		r = booking.Refund{ID: refundID, BookingID: bookingID, PaymentID: p.ID}
		payload, _ := json.Marshal(map[string]any{"bookingId": b.ID, "showId": b.ShowID, "userId": b.UserID,
			"seatIds": b.SeatIDs, "paymentId": p.ID, "amount": p.Amount, "currency": p.Currency})
		batch := &pgx.Batch{}
		batch.Queue(`DELETE FROM sold_seats WHERE booking_id = $1`, bookingID)
		batch.Queue(`UPDATE bookings SET status = 'REFUNDED', updated_at = now() WHERE id = $1`, bookingID)
		batch.Queue(`UPDATE tickets SET status = 'VOID' WHERE booking_id = $1`, bookingID)
		batch.Queue(`UPDATE payments SET status = 'REFUNDING', updated_at = now() WHERE id = $1`, p.ID)
		batch.Queue(`INSERT INTO refunds (id, booking_id, payment_id, status) VALUES ($1, $2, $3, 'PENDING')`,
			refundID, bookingID, p.ID)
		batch.Queue(`INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, 'booking.refunded', $2)`, b.ID, payload)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("postgres: refund %s: %w", bookingID, err)
		}
		b.Status = booking.StatusRefunded
		return nil
	})
	if err != nil {
		return b, booking.Refund{}, err
	}
	return b, r, nil
}

const refundColumns = `id, booking_id, payment_id, amount, status = 'SUCCEEDED'`

func scanRefund(row pgx.Row) (booking.Refund, error) {
	var r booking.Refund
	err := row.Scan(&r.ID, &r.BookingID, &r.PaymentID, &r.Amount, &r.Succeeded)
	return r, err
}

// RefundSucceeded implements booking.PaymentStore.
func (s *Store) RefundSucceeded(ctx context.Context, refundID string, amount int64, gatewayRefundID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var paymentID string
		err := tx.QueryRow(ctx, `UPDATE refunds SET status = 'SUCCEEDED', amount = $2, gateway_refund_id = NULLIF($3, ''),
			updated_at = now() WHERE id = $1 AND status = 'PENDING' RETURNING payment_id`, refundID, amount,
			gatewayRefundID).Scan(&paymentID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // settled already
		}
		if err != nil {
			return fmt.Errorf("postgres: refund %s: %w", refundID, err)
		}
		_, err = tx.Exec(ctx, `UPDATE payments SET status = 'REFUNDED', refunded_amount = $2, updated_at = now()
			WHERE id = $1`, paymentID, amount)
		return err
	})
}

// PendingRefunds implements booking.PaymentStore.
func (s *Store) PendingRefunds(ctx context.Context, olderThan time.Time, limit int) ([]booking.Refund, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+refundColumns+` FROM refunds WHERE status = 'PENDING' AND updated_at < $1
		ORDER BY created_at LIMIT $2`, olderThan, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending refunds: %w", err)
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Refund, error) { return scanRefund(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: pending refunds: %w", err)
	}
	return rs, nil
}
