package booking

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flashseat/flashseat/shared/shard"
)

// RefundStore is the ledger's side of refunds.
type RefundStore interface {
	// RecordRefund is a refund's transaction: the refund's seats of a CONFIRMED booking of the user leave the
	// ledger, their tickets are voided and a PENDING refund and an outbox event are written; the booking becomes
	// REFUNDED when no seat of it remains paid. It refuses (ErrSeatNotPaid, ErrAlreadyCheckedIn, ErrTransferred)
	// when any of the seats is no longer the booking's to refund, so a refund racing a check-in or a transfer of
	// the same ticket loses or wins whole.
	RecordRefund(ctx context.Context, r Refund) (Booking, error)
	RefundSucceeded(ctx context.Context, refundID string, amount int64, gatewayRefundID string) error
	PendingRefunds(ctx context.Context, olderThan time.Time, limit int) ([]Refund, error)
	// Refunds lists a booking's refunds, oldest first.
	Refunds(ctx context.Context, bookingID string) ([]Refund, error)
}

// Refund is a refund of some seats of a booking: what the policy promised (AmountDue, shown to the fan before
// they confirmed) and, once the gateway returned it, what was returned (Amount).
type Refund struct {
	ID          string
	BookingID   string
	ShowID      string
	UserID      string
	PaymentID   string
	SeatIDs     []string
	SeatsAmount int64
	Percent     int
	Fee         int64 // kept per seat
	AmountDue   int64
	Amount      int64
	Currency    string
	Succeeded   bool
	At          time.Time
	// ListingID names the resale listing when this is a seller's payout (resale.go): the seat was sold on the
	// exchange, and AmountDue is its price less the exchange's fee.
	ListingID string
}

// RefundRequest asks for the refund of some seats of a booking; no seats means every seat still paid.
type RefundRequest struct {
	BookingID string
	UserID    string
	SeatIDs   []string
}

// QuoteRefund says what refunding the seats would give back now, without refunding anything: the amount the fan
// confirms. The refund itself prices again at its own moment, so a quote read just before a tier ends is not
// honoured after it.
func (p *Checkout) QuoteRefund(ctx context.Context, r RefundRequest) (RefundQuote, error) {
	b, q, err := p.quoteRefund(ctx, r)
	if err != nil {
		return RefundQuote{}, err
	}
	if b.Status == StatusRefunded || len(q.SeatIDs) == 0 {
		return RefundQuote{}, fmt.Errorf("booking %s: %w", b.ID, ErrSeatNotPaid)
	}
	return q, nil
}

// quoteRefund reads the booking and prices the refund of its requested seats. A replay (every requested seat
// refunded already) answers the booking with an empty quote.
func (p *Checkout) quoteRefund(ctx context.Context, r RefundRequest) (Booking, RefundQuote, error) {
	b, err := p.holds.Booking(ctx, r.BookingID, r.UserID)
	if err != nil {
		return Booking{}, RefundQuote{}, err
	}
	if b.Status != StatusConfirmed && b.Status != StatusRefunded {
		return Booking{}, RefundQuote{}, fmt.Errorf("booking %s is %s: %w", b.ID, b.Status, ErrNotConfirmed)
	}
	done, err := p.store.Refunds(ctx, b.ID)
	if err != nil {
		return Booking{}, RefundQuote{}, err
	}
	refunded := map[string]bool{}
	for _, d := range done {
		for _, s := range d.SeatIDs {
			refunded[s] = true
		}
	}
	seats, err := p.refundSeats(b, r.SeatIDs, refunded)
	if err != nil || len(seats) == 0 {
		return b, RefundQuote{BookingID: b.ID, Currency: b.Currency}, err
	}
	show, err := p.holds.catalog.Show(ctx, b.ShowID)
	if err != nil {
		return Booking{}, RefundQuote{}, err
	}
	tp, err := p.TicketPolicy(ctx, b.ShowID)
	if err != nil {
		return Booking{}, RefundQuote{}, err
	}
	tier, until, ok := tp.Refund.Tier(show.StartsAt, p.cfg.Now())
	if !ok {
		return Booking{}, RefundQuote{}, fmt.Errorf("%w: refunds closed at %s", ErrRefundWindow,
			tp.Refund.ClosesAt(show.StartsAt).UTC().Format(time.RFC3339))
	}
	priced, err := p.holds.catalog.SeatsOf(ctx, b.ShowID, seats)
	if err != nil {
		return Booking{}, RefundQuote{}, err
	}
	q := quote(priced, tier, tp.Refund.FeeMinor)
	q.BookingID, q.Currency, q.Until = b.ID, b.Currency, until
	return b, q, nil
}

