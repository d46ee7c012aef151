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

func TestTransferReissuesTheTicket(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	e.setPolicy(t, tiered)
	b := e.paid(t, "alice", "D1", "D2")
	old := ticketOf(t, b, "D1")

	if _, _, err := e.pay.SendTransfer(ctx, booking.TransferRequest{TicketID: old.ID, UserID: "mallory"}); !errors.Is(err, booking.ErrNotFound) {
		t.Fatalf("transfer of another fan's ticket: %v, want ErrNotFound", err)
	}
	if _, _, err := e.pay.SendTransfer(ctx, booking.TransferRequest{TicketID: old.ID, UserID: "alice", ToEmail: "not mail"}); !errors.Is(err, booking.ErrValidation) {
		t.Fatalf("transfer to a bad address: %v, want ErrValidation", err)
	}
	tr, secret, err := e.pay.SendTransfer(ctx, booking.TransferRequest{TicketID: old.ID, UserID: "alice", ToEmail: "bob@example.com"})
	if err != nil || secret == "" || tr.Status != booking.TransferPending {
		t.Fatalf("send: %+v %q %v", tr, secret, err)
	}
	if _, err := e.pay.ClaimTransfer(ctx, tr.ID, "wrong", "bob"); !errors.Is(err, booking.ErrNotFound) {
		t.Fatalf("claim with a wrong secret: %v, want ErrNotFound", err)
	}
	if _, err := e.pay.ClaimTransfer(ctx, tr.ID, secret, "alice"); !errors.Is(err, booking.ErrValidation) {
		t.Fatalf("claim of one's own transfer: %v, want ErrValidation", err)
	}
	nt, err := e.pay.ClaimTransfer(ctx, tr.ID, secret, "bob")
	if err != nil || nt.UserID != "bob" || nt.SeatID != "D1" || nt.Code == old.Code || nt.Status != booking.TicketValid {
		t.Fatalf("claim: %+v, %v", nt, err)
	}
	if again, err := e.pay.ClaimTransfer(ctx, tr.ID, secret, "bob"); err != nil || again.ID != nt.ID {
		t.Fatalf("claiming again: %+v, %v; want the same ticket", again, err)
	}
	if _, err := e.pay.ClaimTransfer(ctx, tr.ID, secret, "carol"); !errors.Is(err, booking.ErrTransferClosed) {
		t.Fatalf("a second claimer: %v, want ErrTransferClosed", err)
	}
	if _, err := e.pay.CheckIn(ctx, old.Code, "gate"); !errors.Is(err, booking.ErrTransferred) {
		t.Fatalf("the old code at the door: %v, want ErrTransferred", err)
	}
	if _, err := e.pay.CheckIn(ctx, nt.Code, "gate"); err != nil {
		t.Fatalf("the new code at the door: %v", err)
	}
	if _, err := e.pay.CheckIn(ctx, nt.Code, "gate"); !errors.Is(err, booking.ErrAlreadyCheckedIn) {
		t.Fatalf("the new code twice: %v, want ErrAlreadyCheckedIn", err)
	}
	// Both fans see the transfer; the sender's booking shows the old ticket TRANSFERRED and not bob's.
	for _, u := range []string{"alice", "bob"} {
		ts, err := e.pay.Transfers(ctx, u)
		if err != nil || len(ts) != 1 || ts[0].Status != booking.TransferClaimed || ts[0].ToUser != "bob" {
			t.Fatalf("%s's transfers: %+v, %v", u, ts, err)
		}
	}
	view, err := e.pay.BookingView(ctx, b.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range view.Tickets {
		if tk.ID == nt.ID || (tk.SeatID == "D1" && tk.Status != booking.TicketTransferred) {
			t.Fatalf("alice's booking lists %+v", view.Tickets)
		}
	}
	// A transferred seat is not the sender's to refund.
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: "alice", SeatIDs: []string{"D1"}}); !errors.Is(err, booking.ErrTransferred) {
		t.Fatalf("refund of a transferred seat: %v, want ErrTransferred", err)
	}
	e.settle(t, e.pay)
}

