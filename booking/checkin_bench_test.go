package booking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment/sim"
)

// BenchmarkCheckIn is online check-in (Checkout.CheckIn) on the real PostgreSQL: a static v1 code, the baseline,
// then a rotating v2 code of a show with rotating codes, in the same run. Each iteration checks in a ticket that
// was admitted before the timer started, so it answers ErrAlreadyCheckedIn: the whole path (reading the code, the
// show's kind of code, the ticket's locked row) without issuing b.N tickets. rotating reports its time as a
// ratio of static's.
//
//	go test -run '^$' -bench BenchmarkCheckIn -benchtime 2000x ./booking/
func BenchmarkCheckIn(b *testing.B) {
	e := newPayEnv(b, booking.Config{}, sim.Config{}, booking.CheckoutConfig{})
	ctx := context.Background()
	rotatingShow := e.NewShow(b)
	if _, _, err := e.pay.SetTicketPolicy(ctx, rotatingShow.ID, booking.TicketPolicy{Codes: booking.CodesRotating}); err != nil {
		b.Fatal(err)
	}
	issue := func(show booking.Show) booking.Ticket {
		bk, _, err := e.Svc.Hold(ctx, booking.HoldRequest{UserID: "fan-" + show.ID, ShowID: show.ID, SeatIDs: []string{"A1"}})
		if err != nil {
			b.Fatal(err)
		}
		res, err := e.payWith(bk, sim.CardOK, "k-"+bk.ID)
		if err != nil || len(res.Booking.Tickets) != 1 {
			b.Fatalf("pay: %v (%d tickets)", err, len(res.Booking.Tickets))
		}
		return res.Booking.Tickets[0]
	}
	static := issue(e.Show).Code
	rt := issue(rotatingShow)
	// The holder's page would stamp afresh every 15 s; one stamp is accepted for ticket.MaxAge (30 s), longer
	// than the run at the benchtime above.
	h, err := e.signer.Certify(rt.ID, rotatingShow.ID, rt.SeatID, rotatingShow.StartsAt.Add(24*time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	rotating := h.Stamp(time.Now())
	for _, code := range []string{static, rotating} {
		if _, err := e.pay.CheckIn(ctx, code, "gate-1"); err != nil {
			b.Fatalf("first check-in: %v", err)
		}
	}
	var baseline float64 // static's ns/op, measured first
	for _, c := range []struct{ name, code string }{{"static-v1", static}, {"rotating-v2", rotating}} {
		b.Run(c.name, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				if _, err := e.pay.CheckIn(ctx, c.code, "gate-1"); !errors.Is(err, booking.ErrAlreadyCheckedIn) {
					b.Fatalf("check-in: %v, want ErrAlreadyCheckedIn", err)
				}
			}
			ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			if c.code == static { // the last of static's runs is the one the tool reports
				baseline = ns
			} else {
				b.ReportMetric(ns/baseline, "x-static")
			}
		})
	}
}