// refundSeats resolves a request's seats against the booking: none asked means every seat not refunded yet; a
// seat not in the booking is a validation error; asking again for seats all refunded already is a replay (no
// seats); asking for a mix of refunded and paid ones is ErrSeatNotPaid.
func (p *Checkout) refundSeats(b Booking, asked []string, refunded map[string]bool) ([]string, error) {
	if len(asked) == 0 {
		var out []string
		for _, s := range b.SeatIDs {
			if !refunded[s] {
				out = append(out, s)
			}
		}
		return out, nil
	}
	if len(asked) > len(b.SeatIDs) {
		return nil, Unprocessable("seatIds: the booking has %d seats", len(b.SeatIDs))
	}
	var paid, gone []string
	for i, s := range asked {
		switch {
		case !slices.Contains(b.SeatIDs, s):
			return nil, Unprocessable("seatIds: seat %q is not in booking %s", clip(s), b.ID)
		case slices.Contains(asked[:i], s):
			return nil, Unprocessable("seatIds: seat %s is named twice", s)
		case refunded[s]:
			gone = append(gone, s)
		default:
			paid = append(paid, s)
		}
	}
	if len(gone) > 0 && len(paid) > 0 {
		return nil, fmt.Errorf("%w: seats %v of booking %s were refunded already", ErrSeatNotPaid, gone, b.ID)
	}
	return paid, nil
}

// Refund gives back the money for some seats of a CONFIRMED booking (all still paid when none are named), as the
// show's refund policy prices it now, and puts those seats back on sale. The seats leave the ledger in the
// transaction that records the refund, so they are on sale the moment it is on record; the gateway's part follows
// (and is retried by the worker until it succeeds). Asking again for seats already refunded answers the booking
// as it is.
func (p *Checkout) Refund(ctx context.Context, r RefundRequest) (Booking, error) {
	b, q, err := p.quoteRefund(ctx, r)
	if err != nil {
		return Booking{}, err
	}
	if len(q.SeatIDs) == 0 {
		return p.BookingView(ctx, b.ID, b.UserID)
	}
	rf := Refund{ID: shard.ID("rf_", b.ShowID), BookingID: b.ID, ShowID: b.ShowID, UserID: b.UserID, SeatIDs: q.SeatIDs,
		SeatsAmount: q.SeatsAmount, Percent: q.Percent, Fee: q.Fee, AmountDue: q.Amount, Currency: b.Currency,
		At: p.cfg.Now()}
	nb, err := p.store.RecordRefund(ctx, rf)
	if err != nil {
		return Booking{}, err
	}
	freed := nb
	freed.SeatIDs = q.SeatIDs
	p.holds.AfterRefund(ctx, freed)
	sctx, cancel := p.sagaContext(ctx)
	defer cancel()
	p.settleRefund(sctx, rf)
	return p.BookingView(ctx, b.ID, b.UserID)
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

// AdminRefund refunds seats of any user's confirmed booking, for the operator, through the same saga and policy
// as a fan's refund.
func (p *Checkout) AdminRefund(ctx context.Context, id string, seatIDs []string) (Booking, error) {
	b, err := p.holds.AdminBooking(ctx, id)
	if err != nil {
		return Booking{}, err
	}
	return p.Refund(ctx, RefundRequest{BookingID: id, UserID: b.UserID, SeatIDs: seatIDs})
}
