package booking

import (
	"context"
	"fmt"
	"time"
)

// RefundStore is the ledger's side of refunds.
type RefundStore interface {
	// RecordRefund is the refund's transaction: a CONFIRMED booking of the user becomes REFUNDED, its seats leave
	// the ledger, its tickets are voided and a PENDING refund and an outbox event are written. A booking already
	// REFUNDED returns its refund again.
	RecordRefund(ctx context.Context, bookingID, userID, refundID string) (Booking, Refund, error)
	RefundSucceeded(ctx context.Context, refundID string, amount int64, gatewayRefundID string) error
	PendingRefunds(ctx context.Context, olderThan time.Time, limit int) ([]Refund, error)
}

// RefundableUntil is when refunds of a show's bookings close.
func (p *Checkout) RefundableUntil(show Show) time.Time {
	return show.StartsAt.Add(-p.cfg.RefundWindow)
}

// Refund gives a CONFIRMED booking's money back and its seats to the sale, until RefundWindow before the show.
// The seats leave the ledger in the same transaction that records the refund, so they are on sale the moment the
// refund is on record; the gateway's part follows (and is retried by the worker until it succeeds). Refunding a
// booking already refunded answers the same again.
func (p *Checkout) Refund(ctx context.Context, id, userID string) (Booking, error) {
	b, err := p.holds.Booking(ctx, id, userID)
	if err != nil {
		return Booking{}, err
	}
	if b.Status == StatusRefunded {
		return b, nil
	}
	if b.Status != StatusConfirmed {
		return Booking{}, fmt.Errorf("booking %s is %s: %w", id, b.Status, ErrNotConfirmed)
	}
	show, err := p.holds.catalog.Show(ctx, b.ShowID)
	if err != nil {
		return Booking{}, err
	}
	if deadline := p.RefundableUntil(show); !p.cfg.Now().Before(deadline) {
		return Booking{}, fmt.Errorf("%w: refunds closed at %s", ErrRefundWindow, deadline.UTC().Format(time.RFC3339))
	}
	b, r, err := p.store.RecordRefund(ctx, id, userID, NewID("rf_"))
	if err != nil {
		return Booking{}, err
	}
	p.holds.AfterRefund(ctx, b)
	if !r.Succeeded {
		sctx, cancel := p.sagaContext(ctx)
		defer cancel()
		p.settleRefund(sctx, r)
	}
	return b, nil
}

// Cancel cancels the user's HELD booking (see Holds.Cancel) and has the worker look at once for any
// authorization the booking still has (one whose saga died between authorize and confirm), to void it.
func (p *Checkout) Cancel(ctx context.Context, id, userID string) (Booking, []string, error) {
	b, freed, err := p.holds.Cancel(ctx, id, userID)
	if err == nil {
		p.nudge()
	}
	return b, freed, err
}

// AdminRefund refunds any user's confirmed booking, for the operator, through the same saga as a fan's refund.
func (p *Checkout) AdminRefund(ctx context.Context, id string) (Booking, error) {
	b, err := p.holds.AdminBooking(ctx, id)
	if err != nil {
		return Booking{}, err
	}
	return p.Refund(ctx, id, b.UserID)
}

// Refund is a booking's refund.
type Refund struct {
	ID        string
	BookingID string
	PaymentID string
	Amount    int64
	Succeeded bool
}
