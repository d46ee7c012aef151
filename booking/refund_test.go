package booking_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment/sim"
)

// tiered is the example policy: everything back until 72 h before the show, half until 24 h, a fee of
// 1,000 per seat. The fixture's show starts in 48 h, inside the 50% tier.
var tiered = booking.RefundPolicy{FeeMinor: 1000, Tiers: []booking.RefundTier{
	{UntilHoursBefore: 24, Percent: 50}, {UntilHoursBefore: 72, Percent: 100}}}

func (e *payEnv) setPolicy(t *testing.T, rp booking.RefundPolicy) {
	t.Helper()
	ctx := context.Background()
	tp, err := e.pay.TicketPolicy(ctx, e.Show.ID)
	if err != nil {
		t.Fatal(err)
	}
	tp.Refund = &rp
	if _, _, err := e.pay.SetTicketPolicy(ctx, e.Show.ID, tp); err != nil {
		t.Fatal(err)
	}
}

func (e *payEnv) paid(t *testing.T, user string, seats ...string) booking.Booking {
	t.Helper()
	res, err := e.payWith(e.hold(t, user, seats...), sim.CardOK, "k-"+user)
	if err != nil {
		t.Fatal(err)
	}
	return res.Booking
}

func ticketOf(t *testing.T, b booking.Booking, seat string) booking.Ticket {
	t.Helper()
	for _, tk := range b.Tickets {
		if tk.SeatID == seat {
			return tk
		}
	}
	t.Fatalf("no ticket for %s in %+v", seat, b.Tickets)
	return booking.Ticket{}
}

func TestPartialRefundUnderTieredPolicy(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	e.setPolicy(t, tiered)
	// Row A is SILVER (25,000 each).
	b := e.paid(t, "u1", "A1", "A2", "A3", "A4")

	q, err := e.pay.QuoteRefund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1", SeatIDs: []string{"A1", "A2"}})
	if err != nil {
		t.Fatal(err)
	}
	const want = 2 * (25000/2 - 1000)
	if q.Amount != want || q.Percent != 50 || q.SeatsAmount != 50000 {
		t.Fatalf("quote = %+v, want %d at 50%% of 50000", q, want)
	}
	got, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1", SeatIDs: []string{"A1", "A2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != booking.StatusConfirmed || len(got.Refunds) != 1 || got.Refunds[0].AmountDue != want ||
		!got.Refunds[0].Succeeded {
		t.Fatalf("after a partial refund: %s, refunds %+v; want CONFIRMED with one refund of %d", got.Status, got.Refunds, want)
	}
	if r := e.sim.Refunded(e.sim.Intents()[0].ID); r != want {
		t.Fatalf("the gateway refunded %d, want %d", r, want)
	}
	// The refunded seats are on sale, their tickets refused; the others still check in.
	for _, seat := range []string{"A1", "A2"} {
		if _, err := e.pay.CheckIn(ctx, ticketOf(t, b, seat).Code, "gate"); !errors.Is(err, booking.ErrTicketVoid) {
			t.Fatalf("check-in of refunded %s: %v, want ErrTicketVoid", seat, err)
		}
	}
	for _, seat := range []string{"A3", "A4"} {
		if _, err := e.pay.CheckIn(ctx, ticketOf(t, b, seat).Code, "gate"); err != nil {
			t.Fatalf("check-in of paid %s: %v", seat, err)
		}
	}
	resold := e.paid(t, "u2", "A1", "A2")
	if resold.Status != booking.StatusConfirmed {
		t.Fatalf("resale of refunded seats: %s", resold.Status)
	}
	// Asking again changes nothing; a mix of refunded and paid seats, or a seat checked in, is refused.
	if again, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1", SeatIDs: []string{"A2", "A1"}}); err != nil ||
		len(again.Refunds) != 1 {
		t.Fatalf("refund again: %d refunds, %v", len(again.Refunds), err)
	}
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1", SeatIDs: []string{"A1", "A3"}}); !errors.Is(err, booking.ErrSeatNotPaid) {
		t.Fatalf("mixed refund: %v, want ErrSeatNotPaid", err)
	}
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1", SeatIDs: []string{"A3"}}); !errors.Is(err, booking.ErrAlreadyCheckedIn) {
		t.Fatalf("refund of a checked-in seat: %v, want ErrAlreadyCheckedIn", err)
	}
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1", SeatIDs: []string{"Z9"}}); !errors.Is(err, booking.ErrValidation) {
		t.Fatalf("refund of a seat not in the booking: %v, want ErrValidation", err)
	}
	e.settle(t, e.pay)
}