func TestTransferSwitchAndCutoff(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	b := e.paid(t, "alice", "D3")
	tk := ticketOf(t, b, "D3")
	tr, secret, err := e.pay.SendTransfer(ctx, booking.TransferRequest{TicketID: tk.ID, UserID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.ExpiresAt.After(time.Now()) {
		t.Fatalf("link expires at %s", tr.ExpiresAt)
	}
	off := booking.TicketPolicy{Transfer: booking.TransferPolicy{Enabled: false}}
	if _, _, err := e.pay.SetTicketPolicy(ctx, e.Show.ID, off); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.pay.SendTransfer(ctx, booking.TransferRequest{TicketID: tk.ID, UserID: "alice"}); !errors.Is(err, booking.ErrTransferClosed) {
		t.Fatalf("send with transfers off: %v, want ErrTransferClosed", err)
	}
	if _, err := e.pay.ClaimTransfer(ctx, tr.ID, secret, "bob"); !errors.Is(err, booking.ErrTransferClosed) {
		t.Fatalf("claim with transfers off: %v, want ErrTransferClosed", err)
	}
	// On, but only until 60 h before a show 48 h away: closed.
	cut := 60.0
	if _, _, err := e.pay.SetTicketPolicy(ctx, e.Show.ID, booking.TicketPolicy{Transfer: booking.TransferPolicy{Enabled: true, CutoffHours: &cut}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.pay.SendTransfer(ctx, booking.TransferRequest{TicketID: tk.ID, UserID: "alice"}); !errors.Is(err, booking.ErrTransferClosed) {
		t.Fatalf("send past the cut-off: %v, want ErrTransferClosed", err)
	}
	cut = 2
	if _, _, err := e.pay.SetTicketPolicy(ctx, e.Show.ID, booking.TicketPolicy{Transfer: booking.TransferPolicy{Enabled: true, CutoffHours: &cut}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pay.ClaimTransfer(ctx, tr.ID, secret, "bob"); err != nil {
		t.Fatalf("claim before the cut-off: %v", err)
	}
}

// TestTransferRacesRefund: the claim of a transfer and the refund of the same seat, many times over; exactly one
// wins each time, the loser is told why, and the ledger's invariants hold.
func TestTransferRacesRefund(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	e.setPolicy(t, tiered)
	for i, seat := range []string{"E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8"} {
		b := e.paid(t, "a"+seat, seat, "F"+seat[1:])
		tk := ticketOf(t, b, seat)
		tr, secret, err := e.pay.SendTransfer(ctx, booking.TransferRequest{TicketID: tk.ID, UserID: b.UserID})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var refundErr, claimErr error
		var claimed booking.TicketInfo
		wg.Go(func() {
			_, refundErr = e.pay.Refund(ctx, booking.RefundRequest{BookingID: b.ID, UserID: b.UserID, SeatIDs: []string{seat}})
		})
		wg.Go(func() { claimed, claimErr = e.pay.ClaimTransfer(ctx, tr.ID, secret, "b"+seat) })
		wg.Wait()
		switch {
		case refundErr == nil && errors.Is(claimErr, booking.ErrTicketVoid):
			if _, err := e.pay.CheckIn(ctx, tk.Code, "gate"); !errors.Is(err, booking.ErrTicketVoid) {
				t.Fatalf("race %d: refund won but the old code checks in: %v", i, err)
			}
		case claimErr == nil && errors.Is(refundErr, booking.ErrTransferred):
			if _, err := e.pay.CheckIn(ctx, claimed.Code, "gate"); err != nil {
				t.Fatalf("race %d: claim won but its code does not check in: %v", i, err)
			}
		default:
			t.Fatalf("race %d: refund %v, claim %v; want exactly one to win", i, refundErr, claimErr)
		}
	}
	e.settle(t, e.pay)
}