func TestRefundRestThenWhole(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	e.setPolicy(t, tiered)
	b := e.paid(t, "u1", "A5", "A6", "A7")
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1", SeatIDs: []string{"A6"}}); err != nil {
		t.Fatal(err)
	}
	// No body: every seat still paid.
	got, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	per := int64(25000/2 - 1000)
	if got.Status != booking.StatusRefunded || len(got.Refunds) != 2 || got.Refunds[1].AmountDue != 2*per {
		t.Fatalf("after refunding the rest: %s, %+v", got.Status, got.Refunds)
	}
	if r := e.sim.Refunded(e.sim.Intents()[0].ID); r != 3*per {
		t.Fatalf("the gateway refunded %d, want %d", r, 3*per)
	}
	e.settle(t, e.pay)
}

func TestRefundOutsideEveryTier(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	b := e.paid(t, "u1", "A8")
	// Only refunds until 60 h before a show 48 h away: none now.
	e.setPolicy(t, booking.RefundPolicy{Tiers: []booking.RefundTier{{UntilHoursBefore: 60, Percent: 100}}})
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1"}); !errors.Is(err, booking.ErrRefundWindow) {
		t.Fatalf("refund outside every tier: %v, want ErrRefundWindow", err)
	}
	if _, _, err := e.pay.SetTicketPolicy(ctx, e.Show.ID, booking.TicketPolicy{Refund: &booking.RefundPolicy{
		Tiers: []booking.RefundTier{{UntilHoursBefore: 2, Percent: 150}}}}); !errors.Is(err, booking.ErrValidation) {
		t.Fatalf("a tier of 150%%: %v, want ErrValidation", err)
	}
	// Back to the default policy: with REFUND_WINDOW 24 h, a full refund.
	p := booking.NewCheckout(e.Svc, e.Store, e.gw, e.signer, e.verifier, booking.CheckoutConfig{RefundWindow: 24 * time.Hour})
	defer p.Close()
	if _, _, err := p.SetTicketPolicy(ctx, e.Show.ID, booking.TicketPolicy{}); err != nil {
		t.Fatal(err)
	}
	got, err := p.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "u1"})
	if err != nil || got.Status != booking.StatusRefunded || got.Refunds[0].AmountDue != 25000 {
		t.Fatalf("refund under the default policy: %+v, %v", got.Refunds, err)
	}
	e.settle(t, p)
}

// TestRefundRacesCheckIn: a refund and a check-in of the same ticket, many times over; exactly one wins each
// time, and the ledger agrees with whichever did.
func TestRefundRacesCheckIn(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	e.setPolicy(t, tiered)
	seats := []string{"B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8"}
	for i, seat := range seats {
		b := e.paid(t, "r"+seat, seat, "C"+seat[1:])
		var wg sync.WaitGroup
		var refundErr, checkErr error
		wg.Go(func() {
			_, refundErr = e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: b.UserID, SeatIDs: []string{seat}})
		})
		wg.Go(func() { _, checkErr = e.pay.CheckIn(ctx, ticketOf(t, b, seat).Code, "gate") })
		wg.Wait()
		switch {
		case refundErr == nil && errors.Is(checkErr, booking.ErrTicketVoid):
		case checkErr == nil && errors.Is(refundErr, booking.ErrAlreadyCheckedIn):
		default:
			t.Fatalf("race %d: refund %v, check-in %v; want exactly one to win", i, refundErr, checkErr)
		}
	}
	e.settle(t, e.pay)
}
